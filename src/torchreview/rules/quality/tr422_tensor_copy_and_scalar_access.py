from __future__ import annotations

import ast
import re

from torchreview.catalog import Rule
from torchreview.engine.context import LOSS_FUNCTIONALS
from torchreview.findings import Fix, Severity
from torchreview.fixes import replace_node
from torchreview.rules._helpers import short_text

_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "norm", "std", "var", "median", "amax",
                         "amin", "all", "any", "nansum", "nanmean", "dist", "dot", "trace", "numel"})
_PASS_THROUGH = frozenset({"cpu", "detach", "clone", "cuda", "float", "double"})
_LOSS_NAME = re.compile(r"^(loss|\w+_loss|loss_\w+)$")
_ATOMIC = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


class TensorCopyAndScalarAccess(Rule):
    """
    ## What it does
    Flags `torch.tensor(t)` where `t` is already a tensor, and reading a scalar
    result through `loss.data[0]` or `x.numpy()[0]` (a loss, a reduction such
    as `.sum()`/`.mean()`) instead of `.item()`.

    ## Why is this bad?
    `torch.tensor(t)` copies `t` while warning that the intent is unclear; the
    copy silently drops the autograd history. `t.clone().detach()` says the
    same thing explicitly and keeps dtype and device. A reduction returns a
    0-dimensional tensor: `loss.data[0]` is a pre-0.4 idiom that now raises
    `IndexError: invalid index of a 0-dim tensor`, and `.numpy()[0]` fails the
    same way; `.item()` returns the Python number directly.

    ## Example
    ```python
    import torch

    weights = torch.randn(3)
    frozen = torch.tensor(weights)
    total = weights.sum().data[0]
    ```

    ## Use instead
    ```python
    import torch

    weights = torch.randn(3)
    frozen = weights.clone().detach()
    total = weights.sum().item()
    ```

    ## Fix safety
    `torch.tensor(t)` -> `t.clone().detach()` is safe (same values, dtype and
    device, no graph) when no other argument is passed. `.data[0]` ->
    `.item()` is safe. `.numpy()[0]` -> `.item()` is unsafe: it returns a
    Python number instead of a NumPy scalar.

    ## Heuristics
    `t` must be a tensor by construction (a torch op or factory, a tensor
    method, an annotated `torch.Tensor` parameter); names alone do not count.
    A scalar is a loss (a loss function call or a name such as `loss`,
    `val_loss`) or a full reduction (`.sum()`, `torch.mean(x)`, ...).
    """

    code = "TR422"
    name = "tensor-copy-and-scalar-access"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = "Hygiene: an extra copy with a warning, or an indirect scalar read."
    fixable = "safe"
    summary = "`torch.tensor(t)` on a tensor, or `.data[0]`/`.numpy()[0]` on a scalar instead of `.item()`"
    node_types = (ast.Call, ast.Subscript)
    call_qualnames = frozenset({"torch.tensor"})

    def check(self, node, ctx) -> None:
        if isinstance(node, ast.Call):
            self._copy(node, ctx)
        elif isinstance(node.slice, ast.Constant) and node.slice.value == 0 and type(node.slice.value) is int:
            self._scalar(node, ctx)

    def _copy(self, call: ast.Call, ctx) -> None:
        if ctx.qualname(call.func) != "torch.tensor" or len(call.args) != 1:
            return
        arg = call.args[0]
        if not ctx.flow.known_tensor(arg):
            return
        text = ctx.text(arg)
        source = text if isinstance(arg, _ATOMIC) else f"({text})"
        fix = None if call.keywords else Fix("safe", (replace_node(ctx, call, f"{source}.clone().detach()"),),
                                             "use `.clone().detach()`")
        ctx.report(call, f"`torch.tensor({short_text(ctx, arg)})` copies a tensor: use "
                         f"`{short_text(ctx, arg)}.clone().detach()` (add `.to(...)` for another dtype/device)",
                   fix=fix)

    def _scalar(self, sub: ast.Subscript, ctx) -> None:
        inner = sub.value
        if isinstance(inner, ast.Attribute) and inner.attr == "data":
            how, applicability = ".data[0]", "safe"
            base = inner.value
        elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "numpy" \
                and not inner.args:
            how, applicability = ".numpy()[0]", "unsafe"
            base = inner.func.value
        else:
            return
        while True:  # look through .cpu() / .detach() / .data
            if isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and \
                    base.func.attr in _PASS_THROUGH and not base.args:
                base = base.func.value
            elif isinstance(base, ast.Attribute) and base.attr == "data":
                base = base.value
            else:
                break
        if not _scalar(base, ctx):
            return
        text = ctx.text(base)
        source = text if isinstance(base, _ATOMIC) else f"({text})"
        fix = Fix(applicability, (replace_node(ctx, sub, f"{source}.item()"),), "use `.item()`")
        ctx.report(sub, f"`{short_text(ctx, base)}` is a 0-dim tensor: `{how}` raises an IndexError on it; "
                        "use `.item()` to read the number", fix=fix)


def _scalar(expr: ast.AST, ctx, depth: int = 0) -> bool:
    """A 0-dim tensor: a default-reduced loss or a full reduction."""
    if depth > 4:
        return False
    if isinstance(expr, ast.Name):
        value = ctx.flow.reaching_value_strict(expr)
        if value is not None:
            return _scalar(value, ctx, depth + 1)
        return bool(_LOSS_NAME.match(expr.id)) and ctx.flow.known_tensor(expr) is False and \
            not ctx.model.assignments(expr)[0]
    if not isinstance(expr, ast.Call):
        return False
    if any(k.arg == "reduction" for k in expr.keywords):
        return False
    q = ctx.qualname(expr.func)
    if q is not None:
        last = q.rsplit(".", 1)[-1]
        if q.startswith("torch.nn.functional."):
            return "loss" in last or last in LOSS_FUNCTIONALS or last == "cross_entropy"
        return q.startswith("torch.") and q.count(".") == 1 and last in _REDUCTIONS and \
            len(expr.args) == 1 and not expr.keywords
    if isinstance(expr.func, ast.Attribute) and expr.func.attr in _REDUCTIONS:
        return not expr.args and not any(k.arg == "dim" for k in expr.keywords) and \
            ctx.kind_of(expr.func.value) not in ("model", "optimizer", "loader", "dataset")
    return ctx.kind_of(expr.func) == "loss_fn" or ctx.flow.loss_call(expr) is not None
