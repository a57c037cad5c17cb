from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity

_EMPTY_CACHE = frozenset({"torch.cuda.empty_cache", "torch.mps.empty_cache", "torch.xpu.empty_cache",
                          "torch.cuda.memory.empty_cache"})
_LOADER = "torch.utils.data.DataLoader"


class EmptyCacheInLoop(Rule):
    """
    ## What it does
    Flags `torch.cuda.empty_cache()` that runs again and again: inside a batch
    loop, an epoch loop, or a function (training step, evaluation) that such a
    loop calls.

    ## Why is this bad?
    The caching allocator keeps freed blocks so the next step can reuse them
    without asking the driver. `empty_cache()` hands them back: the next step
    must `cudaMalloc` everything again, which is slow and synchronises the
    device. It does not free memory held by live tensors, so it does not fix
    out-of-memory errors or leaks either; it only makes them slower to hit.

    ## Example
    ```python
    import torch

    def train(model, loader, optimizer, loss_fn):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    import torch

    def train(model, loader, optimizer, loss_fn):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
    ```

    ## Heuristics
    A loop counts when it iterates a DataLoader, is a training or epoch loop,
    or is spelled over epochs (`for epoch in ...`); functions count when one of
    those loops calls them (same module). A call after the epoch loop of a
    function that runs a whole training is teardown, even when a loop over
    trials or hyper-parameters calls that function. A loop that counts only
    because it runs a batch loop, and that builds that loop's DataLoader anew
    from its own loop variable (`for name in datasets: loader =
    get_loader(name)`), is a loop over data sets, folds or tasks: a call there
    frees memory between separate runs and is not reported. A call in an `except` block (the
    out-of-memory recovery idiom) or under a periodic `if step % N == 0` is not
    reported, nor is a single call at teardown.
    Test files are not reviewed.
    """

    code = "TR210"
    name = "empty-cache-in-loop"
    severity = Severity.LOW
    severity_reason = (
        "Waste: freed cache blocks are allocated again right away; results are unchanged."
    )
    summary = "`torch.cuda.empty_cache()` on every step/epoch makes the allocator start over"
    node_types = (ast.Call,)
    call_qualnames = _EMPTY_CACHE

    def check(self, node: ast.Call, ctx) -> None:
        if ctx.is_test_file:
            return  # test code is not where step time is spent
        q = ctx.qualname(node.func)
        if q not in _EMPTY_CACHE:
            return
        for anc in ctx.ancestors(node):
            if isinstance(anc, ast.ExceptHandler):
                return
            if isinstance(anc, ast.If) and any(isinstance(op, ast.Mod) for op in _binops(anc.test)):
                return
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                break
        loop = ctx.flow.repeating_loop(node, strict=True)
        if loop is None or _loop_over_data_sets(loop, ctx):
            return
        func = ctx.enclosing_function(node)
        if loop not in set(ctx.ancestors(node)) and func is not None and any(
                isinstance(n, (ast.For, ast.While)) and ctx.flow.is_epoch_loop(n, strict=True) for n in ast.walk(func)):
            return  # after the epoch loop of a whole training run: teardown, even if runs repeat
        where = "epoch" if ctx.flow.is_epoch_loop(loop) and not ctx.flow.is_batch_loop(loop) else "batch"
        call = ctx.text(node.func)
        via = "" if loop in set(ctx.ancestors(node)) else " (its function is called from that loop)"
        ctx.report(node, f"`{call}()` runs on every {where}{via}: the allocator "
                         "must re-acquire its memory from the driver each time; remove it (it does "
                         "not free live tensors) or call it once outside the loop")


def _loop_over_data_sets(loop: ast.AST, ctx) -> bool:
    """A loop counted only because its body runs a batch loop, which builds its
    DataLoader anew from its own loop variable (``for name in datasets: loader =
    get_loader(name)``): each iteration is a separate run over another data set,
    fold or task, not another epoch over the same data."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or ctx.flow.is_batch_loop(loop) or \
            ctx.flow.is_epoch_loop(loop, strict=True):
        return False
    targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    for call in ctx.model.own_nodes(loop):
        if not isinstance(call, ast.Call) or not any(
                isinstance(n, ast.Name) and n.id in targets
                for arg in [*call.args, *(k.value for k in call.keywords)] for n in ast.walk(arg)):
            continue
        built = [call] if ctx.qualname(call.func) == _LOADER else ctx.flow.values_of(call, follow_returns=True)
        if any(isinstance(v, ast.Call) and ctx.qualname(v.func) == _LOADER for v in built):
            return True
    return False


def _binops(test: ast.AST):
    return (sub.op for sub in ast.walk(test) if isinstance(sub, ast.BinOp))
