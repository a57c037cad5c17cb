from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Fix, Severity
from torchreview.rules._helpers import TRAINED_ON_NOISE, short_text

_SIGMOIDS = frozenset({"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"})


class BceOnSigmoid(Rule):
    """
    ## What it does
    Flags `nn.BCELoss`/`F.binary_cross_entropy` applied to the output of a
    sigmoid (`torch.sigmoid`, `.sigmoid()`, `nn.Sigmoid`, a model ending in
    one), and offers to fuse the two into the `..._with_logits` form when both
    are written in the same expression; and a sigmoid output fed to the
    `..._with_logits` form, which applies the sigmoid a second time.

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
    to stop applying the sigmoid. For a double sigmoid written in place
    (`F.binary_cross_entropy_with_logits(torch.sigmoid(z), y)`) the fix
    passes `z`; it is unsafe because the loss values change (they become
    right).

    ## Heuristics
    In a training loop whose every loader reads random numbers (a
    `TensorDataset(torch.randn(...), ...)`, a `Dataset` class filled by
    `np.random`, reading no file) the finding is medium confidence: an API
    walk-through trains on noise, and nobody relies on what it learns.
    The producer of the input is followed through assignments, reshapes,
    `self` attributes and same-module `nn.Module` classes; models defined
    elsewhere are not assumed to end in a sigmoid.

    Where it reports: `BCELoss` on probabilities is correct usage (the loss
    expects probabilities); the logits form is a stability improvement, so
    this is advice (hidden by default; `--select TR412`, `--show-advice`), and
    one finding per project lists the other places (a GAN codebase repeats the
    pattern in every script). A sigmoid output fed to
    `BCEWithLogitsLoss`/`F.binary_cross_entropy_with_logits`, which applies a
    second sigmoid (the loss and its gradients are computed on squashed
    values), is a high defect, reported at each place.
    """

    code = "TR412"
    name = "bce-on-sigmoid"
    severity = Severity.MEDIUM
    kind = "advice"
    confidence = "high"
    severity_reason = (
        "Unstable training in extreme cases: saturated sigmoids give a clamped log(0) and vanishing "
        "gradients. A sigmoid fed to the logits form (a double sigmoid, wrong loss) is high."
    )
    fixable = "unsafe"
    summary = "`BCELoss` on sigmoid output: use `BCEWithLogitsLoss` on the logits"
    summarize = "project"
    node_types = (ast.Call,)
    # only the calls computing these losses (ctx.flow.loss_call)
    call_losses = frozenset({"binary_cross_entropy", "binary_cross_entropy_with_logits"})

    @classmethod
    def repeat_key(cls, finding) -> str:
        """The advice is summarized per project; each double sigmoid (a defect) stays apart."""
        if finding.kind != "advice":
            return f"{cls.code}:{finding.path}:{finding.cell}:{finding.line}:{finding.column}"
        return super().repeat_key(finding)

    def check(self, node: ast.Call, ctx) -> None:
        loss = ctx.flow.loss_call(node)
        if loss is None or loss[0] not in ("binary_cross_entropy", "binary_cross_entropy_with_logits"):
            return
        inp = ctx.arg(node, "input", 0)
        if inp is None or ctx.flow.activation_of(inp) != "sigmoid":
            return
        noise = ctx.advice.trained_on_noise(node)
        if loss[0] == "binary_cross_entropy_with_logits":
            ctx.report(node, f"`{short_text(ctx, node.func)}` receives `{short_text(ctx, inp)}`, a sigmoid "
                             "output, but it applies a sigmoid itself: the loss is computed on a double "
                             "sigmoid (squashed values, weak gradients); pass the raw logits"
                             + (TRAINED_ON_NOISE if noise else ""),
                       severity=Severity.HIGH, kind="defect", fix=_drop_sigmoid_fix(ctx, inp),
                       confidence="medium" if noise else None)
            return
        instead = "`F.binary_cross_entropy_with_logits`" if loss[1] is None else "`nn.BCEWithLogitsLoss`"
        ctx.report(node, f"`{short_text(ctx, node.func)}` receives `{short_text(ctx, inp)}`, a sigmoid "
                         f"output: use {instead} on the logits instead, which is numerically stable"
                         + (TRAINED_ON_NOISE if noise else ""),
                   fix=_fix(ctx, node, inp, loss[1]), confidence="medium" if noise else None)


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


def _drop_sigmoid_fix(ctx, inp: ast.AST) -> Fix | None:
    """``F.binary_cross_entropy_with_logits(torch.sigmoid(z), y)`` -> ``(z, y)``."""
    from torchreview.fixes import replace_node

    logits = _sigmoid_argument(ctx, inp)
    if logits is None:
        return None
    return Fix("unsafe", (replace_node(ctx, inp, ctx.text(logits)),), "pass the logits, not their sigmoid")


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
