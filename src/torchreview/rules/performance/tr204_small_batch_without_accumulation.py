from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import names_accumulation, parent
from torchreview.findings import Severity
from torchreview.rules._helpers import int_value

SMALL_BATCH = 8
_OOM_ERRORS = ("torch.cuda.OutOfMemoryError", "torch.OutOfMemoryError")
_SHRINK_OPS = (ast.FloorDiv, ast.Div, ast.RShift, ast.Sub)


class SmallBatchWithoutAccumulation(Rule):
    """
    ## What it does
    Flags a training loop fed by a `DataLoader` with a small literal
    `batch_size` (8 or less, including the default of 1) when the loop does
    not accumulate gradients, and code that halves the batch size after a
    CUDA out-of-memory error without accumulating to make up for it.

    ## Why is this bad?
    A batch that small is usually what fit in memory, not what the
    optimisation needs: gradient estimates are noisy, batch statistics are
    unreliable and the hyper-parameters tuned for a larger batch no longer
    apply. Accumulating gradients over several micro-batches before each
    `optimizer.step()` reaches the intended effective batch at the same
    memory cost.

    ## Example
    ```python
    from torch.utils.data import DataLoader

    loader = DataLoader(train_set, batch_size=4, shuffle=True, num_workers=4)
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader

    accum_steps = 8  # effective batch of 32
    loader = DataLoader(train_set, batch_size=4, shuffle=True, num_workers=4)
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Heuristics
    Only loaders that a detected training loop iterates are considered
    (through names, `self` attributes and same-module call arguments). A
    loop accumulates when its step runs under a modulo/`accum` condition,
    when backward runs in a micro-batch loop nested under the step, or when
    an `accum`/`micro` value appears in it. A batch size from a variable,
    `**kwargs` or a `batch_sampler` is trusted. The out-of-memory part looks
    for `batch_size //= 2`-style updates in an `except` for
    `OutOfMemoryError` (or a `RuntimeError` checked for "out of memory")
    around training code, in a module with no accumulation.
    """

    code = "TR204"
    name = "small-batch-without-accumulation"
    severity = Severity.LOW
    severity_reason = (
        "A throughput and training-dynamics opinion: small batches work, and accumulation is a choice "
        "(catalog: high)."
    )
    summary = "small batch (memory-bound) with no gradient accumulation"

    def check_file(self, ctx) -> None:
        seen: set[ast.AST] = set()
        for tl in ctx.training_loops:
            if tl.accumulates:
                continue
            for loader in ctx.flow.iterated_loaders(tl.node):
                if loader in seen:
                    continue
                seen.add(loader)
                self._check_loader(loader, ctx)
        if not any(tl.accumulates for tl in ctx.training_loops):
            self._check_oom_shrink(ctx)

    def _check_loader(self, loader: ast.Call, ctx) -> None:
        if ctx.arg(loader, "batch_sampler", 4) is not None:
            return
        size = ctx.arg(loader, "batch_size", 1)
        if size is None:
            if ctx.has_kwargs_splat(loader):
                return
            ctx.report(loader, "training `DataLoader` without `batch_size` trains on single samples "
                               "(the default is 1) and the loop does not accumulate gradients; set a "
                               "batch size, or accumulate over several steps before `optimizer.step()`")
            return
        value = int_value(size)
        if value is not None and 0 < value <= SMALL_BATCH:
            ctx.report(size, f"training `DataLoader` with `batch_size={value}` and no gradient "
                             "accumulation in the loop: each step sees a tiny, noisy batch; "
                             "accumulate gradients over N batches before `optimizer.step()`")

    def _check_oom_shrink(self, ctx) -> None:
        handlers = ctx.model.nodes_by_type.get(ast.ExceptHandler, ())
        if not handlers or any(names_accumulation(n) for n in ctx.model.nodes_by_type.get(ast.Name, ())):
            return
        for handler in handlers:
            if not _is_oom_handler(handler, ctx):
                continue
            try_stmt = parent(handler)
            trains = ctx.flow.training_loop_of(handler) is not None or any(
                e.kind == "backward" for e in ctx.flow.events_in(try_stmt.body))
            if not trains:
                continue
            for stmt in ast.walk(ast.Module(body=handler.body, type_ignores=[])):
                target = _shrunk_batch(stmt)
                if target:
                    ctx.report(stmt, f"`{target}` is reduced after a CUDA out-of-memory error but "
                                     "gradients are not accumulated: the effective batch silently "
                                     "shrinks; accumulate over the extra micro-batches instead")
                    break


def _is_oom_handler(handler: ast.ExceptHandler, ctx) -> bool:
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    if any(ctx.qualname(t) in _OOM_ERRORS for t in types if t is not None):
        return True
    if not any(ctx.qualname(t) in ("builtins.RuntimeError", "builtins.Exception") for t in types if t):
        return False
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and "out of memory" in n.value
               for n in ast.walk(ast.Module(body=handler.body, type_ignores=[])))


def _is_batch_name(node: ast.AST) -> str | None:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    low = name.lower()
    return name if ("batch" in low and "size" in low) or low in ("bs", "batch", "batchsize") else None


def _shrunk_batch(stmt: ast.AST) -> str | None:
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, _SHRINK_OPS):
        return _is_batch_name(stmt.target)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        name = _is_batch_name(stmt.targets[0])
        if name and any(isinstance(n, ast.BinOp) and isinstance(n.op, _SHRINK_OPS) and
                        any(_is_batch_name(x) == name for x in ast.walk(n.left))
                        for n in ast.walk(stmt.value)):
            return name
    return None
