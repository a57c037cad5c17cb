from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Fix, Severity
from torchreview.rules._helpers import short_text

_SIGMOIDS = frozenset({"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"})


class BceOnSigmoid(Rule):
    """
    ## What it does
    Flags `nn.BCELoss`/`F.binary_cross_entropy` applied to the output of a
    sigmoid (`torch.sigmoid`, `.sigmoid()`, `nn.Sigmoid`, a model ending in
    one), and offers to fuse the two into the `..._with_logits` form when both
    are written in the same expression.

    ## Why is this bad?
    Computing `sigmoid` and then `log` separately loses precision: for large
    logits the sigmoid rounds to exactly 0 or 1, `BCELoss` clamps the log to
    -100, and the gradient vanishes or the loss saturates. `BCEWithLogitsLoss`
    uses the log-sum-exp trick on the logits and is stable everywhere (and it
    is the form that autocast allows).

    ## Example
    ```python
    import torch
    import torch.nn.functional as F

    loss = F.binary_cross_entropy(torch.sigmoid(logits), targets)
    ```

    ## Use instead
    ```python
    import torch.nn.functional as F

    loss = F.binary_cross_entropy_with_logits(logits, targets)
    ```

    ## Fix safety
    The fix (for `F.binary_cross_entropy(torch.sigmoid(z), y)` and
    `nn.BCELoss(...)(z.sigmoid(), y)` written in one expression) is unsafe:
    the values change slightly (in the stable direction), and code that
    relied on `BCELoss`'s clamping of extreme inputs behaves differently.
    When the sigmoid happens elsewhere (a model ending in `nn.Sigmoid`, a
    separate assignment) only a finding is reported: the model also needs
    to stop applying the sigmoid.

    ## Heuristics
    The producer of the input is followed through assignments, reshapes,
    `self` attributes and same-module `nn.Module` classes; models defined
    elsewhere are not assumed to end in a sigmoid.
    """

    code = "TR412"
    name = "bce-on-sigmoid"
    severity = Severity.MEDIUM
    confidence = "high"
    severity_reason = (
        "Unstable training: saturated sigmoids give a clamped log(0) and vanishing gradients."
    )
    fixable = "unsafe"
    summary = "`BCELoss` on sigmoid output: use `BCEWithLogitsLoss` on the logits"
    node_types = (ast.Call,)

    def check(self, node: ast.Call, ctx) -> None:
        loss = ctx.flow.loss_call(node)
        if loss is None or loss[0] != "binary_cross_entropy":
            return
        inp = ctx.arg(node, "input", 0)
        if inp is None or ctx.flow.activation_of(inp) != "sigmoid":
            return
        instead = "`F.binary_cross_entropy_with_logits`" if loss[1] is None else "`nn.BCEWithLogitsLoss`"
        ctx.report(node, f"`{short_text(ctx, node.func)}` receives `{short_text(ctx, inp)}`, a sigmoid "
                         f"output: use {instead} on the logits instead, which is numerically stable",
                   fix=_fix(ctx, node, inp, loss[1]))


def _fix(ctx, call: ast.Call, inp: ast.AST, ctor: ast.Call | None) -> Fix | None:
    from torchreview.fixes import replace_node

    logits = _sigmoid_argument(ctx, inp)
    if logits is None or call.args[:1] != [inp]:
        return None
    func = call.func
    if ctor is None:
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name != "binary_cross_entropy":
            return None
        new_func = ctx.text(func) + "_with_logits"
    elif func is ctor and ctx.text(ctor.func).endswith("BCELoss"):
        new_func = ctx.text(ctor.func)[: -len("BCELoss")] + "BCEWithLogitsLoss" + ctx.text(ctor)[len(ctx.text(ctor.func)):]
    else:
        return None
    edits = (replace_node(ctx, func, new_func), replace_node(ctx, inp, ctx.text(logits)))
    return Fix("unsafe", edits, "fuse the sigmoid into `binary_cross_entropy_with_logits`")


def _sigmoid_argument(ctx, inp: ast.AST) -> ast.AST | None:
    """``z`` of ``torch.sigmoid(z)`` / ``z.sigmoid()`` written in place."""
    if not isinstance(inp, ast.Call) or inp.keywords:
        return None
    if ctx.qualname(inp.func) in _SIGMOIDS and len(inp.args) == 1:
        return inp.args[0]
    if isinstance(inp.func, ast.Attribute) and inp.func.attr == "sigmoid" and not inp.args and \
            ctx.qualname(inp.func) is None:
        return inp.func.value
    return None
