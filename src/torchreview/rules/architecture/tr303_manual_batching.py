from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity

_SPLITTERS = frozenset({"torch.split", "torch.chunk", "torch.tensor_split", "numpy.array_split",
                        "numpy.split"})
_WRAPPERS = frozenset({"builtins.enumerate", "builtins.zip", "builtins.list", "tqdm.tqdm", "tqdm.auto.tqdm",
                       "tqdm.notebook.tqdm"})


class ManualBatching(Rule):
    """
    ## What it does
    Flags training loops that build their mini-batches by hand: slicing
    `X[i:i + batch_size]` with the loop index of a `range(...)` loop (also in
    a helper the loop calls), or iterating over `torch.split`/`torch.chunk`
    of the whole data set. Manual shuffling with `torch.randperm` in the same
    function is mentioned in the message.

    ## Why is this bad?
    Hand-made batching re-implements, usually partly, what `Dataset` and
    `DataLoader` give for free: reproducible shuffling through a seeded
    sampler, worker processes that prepare the next batch while the GPU
    computes, pinned memory, collation, distributed sampling. It also ties
    the training loop to one in-memory tensor layout.

    ## Example
    ```python
    import torch

    def train(model, optimizer, X, y, batch_size=32):
        perm = torch.randperm(len(X))
        X, y = X[perm], y[perm]
        for i in range(0, len(X), batch_size):
            xb, yb = X[i:i + batch_size], y[i:i + batch_size]
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    def train(model, optimizer, X, y, batch_size=32):
        loader = DataLoader(TensorDataset(X, y), batch_size=batch_size, shuffle=True)
        for xb, yb in loader:
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    ```

    ## Heuristics
    Only loops that are training loops (a backward pass and an optimizer
    step per iteration) are examined. A slice counts when one of its bounds
    uses the loop index (directly or through names computed from it in the
    loop) of a loop over `range(...)`; helpers of the same module that
    receive the index are followed one level. Random windows
    (`data[j:j + block]` with `j` from `torch.randint`) are not reported.
    """

    code = "TR303"
    name = "manual-batching"
    severity = Severity.LOW
    severity_reason = (
        "Structure: manual batching works; a DataLoader adds shuffling, workers and pinning (catalog: "
        "medium)."
    )
    summary = "mini-batches sliced or split by hand instead of a `Dataset`/`DataLoader`"

    def check_file(self, ctx) -> None:
        for tl in ctx.training_loops:
            loop = tl.node
            if not isinstance(loop, (ast.For, ast.AsyncFor)):
                continue
            split = self._split_call(loop.iter, ctx)
            if split is not None:
                ctx.report(split, f"the training loop iterates over `{ctx.text(split.func)}(...)` of the whole "
                                  f"data set: use a `Dataset` and a `DataLoader` (shuffling, workers, "
                                  f"collation) instead of splitting tensors by hand{_shuffle_note(tl, ctx)}")
                continue
            index = _index_var(loop, ctx)
            if index is None:
                continue
            hit = self._sliced_by(loop.body, {index}, ctx, inline=1)
            if hit is not None:
                sliced, anchor = hit
                ctx.report(anchor, f"mini-batches are cut by hand (`{ctx.text(sliced)}` with the index of "
                                   f"`{ctx.text(loop.iter)}`){_shuffle_note(tl, ctx)}: wrap the data in a "
                                   "`Dataset` and iterate a `DataLoader` (shuffle=True, num_workers) instead")

    def _split_call(self, expr, ctx):
        for node in ast.walk(expr):
            if not isinstance(node, ast.Call):
                continue
            q = ctx.qualname(node.func)
            if q in _SPLITTERS:
                return node
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("split", "chunk", "tensor_split") \
                    and ctx.kind_of(node.func.value) in ("tensor", "parameter") and node.args and \
                    not (isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                return node
        return None

    def _sliced_by(self, body, names: set[str], ctx, inline: int, anchor=None):
        derived = set(names)
        for _ in range(2):
            for stmt in body:
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Assign) and _mentions(node.value, derived):
                        derived |= {t.id for t in node.targets for t in ast.walk(t) if isinstance(t, ast.Name)}
        for stmt in body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and \
                        isinstance(node.value, (ast.Name, ast.Attribute)):
                    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                    for part in parts:
                        if isinstance(part, ast.Slice) and part.lower is not None and part.upper is not None \
                                and (_mentions(part.lower, derived) or _mentions(part.upper, derived)):
                            return node, anchor or node
                if inline and isinstance(node, ast.Call):
                    hit = self._through_call(node, derived, ctx, inline, anchor)
                    if hit:
                        return hit
        return None

    def _through_call(self, call, derived, ctx, inline, anchor):
        callee = ctx.flow.resolve_local_call(call)
        if callee is None:
            return None
        params = [a.arg for a in callee.args.args]
        if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
            params = params[1:]
        passed = {params[i] for i, a in enumerate(call.args) if i < len(params) and _mentions(a, derived)}
        passed |= {kw.arg for kw in call.keywords if kw.arg and _mentions(kw.value, derived)}
        if not passed:
            return None
        return self._sliced_by(callee.body, passed, ctx, inline - 1, anchor or call)


def _index_var(loop, ctx) -> str | None:
    iterable, target = loop.iter, loop.target
    while isinstance(iterable, ast.Call) and ctx.qualname(iterable.func) in _WRAPPERS and iterable.args:
        if ctx.qualname(iterable.func) == "builtins.enumerate" and isinstance(target, ast.Tuple) and \
                len(target.elts) == 2:
            target = target.elts[1]
        iterable = iterable.args[0]
    if isinstance(iterable, ast.Call) and ctx.qualname(iterable.func) == "builtins.range" and \
            isinstance(target, ast.Name):
        return target.id
    return None


def _mentions(expr, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(expr))


def _shuffle_note(tl, ctx) -> str:
    for call in ctx.model.calls:
        if ctx.qualname(call.func) == "torch.randperm" and ctx.enclosing_function(call) is tl.function:
            return f", shuffled by hand with `torch.randperm` ({ctx.line_of(call)})"
    return ""
