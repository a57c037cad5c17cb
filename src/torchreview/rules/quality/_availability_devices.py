"""Tensors sent to the GPU because one exists, met with the caller's tensors (TR403).

Library code that does ``if torch.cuda.is_available(): mask = mask.cuda()``
decides the device from the machine, not from the data it works on. When the
tensor then meets a tensor handed in by the caller (a model's output, boxes), a
caller running the model on the CPU of a GPU machine gets a device mismatch.
Only files that place no model themselves are considered: there the caller
owns every device decision, and the fix is ``.to(<caller tensor>.device)``.
"""

from __future__ import annotations

import ast

_AVAILABLE = "torch.cuda.is_available"
_ARITH = (ast.Mult, ast.Add, ast.Sub, ast.Div, ast.MatMult)


def _available_test(ctx, test) -> bool:
    return any(isinstance(n, ast.Call) and ctx.qualname(n.func) == _AVAILABLE for n in ast.walk(test))


def _key(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return "self." + node.attr
    return None


def _root(expr):
    while isinstance(expr, (ast.Subscript, ast.Attribute, ast.Call)):
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return expr
        expr = expr.value if not isinstance(expr, ast.Call) else expr.func
    return expr


def _places_models(ctx) -> bool:
    for call in ctx.model.calls:
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("cuda", "to") and \
                ctx.kind_of(call.func.value) == "model":
            return True
    return False


def _available_moves(ctx) -> dict:
    """Per scope (class or function): keys of names/attributes moved with ``.cuda()``
    under an ``if torch.cuda.is_available():``."""
    out: dict = {}
    if _AVAILABLE not in ctx.model.called_qualnames:
        return out  # no availability test anywhere (the model's calls are every call of the file)
    for node in ctx.model.nodes_by_type.get(ast.If, ()):
        if not _available_test(ctx, node.test):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Call) and \
                    isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr == "cuda":
                key = _key(stmt.targets[0])
                if key is not None and _key(stmt.value.func.value) == key:
                    scope = ctx.enclosing_class(stmt) if key.startswith("self.") else ctx.enclosing_function(stmt)
                    out.setdefault(id(scope), {})[key] = stmt
    return out


def availability_meets_caller(ctx):
    """``(node where they meet, moved key, move statement, caller expression)``."""
    moves = _available_moves(ctx)
    if not moves or _places_models(ctx):
        return
    for defs in ctx.model.functions.values():
        for func in defs:
            params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]} - {"self"}
            cls = ctx.enclosing_class(func)
            mine = {**moves.get(id(cls), {}), **moves.get(id(func), {})} if cls is not None else \
                moves.get(id(func), {})
            if not mine or not params:
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITH):
                    operands = [node.left, node.right]
                elif isinstance(node, ast.Call) and (ctx.qualname(node.func) or "").startswith("torch"):
                    operands = list(node.args)
                else:
                    continue
                keys = [_key(_root(o)) for o in operands]
                moved = next((k for k in keys if k in mine and k not in params and mine[k].lineno < node.lineno),
                             None)  # a parameter moved by its own function is the caller's tensor, moved
                caller = next((o for o, k in zip(operands, keys) if k in params and k != moved), None)
                if moved is not None and caller is not None:
                    yield node, moved, mine[moved], caller
