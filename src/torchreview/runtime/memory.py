"""Memory checks: TR604 (memory grows step over step), TR507 (graphs kept alive).

TR507 marks the autograd node of every outermost forward output with a tiny
object stored in the node's ``metadata``.  The object dies with the graph, so
a weak reference to it tells whether that step's graph is still alive, at no
cost to the tensors.  When graphs of older steps pile up, the user's frames
and globals are searched once for the tensor or container holding them.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import weakref
from collections import deque
from typing import TYPE_CHECKING

from torchreview.findings import Finding
from torchreview.runtime._env import Site, display_path
from torchreview.runtime.codes import runtime_finding
from torchreview.runtime.held_graphs import HeldGraphs, graph_tags, user_scopes

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.runtime.watcher import Watcher

_KEY = "torchreview.step"
_MB = 1024 * 1024


class _Marker:
    __slots__ = ("step", "owner", "is_loss", "__weakref__")

    def __init__(self, step: int, owner: str, is_loss: bool) -> None:
        self.step = step
        self.owner = owner
        self.is_loss = is_loss


def _first_graph_tensor(output, torch):
    if isinstance(output, torch.Tensor):
        return output if output.grad_fn is not None else None
    if isinstance(output, dict):
        output = list(output.values())[:4]
    if isinstance(output, (list, tuple)):
        for item in output[:4]:
            if isinstance(item, torch.Tensor) and item.grad_fn is not None:
                return item
    return None


class MemoryChecks:
    def __init__(self, watcher: "Watcher") -> None:
        self.w = watcher
        self.markers: deque = deque(maxlen=512)
        self.alive_counts: list[int] = []
        self.samples: list[tuple[int, int]] = []
        self.tr507: dict | None = None
        self.tr604: dict | None = None
        self.held = HeldGraphs(watcher)
        self._fd: int | None = None
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self.device_kind = "cpu"
        self.last: int | None = None
        try:
            self._fd = os.open("/proc/self/statm", os.O_RDONLY)
        except OSError:
            self._fd = None

    # -- forward post-hook at depth 0 ----------------------------------------------
    def mark_output(self, info, output) -> None:
        torch = self.w.torch
        if not torch.is_grad_enabled():
            return
        tensor = _first_graph_tensor(output, torch)
        if tensor is None:
            return
        marker = _Marker(self.w.step, info.cls, not info.has_params)
        try:
            tensor.grad_fn.metadata[_KEY] = marker
        except (AttributeError, RuntimeError):
            return
        self.markers.append(weakref.ref(marker))

    # -- optimizer step post-hook --------------------------------------------------
    def on_step(self, step: int) -> None:
        value = self.last = self._memory()
        if value is not None:
            self.samples.append((step, value))
            if len(self.samples) > 4000:
                self.samples = self.samples[::2]
        if step % 5 == 0:
            self._check_graphs(step)
            if self.tr507 is None:
                self.held.on_step(step, sys._getframe(1))
            if self.tr604 is None and step % 10 == 0:
                self._check_growth()

    def rss(self) -> int | None:
        """Resident memory of the process after the last step (bytes)."""
        return self.last if self.device_kind != "cuda" else self._rss()

    def cuda_allocated(self) -> int | None:
        """``torch.cuda.memory_allocated()`` after the last step, when training on CUDA."""
        return self.last if self.device_kind == "cuda" else None

    def _memory(self) -> int | None:
        if self.device_kind == "cuda":
            return int(self.w.torch.cuda.memory_allocated())
        return self._rss()

    def _rss(self) -> int | None:
        if self._fd is None:
            return None
        try:
            return int(os.pread(self._fd, 64, 0).split()[1]) * self._page
        except (OSError, ValueError, IndexError):
            return None

    def _check_graphs(self, step: int) -> None:
        if self.tr507 is not None:
            return
        old = step - 2
        alive = 0
        for ref in self.markers:
            marker = ref()
            if marker is not None and marker.step <= old:
                alive += 1
        counts = self.alive_counts
        counts.append(alive)
        if len(counts) >= 3 and alive >= 5 and counts[-3] < counts[-2] < counts[-1]:
            holders = find_holders(self.w.torch, old, sys._getframe(1))
            self.tr507 = {"step": step, "alive": alive, "holders": holders}
            what = holders[0]["what"] if holders else "something"
            site = holders[0]["site"] if holders else self.w.step_site()
            self.w.warn("TR507", f"{what} keeps the autograd graphs of "
                                 f"{alive} earlier steps alive", site, step=step)

    def _check_growth(self, final: bool = False) -> None:
        """A sustained rise after warm-up: chunk medians nearly always increase.

        With a DataLoader, growth during its first epoch may be a dataset filling
        a cache: only growth after it counts, or (one-epoch runs) it is reported
        at the end with that caveat.
        """
        warm, caveat = 10, False
        epoch_end = self.w.pipeline.warm_until()
        if epoch_end == -1:
            if not final:
                return
            caveat = True
        elif epoch_end is not None:
            warm = max(warm, epoch_end)
        post = [(s, v) for s, v in self.samples if s > warm]
        if len(post) < 20:
            return
        size = len(post) // 10
        chunks = [sorted(v for _, v in post[k * size:(k + 1) * size]) for k in range(10)]
        medians = [c[len(c) // 2] for c in chunks]
        rising = sum(b > a for a, b in zip(medians, medians[1:]))
        growth = medians[-1] - medians[0]
        floor = 16 * _MB if self.device_kind == "cuda" else 64 * _MB
        if rising >= 8 and growth >= floor and growth >= 0.05 * medians[0]:
            first, last = post[0], post[-1]
            self.tr604 = {"from": medians[0], "to": medians[-1], "steps": (first[0], last[0]),
                          "caveat": caveat,
                          "per100": growth * 100 / max(1, last[0] - first[0]),
                          "holders": find_holders(self.w.torch, None, sys._getframe(1),
                                                  min_items=max(10, last[0] // 2))}
            self.w.warn("TR604", f"memory grew {growth / _MB:.0f} MB from step {first[0]} to "
                                 f"{last[0]}", self.w.step_site(), step=self.w.step)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- report --------------------------------------------------------------------
    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        if self.tr604 is None and self.tr507 is None:
            self._check_growth(final=True)
        kind = "accelerator memory" if self.device_kind == "cuda" else "process memory (RSS)"
        growth = ""
        if self.tr604 is not None:
            g = self.tr604
            growth = (f"{kind} grew from {g['from'] / _MB:.0f} MB to {g['to'] / _MB:.0f} MB "
                      f"between steps {g['steps'][0]} and {g['steps'][1]} "
                      f"(+{g['per100'] / _MB:.1f} MB per 100 steps)")
        if self.tr507 is not None:
            t = self.tr507
            holders = t["holders"]
            if holders:
                h = holders[0]
                lead = f"{h['what']} {h['how']}"
                site = h["site"]
            else:
                lead = "something (a list, a running total, a global) keeps losses or outputs"
                site = self.w.step_site()
            out.append(runtime_finding("TR507", (
                f"{lead}: the autograd graphs of {t['alive']} earlier steps were still alive "
                f"at step {t['step']}{'; ' + growth if growth else ''}. Store `loss.item()` "
                "or `tensor.detach()` instead, so each step's graph can be freed."), site))
        elif self.held.found is not None:
            out.extend(self.held.findings())
        elif self.tr604 is not None:
            holders = self.tr604["holders"]
            hint = (f" {holders[0]['what']} {holders[0]['how']}." if holders else
                    " Look for tensors appended to a list or cached every step.")
            site = holders[0]["site"] if holders else self.w.step_site()
            if self.tr604["caveat"]:
                hint += (" (The run had a single epoch: a dataset caching its items in "
                         "memory also grows like this; then it is expected.)")
            out.append(runtime_finding("TR604", f"{growth} and kept growing.{hint}", site))
        return out


# -- finding who holds the graphs ------------------------------------------------------
def _reaches_old_marker(grad_fn, old_step: int | None, budget: int = 4000):
    """The marker found walking the graph back from ``grad_fn`` (None if none is old)."""
    for marker in graph_tags([grad_fn], _KEY, budget):
        if old_step is None or marker.step <= old_step:
            return marker
    return None


def _describe(name: str, value, torch, old_step: int | None, min_items: int):
    """(what, how) when ``value`` holds old graphs (or, old_step None, many tensors)."""
    if isinstance(value, torch.Tensor):
        if old_step is None or value.grad_fn is None:
            return None
        marker = _reaches_old_marker(value.grad_fn, old_step)
        if marker is None:
            return None
        return f"the tensor `{name}`", "accumulates the graph of every step (e.g. `total += loss`)"
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (list, tuple, deque)):
        items = list(value)
    else:
        return None
    tensors = [v for v in items if isinstance(v, torch.Tensor)]
    kind = type(value).__name__
    if old_step is None:
        if len(tensors) >= min_items:
            return f"the {kind} `{name}`", f"holds {len(tensors)} tensors"
        return None
    graphs = [t for t in tensors if t.grad_fn is not None]
    if len(graphs) < 2:
        return None
    for t in graphs[:3]:
        marker = _reaches_old_marker(t.grad_fn, old_step)
        if marker is None:
            continue
        own = t.grad_fn.metadata.get(_KEY) if hasattr(t.grad_fn, "metadata") else None
        if own is marker:
            what = "losses" if marker.is_loss else f"outputs of {marker.owner}"
        else:
            what = "losses (tensors computed from the model outputs)"
        return f"the {kind} `{name}`", f"holds {len(graphs)} {what} with their graphs"
    return None


def _append_line(code, filename: str, name: str) -> int | None:
    """The line that grows ``name`` (``name.append(``, ``name +=``) in ``code``."""
    grows = r"\s*(\.\s*(append|extend|insert)\s*\(|\+=|\[.*\]\s*=)"
    pattern = re.compile(rf"\b{re.escape(name)}{grows}")
    lines = linecache.getlines(filename)
    start, stop = 1, len(lines)
    if code is not None and code.co_name != "<module>":
        numbers = [n for _, _, n in code.co_lines() if n]
        if numbers:
            start, stop = min(numbers), max(numbers)
    for number in range(start, min(stop, len(lines)) + 1):
        if pattern.search(lines[number - 1]):
            return number
    return None


def find_holders(torch, old_step: int | None, frame, min_items: int = 10) -> list[dict]:
    """Search the user's frames, then ``__main__``, for what keeps the tensors."""
    scopes = user_scopes(frame)
    found: list[dict] = []
    for mapping, code, filename, current in scopes:
        for name, value in list(mapping.items()):
            if name.startswith("__"):
                continue
            try:
                described = _describe(name, value, torch, old_step, min_items)
            except Exception:
                continue
            if described is None:
                continue
            line = _append_line(code, filename, name) or current
            text = linecache.getline(filename, line).strip()
            found.append({"what": described[0], "how": described[1],
                          "site": Site(display_path(filename), line, text)})
        if found:
            break
    return found
