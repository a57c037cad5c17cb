"""The runtime reviewer: installs PyTorch's global hooks and runs the checks.

Instrumentation, all undone by :meth:`Watcher.stop`:

* ``torch.nn.modules.module.register_module_forward_pre_hook`` / ``..._hook``
  (train/eval mode, batch-norm input sizes, graph markers, device errors);
* ``torch.optim.optimizer.register_optimizer_step_pre_hook`` / ``post_hook``
  (step boundaries, gradient checks, memory samples);
* tensor hooks on the optimizers' parameters (which parameters a backward
  reaches, whether ``.grad`` was reset);
* ``torch.cuda.set_sync_debug_mode`` when training on CUDA;
* patches where PyTorch has no hook: ``DataLoader`` iterator ``__next__``
  (time spent waiting for data), ``torch.autograd.backward`` (the loss of each
  backward pass), ``destroy_process_group`` (merge ranks first) and
  ``torch.multiprocessing``'s ``start_processes`` (watch spawned ranks);
* ``os._exit`` (write the report first) and torch's global-hook test (see
  ``guards``: a torch.compile wrapper is reviewed as the module it wraps, once).

Hooks never raise into the training code: a failing check is disabled and
reported as an internal error in the report's ``errors``.
"""

from __future__ import annotations

import atexit
import sys
import time
from contextlib import contextmanager
from dataclasses import fields

from torchreview.findings import Finding, ReviewError
from torchreview.report import Report
from torchreview.runtime import guards
from torchreview.runtime._env import UNKNOWN_SITE, Site, require_torch
from torchreview.runtime.guards import is_compile_wrapper
from torchreview.runtime.options import CHILD_OPTIONS, Options

_active: "Watcher | None" = None


def _is_compiling() -> bool:  # replaced by torch.compiler.is_compiling once torch is loaded
    return False


def _grad_enabled() -> bool:  # replaced by torch.is_grad_enabled once torch is loaded
    return True


def active_watcher() -> "Watcher | None":
    return _active


class Watcher:
    """Watches training in this process; use :func:`torchreview.watch` to make one."""

    def __init__(self, **options) -> None:
        known = {f.name for f in fields(Options)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"unknown torchreview.watch option(s): {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(known))})")
        self.options = Options(**options)
        self.torch = require_torch()
        global _is_compiling, _grad_enabled
        _grad_enabled = self.torch.is_grad_enabled
        compiler = getattr(self.torch, "compiler", None)
        _is_compiling = getattr(compiler, "is_compiling", _is_compiling)
        self.check_every = max(2, int(self.options.check_every))
        self.spike_factor = float(self.options.spike_factor)
        self.step = 0
        self.stack: list = []
        self.trackers: dict[int, object] = {}
        self.retired: list = []  # trackers of optimizers that were replaced
        self.errors: list[ReviewError] = []
        self.notes: list[str] = []
        self.in_own_sync = False
        self.report: Report | None = None
        self._handles: list = []
        self._patches: list[tuple[object, str, object, bool]] = []
        self._warned: set = set()
        self._failed: set[str] = set()
        self._wrappers: dict[type, bool] = {}
        self._root = None
        self._started = 0.0
        self.active = False
        from torchreview.runtime.crashes import CrashChecks
        from torchreview.runtime.devices import DeviceChecks
        from torchreview.runtime.distributed import DistChecks
        from torchreview.runtime.losses import LossMonitor
        from torchreview.runtime.memory import MemoryChecks
        from torchreview.runtime.modes import BATCHNORM, ModeChecks
        from torchreview.runtime.names import Names
        from torchreview.runtime.pipeline import PipelineChecks
        from torchreview.runtime.series import Series

        self._batchnorm = BATCHNORM
        self.names = Names(self.torch)
        self.modes = ModeChecks(self)
        self.memory = MemoryChecks(self)
        self.pipeline = PipelineChecks(self)
        self.devices = DeviceChecks(self)
        self.dist = DistChecks(self)
        self.losses = LossMonitor(self)
        self.crashes = CrashChecks(self)
        self.series = Series(self)

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> "Watcher":
        global _active
        if self.active:
            return self
        if _active is not None:
            raise RuntimeError("torchreview: a runtime review is already active in this process")
        import torch.nn.modules.module as module_hooks
        import torch.optim.optimizer as optim_hooks

        self._handles = [
            module_hooks.register_module_forward_pre_hook(self._forward_pre),
            module_hooks.register_module_forward_hook(self._forward_post),
            optim_hooks.register_optimizer_step_pre_hook(self._step_pre),
            optim_hooks.register_optimizer_step_post_hook(self._step_post),
        ]
        try:
            self.pipeline.install()
            self.losses.install()
            self.dist.install()
            guards.install(self, module_hooks)  # os._exit writes the report; torch.compile wrappers
        except Exception:
            self._restore()
            raise
        self._started = time.perf_counter()
        self.active = True
        _active = self
        atexit.register(self._at_exit)
        return self

    def add(self, model=None, optimizer=None, loader=None) -> None:
        """Watch objects created before the review started (optional)."""
        if model is not None:
            self.modes.root_info(model)
        if optimizer is not None:
            self.tracker_for(optimizer)
        if loader is not None and not hasattr(loader, "__iter__"):
            raise TypeError("torchreview.watch(loader=...) expects an iterable DataLoader")

    def stop(self) -> Report:
        """Stop watching, restore everything, build (and by default write) the report."""
        global _active
        if not self.active:
            return self.report or Report()
        try:
            for flush in [t.flush for t in self.trackers.values()] + [self.losses.flush]:
                try:
                    flush()
                except Exception as exc:
                    self.internal_error("final gradient check", exc)
        finally:
            self._restore()
            self.active = False
            if _active is self:
                _active = None
            atexit.unregister(self._at_exit)
        own = self.collect()
        if self.options.rank_dir:
            self.dist.write_child_payload(own)
            self.report = Report(findings=own, errors=list(self.errors))
            return self.report
        self.dist.merge()
        self.dist.collect_children()
        findings = sorted(self.dist.merged_findings(own), key=Finding.sort_key)
        from torchreview.runtime.output import RuntimeReport

        runtime = None
        try:
            runtime = self.series.to_json(findings)
        except Exception as exc:
            self.internal_error("series", exc)
        self.report = RuntimeReport(findings=findings, errors=list(self.errors),
                                    files=1 if self.options.script else 0,
                                    seconds=time.perf_counter() - self._started,
                                    notes=self.notes + [self._summary()], runtime=runtime)
        if self.dist.is_writer and runtime is not None:
            from torchreview.runtime.output import write_extras

            write_extras(self.report, self.options, self.options.stream)
        if self.options.write_report:
            from torchreview.runtime.output import write_report

            output = self.options.output if self.dist.is_writer else \
                self.dist.own_output(self.options.output)
            if output is not False:
                write_report(self.report, self.options.fmt, output,
                             color=self.options.color, stream=self.options.stream)
        return self.report

    def _at_exit(self) -> None:
        if self.active:
            self.stop()

    def __enter__(self) -> "Watcher":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is not None:
            self.explain(exc)
        self.stop()
        return False

    @property
    def findings(self) -> list[Finding]:
        return list(self.report.findings) if self.report else self.collect()

    def _restore(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        for tracker in self.trackers.values():
            tracker.remove_hooks()
        for owner, name, original, had in reversed(self._patches):
            if had:
                setattr(owner, name, original)
            else:
                delattr(owner, name)
        self._patches.clear()
        self.devices.stop()
        self.memory.close()

    def patch(self, owner, name: str, replacement) -> None:
        had = name in vars(owner) if isinstance(owner, type) else hasattr(owner, name)
        self._patches.append((owner, name, getattr(owner, name), had))
        setattr(owner, name, replacement)

    def child_options(self) -> dict:
        return {name: getattr(self.options, name) for name in CHILD_OPTIONS}

    # -- hooks -------------------------------------------------------------------------
    def _forward_pre(self, module, args):
        if _is_compiling():  # traced by torch.compile: stay out of the graph
            return None
        try:
            compiled = is_compile_wrapper(type(module), self._wrappers)
            if compiled:
                module = module._orig_mod  # torch.compile's wrapper: review the module it runs
            stack = self.stack
            if stack and stack[-1][0] is module:  # the same module again, inside its wrapper
                stack.append((module, args))
                return None
            if not stack:
                if _grad_enabled():
                    self.series.forward_begin(time.perf_counter())
                modes = self.modes
                info = modes.roots.get(id(module))
                if info is None or info.ref() is not module:
                    info = modes.root_info(module)
                self._root = info
                modes.root_pre(module, info)
                if compiled:  # batch norms inside a compiled graph get no hook call: use the input's batch
                    for _, norm in info.batchnorms:
                        if norm is not module:
                            modes.bn_pre(norm, args)
            stack.append((module, args))
            kind = self.modes.kinds.get(type(module))
            if kind is None:
                kind = self.modes.classify(type(module))
            if kind == self._batchnorm:
                self.modes.bn_pre(module, args)
        except Exception as exc:
            self.internal_error("forward hook", exc)
        return None

    def _forward_post(self, module, args, output):
        if _is_compiling():
            return None
        stack = self.stack
        if stack:
            stack.pop()
            if not stack:
                self.series.forward_end(time.perf_counter())
            if not stack and self._root is not None:
                try:
                    self.memory.mark_output(self._root, output)
                except Exception as exc:
                    self.internal_error("graph marker", exc)
        return None

    def _step_pre(self, optimizer, args, kwargs):
        try:
            self.series.step_begin(optimizer, time.perf_counter())
            self.stack.clear()
            tracker = self.tracker_for(optimizer)
            first = tracker.steps == 0
            tracker.pre_step()
            if first:
                self.dist.note_rank()
                self.devices.on_first_step(tracker)
            self.modes.on_step(tracker)
        except Exception as exc:
            self.internal_error("optimizer step", exc)
        return None

    def _step_post(self, optimizer, args, kwargs):
        now = time.perf_counter()
        self.step += 1
        try:
            tracker = self.trackers.get(id(optimizer))
            if tracker is not None:
                tracker.post_step()
            memory = self.memory
            memory.on_step(self.step)
            self.series.step_end(self.step, now, memory.rss(), memory.cuda_allocated())
            self.devices.on_step_end()
        except Exception as exc:
            self.internal_error("optimizer step", exc)
        return None

    # -- services for the checks ---------------------------------------------------------
    def tracker_for(self, optimizer):
        tracker = self.trackers.get(id(optimizer))
        count = sum(len(g["params"]) for g in optimizer.param_groups)
        if tracker is not None and tracker.ref() is optimizer and tracker.n == count:
            return tracker
        from torchreview.runtime.grads import OptTracker

        old = tracker
        tracker = OptTracker(self, optimizer)
        if old is not None:
            old.remove_hooks()
            if old.ref() is optimizer:  # add_param_group: keep the history
                tracker.steps, tracker.site = old.steps, old.site
            elif old.steps:  # an optimizer re-created (per epoch): keep its findings
                self.retired.append(old)
        self.trackers[id(optimizer)] = tracker
        self.names.scan_frames(sys._getframe(1))
        return tracker

    def note_root(self, module) -> None:
        self.names.note_root(module)

    def is_trained(self, info) -> bool:
        return any(not t.ids.isdisjoint(info.param_ids) for t in self.trackers.values())

    def param_name(self, param) -> str:
        return self.names.param(param)

    def module_label(self, module, default: str) -> str:
        return self.names.module(module, default)

    def step_site(self) -> Site:
        for tracker in self.trackers.values():
            if tracker.site is not None:
                return tracker.site
        return UNKNOWN_SITE

    def reset_stack(self) -> None:
        self.stack.clear()

    @contextmanager
    def own_sync(self):
        self.in_own_sync = True
        try:
            yield
        finally:
            self.in_own_sync = False

    def warn(self, code: str, text: str, site: Site | None, step: int | None = None) -> None:
        """A live one-line warning; also marks the step on the report's timeline
        (``step``: where the problem happened, default the step in progress)."""
        site = site or UNKNOWN_SITE
        try:
            self.series.on_warn(code, step if step is not None else self.step + 1, text, site)
        except Exception as exc:
            self.internal_error("series", exc)
        key = (code, site)
        if key in self._warned or not self.options.live:
            self._warned.add(key)
            return
        self._warned.add(key)
        rank = self.dist.rank
        prefix = f"[rank {rank}] " if rank is not None and self.dist.world > 1 or \
            self.options.rank_dir else ""
        stream = self.options.stream or sys.stderr
        try:
            stream.write(f"torchreview: {prefix}{site.label()}: {code} {text}\n")
            stream.flush()
        except (OSError, ValueError):
            pass

    def internal_error(self, what: str, exc: BaseException) -> None:
        if what in self._failed:
            return
        self._failed.add(what)
        self.errors.append(ReviewError(
            path=self.options.script or "<runtime>",
            message=f"internal error in runtime check '{what}': {type(exc).__name__}: {exc}"))

    def explain(self, exc: BaseException) -> None:
        """Record the script's uncaught error in the report and turn a known
        cryptic one (device mismatch, in-place on saved tensor, ...) into a finding."""
        try:
            import os

            script = os.path.abspath(self.options.script) if self.options.script else None
            self.crashes.record(exc, script)
            self.devices.explain(exc)
        except Exception as inner:
            self.internal_error("error explanation", inner)

    # -- report ------------------------------------------------------------------------------
    def collect(self) -> list[Finding]:
        found: list[Finding] = []
        ddp_ids = frozenset().union(*(i.param_ids for i in self.modes.roots.values()
                                      if i.is_ddp))
        for part, produce in (
            ("modes", self.modes.findings),
            ("gradients", lambda: [f for t in [*self.trackers.values(), *self.retired]
                                   for f in t.findings(ddp_ids)]),
            ("losses", self.losses.findings),
            ("memory", self.memory.findings),
            ("pipeline", self.pipeline.findings),
            ("devices", self.devices.findings),
            ("distributed", self.dist.ddp_findings),
            ("crash", self.crashes.findings),
        ):
            try:
                found.extend(produce())
            except Exception as exc:
                self.internal_error(f"{part} report", exc)
        unique: dict[tuple, Finding] = {}
        for f in found:  # one finding per problem and place
            unique.setdefault((f.code, f.path, f.line), f)
        return list(unique.values())

    def _summary(self) -> str:
        optimizers = len(self.trackers)
        text = (f"runtime review: {self.step} optimizer step{'s' if self.step != 1 else ''}"
                f" ({optimizers} optimizer{'s' if optimizers != 1 else ''}) in "
                f"{time.perf_counter() - self._started:.1f}s")
        ranks = 1 + len(self.dist.remote)
        if ranks > 1:
            text += f", findings merged from {ranks - (0 if self.trackers else 1)} ranks"
        return text
