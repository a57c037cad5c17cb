from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Fix, Severity
from torchreview.rules._helpers import is_false

# Code that captures CUDA graphs needs gradient tensors that stay allocated.
_CUDA_GRAPHS = frozenset({"torch.cuda.graph", "torch.cuda.CUDAGraph", "torch.cuda.make_graphed_callables"})


class ZeroGradSetToNoneFalse(Rule):
    """
    ## What it does
    Flags `optimizer.zero_grad(set_to_none=False)` and `model.zero_grad(False)`.

    ## Why is this bad?
    With `set_to_none=False` every step launches a kernel per parameter that
    writes zeros into each `.grad`, and the next backward then adds into that
    memory. With the default (`set_to_none=True`, since PyTorch 2.0) the
    gradients are simply released and backward writes fresh ones: fewer
    kernels, less memory traffic and a lower peak between steps.

    ## Example
    ```python
    import torch

    model = torch.nn.Linear(10, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad(set_to_none=False)
    ```

    ## Use instead
    ```python
    import torch

    model = torch.nn.Linear(10, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad()
    ```

    ## Fix safety
    Dropping the argument is unsafe. Code that reads or updates `p.grad`
    between `zero_grad()` and the next backward then sees `None`; and
    optimizers skip parameters whose `.grad` is `None`, while a zero gradient
    still receives momentum and weight-decay updates, so a parameter that is
    unused in some steps (an inactive expert, an unused head) trains
    differently.

    ## Heuristics
    The call must be named `zero_grad` on an optimizer, a model, or a receiver
    of unknown kind. Files that capture CUDA graphs (`torch.cuda.graph`,
    `make_graphed_callables`) are skipped, and so are calls in a class (or
    function) that updates gradients in place (`p.grad += g`,
    `p.grad.add_(g)`, e.g. a parameter server summing workers' gradients):
    there the gradient tensors must stay allocated.
    Test files are not reviewed.
    """

    code = "TR216"
    name = "zero-grad-set-to-none-false"
    severity = Severity.LOW
    severity_reason = "Small waste: gradients are zero-filled instead of freed."
    fixable = "unsafe"
    summary = "`zero_grad(set_to_none=False)` writes zeros each step; let gradients be set to None"
    node_types = (ast.Call,)
    call_attrs = frozenset({"zero_grad"})

    def check(self, node: ast.Call, ctx) -> None:
        if ctx.is_test_file:
            return  # test code is not where step time is spent
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "zero_grad":
            return
        if ctx.kind_of(func.value) not in (None, "optimizer", "model"):
            return
        arg = ctx.arg(node, "set_to_none", 0)
        if not is_false(arg) or _uses_cuda_graphs(ctx) or _updates_grads_in_place(node, ctx):
            return
        receiver = ctx.text(func.value)
        call = f"{receiver}.zero_grad({', '.join(ctx.text(a) for a in [*node.args, *node.keywords])})"
        ctx.report(node, f"`{call}` fills every gradient with zeros "
                         f"each step; call `{receiver}.zero_grad()` so gradients are released instead",
                   fix=_fix(node, arg, ctx))


def _uses_cuda_graphs(ctx) -> bool:
    return any(ctx.qualname(call.func) in _CUDA_GRAPHS for call in ctx.model.calls)


def _updates_grads_in_place(node: ast.Call, ctx) -> bool:
    """``p.grad += g`` / ``p.grad.add_(g)`` in the same class (or function, or module):
    that code needs zero-filled gradient tensors, not None."""
    scope = ctx.enclosing_class(node) or ctx.enclosing_function(node)
    for sub in ast.walk(scope) if scope is not None else _module_level(ctx.tree):
        if isinstance(sub, ast.AugAssign) and _is_grad(sub.target):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr.endswith("_") \
                and sub.func.attr != "zero_" and not sub.func.attr.startswith("_") and _is_grad(sub.func.value):
            return True
    return False


def _module_level(tree: ast.Module):
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node
            stack.extend(ast.iter_child_nodes(node))


def _is_grad(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def _fix(node: ast.Call, arg: ast.AST, ctx) -> Fix | None:
    """Delete the argument (and one comma next to it), keeping comments and layout."""
    from torchreview.fixes import _pos
    from torchreview.findings import Edit

    item = next((kw for kw in node.keywords if kw.value is arg), arg)
    items = sorted([*node.args, *node.keywords], key=lambda n: (n.lineno, n.col_offset))
    index = items.index(item)
    line_after = ctx.source.line_text(item.end_lineno).encode("utf-8")[item.end_col_offset:]
    stripped = line_after.lstrip()
    if stripped.startswith(b","):
        cut = len(line_after) - len(stripped) + 1
        cut += len(line_after[cut:]) - len(line_after[cut:].lstrip(b" "))
        start = _pos(ctx, item.lineno, item.col_offset)
        end = _pos(ctx, item.end_lineno, item.end_col_offset + cut)
    elif index > 0:
        prev = items[index - 1]
        start = _pos(ctx, prev.end_lineno, prev.end_col_offset)
        end = _pos(ctx, item.end_lineno, item.end_col_offset)
    else:
        start = _pos(ctx, item.lineno, item.col_offset)
        end = _pos(ctx, item.end_lineno, item.end_col_offset)
    return Fix("unsafe", (Edit(start[0], start[1], end[0], end[1], ""),), "drop `set_to_none=False`")
