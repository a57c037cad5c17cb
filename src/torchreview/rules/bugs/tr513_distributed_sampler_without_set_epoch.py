from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity

_SAMPLER = ("torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler")
_FRAMEWORKS = ("lightning", "pytorch_lightning", "accelerate", "transformers", "ignite", "composer",
               "mmengine", "detectron2", "fastai")


class DistributedSamplerWithoutSetEpoch(Rule):
    """
    ## What it does
    Flags a shuffling `DistributedSampler` in a file whose epoch loop never
    calls `sampler.set_epoch(epoch)` (nor `loader.sampler.set_epoch(...)`).

    ## Why is this bad?
    `DistributedSampler` seeds its shuffle with `seed + epoch`, and the epoch
    only changes through `set_epoch`. Without it every epoch visits the data
    in exactly the same order on every rank: the point of shuffling is lost,
    and runs converge worse without any error to notice.

    ## Example
    ```python
    from torch.utils.data import DataLoader, DistributedSampler

    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader, DistributedSampler

    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(10):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
    ```

    ## Heuristics
    Reported only when the same file has a training loop with an epoch loop
    and no `.set_epoch(...)` call at all (any receiver, any function, since
    helpers often do it). Samplers built with `shuffle=False`, and files
    that use a training framework (which sets the epoch itself), are left
    alone. A loader helper of another project module that builds a shuffling
    sampler (`loader = make_loader(...)` from `data.py`, the project index)
    counts as a sampler built here, reported at the helper's call.
    """

    code = "TR513"
    name = "distributed-sampler-without-set-epoch"
    severity = Severity.MEDIUM
    severity_reason = "Silently worse training: every epoch uses the same shuffle."
    summary = "`DistributedSampler` without `sampler.set_epoch(epoch)` in the epoch loop"

    def check_file(self, ctx) -> None:
        samplers = [c for c in ctx.model.calls if ctx.qualname(c.func) in _SAMPLER and not _no_shuffle(c)]
        # a loader helper of another project module that builds a shuffling DistributedSampler
        helpers = [c for c in ctx.model.calls if ctx.qualname(c.func) not in _SAMPLER and
                   "distributed_sampler" in getattr(ctx.project.function(ctx.qualname(c.func)), "builds", ())]
        samplers += helpers
        if not samplers or "set_epoch" in ctx.model.calls_by_name:
            return
        if any(ctx.model.imports_module(f) for f in _FRAMEWORKS):
            return
        epoch_loops = [tl.epoch_loop for tl in ctx.training_loops if tl.epoch_loop is not None]
        if not epoch_loops:
            return
        line = epoch_loops[0].lineno
        for call in samplers:
            if call in helpers:
                ctx.report(call, f"`{ctx.text(call.func)}()` builds a shuffling `DistributedSampler` (in another "
                                 f"module of the project), but the epoch loop (line {line}) never calls "
                                 "`set_epoch(epoch)` on it: every epoch repeats the same order; call "
                                 "`loader.sampler.set_epoch(epoch)` at the start of each epoch")
                continue
            ctx.report(call, f"this `DistributedSampler` shuffles, but the epoch loop (line {line}) never "
                             "calls `sampler.set_epoch(epoch)`: every epoch repeats the same order; "
                             "call it at the start of each epoch")


def _no_shuffle(call: ast.Call) -> bool:
    return any(k.arg == "shuffle" and isinstance(k.value, ast.Constant) and k.value.value is False
               for k in call.keywords) or (len(call.args) > 3 and isinstance(call.args[3], ast.Constant)
                                           and call.args[3].value is False)
