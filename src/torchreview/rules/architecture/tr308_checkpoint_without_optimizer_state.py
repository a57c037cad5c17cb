from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import FunctionNode, ancestors, dotted
from torchreview.findings import Severity

_ORDERING = (ast.Gt, ast.Lt, ast.GtE, ast.LtE)


class CheckpointWithoutOptimizerState(Rule):
    """
    ## What it does
    Flags checkpoints saved from the training loop (inside the epoch or step
    loop, or in a helper it calls) that contain the model's `state_dict()`
    but not the optimizer's, or not the scheduler's when the loop steps a
    scheduler.

    ## Why is this bad?
    Resuming from such a file restarts the optimizer from zero: Adam's
    moment estimates and step counts are lost, momentum is reset, and the
    learning-rate schedule starts over, so the resumed run is not the run
    that was interrupted (often a loss spike, sometimes divergence).

    ## Example
    ```python
    import torch

    def fit(model, loader, optimizer, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
            torch.save({"epoch": epoch, "model": model.state_dict()}, "last.pt")
    ```

    ## Use instead
    ```python
    import torch

    def fit(model, loader, optimizer, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
            torch.save({"epoch": epoch, "model": model.state_dict(),
                        "optimizer": optimizer.state_dict()}, "last.pt")
    ```

    ## Heuristics
    Dict literals, `dict(...)` calls and names bound to them (with later
    `ckpt["key"] = ...` additions in the same function) are read; a `**`
    splat keeps the rule quiet. A bare `torch.save(model.state_dict(), ...)`
    in the loop is reported only when it is not a "best model" export (not
    under an `if` comparing a metric, nor under a name containing `best`),
    and only when no other save in the loop stores the optimizer. Saves
    after the loop (final weights) are never reported.
    """

    code = "TR308"
    name = "checkpoint-without-optimizer-state"
    severity = Severity.LOW
    severity_reason = (
        "Resume restarts the optimizer state (momentum, Adam moments): training continues, slightly "
        "differently."
    )
    summary = "training checkpoint saves the model but not the optimizer (or scheduler) state"

    def check_file(self, ctx) -> None:
        if "torch.save" not in ctx.model.called_qualnames:
            return
        saves = [c for c in ctx.model.calls if ctx.qualname(c.func) == "torch.save"]
        if not saves or not ctx.training_loops:
            return
        for tl in ctx.training_loops:
            regions = [n for n in (tl.epoch_loop, tl.node) if n is not None]
            in_loop = [s for s in saves if self._inside(s, regions, ctx)]
            if not in_loop:
                continue
            has_scheduler = tl.has("sched_step") or any(
                isinstance(n, ast.Call) and ctx.flow.classify(n) == "sched_step" for n in ast.walk(regions[0]))
            contents = {id(s): self._contents(s, ctx) for s in in_loop}
            saves_optimizer = any(c is not None and c[1] for c in contents.values())
            for save in in_loop:
                content = contents[id(save)]
                if content is None:
                    continue
                model_state, optim_state, sched_state, bare = content
                if not model_state:
                    continue
                if bare and (saves_optimizer or self._best_export(save, regions)):
                    continue
                if not optim_state:
                    extra = " and the scheduler's" if has_scheduler else ""
                    ctx.report(save, f"this checkpoint, saved during training, holds the model weights but not "
                                     f"the optimizer state{extra}: a resumed run restarts Adam moments/momentum "
                                     "and the schedule; add `optimizer.state_dict()`"
                                     f"{' and `scheduler.state_dict()`' if has_scheduler else ''}")
                elif has_scheduler and not sched_state:
                    ctx.report(save, "this checkpoint holds the model and optimizer but not the learning-rate "
                                     "scheduler, which this loop steps: add `scheduler.state_dict()` so a "
                                     "resumed run continues the schedule")
            saves = [s for s in saves if s not in in_loop]

    @staticmethod
    def _inside(save, regions, ctx, depth: int = 2) -> bool:
        chain = set(ctx.ancestors(save))
        if any(r in chain for r in regions):
            return True
        func = ctx.enclosing_function(save)
        if func is None or depth == 0:
            return False
        return any(CheckpointWithoutOptimizerState._inside(site, regions, ctx, depth - 1)
                   for site in ctx.flow.call_sites(func))

    def _contents(self, save, ctx):
        """(model state?, optimizer state?, scheduler state?, bare state_dict?) or None when unknown."""
        obj = ctx.arg(save, "obj", 0)
        if obj is None:
            return None
        if _state_dict_of(obj, ctx) == "model":
            return True, False, False, True
        entries = self._entries(obj, ctx)
        if entries is None:
            return None
        kinds = {_state_dict_of(v, ctx) for _, v in entries}
        keys = " ".join(k.lower() for k, _ in entries if k)
        model = "model" in kinds or any(w in keys for w in ("model", "state_dict", "net", "weights"))
        optim = "optimizer" in kinds or "optim" in keys
        sched = "scheduler" in kinds or "sched" in keys
        return model, optim, sched, False

    def _entries(self, obj, ctx, depth: int = 2):
        if isinstance(obj, ast.Dict):
            if any(k is None for k in obj.keys):
                return None
            return [(k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else "", v)
                    for k, v in zip(obj.keys, obj.values)]
        if isinstance(obj, ast.Call) and ctx.qualname(obj.func) == "builtins.dict":
            if obj.args or any(kw.arg is None for kw in obj.keywords):
                return None
            return [(kw.arg, kw.value) for kw in obj.keywords]
        if isinstance(obj, ast.Name) and depth:
            values, _ = ctx.model.assignments(obj)
            dicts = [e for v in values if (e := self._entries(v, ctx, depth - 1)) is not None]
            if len(dicts) != len(values) or not dicts:
                return None
            scope = ctx.model.scope_of(obj)
            extra = [(k.slice.value if isinstance(k.slice, ast.Constant) and isinstance(k.slice.value, str) else "",
                      a.value)
                     for a in ctx.model.nodes_by_type.get(ast.Assign, ()) for k in a.targets
                     if isinstance(k, ast.Subscript) and isinstance(k.value, ast.Name) and k.value.id == obj.id
                     and ctx.model.scope_of(a) is scope]
            return [entry for d in dicts for entry in d] + extra
        return None

    @staticmethod
    def _best_export(save, regions) -> bool:
        for anc in ancestors(save):
            if anc in regions or isinstance(anc, FunctionNode):
                return False
            if isinstance(anc, ast.If) and (
                    (isinstance(anc.test, ast.Compare) and any(isinstance(op, _ORDERING) for op in anc.test.ops))
                    or any("best" in (dotted(n) or "").lower() for n in ast.walk(anc.test))):
                return True
        return False


def _state_dict_of(expr, ctx) -> str | None:
    """`x.state_dict()` -> the kind of `x` (model/optimizer/scheduler/scaler) or a guess from its name."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "state_dict"):
        return None
    receiver = expr.func.value
    kind = ctx.kind_of(receiver)
    if kind in ("model", "optimizer", "scheduler", "scaler"):
        return kind
    text = (dotted(receiver) or "").lower()
    for word, guess in (("optim", "optimizer"), ("sched", "scheduler"), ("scaler", "scaler")):
        if word in text:
            return guess
    return "model" if any(w in text for w in ("model", "net", "module", "encoder", "decoder")) else None
