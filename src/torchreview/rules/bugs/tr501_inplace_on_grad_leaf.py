from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.semantic import dotted
from torchreview.findings import Severity

_NOT_INPLACE = frozenset({"requires_grad_", "share_memory_", "retain_grad_"})


class InplaceOnGradLeaf(Rule):
    """
    ## What it does
    Flags in-place operations (`+=` and friends, `x.add_()`, `x.fill_()`,
    `x.zero_()`, `x[i] = ...`) on a leaf tensor that requires grad -- an
    `nn.Parameter`, a tensor created with `requires_grad=True`, a layer's
    `.weight`/`.bias`, or a loop variable over `model.parameters()` -- when
    autograd is enabled.

    ## Why is this bad?
    Autograd refuses to modify a leaf that requires grad in place: the call
    raises `RuntimeError: a leaf Variable that requires grad is being used in an
    in-place operation`. Manual weight updates and re-initialisations must run
    under `torch.no_grad()`; values that feed the graph should be computed
    out of place.

    ## Example
    ```python
    import torch

    w = torch.randn(3, requires_grad=True)
    w += 1.0
    ```

    ## Use instead
    ```python
    import torch

    w = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        w += 1.0
    ```

    ## Heuristics
    The target must be visibly a grad-requiring leaf in the same file (its
    creation, an `nn.Parameter` attribute of the module, `model.parameters()`).
    Code under `torch.no_grad()`/`inference_mode()` (blocks, decorators, or
    functions only called from there) and `.data`/`.detach()` targets are not
    reported; neither is a target whose `requires_grad` is switched off first.
    """

    code = "TR501"
    name = "inplace-on-grad-leaf"
    severity = Severity.HIGH
    severity_reason = "Crash: autograd raises on an in-place update of a leaf that requires grad."
    summary = "In-place operation on a leaf tensor that requires grad, outside `torch.no_grad()`"
    node_types = (ast.AugAssign, ast.Assign, ast.Call)

    def check(self, node, ctx) -> None:
        if isinstance(node, ast.AugAssign):
            target = node.target
            if isinstance(target, ast.Subscript):
                target = target.value
            self._check(node, target, _op_text(node), ctx)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript):
                    self._check(node, target.value, "slice assignment", ctx)
        elif isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr.endswith("_") and not attr.startswith("_") and attr not in _NOT_INPLACE:
                self._check(node, node.func.value, f"`.{attr}()`", ctx)

    def _check(self, node, target, what: str, ctx) -> None:
        if not isinstance(target, (ast.Name, ast.Attribute)) or ctx.in_grad_disabled(node):
            return
        if not ctx.autograd.is_grad_leaf(target) or _grad_switched_off(target, node, ctx):
            return
        name = ctx.text(target)
        ctx.report(node, f"{what} modifies `{name}` in place, but `{name}` is a leaf tensor that "
                         "requires grad: autograd raises a RuntimeError here; wrap the update in "
                         "`with torch.no_grad():` or compute a new tensor out of place")


def _op_text(node: ast.AugAssign) -> str:
    symbols = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
               ast.MatMult: "@", ast.FloorDiv: "//", ast.Mod: "%"}
    return f"`{symbols.get(type(node.op), '')}=`"


def _grad_switched_off(target, node, ctx) -> bool:
    """``x.requires_grad = False`` / ``x.requires_grad_(False)`` earlier in the function."""
    name = dotted(target)
    scope = ctx.enclosing_function(node) or ctx.tree
    for sub in ast.walk(scope):
        if getattr(sub, "lineno", 0) >= node.lineno:
            continue
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Constant) and sub.value.value is False:
            if any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" and dotted(t.value) == name
                   for t in sub.targets):
                return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                sub.func.attr == "requires_grad_" and dotted(sub.func.value) == name and \
                any(isinstance(a, ast.Constant) and a.value is False for a in sub.args):
            return True
    return False
