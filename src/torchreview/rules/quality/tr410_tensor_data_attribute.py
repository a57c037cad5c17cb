from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import parent, statement_of
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text

_PACKING = ("pack_padded_sequence", "pack_sequence", "PackedSequence")


class TensorDataAttribute(Rule):
    """
    ## What it does
    Flags `.data` on tensors and parameters (`loss.data`, `p.data.add_(...)`,
    `self.weight.data = ...`, `param.grad.data`).

    ## Why is this bad?
    `.data` returns the same storage with autograd cut off *and* without the
    version counter that protects saved tensors. Reading it silently detaches
    a value (a bug if you meant to backpropagate); writing through it changes
    values autograd already saved for the backward pass without the error
    `.detach()` or `torch.no_grad()` would raise, so gradients come out
    wrong with no warning. It is a legacy API kept for old code.

    ## Example
    ```python
    import torch

    model = torch.nn.Linear(4, 2)
    for p in model.parameters():
        p.data.mul_(0.5)
    running = loss.data
    ```

    ## Use instead
    ```python
    import torch

    model = torch.nn.Linear(4, 2)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.5)
    running = loss.detach()
    ```

    ## Heuristics
    The receiver must be known to be a tensor or a parameter: a binding to a
    tensor-producing call, a loop over `model.parameters()`, a model's
    `.weight`/`.bias`, an `nn.Parameter` attribute, or a name such as `loss`,
    `outputs`, `inputs`, `labels`. Datasets (`train_set.data`), dataframes
    and unknown objects are left alone, and so are name-only guesses in
    modules that use packed sequences (`packed.data` is legitimate there).
    `p.data = p.data.to(dtype)`-style storage swaps (a new dtype or device,
    which no in-place operation can do) are not reported.
    """

    code = "TR410"
    name = "tensor-data-attribute"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = "Hygiene: `.data` bypasses autograd's checks; rarely wrong in practice."
    summary = "`.data` bypasses autograd's safety checks: use `.detach()` or `torch.no_grad()`"
    node_types = (ast.Attribute,)
    attribute_names = frozenset({"data"})

    def check(self, node: ast.Attribute, ctx) -> None:
        if node.attr != "data":
            return
        value = node.value
        if not self._is_tensor(ctx, value) or _retypes_storage(ctx, node):
            return
        stmt = statement_of(node)
        if isinstance(node.ctx, ast.Load) and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Attribute) and stmt.targets[0].attr == "data" and \
                self._is_tensor(ctx, stmt.targets[0].value):
            return  # `a.data = b.data...`: one finding, on the store
        name = short_text(ctx, value)
        guessed = "medium" if ctx.known_by_name_only(value) else None  # a tensor by its name alone
        above = parent(node)
        writes = isinstance(node.ctx, ast.Store) or (
            isinstance(above, ast.Attribute) and above.attr.endswith("_") and not above.attr.startswith("_")
            and isinstance(parent(above), ast.Call) and parent(above).func is above)
        if writes:
            ctx.report(node, f"`{name}.data` modifies `{name}` behind autograd's back; do the update on "
                             f"`{name}` inside `with torch.no_grad():` instead", confidence=guessed)
        else:
            ctx.report(node, f"`{name}.data` reads `{name}` without autograd's version checks; use "
                             f"`{name}.detach()`", confidence=guessed)

    @staticmethod
    def _is_tensor(ctx, value) -> bool:
        kind = ctx.kind_of(value)
        if kind == "parameter" or ctx.autograd.is_grad_leaf(value):
            return True
        if isinstance(value, ast.Attribute) and value.attr == "grad":
            return ctx.kind_of(value.value) in ("tensor", "parameter") or ctx.autograd.is_grad_leaf(value.value)
        if kind != "tensor":
            return False
        if isinstance(value, ast.Name) and ctx.autograd.reaching_values(value) is None and \
                not ctx.model.assignments(value)[0]:
            # known only by its name: stay quiet where packed sequences make `.data` legitimate
            return not any(n in ctx.model.attribute_names or n in ctx.model.calls_by_name or
                           any(a.endswith("." + n) for a in ctx.model.aliases.values()) for n in _PACKING)
        return True


_RETYPE = frozenset({"to", "half", "float", "double", "bfloat16", "cuda", "cpu", "type"})


def _retypes_storage(ctx, node: ast.Attribute) -> bool:
    """``p.data = p.data.to(dtype)`` (and its right-hand read): swapping a parameter's
    storage for another dtype/device has no in-place equivalent, so ``.data`` is the tool."""
    stmt = statement_of(node)
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return False
    target, value = stmt.targets[0], stmt.value
    if not (isinstance(target, ast.Attribute) and target.attr == "data"):
        return False
    if node is not target and ctx.text(node.value) != ctx.text(target.value):
        return False
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _RETYPE
