from __future__ import annotations

import ast
import re

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.engine.context import parent

# Calls whose result selects rows data-dependently (routing, masking).
_SELECTORS = frozenset({"topk", "argmax", "argmin", "argsort", "sort", "multinomial", "nonzero", "where",
                        "bool", "gt", "lt", "ge", "le", "eq", "ne", "logical_and", "logical_or",
                        "logical_not", "isin", "bernoulli", "randperm"})
_SELECTOR_NAME = re.compile(r"mask|expert|rout|gate|gating|select|topk|top_k|active|chosen|keep", re.I)


class ParameterIndexedByMask(Rule):
    """
    ## What it does
    Flags, inside an `nn.Module.forward`, an `nn.Parameter` (or a
    `torch.stack`/`torch.cat` of every expert's weights) indexed with a
    data-dependent mask or index tensor: `self.w[mask]`, `self.w[topk_idx]`,
    `torch.stack([e.weight for e in self.experts])[expert_ids]`.

    ## Why is this bad?
    Advanced indexing copies the selected rows, and its backward scatters the
    gradient into a dense tensor of the full parameter's shape: every step
    allocates (and the optimizer then reads) a gradient for all rows, also
    the ones no token selected. Stacking all experts first also copies every
    expert's weights on each forward. For mixture-of-experts layers this
    dominates memory. Keep one parameter per expert and touch only the
    selected ones, or use grouped/sparse kernels.

    ## Example
    ```python
    import torch
    import torch.nn as nn

    class Experts(nn.Module):
        def __init__(self, n_experts, d):
            super().__init__()
            self.w = nn.Parameter(torch.randn(n_experts, d, d))

        def forward(self, x, gate_logits):
            expert_ids = gate_logits.argmax(dim=-1)
            w = self.w[expert_ids]
            return torch.bmm(x.unsqueeze(1), w).squeeze(1)
    ```

    ## Use instead
    ```python
    import torch
    import torch.nn as nn

    class Experts(nn.Module):
        def __init__(self, n_experts, d):
            super().__init__()
            self.experts = nn.ModuleList(nn.Linear(d, d, bias=False) for _ in range(n_experts))

        def forward(self, x, gate_logits):
            expert_ids = gate_logits.argmax(dim=-1)
            out = torch.zeros_like(x)
            for i, expert in enumerate(self.experts):
                rows = expert_ids == i
                if rows.any():
                    out[rows] = expert(x[rows])
            return out
    ```

    ## Heuristics
    The index must look data-dependent: a comparison, the result of
    `topk`/`argmax`/`nonzero`/`where`/`.bool()`..., or a name that says so
    (`mask`, `expert_ids`, `gate`, `selected`). Lookups with a `forward` input
    of other names (embedding-style `self.weight[token_ids]`), with buffers
    (`self.relative_position_index`), slices and integers are not reported.
    Test files are not reviewed.
    """

    code = "TR217"
    name = "parameter-indexed-by-mask"
    severity = Severity.LOW
    severity_reason = "Waste: a full-size gradient is materialised for a few rows."
    summary = "`nn.Parameter` or stacked experts indexed by a mask in `forward`: full-size gradient each step"
    node_types = (ast.Subscript,)

    def check(self, node: ast.Subscript, ctx) -> None:
        if ctx.is_test_file:
            return  # test code is not where step time is spent
        if not isinstance(node.ctx, ast.Load):
            return
        func = ctx.enclosing_function(node)
        cls = parent(func) if func is not None else None
        if func is None or func.name != "forward" or not isinstance(cls, ast.ClassDef) or \
                cls.name not in ctx.model.module_classes:
            return
        what = _indexed(node.value, ctx)
        if what is None:
            return
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        index = next((p for p in parts if _selects(p, func, ctx)), None)
        if index is None:
            return
        ctx.report(node, f"{what} is indexed with `{_short(ctx.text(index))}` in `forward`: backward "
                         "builds a dense gradient for every row, selected or not; keep separate "
                         "parameters per expert and use only the active ones")


def _short(text: str) -> str:
    return text if len(text) <= 30 else text[:27] + "..."


def _indexed(value: ast.AST, ctx) -> str | None:
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self" \
            and ctx.kind_of(value) == "parameter":
        return f"parameter `self.{value.attr}`"
    stacked = value
    if isinstance(value, ast.Name):
        values = ctx.model.assignments(value)[0]
        stacked = values[0] if len(values) == 1 else None
    if isinstance(stacked, ast.Call) and ctx.qualname(stacked.func) in ("torch.stack", "torch.cat") and \
            stacked.args and isinstance(stacked.args[0], (ast.ListComp, ast.GeneratorExp, ast.List)) and \
            any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
                for n in ast.walk(stacked.args[0])):
        return f"`{_short(ctx.text(value))}` (a stack of all experts' weights)"
    return None


def _selects(index: ast.AST, func, ctx, depth: int = 0) -> bool:
    if depth > 3 or isinstance(index, (ast.Slice, ast.Constant)):
        return False
    if isinstance(index, ast.Compare) or isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.Invert):
        return True
    if isinstance(index, ast.BinOp) and isinstance(index.op, (ast.BitAnd, ast.BitOr)):
        return _selects(index.left, func, ctx, depth + 1) or _selects(index.right, func, ctx, depth + 1)
    if isinstance(index, ast.Attribute):
        if index.attr == "indices":
            return True
        return _selects(index.value, func, ctx, depth + 1) if index.attr in ("T", "data") else False
    if isinstance(index, ast.Subscript):  # torch.max(x, 1)[1], idx[:, 0]
        return _selects(index.value, func, ctx, depth + 1)
    if isinstance(index, ast.Call):
        name = index.func.attr if isinstance(index.func, ast.Attribute) else None
        q = ctx.qualname(index.func) or ""
        if name in _SELECTORS or q.startswith("torch.") and q.rsplit(".", 1)[-1] in _SELECTORS:
            return True
        if isinstance(index.func, ast.Attribute) and name in ("view", "reshape", "flatten", "long", "squeeze"):
            return _selects(index.func.value, func, ctx, depth + 1)
        return False
    if isinstance(index, ast.Name):
        if ctx.model.is_forward_input(index):
            return bool(re.search(r"mask", index.id, re.I))
        values = [v for v in _assigned_in(func, index.id)]
        if not values:
            return False  # a loop variable, a global: not a per-batch tensor we can see
        if any(_selects(v, func, ctx, depth + 1) for v in values):
            return True
        return bool(_SELECTOR_NAME.search(index.id)) and any(ctx.kind_of(v) == "tensor" or isinstance(v, ast.Call)
                                                               for v in values)
    return False


def _assigned_in(func, name: str) -> list[ast.AST]:
    """Values assigned to ``name`` in ``func`` (tuple unpacking gives the whole value)."""
    out = []
    for sub in ast.walk(func):
        if isinstance(sub, (ast.Assign, ast.AnnAssign)) and sub.value is not None:
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            for t in targets:
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)):
                    out.append(sub.value)
    return out
