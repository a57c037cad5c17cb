from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.semantic import dotted, parent
from torchreview.findings import Severity

_MODES = ("eval", "train")


class TrainEvalToggle(Rule):
    """
    ## What it does
    Flags training that runs in evaluation mode: a `model.eval()` (directly or
    in a function the loop calls) inside the epoch or batch loop while
    `model.train()` is only called before that loop, and a `model.eval()`
    before the training loop that no `model.train()` undoes.

    ## Why is this bad?
    The mode is sticky. After the first validation pass, every later epoch
    trains with dropout switched off and BatchNorm frozen on its running
    statistics: the model still learns, just worse, and nothing crashes.

    ## Example
    ```python
    import torch

    model.train()
    for epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()
        evaluate(model)
    ```

    ## Use instead
    ```python
    import torch

    for epoch in range(10):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()
        evaluate(model)
    ```

    ## Heuristics
    Reads the training loops of the file and their events (same-module calls
    are followed three levels deep). Only models the training loop calls with
    grad enabled count, so `teacher.eval()` for a frozen teacher is fine; a
    model the loop runs only under `no_grad` (the frozen backbone of a linear
    probe, a DQN target network) is put in eval mode on purpose, even at the
    top of the training function and even when the trained head is not
    recognisable as a model by its name. A
    `.train(...)` call on anything that may be a module anywhere in the
    repeating loop, even conditional, is taken as restoring the mode. Modes
    set in other files are not seen; test files are skipped.
    """

    code = "TR504"
    name = "train-eval-toggle"
    severity = Severity.MEDIUM
    kind = "likely-defect"
    severity_reason = (
        "Silently wrong training: later epochs run in eval mode (no dropout, frozen BatchNorm "
        "statistics). A likely defect: a function we cannot follow may switch back."
    )
    summary = "`model.eval()` inside the epoch loop (or before training) with no `model.train()` to undo it"

    def check_file(self, ctx) -> None:
        if ctx.is_test_file:
            return  # tests toggle modes on purpose
        done: set[ast.AST] = set()
        for tl in ctx.training_loops:
            trained = {_forwarded(e.node) for e in tl.events if e.kind == "forward"
                       and isinstance(e.node, ast.Call) and not ctx.in_grad_disabled(e.node)}
            trained.discard(None)
            # a model only ever run under no_grad in the loop (a frozen backbone of a
            # linear probe, a target network) is put in eval mode on purpose
            frozen = {_forwarded(e.node) for e in tl.events if e.kind == "forward"
                      and isinstance(e.node, ast.Call) and ctx.in_grad_disabled(e.node)} - trained
            trained = _Trained(trained, frozen)
            for loop in (tl.node, tl.epoch_loop):
                if loop is None or loop in done:
                    continue
                events = tl.events if loop is tl.node else ctx.flow.events_in(loop.body)
                evals = [e for e in events if e.kind == "eval" and _targets(e, trained)]
                if evals and not any(e.kind == "train" for e in events) and not _any_train_call(loop.body, ctx):
                    done.add(loop)
                    where = "epoch" if loop is tl.epoch_loop else "training"
                    ctx.report(evals[0].anchor,
                               f"{_spelled(evals[0], ctx)} runs inside the {where} loop (line "
                               f"{loop.lineno}) but nothing in that loop calls `.train()` again: from "
                               "the second pass on, training runs in eval mode; call "
                               "`model.train()` at the top of each iteration")
                    break
            else:
                self._eval_before(tl, trained, ctx, done)

    def _eval_before(self, tl, trained, ctx, done) -> None:
        start = tl.epoch_loop if tl.epoch_loop is not None and \
            ctx.enclosing_function(tl.epoch_loop) is tl.function else tl.node
        if start in done or any(e.kind == "train" for e in tl.events):
            return
        if tl.epoch_loop is not None and any(e.kind == "train" for e in ctx.flow.events_in(tl.epoch_loop.body)):
            return
        if _any_train_call(tl.node.body if tl.epoch_loop is None else tl.epoch_loop.body, ctx):
            return
        last = _last_mode_before(start, trained, ctx)
        if last is not None and last.kind == "eval":
            done.add(start)
            ctx.report(last.anchor, f"{_spelled(last, ctx)} is still in effect when the training "
                                    f"loop at line {tl.node.lineno} starts (no `.train()` in between): "
                                    "training runs in eval mode; call `model.train()` before training")


def _forwarded(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        return dotted(func.value)
    return dotted(func)


def _receiver(event) -> str:
    func = event.node.func if isinstance(event.node, ast.Call) else None
    return (dotted(func.value) or "model") if isinstance(func, ast.Attribute) else "model"


def _spelled(event, ctx) -> str:
    text = f"`{_receiver(event)}.eval()`"
    if event.node is not event.anchor and isinstance(event.anchor, ast.Call):
        text += f" (inside `{ctx.text(event.anchor.func)}()`)"
    return text


class _Trained(set):
    """Names of the models the loop trains, plus ``frozen``: those it runs only
    without autograd."""

    def __init__(self, trained: set, frozen: set):
        super().__init__(trained)
        self.frozen = frozen


def _targets(event, trained: set) -> bool:
    """The mode call is about a trained model (or sits in a callee, where names
    differ), not about a model the loop only runs frozen."""
    if event.node is event.anchor and _receiver(event) in getattr(trained, "frozen", ()):
        return False
    return not trained or event.node is not event.anchor or _receiver(event) in trained


def _last_mode_before(node: ast.AST, trained: set, ctx):
    """The last unconditional eval/train event on the path to ``node`` inside its
    function (statements that precede it in each enclosing block)."""
    child = node
    for anc in ctx.ancestors(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(anc, field, None)
            if isinstance(block, list) and child in block:
                for stmt in reversed(block[: block.index(child)]):
                    modes = [e for e in ctx.flow.events_in([stmt]) if e.kind in _MODES and _targets(e, trained)]
                    if modes:
                        last = modes[-1]
                        return last if not last.conditions and last.depth == 0 else None
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or parent(anc) is None:
            return None
        child = anc
    return None


def _any_train_call(body, ctx, depth: int = 3) -> bool:
    """A ``x.train(...)`` call on anything that may be a module (``trainable_module.train()``),
    in ``body`` or in same-module functions it calls."""
    for stmt in body:
        for sub in ast.walk(stmt):
            if not isinstance(sub, ast.Call):
                continue
            func = sub.func
            if isinstance(func, ast.Attribute) and func.attr == "train" and \
                    ctx.kind_of(func.value) in (None, "model") and not (
                        sub.args and isinstance(sub.args[0], ast.Constant) and sub.args[0].value is False):
                return True
            callee = ctx.flow.resolve_local_call(sub) if depth > 0 else None
            if callee is not None and _any_train_call(callee.body, ctx, depth - 1):
                return True
    return False
