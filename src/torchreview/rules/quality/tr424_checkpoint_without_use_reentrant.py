from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.fixes import insert_keyword

CHECKPOINTS = {
    "torch.utils.checkpoint.checkpoint": "checkpoint",
    "torch.utils.checkpoint.checkpoint_sequential": "checkpoint_sequential",
}


class CheckpointWithoutUseReentrant(Rule):
    """
    ## What it does
    Flags `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)`
    calls that do not pass `use_reentrant` explicitly.

    ## Why is this bad?
    The default has been the old reentrant implementation, which ignores
    inputs that do not require grad, silently drops gradients when no input
    requires grad, does not support `torch.autograd.grad` or keyword
    arguments, and differs in how it handles RNG state and nested structures.
    Since torch 2.4 an implicit choice emits a warning, and the default is
    planned to change, so the same code will behave differently on a later
    release. Stating `use_reentrant=False` (the recommended implementation)
    pins the behaviour.

    ## Example
    ```python
    import torch
    from torch.utils.checkpoint import checkpoint

    def block_forward(block, x):
        return checkpoint(block, x)
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.checkpoint import checkpoint

    def block_forward(block, x):
        return checkpoint(block, x, use_reentrant=False)
    ```

    ## Fix safety
    Adding `use_reentrant=False` is unsafe: it switches implementation.
    Gradients then also flow to parameters when no input requires grad, and
    code that relied on reentrant-only behaviour (e.g. detaching inputs) can
    change. Pass `use_reentrant=True` instead to keep today's behaviour.

    ## Heuristics
    Calls that forward `**kwargs` are skipped (the flag may be inside), as are
    targets older than torch 1.11, which had no such argument.
    """

    code = "TR424"
    name = "checkpoint-without-use-reentrant"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = "A deprecation warning; behaviour is unchanged today."
    fixable = "unsafe"
    summary = "`torch.utils.checkpoint` without an explicit `use_reentrant`"
    node_types = (ast.Call,)
    call_qualnames = frozenset(CHECKPOINTS)

    def check(self, node: ast.Call, ctx) -> None:
        short = CHECKPOINTS.get(ctx.qualname(node.func) or "")
        if short is None or not ctx.torch_at_least(1, 11):
            return
        if ctx.arg(node, "use_reentrant") is not None or ctx.has_kwargs_splat(node):
            return
        fix = insert_keyword(node, ctx, "use_reentrant=False", "pass `use_reentrant=False`", "unsafe")
        ctx.report(node, f"`{short}(...)` without `use_reentrant=`: the implicit reentrant mode warns "
                         "since torch 2.4 and its default is set to change; pass `use_reentrant=False` "
                         "(or `True` to keep the old behaviour)", fix=fix)
