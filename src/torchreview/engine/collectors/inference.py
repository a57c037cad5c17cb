"""Where a file that does not train runs its model for predictions."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchreview.engine.anchor import Anchor
from torchreview.engine.collectors.registry import CallNames, collects
from torchreview.engine.facts import _anchor
from torchreview.engine.semantic import dotted

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext


@collects("inference_entry")
def inference_entry(ctx: "FileContext", calls: CallNames) -> Anchor | None:
    """In a file that neither trains, nor calls ``backward``, nor is a test: the first
    function (or module-level statement) that calls a model with autograd off,
    outside ``nn.Module`` classes, in a module that puts a model in eval mode
    (before the call, in ``__init__``, or at import time)."""
    m = ctx.model
    if ctx.training_loops or ctx.is_test_file or "backward" in m.calls_by_name:
        return None
    entry = _inference_entry(ctx)
    return _anchor(ctx, entry) if entry is not None else None


def _inference_entry(ctx: "FileContext") -> ast.AST | None:
    flow = ctx.flow
    m = ctx.model
    evals = [c for c in m.calls_by_name.get("eval", []) + m.calls_by_name.get("train", [])
             if not ctx.in_module_class(c) and (
                 flow.classify(c) == "eval" or dotted(c.func.value if isinstance(c.func, ast.Attribute)
                                                      else c.func) in flow.eval_targets)]
    if not evals:
        return None
    for call in sorted(m.calls, key=lambda c: (c.lineno, c.col_offset)):
        if ctx.in_module_class(call) or not flow.is_model_call(call) or not flow.grad_disabled(call):
            continue
        func = ctx.enclosing_function(call)
        if ctx.advice.smoke_test(call) or ctx.advice.validation_of_training(func):
            continue  # a shape check, or the validation pass of a training module
        if func is None:
            stmt = call
            for anc in ctx.ancestors(call):
                if isinstance(anc, ast.stmt) and isinstance(getattr(anc, "_tr_parent", None), ast.Module):
                    stmt = anc
                    break
            return stmt
        return func
    return None
