"""Per-optimizer gradient checks: TR401, TR601, TR602, TR603 and DDP usage.

One :class:`OptTracker` per optimizer.  Every trainable parameter gets a
tensor hook that fires when a gradient arrives (before it is accumulated), so
we know which parameters a backward pass reached and, for a few sampled
parameters, whether ``.grad`` was reset since the last ``step()``.

Gradient norms are computed on the device each step and written into a small
device buffer; the buffer is read back (one host sync) only every
``check_every`` steps and at exit.
"""

from __future__ import annotations

import time
import weakref
from statistics import median
from typing import TYPE_CHECKING

from torchreview.findings import Finding
from torchreview.runtime._env import current_site, plural, short_list
from torchreview.runtime.codes import runtime_finding

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.runtime.watcher import Watcher

_SAMPLED = 4  # parameters whose reset state is followed for TR401
_VERIFY = 3  # one-off value checks guarding against resets invisible to versions


class OptTracker:
    def __init__(self, watcher: "Watcher", optimizer) -> None:
        self.w = watcher
        self.ref = weakref.ref(optimizer)
        self.cls = type(optimizer).__name__
        self.params = [p for g in optimizer.param_groups for p in g["params"]]
        n = len(self.params)
        self.n = n
        self.ids = frozenset(id(p) for p in self.params)
        self.steps = 0
        self.site = None
        self.ever_grad = [False] * n
        self.missing = n
        self.used = [0] * n
        self.unused_steps = [0] * n
        self.usage_steps = 0
        self.hooked = [False] * n
        self.handles = []
        # TR401: reset state of a few sampled parameters
        trainable = [i for i, p in enumerate(self.params) if p.requires_grad]
        stride = max(1, len(trainable) // _SAMPLED)
        self.sampled = trainable[::stride][:_SAMPLED]
        self.slot = {i: j for j, i in enumerate(self.sampled)}
        k = len(self.sampled)
        self.rec_ref = [None] * k
        self.rec_ver = [0] * k
        self.n_arr = [0] * k
        self.last_ref = [None] * k
        self.last_ver = [0] * k
        self.carried = [False] * k
        self.verify_left = _VERIFY
        self.tr401_off = False
        self.carried_steps = 0
        self.judged_steps = 0
        self.first_carried = 0
        # TR601/TR602: device buffer of per-parameter gradient norms
        self.buf = None
        self.rows: list[int] = []  # this optimizer's step count of each buffer row
        self.row_steps: list[int] = []  # the run's step number (all optimizers) of each row
        self.idx_cache: dict[tuple[bool, ...], object] = {}
        self.last_flush = time.perf_counter()
        self.history: list[float] = []
        self.nonfinite_step = 0
        self.nonfinite_names: list[str] = []
        self.nonfinite_steps = 0
        self.spike: tuple[int, float, float] | None = None
        self.spikes = 0
        self.norm_failed = False
        self.labels: list[str] | None = None
        for i, p in enumerate(self.params):
            if p.requires_grad and p.is_leaf:
                self.handles.append(p.register_hook(self._hook_for(i, p)))
                self.hooked[i] = True

    # -- gradient arrival (autograd thread) ------------------------------------
    def _hook_for(self, i: int, param):
        j = self.slot.get(i)
        if j is None:
            def arrived(grad):
                self.used[i] += 1
            return arrived

        pref = weakref.ref(param)

        def arrived_sampled(grad):
            self.used[i] += 1
            p = pref()
            if p is not None and not self.tr401_off:
                self._follow_reset(j, p)
        return arrived_sampled

    def _follow_reset(self, j: int, p) -> None:
        g = p.grad
        if self.n_arr[j] == 0:
            rec = self.rec_ref[j]
            carried = (g is not None and rec is not None and rec() is g
                       and g._version == self.rec_ver[j])
            if carried and self.verify_left > 0:
                # ``p.grad.data.zero_()`` does not bump the version counter: check
                # the values once (a bounded number of syncs per run, not per step).
                self.verify_left -= 1
                if not bool(g.detach().ne(0).any()):
                    self.tr401_off = True
                    carried = False
            self.carried[j] = carried
        elif self.carried[j]:
            last = self.last_ref[j]
            if g is None or last is None or last() is not g or g._version != self.last_ver[j] + 1:
                self.carried[j] = False  # reset between two backward passes
        self.n_arr[j] += 1
        if g is None:
            self.last_ref[j] = None
        else:
            self.last_ref[j] = weakref.ref(g)
            self.last_ver[j] = g._version

    # -- optimizer.step() ----------------------------------------------------------
    def has_grads_for(self, param_ids: frozenset[int]) -> bool:
        return any(p.grad is not None for p in self.params if id(p) in param_ids)

    def pre_step(self) -> None:
        self.steps += 1
        if self.site is None:
            self.site = current_site()
        if self.labels is None:  # name parameters while their modules are alive
            self.labels = [self.w.param_name(p) for p in self.params]
        grads, present = [], []
        for p in self.params:
            g = p.grad
            if g is None or g.is_sparse:
                present.append(False)
            else:
                present.append(True)
                grads.append(g)
        if self.missing:
            for i, ok in enumerate(present):
                if ok and not self.ever_grad[i]:
                    self.ever_grad[i] = True
                    self.missing -= 1
        self._usage()
        self._judge_reset()
        if grads and not self.norm_failed:
            self._record_norms(grads, present)

    def _usage(self) -> None:
        used = self.used
        if any(used):
            self.usage_steps += 1
            for i, count in enumerate(used):
                if count == 0 and self.hooked[i]:
                    self.unused_steps[i] += 1
        self.used[:] = [0] * self.n

    def _judge_reset(self) -> None:
        if self.tr401_off:
            return
        verdicts = []
        for j, i in enumerate(self.sampled):
            if self.rec_ref[j] is None or self.n_arr[j] == 0:
                continue
            last = self.last_ref[j]
            verdicts.append(self.carried[j] and last is not None
                            and last() is self.params[i].grad)
        if not verdicts:
            return
        self.judged_steps += 1
        if any(verdicts):
            self.carried_steps += 1
            if not self.first_carried:
                self.first_carried = self.steps
                self.w.warn("TR401", "optimizer.step() applied gradients carried over from "
                                     "the previous step (no zero_grad in between)", self.site)

    def post_step(self) -> None:
        for j, i in enumerate(self.sampled):
            g = self.params[i].grad
            self.rec_ref[j] = weakref.ref(g) if g is not None else None
            self.rec_ver[j] = g._version if g is not None else 0
            self.n_arr[j] = 0
            self.carried[j] = False
        if self.buf is not None and self.rows:
            full = len(self.rows) >= self.buf.shape[0]
            if full or (len(self.rows) >= 10 and time.perf_counter() - self.last_flush > 5.0):
                self.flush()

    def _record_norms(self, grads, present) -> None:
        torch = self.w.torch
        try:
            try:
                norms = torch._foreach_norm(grads, 2, dtype=torch.float32)
            except (RuntimeError, TypeError):
                norms = [torch.linalg.vector_norm(g, dtype=torch.float32) for g in grads]
            device = norms[0].device
            if any(t.device != device for t in norms):
                norms = [t.to(device, non_blocking=True) for t in norms]
            vec = torch.stack(norms)
            if self.buf is None:
                self.buf = torch.zeros(self.w.check_every, self.n, dtype=torch.float32,
                                       device=device)
            elif len(self.rows) >= self.buf.shape[0]:
                self.flush()  # post_step was skipped (the step raised)
            row = self.buf[len(self.rows)]
            if len(grads) == self.n:
                row.copy_(vec)
            else:
                idx = self.idx_cache.get(key := tuple(present))
                if idx is None:
                    idx = torch.tensor([i for i, ok in enumerate(present) if ok], device=device)
                    self.idx_cache[key] = idx
                row.zero_()
                row.index_copy_(0, idx, vec)
            self.rows.append(self.steps)
            self.row_steps.append(self.w.step + 1)
        except Exception as exc:  # never break training because of a check
            self.norm_failed = True
            self.w.internal_error("gradient norms", exc)

    def flush(self) -> None:
        """Read the norm buffer back (the only host sync of these checks)."""
        self.w.losses.flush()
        if self.buf is None or not self.rows:
            return
        torch = self.w.torch
        steps, self.rows = self.rows, []
        run_steps, self.row_steps = self.row_steps, []
        self.last_flush = time.perf_counter()
        with self.w.own_sync():
            host = self.buf[: len(steps)].detach().cpu().to(torch.float64)
        finite = torch.isfinite(host)
        totals = host.pow(2).sum(dim=1).sqrt().tolist()
        row_ok = finite.all(dim=1).tolist()
        self.w.series.add_grad_norms(run_steps, totals, row_ok)
        for k, (step, ok) in enumerate(zip(steps, row_ok)):
            if not ok:
                self.nonfinite_steps += 1
                if not self.nonfinite_step:
                    self.nonfinite_step = step
                    bad = (~finite[k]).nonzero().flatten().tolist()
                    self.nonfinite_names = self.names(bad)
                    self.w.warn("TR601", f"non-finite gradients at step {step} in "
                                         f"{short_list(self.nonfinite_names, 3)}", self.site,
                                step=run_steps[k])
                continue
            self._spike_check(step, totals[k], run_steps[k])

    def _spike_check(self, step: int, norm: float, run_step: int) -> None:
        window = self.history[-100:]
        if len(window) >= 20:
            med = median(window)
            # Heuristic: below 1e-3 a "spike" cannot move the weights much, and
            # near-zero medians (a saturated model) make ratios meaningless.
            if med > 1e-8 and norm > self.w.spike_factor * med and norm > 1e-3:
                self.spikes += 1
                if self.spike is None:
                    self.spike = (step, norm, med)
                    self.w.warn("TR602", f"gradient norm {norm:.3g} at step {step} is "
                                         f"{norm / med:.0f}x the running median {med:.3g}",
                                self.site, step=run_step)
        self.history.append(norm)
        if len(self.history) > 400:
            del self.history[:200]

    def remove_hooks(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()

    # -- report ------------------------------------------------------------------
    def names(self, indices) -> list[str]:
        labels = self.labels
        return [labels[i] if labels else self.w.param_name(self.params[i]) for i in indices]

    def findings(self, ddp_param_ids: frozenset[int]) -> list[Finding]:
        out: list[Finding] = []
        site = self.site
        if site is None:
            return out
        if self.carried_steps:
            out.append(runtime_finding("TR401", (
                f"in {self.carried_steps} of {plural(self.judged_steps, 'step')} "
                f"(first: step {self.first_carried}) {self.cls}.step() applied gradients "
                "carried over from earlier steps: nothing reset `.grad` between one "
                "`step()` and the next `backward()`, so old gradients are added again. "
                "Call `optimizer.zero_grad()` once per step (right after `step()` when "
                "accumulating on purpose)."), site))
        if self.nonfinite_step:
            loss = self.w.losses.describe()
            out.append(runtime_finding("TR601", (
                f"non-finite gradients (NaN/Inf) first at step {self.nonfinite_step} in "
                f"{short_list(self.nonfinite_names)}; {plural(self.nonfinite_steps, 'step')} "
                f"had NaN/Inf gradients in total{'; ' + loss if loss else ''}. Look for the "
                "cause at that step (log of 0, division by 0, fp16 overflow, a too-high "
                "learning rate) and clip gradients or skip non-finite steps."), site))
        if self.spike is not None:
            step, norm, med = self.spike
            out.append(runtime_finding("TR602", (
                f"gradient norm {norm:.4g} at step {step} is {norm / med:.0f}x the running "
                f"median ({med:.4g}); {plural(self.spikes, 'spike')} in total. Clip "
                "gradients (`clip_grad_norm_`), lower the learning rate or add warm-up, "
                "and check that step's batch."), site))
        if self.steps >= 3:
            dead = [i for i, p in enumerate(self.params)
                    if not self.ever_grad[i] and p.requires_grad and id(p) not in ddp_param_ids]
            if dead:
                out.append(runtime_finding("TR603", (
                    f"{plural(len(dead), 'parameter')} given to {self.cls} never received a "
                    f"gradient in {plural(self.steps, 'step')}: {short_list(self.names(dead))}. "
                    "They sit in a branch `forward` never takes or behind a `.detach()`/"
                    "`no_grad`; remove them from the model/optimizer or reconnect them."),
                    site))
        return out

    def unused_in_ddp(self, ddp_param_ids: frozenset[int]) -> list[tuple[int, int]]:
        """(index, steps unused) of DDP parameters that missed a gradient in some step."""
        return [(i, n) for i, n in enumerate(self.unused_steps)
                if n and id(self.params[i]) in ddp_param_ids]
