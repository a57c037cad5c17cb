"""Small helpers shared by the training-loop rules of this package (TR401-TR418).

Questions about one ``Event`` of a training loop that are wording or pairing
details rather than model facts: which optimizer a ``step``/``zero_grad``
touches, whether a condition only tests that an object exists, how to point
at a loop header.
"""

from __future__ import annotations

import ast

from torchreview.engine.context import ancestors



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
    if _part_of_a_model(ctx, zero):
        # `model.generator.zero_grad()` while one optimizer steps all of `model`: only that
        # part's gradients are cleared, on purpose (TranAD's GAN trains one half per step)
        return False
    return len(step_targets(ctx, loop)) == 1


def _part_of_a_model(ctx, zero) -> bool:
    """``zero`` is ``<model>.<part>.zero_grad()``: a submodule of a model (not an optimizer)."""
    node = zero.node
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "zero_grad"):
        return False
    receiver = node.func.value
    return isinstance(receiver, ast.Attribute) and ctx.kind_of(receiver) != "optimizer" and \
        isinstance(receiver.value, (ast.Name, ast.Attribute)) and ctx.kind_of(receiver.value) == "model" and \
        not (isinstance(receiver.value, ast.Name) and receiver.value.id == "self")


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


def _models_in(ctx, params: ast.AST | None, hops: int = 2) -> set[str]:
    """The modules whose ``.parameters()`` an expression gathers, as source text
    (``netD.parameters()``, ``list(self.G.parameters())``, a name holding one)."""
    if params is None:
        return set()
    out = {ctx.text(n.func.value) for n in ast.walk(params)
           if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
           and n.func.attr in ("parameters", "named_parameters")}
    if not out and hops and isinstance(params, (ast.Name, ast.Attribute)):
        value = ctx.flow.origin(params, peel=False)
        if value is not params:
            return _models_in(ctx, value, hops - 1)
    return out


def step_receiver(ctx, event) -> ast.AST | None:
    """The optimizer expression of a ``step`` event (``opt`` in ``opt.step()`` and
    ``scaler.step(opt)``)."""
    node = event.node
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if ctx.kind_of(node.func.value) == "scaler":
        return node.args[0] if node.args else None
    return node.func.value


def clip_owner(ctx, loop, clip) -> str | None:
    """In a loop that steps several optimizers (GAN generator and critic), the
    optimizer (as ``target`` text) built on the parameters that ``clip`` clips;
    None when the loop steps one optimizer or the owner is not known."""
    steps = [e for e in loop.events if e.kind == "step"]
    if len({target(ctx, e) for e in steps} - {None}) < 2 or not isinstance(clip.node, ast.Call):
        return None
    clipped = _models_in(ctx, ctx.arg(clip.node, "parameters", 0))
    if not clipped:
        return None
    owners = set()
    for e in steps:
        receiver = step_receiver(ctx, e)
        ctor = ctx.flow.origin(receiver, peel=False) if receiver is not None else None
        if isinstance(ctor, ast.Call) and _models_in(ctx, ctx.arg(ctor, "params", 0)) & clipped:
            owners.add(target(ctx, e))
    owners.discard(None)
    return owners.pop() if len(owners) == 1 else None


_ONE_SHOT_CALLS = frozenset({"builtins.filter", "builtins.map", "builtins.iter", "itertools.chain"})


def spent_iterator(ctx, loop, clip) -> ast.AST | None:
    """The one-shot iterator ``clip`` is handed when it was made once, outside the loop that
    clips on every pass (``params = self.parameters()`` before the loop, then
    ``clip_grad_norm_(params, ...)`` each step): the first call uses it up and every later
    call clips nothing. None for a list, a fresh ``.parameters()`` in the call, or an
    iterator the loop makes anew."""
    if not isinstance(clip.node, ast.Call):
        return None
    params = ctx.arg(clip.node, "parameters", 0)
    if not isinstance(params, (ast.Name, ast.Attribute)):
        return None
    value = ctx.flow.origin(params, peel=False)
    if value is params:
        return None
    one_shot = isinstance(value, ast.GeneratorExp) or isinstance(value, ast.Call) and (
        isinstance(value.func, ast.Attribute) and value.func.attr == "parameters" and not value.args
        or ctx.qualname(value.func) in _ONE_SHOT_CALLS)
    if not one_shot or any(a is loop.node for a in ancestors(value)):
        return None
    # made outside the loop (or the step function) that runs the clip on every pass
    return value if any(a is loop.node for a in ancestors(clip.node)) else None
