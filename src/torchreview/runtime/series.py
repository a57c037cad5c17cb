"""Series of a watched run: loss, gradient norm, learning rate, step time, memory.

What is recorded, and how it stays cheap (no host-device sync per step):

* **host-side values, every optimizer step** (the optimizer step post-hook):
  the step's wall time split into *data wait* (time inside the DataLoader's
  ``__next__`` with grad mode on: an evaluation loop under ``no_grad`` counts
  as *other*), *forward + backward* (the outermost forward under grad mode
  plus ``torch.autograd.backward``), *optimizer* (``optimizer.step()``) and
  *other* (the rest of the interval: logging, evaluation, the script's own
  syncs); the learning rate of the stepping optimizer's first parameter group;
  the process RSS (``/proc/self/statm``) and, on CUDA, ``memory_allocated()``
  (a host-side counter: no sync).  These are plain ``perf_counter`` reads and
  list appends.
* **device-side values, read in batches**: the loss of each backward pass and
  the total gradient norm are already copied into small device buffers by the
  TR601/TR602 checks; those buffers are read back every ``check_every`` steps
  and at exit, and the values read are handed to :meth:`Series.add_losses` /
  :meth:`Series.add_grad_norms`.  The series adds no read of its own.

On CUDA the times are host times: kernels run asynchronously, so a step's GPU
work shows up where the host waits for it (often in *other*, at the script's
own ``.item()``), not necessarily in *forward + backward*.

A run longer than :data:`MAX_POINTS` steps is thinned: the stride doubles and
only steps that are multiples of it are kept, in every series alike.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.findings import Finding
    from torchreview.runtime._env import Site
    from torchreview.runtime.watcher import Watcher

MAX_POINTS = 4096
SCHEMA = 1

# host-side series, all recorded at the same steps
HOST = ("time", "data_wait", "forward_backward", "optimizer", "other", "lr", "rss",
        "cuda_allocated")


class Series:
    def __init__(self, watcher: "Watcher") -> None:
        self.w = watcher
        self.stride = 1
        self.steps: list[int] = []
        self.host: dict[str, list] = {name: [] for name in HOST}
        self.loss: dict[int, list[float | None]] = {}  # step -> values of its backward passes
        self.grad_norm: dict[int, float | None] = {}
        self.events: list[tuple[str, int, str, "Site | None"]] = []
        self.cuda = False
        self._grad_enabled = watcher.torch.is_grad_enabled
        self._start = time.perf_counter()
        self._mark: float | None = None  # start of the current step interval
        self._data = 0.0
        self._fb = 0.0
        self._fwd: float | None = None
        self._opt: float | None = None
        self._lr = None

    # -- timing events (called from the watcher's hooks) ---------------------------
    def on_data(self, start: float, end: float) -> None:
        if self._mark is None:
            self._mark = start
        if self._grad_enabled():  # an evaluation loop under no_grad is not training's wait
            self._data += end - start

    def forward_begin(self, now: float) -> None:
        if self._mark is None:
            self._mark = now
        self._fwd = now

    def forward_end(self, now: float) -> None:
        if self._fwd is not None:
            self._fb += now - self._fwd
            self._fwd = None

    def on_backward(self, start: float, end: float) -> None:
        if self._mark is None:
            self._mark = start
        self._fb += end - start

    def step_begin(self, optimizer, now: float) -> None:
        self._opt = now
        if self._mark is None:
            self._mark = now
        try:
            lr = optimizer.param_groups[0].get("lr")
        except (AttributeError, IndexError, KeyError, TypeError):
            lr = None
        self._lr = lr

    def step_end(self, step: int, now: float, rss: int | None, cuda: int | None) -> None:
        opt = now - self._opt if self._opt is not None else 0.0
        interval = now - self._mark if self._mark is not None else opt
        data, fb = self._data, self._fb
        self._mark, self._data, self._fb, self._fwd, self._opt = now, 0.0, 0.0, None, None
        if step % self.stride:
            return
        self.steps.append(step)
        host = self.host
        host["time"].append(now - self._start)
        host["data_wait"].append(data)
        host["forward_backward"].append(fb)
        host["optimizer"].append(opt)
        host["other"].append(max(0.0, interval - data - fb - opt))
        host["lr"].append(_number(self._lr, self.w.torch))
        host["rss"].append(rss)
        if cuda is not None:
            self.cuda = True
        host["cuda_allocated"].append(cuda)
        if len(self.steps) > MAX_POINTS:
            self._thin()

    # -- device values read in batches --------------------------------------------
    def add_losses(self, steps: list[int], values: list[float]) -> None:
        for step, value in zip(steps, values):
            if step % self.stride == 0:
                self.loss.setdefault(step, []).append(value if math.isfinite(value) else None)

    def add_grad_norms(self, steps: list[int], values: list[float], finite: list[bool]) -> None:
        for step, value, ok in zip(steps, values, finite):
            if step % self.stride == 0:
                self.grad_norm[step] = value if ok and math.isfinite(value) else None

    def _thin(self) -> None:
        self.stride *= 2
        keep = [k for k, s in enumerate(self.steps) if s % self.stride == 0]
        self.steps = [self.steps[k] for k in keep]
        for name, values in self.host.items():
            self.host[name] = [values[k] for k in keep]
        self.loss = {s: v for s, v in self.loss.items() if s % self.stride == 0}
        self.grad_norm = {s: v for s, v in self.grad_norm.items() if s % self.stride == 0}

    # -- findings on the timeline --------------------------------------------------
    def on_warn(self, code: str, step: int, text: str, site: "Site | None") -> None:
        if len(self.events) < 1000:
            self.events.append((code, step, text, site))

    def markers(self, findings: "list[Finding]") -> list[dict]:
        """One marker per finding, at the step its problem was first seen.

        A finding whose live warning was never given (decided at the end of the
        run, e.g. TR603) is placed at the last step, with ``"at_end": true``.
        """
        last = self.w.step
        out = []
        for f in findings:
            step = None
            for code, at, _, site in self.events:  # the same problem and place first
                if code == f.code and site is not None and (site.path, site.line) == (f.path, f.line):
                    step = at
                    break
            if step is None:
                step = next((at for code, at, _, _ in self.events if code == f.code), None)
            out.append({"code": f.code, "name": f.name, "severity": f.severity.label,
                        "step": max(1, min(step, last) if step is not None else last),
                        "at_end": step is None, "path": f.path, "line": f.line,
                        "message": f.message})
        return out

    # -- output --------------------------------------------------------------------
    def to_json(self, findings: "list[Finding]") -> dict:
        """The ``runtime`` object of the JSON report (schema in docs/runtime-report.md)."""
        def pairs(mapping) -> dict:
            steps = sorted(mapping)
            return {"step": steps, "value": [mapping[s] for s in steps]}

        loss = {s: _mean(v) for s, v in self.loss.items()}
        series = {"loss": pairs(loss), "grad_norm": pairs(self.grad_norm)}
        for name in HOST:
            if name == "cuda_allocated" and not self.cuda:
                continue
            values = self.host[name]
            if name == "lr" and all(v is None for v in values):
                continue
            rounded = [round(v, 7) if isinstance(v, float) and name != "lr" else v
                       for v in values]
            series[name] = {"step": list(self.steps), "value": rounded}
        return {
            "schema": SCHEMA,
            "steps": self.w.step,
            "stride": self.stride,
            "device": "cuda" if self.cuda else "cpu",
            "seconds": round(time.perf_counter() - self._start, 3),
            "series": series,
            "markers": self.markers(findings),
        }


def _mean(values: list[float | None]) -> float | None:
    """Mean loss of a step's backward passes (None when any was NaN/Inf)."""
    if not values or any(v is None for v in values):
        return None
    return sum(values) / len(values)


def _number(value, torch) -> float | None:
    """A learning rate as a float, without reading device memory."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.device.type == "cpu":
        v = float(value)
        return v if math.isfinite(v) else None
    return None  # a CUDA tensor (capturable optimizers): reading it would sync
