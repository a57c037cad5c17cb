"""Device checks: TR201 (CPU training beside an accelerator), TR209 (host syncs),
and re-explained errors (TR403 device mismatch, batch-norm batch of one, DDP
unused parameters).
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from typing import TYPE_CHECKING

from torchreview.findings import Finding
from torchreview.runtime._env import (
    Site, current_site, display_path, is_internal, site_of, short_list,
)
from torchreview.runtime.codes import runtime_finding

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.runtime.watcher import Watcher

SYNC_MESSAGE = "called a synchronizing CUDA operation"
_DEVICE_ERROR = re.compile(
    r"Expected all tensors to be on the same device|is not on the expected device|"
    r"found at least two devices|should be the same device|"
    r"Input type \(\S+\) and weight type \(\S+\) should be the same")
_BATCH_OF_ONE = "Expected more than 1 value per channel when training"
_DDP_UNUSED = "Expected to have finished reduction in the prior iteration"


def training_device(params) -> str:
    """Device type of the parameters an optimizer trains ('cpu', 'cuda', ...)."""
    for p in params:
        return p.device.type
    return "cpu"


def accelerator_available(torch) -> str | None:
    """A short name of an accelerator this process could use, or None."""
    try:
        if torch.cuda.is_available():
            try:
                return f"CUDA ({torch.cuda.get_device_name(0)})"
            except Exception:
                return "CUDA"
    except Exception:
        pass
    for name in ("mps", "xpu"):
        try:
            owner = torch.backends if name == "mps" else torch
            backend = getattr(owner, name, None)
            if backend is not None and backend.is_available():
                return name.upper()
        except Exception:
            continue
    return None


class SyncCounter:
    """Counts host-device syncs with ``torch.cuda.set_sync_debug_mode("warn")``.

    Torch reports each sync as a warning; a filter makes them all visible and
    our ``showwarning`` counts them (by user line) instead of printing them.
    """

    def __init__(self, watcher: "Watcher") -> None:
        self.w = watcher
        self.total = 0
        self.steps = 0
        self.sites: Counter = Counter()
        self._previous_mode = 0
        self._filter = None
        self._shown = None

    def start(self) -> None:
        cuda = self.w.torch.cuda
        self._previous_mode = cuda.get_sync_debug_mode()
        cuda.set_sync_debug_mode("warn")
        warnings.filterwarnings("always", message=re.escape(SYNC_MESSAGE))
        self._filter = warnings.filters[0]
        self._shown = warnings.showwarning
        warnings.showwarning = self._show

    def _show(self, message, category, filename, lineno, file=None, line=None):
        if SYNC_MESSAGE in str(message):
            if not self.w.in_own_sync:
                self.total += 1
                self.sites[(filename, lineno)] += 1
            return None
        return self._shown(message, category, filename, lineno, file, line)

    def stop(self) -> None:
        try:
            self.w.torch.cuda.set_sync_debug_mode(self._previous_mode)
        finally:
            if warnings.showwarning is self._show:
                warnings.showwarning = self._shown
            try:
                warnings.filters.remove(self._filter)
            except ValueError:
                pass
            warnings._filters_mutated()

    def finding(self) -> Finding | None:
        if self.steps < 10 or self.total < self.steps:
            return None
        (filename, lineno), count = self.sites.most_common(1)[0]
        import linecache

        site = Site(display_path(filename), lineno, linecache.getline(filename, lineno).strip())
        per_step = self.total / self.steps
        return runtime_finding("TR209", (
            f"{per_step:.1f} host-device synchronisations per step on average "
            f"({self.total} in {self.steps} steps); {count / self.total:.0%} of them at this "
            f"line{f' (`{site.text}`)' if site.text else ''}. Accumulate on the device "
            "(`running += loss.detach()`) and read values back every N steps."), site)


class DeviceChecks:
    def __init__(self, watcher: "Watcher") -> None:
        self.w = watcher
        self.tr201: tuple[Site, str] | None = None
        self.sync: SyncCounter | None = None
        self.explained: list[Finding] = []

    def on_first_step(self, tracker) -> None:
        torch = self.w.torch
        device = training_device(tracker.params)
        if device == "cuda":
            self.w.memory.device_kind = "cuda"
            if self.sync is None:
                self.sync = SyncCounter(self.w)
                try:
                    self.sync.start()
                except Exception as exc:
                    self.sync = None
                    self.w.internal_error("sync counting", exc)
        elif device == "cpu" and self.tr201 is None:
            name = accelerator_available(torch)
            if name:
                self.tr201 = (tracker.site, name)
                self.w.warn("TR201", f"training on CPU while {name} is available", tracker.site)

    def on_step_end(self) -> None:
        if self.sync is not None:
            self.sync.steps += 1

    def stop(self) -> None:
        if self.sync is not None:
            self.sync.stop()

    def _memory_bound(self) -> Finding | None:
        """TR204 at runtime: peak accelerator memory near capacity, no accumulation."""
        if self.sync is None or self.w.step < 3:
            return None
        cuda = self.w.torch.cuda
        try:
            peak = cuda.max_memory_allocated()
            total = cuda.get_device_properties(0).total_memory
        except Exception:
            return None
        accumulating = self.w.losses.calls >= 1.5 * self.w.step
        if not total or peak < 0.9 * total or accumulating:
            return None
        gib = 1024 ** 3
        return runtime_finding("TR204", (
            f"peak accelerator memory reached {peak / gib:.1f} of {total / gib:.1f} GiB "
            f"({peak / total:.0%}) with one backward pass per step: the batch size is limited "
            "by memory. Accumulate gradients over micro-batches (divide the loss by the count "
            "and step every k batches), or use mixed precision / activation checkpointing."),
            self.w.step_site())

    def findings(self) -> list[Finding]:
        out = list(self.explained)
        memory = self._memory_bound()
        if memory is not None:
            out.append(memory)
        if self.tr201 is not None:
            site, name = self.tr201
            out.append(runtime_finding("TR201", (
                f"the model trains on CPU while {name} is available: move the model and each "
                "batch to the accelerator (`device = torch.device('cuda' if "
                "torch.cuda.is_available() else 'cpu')`, `model.to(device)`, "
                "`x.to(device)`)."), site))
        if self.sync is not None:
            found = self.sync.finding()
            if found is not None:
                out.append(found)
        return out

    # -- exceptions ---------------------------------------------------------------
    def explain(self, exc: BaseException) -> None:
        text = str(exc)
        if _DEVICE_ERROR.search(text):
            self._device_mismatch(exc, text)
        elif _BATCH_OF_ONE in text:
            self.w.modes.explain_batch_of_one()
        elif _DDP_UNUSED in text:
            self.w.dist.explain_unused(self._failing_site(exc))

    def _failing_site(self, exc: BaseException) -> Site:
        tb, last = exc.__traceback__, None
        while tb is not None:
            if not is_internal(tb.tb_frame.f_code.co_filename):
                last = tb
            tb = tb.tb_next
        if last is None:
            return current_site()
        site = site_of(last.tb_frame)
        return Site(site.path, last.tb_lineno, site.text if site.line == last.tb_lineno else "")

    def _device_mismatch(self, exc: BaseException, text: str) -> None:
        torch = self.w.torch
        parts = []
        stack = list(self.w.stack)
        if stack:
            module, args = stack[-1]
            name = self.w.modes.module_name(module)
            by_device: dict[str, list[str]] = {}
            for pname, p in list(module.named_parameters(recurse=False)) + list(
                    module.named_buffers(recurse=False)):
                by_device.setdefault(str(p.device), []).append(pname)
            inputs = [f"args[{k}] {tuple(a.shape)} on {a.device}"
                      for k, a in enumerate(args[:4]) if isinstance(a, torch.Tensor)]
            held = "; ".join(f"{', '.join(v)} on {d}" for d, v in by_device.items())
            line = f"inside `{name}` ({type(module).__name__})"
            if held:
                line += f": its {held}"
            if inputs:
                line += f"{' but' if held else ':'} input {', '.join(inputs)}"
            parts.append(line)
        frame_tensors = self._frame_tensors(exc, torch)
        if frame_tensors:
            parts.append(f"tensors at the failing line: {short_list(frame_tensors, 8)}")
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        site = self._failing_site(exc)
        message = (
            f"device mismatch {'; '.join(parts) if parts else 'between tensors'}. Move the "
            "model and every batch to the same device (`model.to(device)`, "
            "`x = x.to(device)`) and create new tensors with `device=x.device`. "
            f"(torch said: {first[:200]})")
        self.explained.append(runtime_finding("TR403", message, site))
        self.w.warn("TR403", "device mismatch: " + ("; ".join(parts) or first[:120]), site)

    @staticmethod
    def _frame_tensors(exc: BaseException, torch) -> list[str]:
        tb, frame = exc.__traceback__, None
        while tb is not None:
            if not is_internal(tb.tb_frame.f_code.co_filename):
                frame = tb.tb_frame
            tb = tb.tb_next
        if frame is None:
            return []
        found: list[tuple[str, str]] = []
        for name, value in frame.f_locals.items():
            if isinstance(value, torch.Tensor):
                found.append((f"`{name}`", str(value.device)))
            elif isinstance(value, torch.nn.Module):
                param = next(value.parameters(), None)
                if param is not None:
                    found.append((f"`{name}`'s parameters", str(param.device)))
        if len({device for _, device in found}) < 2:
            return []
        return [f"{name} on {device}" for name, device in found]
