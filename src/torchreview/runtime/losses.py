"""The loss side of TR601: NaN/Inf losses, seen at ``backward()``.

PyTorch has no global hook for "backward was called", so
``torch.autograd.backward`` (which ``Tensor.backward`` calls) is wrapped and
restored on exit.  Each scalar loss is copied into a small device buffer, read
back only when the gradient statistics are (every N steps and at exit): no
host sync per step.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from torchreview.findings import Finding
from torchreview.runtime._env import UNKNOWN_SITE as UNKNOWN, Site, current_site, plural
from torchreview.runtime.codes import runtime_finding

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.runtime.watcher import Watcher


class LossMonitor:
    def __init__(self, watcher: "Watcher") -> None:
        self.w = watcher
        self.buf = None
        self.steps: list[int] = []
        self.site: Site | None = None
        self.first_bad = 0
        self.bad = 0
        self.first_value = ""
        self.failed = False
        self.calls = 0  # backward passes (more than steps: gradient accumulation)

    def install(self) -> None:
        import torch.autograd

        original = torch.autograd.backward
        monitor = self

        def backward(tensors, *args, **kwargs):
            monitor.on_backward(tensors)
            start = time.perf_counter()
            try:
                return original(tensors, *args, **kwargs)
            finally:
                monitor.w.series.on_backward(start, time.perf_counter())

        backward.__wrapped__ = original
        backward.__doc__ = original.__doc__
        self.w.patch(torch.autograd, "backward", backward)

    def on_backward(self, tensors) -> None:
        self.calls += 1
        if self.failed:
            return
        torch = self.w.torch
        try:
            loss = tensors if isinstance(tensors, torch.Tensor) else next(iter(tensors), None)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                return
            if self.site is None:
                self.site = current_site()
            if self.buf is None:
                self.buf = torch.zeros(self.w.check_every * 4, dtype=torch.float32,
                                       device=loss.device)
            elif len(self.steps) >= self.buf.shape[0] or loss.device != self.buf.device:
                self.flush()
                if loss.device != self.buf.device:
                    self.buf = torch.zeros_like(self.buf, device=loss.device)
            self.buf[len(self.steps)].copy_(loss.detach().reshape(()))
            self.steps.append(self.w.step + 1)
        except Exception as exc:
            self.failed = True
            self.w.internal_error("loss check", exc)

    def flush(self) -> None:
        if self.buf is None or not self.steps:
            return
        torch = self.w.torch
        steps, self.steps = self.steps, []
        with self.w.own_sync():
            host = self.buf[: len(steps)].detach().cpu().to(torch.float64)
        self.w.series.add_losses(steps, host.tolist())
        finite = torch.isfinite(host).tolist()
        for k, ok in enumerate(finite):
            if ok:
                continue
            self.bad += 1
            if not self.first_bad:
                self.first_bad = steps[k]
                self.first_value = str(host[k].item())
                self.w.warn("TR601", f"loss is {self.first_value} at step {self.first_bad}",
                            self.site, step=self.first_bad)

    def describe(self) -> str:
        if not self.first_bad:
            return ""
        return (f"the loss was first {self.first_value} at step {self.first_bad} "
                f"({plural(self.bad, 'backward pass', 'backward passes')} with a non-finite loss)")

    def findings(self) -> list[Finding]:
        self.flush()
        if not self.first_bad or any(t.nonfinite_step for t in self.w.trackers.values()):
            return []  # reported with the gradients (one finding per bug)
        return [runtime_finding("TR601", (
            f"{self.describe()}, while the gradients stayed finite: a term of the loss with "
            "no gradient (e.g. 0/0 from dividing by a count that can be 0) is NaN/Inf. The "
            "logged loss, metrics and any scheduler reading it are corrupted; guard the "
            "division (`count.clamp_min(1)`) or skip such batches."), self.site or UNKNOWN)]
