"""Hand-written loss scaling that unscales only part of the gradients (TR416).

Mixed-precision trainers written before ``GradScaler`` multiply the loss by a
scale (``(loss * 2 ** self.log_scale).backward()``) and divide the gradients by
it before the optimizer step. Dividing one element of the optimizer's
parameter list (``self.master[0].grad.mul_(1 / 2 ** s)``), outside any loop
over the list, when the list holds one tensor per parameter (a comprehension,
``list(model.parameters())``; a list holding one flattened master tensor is
unscaled whole by ``[0]``), leaves every other parameter updated with gradients still
multiplied by the scale.
"""

from __future__ import annotations

import ast

_UNSCALE = frozenset({"mul_", "div_"})


def _names(expr) -> set[str]:
    return {n.attr if isinstance(n, ast.Attribute) else n.id
            for n in ast.walk(expr) if isinstance(n, (ast.Name, ast.Attribute))}


def _scaled_backward_names(ctx) -> set[str]:
    """Names used in the factor of ``(loss * <factor>).backward()`` (or of a name
    assigned ``loss * <factor>`` that is then backwarded)."""
    out: set[str] = set()
    for call in ctx.model.calls_by_name.get("backward", []):
        if not isinstance(call.func, ast.Attribute):
            continue
        product = call.func.value
        if isinstance(product, ast.Name):
            product = ctx.flow.reaching_value(product)
        if isinstance(product, ast.BinOp) and isinstance(product.op, ast.Mult):
            out |= _names(product)
    return out - {"self"}


def _optimizer_param_lists(ctx) -> set[str]:
    """Source text of expressions a ``torch.optim`` optimizer is built on (``self.master``)."""
    out = set()
    for call in ctx.model.calls:
        q = ctx.qualname(call.func) or ""
        if q.startswith("torch.optim.") and not q.startswith("torch.optim.lr_scheduler"):
            params = ctx.arg(call, "params", 0)
            if isinstance(params, (ast.Name, ast.Attribute)):
                out.add(ctx.text(params))
    return out


def _many_tensors(ctx, holder) -> bool:
    """The list holds one tensor per parameter: built by a comprehension or by
    ``list(...parameters())``."""
    made = ctx.flow.origin(holder, peel=False)
    if isinstance(made, (ast.ListComp, ast.GeneratorExp)):
        return True
    return isinstance(made, ast.Call) and isinstance(made.func, ast.Name) and made.func.id == "list" and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "parameters"
        for n in ast.walk(made))


def partial_unscales(ctx):
    """``(unscale call, parameter list text)``: ``L[k].grad.mul_/div_(<uses the loss
    scale>)`` outside any loop, where ``L`` is an optimizer's parameter list."""
    factors = _scaled_backward_names(ctx)
    if not factors:
        return
    lists = _optimizer_param_lists(ctx)
    for name in _UNSCALE:
        for call in ctx.model.calls_by_name.get(name, []):
            grad = call.func.value if isinstance(call.func, ast.Attribute) else None
            if isinstance(grad, ast.Attribute) and grad.attr == "data":
                grad = grad.value
            if not (isinstance(grad, ast.Attribute) and grad.attr == "grad" and isinstance(grad.value, ast.Subscript)
                    and isinstance(grad.value.slice, ast.Constant) and isinstance(grad.value.slice.value, int)):
                continue
            holder = ctx.text(grad.value.value)
            if not _many_tensors(ctx, grad.value.value):
                continue  # one flat master tensor in a list ([flat]) is unscaled whole by [0]
            if holder not in lists or not (_names(ast.Tuple(elts=list(call.args), ctx=ast.Load())) & factors):
                continue
            if any(isinstance(a, (ast.For, ast.While, ast.comprehension, ast.ListComp, ast.GeneratorExp))
                   for a in ctx.ancestors(call)):
                continue
            yield call, holder
