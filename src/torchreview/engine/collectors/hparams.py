"""Hyper-parameters hard-coded as module-level constants that feed training."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchreview.engine.anchor import Anchor
from torchreview.engine.collectors.registry import CallNames, collects
from torchreview.engine.facts import _anchor

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext

# Module-level constants named like hyper-parameters.
_HPARAM = re.compile(
    r"^(?:[A-Z0-9]+_)*(?:LR|LEARNING_RATE|BATCH_SIZE|BS|EPOCHS?|N_EPOCHS|NUM_EPOCHS|MAX_EPOCHS"
    r"|WEIGHT_DECAY|MOMENTUM|HIDDEN_(?:DIM|SIZE|UNITS)|EMBED(?:DING)?_(?:DIM|SIZE)|D_MODEL"
    r"|DROPOUT(?:_RATE|_PROB)?|NUM_LAYERS|N_LAYERS|NUM_HEADS|N_HEADS|WARMUP_STEPS|STEP_SIZE"
    r"|MAX_GRAD_NORM|GRAD_CLIP|CLIP_NORM|ACCUM(?:ULATION)?_STEPS|BETAS)$")
_SINKS = frozenset({"optimizer", "loader", "model", "scheduler"})


def _numeric(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    return False


def _feeds_training(ctx: "FileContext", name: ast.Name) -> bool:
    """Is this use of a constant an argument of an optimizer/loader/model/scheduler
    constructor, or of the ``range(...)`` a ``for`` loop iterates?"""
    child: ast.AST = name
    for anc in ctx.ancestors(name):
        if isinstance(anc, ast.stmt):
            return False
        if isinstance(anc, ast.Call) and child is not anc.func:
            if ctx.kind_of(anc) in _SINKS:
                return True
            holder = getattr(anc, "_tr_parent", None)
            if ctx.qualname(anc.func) == "builtins.range" and isinstance(holder, ast.For) and holder.iter is anc:
                return True
        child = anc
    return False


@collects("hparams")
def hparams(ctx: "FileContext", calls: CallNames) -> dict[str, Anchor]:
    """``LR = 1e-3`` at module level (a numeric constant named like a
    hyper-parameter) read where it feeds training: name -> its assignment, in line order."""
    m = ctx.model
    constants: dict[str, ast.Assign] = {}
    for stmt in m.tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and _HPARAM.match(stmt.targets[0].id) and _numeric(stmt.value):
            constants.setdefault(stmt.targets[0].id, stmt)
    if not constants:
        return {}
    used = set()
    for name in m.nodes_by_type.get(ast.Name, ()):
        if name.id in constants and name.id not in used and isinstance(name.ctx, ast.Load) and \
                _feeds_training(ctx, name):
            used.add(name.id)
    return {constant: _anchor(ctx, constants[constant]) for constant in sorted(used, key=lambda n: constants[n].lineno)}
