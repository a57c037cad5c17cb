from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity

_NON_TENSOR = ("model", "loader", "optimizer", "scheduler", "dataset", "loss_fn", "sampler", "scaler")
_BUILTIN_OK = frozenset({"builtins." + n for n in ("abs", "min", "max", "float", "int", "round", "len",
                                                   "range", "sum", "bool", "pow")})
_ARITH = (ast.BinOp, ast.AugAssign, ast.Compare)
_EXIT = (ast.Break, ast.Return, ast.Yield, ast.YieldFrom, ast.Raise, ast.Await, ast.With)


class ElementwisePythonLoop(Rule):
    """
    ## What it does
    Flags Python loops that walk a tensor one element at a time:
    `for i in range(t.size(0))` / `range(t.shape[k])` / `range(len(t))` whose
    body indexes tensors with `i` and computes on the elements, and
    `torch.cat`/`torch.stack` of a comprehension that slices `t[:, i]` for
    every `i` in a range.

    ## Why is this bad?
    Every `t[i]` and every arithmetic operation on it is a separate call into
    the PyTorch dispatcher and, on a GPU, a separate kernel launch on a tiny
    tensor. A loop over a few thousand elements costs milliseconds where one
    vectorised operation (broadcasting, masks, `torch.where`, `gather`,
    `cumsum`, `index_select`) costs microseconds, and the autograd graph grows
    by one node per element.

    ## Example
    ```python
    import torch

    def scale_rows(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        for i in range(x.size(0)):
            out[i] = x[i] * w[i]
        return out
    ```

    ## Use instead
    ```python
    import torch

    def scale_rows(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * w.unsqueeze(1)
    ```

    ## Heuristics
    The range must be over a tensor's size: `.size()`, or `len()`/`.shape` of
    something known to be a tensor (assigned one, annotated `torch.Tensor`, a
    `forward` input; a name alone is not enough). The body must stay small and
    call only torch functions, tensor methods and arithmetic builtins. Loops
    that call a model or any other function, loops with `break`/`return`,
    loops with a stride (batching) or slices (`x[i:i + bs]`), recurrences
    (`h = f(h, x[t])`, `y[t] = y[t - 1] * a`) and bodies that test an element
    `is None` (a list) are not reported. Test files are not reviewed.
    """

    code = "TR213"
    name = "elementwise-python-loop"
    severity = Severity.MEDIUM
    severity_reason = (
        "Waste on the hot path: one kernel launch per element instead of one vectorised operation."
    )
    summary = "Python loop over tensor elements; use a vectorised operation"
    node_types = (ast.For, ast.Call)
    call_qualnames = frozenset({"torch.cat", "torch.stack", "torch.concat"})  # ``_check_concat``

    def check(self, node, ctx) -> None:
        if ctx.is_test_file:
            return  # test code is not where step time is spent
        if isinstance(node, ast.Call):
            self._check_concat(node, ctx)
            return
        var = _range_var(node.target, node.iter)
        if var is None or not _range_over_tensor(node.iter, ctx):
            return
        for anc in ctx.ancestors(node):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                break
            if isinstance(anc, ast.For) and _range_var(anc.target, anc.iter) and _candidate(anc, ctx):
                return  # reported at the outer loop
        hit = _candidate(node, ctx)
        if hit is not None:
            ctx.report(node, f"`for {var} in {ctx.text(node.iter)}` processes tensors element by element "
                             f"(`{_short(ctx.text(hit))}`); replace the loop with one whole-tensor "
                             "operation (broadcasting, masks, `torch.where`, `gather`, `cumsum`)",
                       end_node=node.iter)

    def _check_concat(self, node: ast.Call, ctx) -> None:
        if ctx.qualname(node.func) not in ("torch.cat", "torch.stack", "torch.concat") or not node.args:
            return
        comp = node.args[0]
        if not isinstance(comp, (ast.ListComp, ast.GeneratorExp)) or len(comp.generators) != 1:
            return
        gen = comp.generators[0]
        var = _range_var(gen.target, gen.iter)
        if gen.ifs or var is None:
            return
        hits = [s for s in ast.walk(comp.elt) if isinstance(s, ast.Subscript) and _indexes_with(s, var)
                and (isinstance(s.slice, ast.Tuple) or _tensorish(s.value, ctx))]
        if hits and _calls_ok(list(ast.walk(comp.elt)), ctx):
            fn = ctx.qualname(node.func).split(".")[1]
            ctx.report(node, f"`torch.{fn}` of `{_short(ctx.text(hits[0]))}` for every `{var}` in a range "
                             "makes one indexing call per element; index once instead (slicing, "
                             "`index_select`, `gather`, or `movedim` + reshape)")


def _short(text: str) -> str:
    return text if len(text) <= 30 else text[:27] + "..."


def _range_var(target: ast.AST, it: ast.AST) -> str | None:
    """The loop variable of ``for i in range(n)`` / ``range(a, b)`` / ``range(a, b, 1)``."""
    if not (isinstance(target, ast.Name) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
            and it.func.id == "range" and 1 <= len(it.args) <= 3):
        return None
    if len(it.args) == 3 and not (isinstance(it.args[2], ast.Constant) and it.args[2].value == 1):
        return None  # a stride: batching
    return target.id


def _range_over_tensor(it: ast.Call, ctx) -> bool:
    bound = it.args[-1] if len(it.args) <= 2 else it.args[1]
    if isinstance(bound, ast.Subscript) and isinstance(bound.value, ast.Attribute) and bound.value.attr == "shape":
        return ctx.model.tensor_by_evidence(bound.value.value)
    if isinstance(bound, ast.Call) and isinstance(bound.func, ast.Attribute) and bound.func.attr in ("size", "numel") \
            and bound.args and ctx.kind_of(bound.func.value) not in _NON_TENSOR:
        return True
    if isinstance(bound, ast.Call) and ctx.qualname(bound.func) == "builtins.len" and len(bound.args) == 1:
        return ctx.model.tensor_by_evidence(bound.args[0])
    return False


def _tensorish(expr: ast.AST, ctx) -> bool:
    return ctx.kind_of(expr) in ("tensor", "parameter") or ctx.model.is_forward_input(expr)


def _indexes_with(sub: ast.Subscript, var: str) -> bool:
    """``t[i]``, ``t[:, i]``, ``t[i + 1]``: the loop variable picks one element (no slice)."""
    parts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    for part in parts:
        names = [n.id for n in ast.walk(part) if isinstance(n, ast.Name)]
        if isinstance(part, ast.Slice):
            if var in names:
                return False
        elif names and set(names) == {var} and not isinstance(part, ast.Call):
            return True
    return False


def _candidate(loop: ast.For, ctx) -> ast.Subscript | None:
    """The first per-element index of a small, vectorisable loop body, else None."""
    var = loop.target.id
    body = [n for stmt in loop.body for n in ast.walk(stmt)]
    if len(body) > 160 or any(isinstance(n, _EXIT) for n in body) or not _calls_ok(body, ctx):
        return None
    hits = [n for n in body if isinstance(n, ast.Subscript) and _indexes_with(n, var)
            and (_tensorish(n.value, ctx) or isinstance(n.slice, ast.Tuple))]
    if not hits or any(isinstance(n, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in n.ops)
                       for n in body):
        return None  # `x[i] is None`: a Python list, not a tensor
    if not any(isinstance(n, _ARITH) and any(h in set(ast.walk(n)) for h in hits) for n in body):
        return None
    return None if _recurrence(body) else hits[0]


def _calls_ok(nodes, ctx) -> bool:
    """Only torch functions, tensor methods, ``append`` and arithmetic builtins are called."""
    for n in nodes:
        if not isinstance(n, ast.Call):
            continue
        q = ctx.qualname(n.func) or ""
        if q in _BUILTIN_OK or q.startswith(("math.", "torch.nn.functional.")) or \
                q.startswith("torch.") and not q.startswith(("torch.nn.", "torch.distributed")):
            continue
        if isinstance(n.func, ast.Attribute) and not q and (
                n.func.attr == "append" or ctx.kind_of(n.func.value) in ("tensor", "parameter")
                or ctx.kind_of(n.func.value) is None and isinstance(n.func.value, ast.Subscript)):
            continue
        return False
    return True


def _recurrence(body) -> bool:
    """``h = f(h, ...)`` or ``y[t] = g(y[t - 1])``: each step needs the previous one."""
    for n in body:
        if not isinstance(n, ast.Assign):
            continue
        stored = {t.id for t in n.targets if isinstance(t, ast.Name)}
        if stored & {s.id for s in ast.walk(n.value) if isinstance(s, ast.Name)}:
            return True
        for t in n.targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and any(
                    isinstance(s, ast.Subscript) and isinstance(s.value, ast.Name) and s.value.id == t.value.id
                    and ast.dump(s.slice) != ast.dump(t.slice) for s in ast.walk(n.value)):
                return True
    return False
