"""Small helpers shared by the training-loop rules of this package (TR401-TR418).

Questions about one ``Event`` of a training loop that are wording or pairing
details rather than model facts: which optimizer a ``step``/``zero_grad``
touches, whether a condition only tests that an object exists, how to point
at a loop header.
"""

from __future__ import annotations

import ast




def header_end(loop: ast.AST) -> ast.AST:
    """The node that ends a loop's header (``for x in <iter>:`` / ``while <test>:``)."""
    return loop.iter if isinstance(loop, (ast.For, ast.AsyncFor)) else loop.test  # type: ignore[attr-defined]


def report_loop(ctx, loop: ast.AST, message: str, **kw) -> None:
    ctx.report(loop, message, end_node=header_end(loop), **kw)


def target(ctx, event) -> str | None:
    """The optimizer (or model) an event acts on, as source text: ``optimizer``
    for ``optimizer.step()``/``optimizer.zero_grad()`` and for
    ``scaler.step(optimizer)``; None for ``p.grad = None`` and other forms."""
    node = event.node
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    receiver = node.func.value
    if event.kind == "step" and ctx.kind_of(receiver) == "scaler":
        return ctx.text(node.args[0]) if node.args else None
    if event.kind == "zero_grad" and node.func.attr != "zero_grad":
        return None
    return ctx.text(receiver)


def step_targets(ctx, loop) -> set[str | None]:
    return {target(ctx, e) for e in loop.events if e.kind == "step"}


def same_optimizer(ctx, loop, zero, step) -> bool:
    """Does the ``zero_grad`` event clear the gradients this ``step`` applies?
    Yes when both name the same object, or when the loop steps a single optimizer."""
    z, s = target(ctx, zero), target(ctx, step)
    if z is not None and z == s:
        return True
    return len(step_targets(ctx, loop)) == 1


def runs_with(event, other) -> bool:
    """``event`` runs on every iteration where ``other`` runs: its conditions
    are a subset of ``other``'s (same ``if`` blocks)."""
    ids = {id(c) for c in other.conditions}
    return all(id(c) in ids for c in event.conditions)


def only_existence_checks(ctx, conditions, subject: ast.AST) -> bool:
    """Conditions that merely test that ``subject`` exists (``if scheduler:``,
    ``if scheduler is not None:``), as for an optional scheduler."""
    text = ctx.text(subject)
    for cond in conditions:
        if isinstance(cond, ast.Compare) and len(cond.ops) == 1 and isinstance(cond.ops[0], ast.IsNot) \
                and isinstance(cond.comparators[0], ast.Constant) and cond.comparators[0].value is None:
            cond = cond.left
        if not (isinstance(cond, (ast.Name, ast.Attribute)) and ctx.text(cond) == text):
            return False
    return True


def calls_in(loop: ast.AST):
    """Calls written in the loop body (nested functions excluded)."""
    stack = list(loop.body)  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def uses_framework(ctx) -> bool:
    """Accelerate / Lightning / DeepSpeed / Fabric handle scaling, devices and
    clipping for the user."""
    return any(ctx.model.imports_module(m) for m in
               ("accelerate", "lightning", "pytorch_lightning", "deepspeed", "lightning_fabric"))
