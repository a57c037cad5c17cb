"""Module copies kept on a device of their own (TR403).

An EMA/teacher copy of a model (``copy.deepcopy(model)``) that the class moves
to a configurable device (``self.ema.to(device=device)``, the device a parameter
of the class) is updated in place from the live model's tensors: arithmetic
in-place ops (``lerp_``, ``add_``, ``mul_`` ...) need both operands on one
device, so an update loop ``for e, m in zip(self.ema.parameters(),
model.parameters()): e.lerp_(m, w)`` that never moves ``m`` fails as soon as the
option is used. ``copy_`` copies across devices and is fine.
"""

from __future__ import annotations

import ast

_ARITH = frozenset({"lerp_", "add_", "sub_", "mul_", "div_", "addcmul_", "addcdiv_"})


def _self_attr(node) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _copies(ctx, cls) -> set[str]:
    """Attributes of ``cls`` assigned a ``deepcopy`` of something (through method chains)."""
    out = set()
    for node in ctx.model.subtree(cls):  # the nodes of ast.walk(cls), from the model's one walk
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_attr(node.targets[0]):
            value = node.value
            while isinstance(value, ast.Call) and not (ctx.qualname(value.func) or "").endswith("deepcopy") \
                    and isinstance(value.func, ast.Attribute):
                value = value.func.value
            if isinstance(value, ast.Call) and (ctx.qualname(value.func) or "").endswith("deepcopy"):
                out.add(_self_attr(node.targets[0]))
    return out


def _configurable_moves(cls, copies: set[str]) -> dict[str, ast.Call]:
    """``self.<copy>.to(device=<a parameter or self attribute>)`` per copy."""
    out = {}
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {a.arg for a in [*method.args.args, *method.args.kwonlyargs]} - {"self"}
        for node in ast.walk(method):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "to" and _self_attr(node.func.value) in copies):
                continue
            device = next((k.value for k in node.keywords if k.arg == "device"), node.args[0] if node.args else None)
            if (isinstance(device, ast.Name) and device.id in params) or _self_attr(device):
                out.setdefault(_self_attr(node.func.value), node)
    return out


def _root(expr) -> str | None:
    """``t`` for ``t``, ``t.mul_(d)``, ``t.data``: the name an in-place chain starts from."""
    while isinstance(expr, (ast.Call, ast.Attribute)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def _rebound(loop, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
               for stmt in loop.body for n in ast.walk(stmt))


def unmoved_copy_updates(ctx):
    """``(in-place call, copy attribute, move call, operand name)`` for updates of a
    copy kept on a configurable device from tensors that are not moved to it."""
    if not any(q.endswith("deepcopy") for q in ctx.model.called_qualnames):
        return  # no copy anywhere (``_copies`` finds none in any class)
    for cls in ctx.model.classes.values():
        copies = _copies(ctx, cls)
        moves = _configurable_moves(cls, copies) if copies else {}
        if not moves:
            continue
        for loop in (n for n in ast.walk(cls) if isinstance(n, ast.For)):
            it, target = loop.iter, loop.target
            if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "zip"
                    and len(it.args) == 2 and isinstance(target, ast.Tuple) and len(target.elts) == 2
                    and all(isinstance(e, ast.Name) for e in target.elts)):
                continue
            sides = [next((a for a in moves if any(_self_attr(n) == a for n in ast.walk(arg))), None)
                     for arg in it.args]
            if (sides[0] is None) == (sides[1] is None):
                continue  # neither or both sides are the copy
            mine = 0 if sides[0] is not None else 1
            copy_name, other = target.elts[mine].id, target.elts[1 - mine].id
            if _rebound(loop, other):
                continue
            for node in (n for stmt in loop.body for n in ast.walk(stmt)):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in _ARITH and _root(node.func.value) == copy_name and any(
                            isinstance(a, ast.Name) and a.id == other for a in node.args):
                    yield node, sides[mine], moves[sides[mine]], other
