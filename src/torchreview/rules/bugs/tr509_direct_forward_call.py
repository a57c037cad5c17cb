from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import parent
from torchreview.findings import Fix, Severity
from torchreview.rules._helpers import short_text


class DirectForwardCall(Rule):
    """
    ## What it does
    Flags `module.forward(x)` calls on a model, layer or loss module, including
    `self.forward(x)` inside an `nn.Module`.

    ## Why is this bad?
    `module(x)` goes through `nn.Module.__call__`, which runs the registered
    forward pre-hooks and hooks, backward hooks, and the machinery that
    `torch.compile`, FSDP, DDP, quantization observers, pruning masks and
    profilers attach to modules. `module.forward(x)` skips all of it: hooks
    silently stop firing and wrappers silently stop wrapping.

    ## Example
    ```python
    import torch
    from torch import nn

    encoder = nn.Linear(8, 4)
    features = encoder.forward(torch.randn(2, 8))
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    encoder = nn.Linear(8, 4)
    features = encoder(torch.randn(2, 8))
    ```

    ## Fix safety
    Replacing `m.forward(x)` with `m(x)` is unsafe: it is what the author
    almost always meant, but it starts running hooks (and wrappers) that the
    direct call skipped, which can change outputs or performance.

    ## Heuristics
    The receiver must be known to hold a module (a model, a layer, a loss) or
    be `self` inside an `nn.Module` subclass; a `self.<attr>` the class never
    assigns, and `x.forward()` without arguments (OpenCV's `cv2.dnn` nets),
    are not taken on a name alone. `super().forward(...)` and
    `Base.forward(self, ...)` in an overriding method are the normal way to
    reach the parent implementation and are not reported; neither is a
    `forward` that calls itself on `self` from within `forward`, nor test
    files, which call `forward` directly on purpose.

    Where it reports: a call on another module (`model.forward(x)`,
    `self.encoder.forward(x)`) is a likely defect. `self.forward(...)` from
    another method of the same module class (`forward_with_cfg`, `generate`)
    is a deliberate internal call -- the outer call already went through
    `__call__` -- so it is low advice, hidden by default (`--select TR509`,
    `--show-advice`).
    """

    code = "TR509"
    name = "direct-forward-call"
    severity = Severity.MEDIUM
    kind = "likely-defect"
    severity_reason = (
        "Hooks are skipped (DDP gradient sync, FSDP, forward hooks): wrong where hooks matter, "
        "harmless elsewhere."
    )
    fixable = "unsafe"
    summary = "`module.forward(x)` bypasses `__call__` and skips hooks"
    node_types = (ast.Call,)

    def check(self, node: ast.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "forward") or ctx.is_test_file:
            return
        receiver = func.value
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
            return
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            method = ctx.enclosing_function(node)
            if not ctx.in_module_class(node) or method is None or method.name == "forward" or \
                    not isinstance(parent(method), ast.ClassDef):
                return
        elif ctx.kind_of(receiver) not in ("model", "loss_fn") or not (node.args or node.keywords) or \
                _unassigned_self_attr(receiver, ctx):
            return
        name = short_text(ctx, receiver)
        internal = isinstance(receiver, ast.Name) and receiver.id == "self"
        # `self.forward(...)` from another method of the class (`forward_with_cfg`,
        # `generate`) is the module's own internal call: advice, hidden by default
        ctx.report(node, f"`{name}.forward(...)` bypasses `nn.Module.__call__`, so hooks (and wrappers "
                         f"such as DDP, FSDP or `torch.compile`) do not run; call `{name}(...)`",
                   fix=_fix(node, ctx), kind="advice" if internal else None,
                   severity=Severity.LOW if internal else None)


def _unassigned_self_attr(receiver, ctx) -> bool:
    """``self.net`` that the class never assigns: its kind is only a guess from the name."""
    return isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and \
        receiver.value.id == "self" and not ctx.model.assignments(receiver)[0]


def _fix(node: ast.Call, ctx) -> Fix | None:
    from torchreview.fixes import replace_node

    func = node.func
    return Fix("unsafe", (replace_node(ctx, func, ctx.text(func.value)),), "call the module instead of `.forward`")
