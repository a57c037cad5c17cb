from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import parent
from torchreview.findings import Severity

_ALWAYS_ASYNC = frozenset({"torch.distributed.isend", "torch.distributed.irecv",
                           "torch.distributed.batch_isend_irecv"})


class AsyncRequestNotWaited(Rule):
    """
    ## What it does
    Flags `torch.distributed.isend`/`irecv`/`batch_isend_irecv` and
    collectives called with `async_op=True` whose returned request is thrown
    away, or stored in a name that is never used again (so never `.wait()`ed).

    ## Why is this bad?
    An asynchronous operation returns immediately; the buffer is only safe to
    read (for a receive or a collective) or to overwrite (for a send) after
    `req.wait()`. Without it the code reads stale or half-written data, a
    reused send buffer is corrupted in flight, and at exit the process can
    hang or crash with the work still pending. None of it fails
    deterministically.

    ## Example
    ```python
    import torch.distributed as dist

    def exchange(tensor, peer):
        dist.isend(tensor, dst=peer)
    ```

    ## Use instead
    ```python
    import torch.distributed as dist

    def exchange(tensor, peer):
        req = dist.isend(tensor, dst=peer)
        req.wait()
    ```

    ## Heuristics
    Any later use of the request name (calling `.wait()`, appending it to a
    list, returning it, passing it on) counts as handled; only requests that
    are discarded or never read again are reported.

    A dropped request whose buffer is a local its function builds and nothing
    there reads or writes afterwards, outside any loop (rank 0 broadcasting a one-element
    semaphore to the waiting ranks "but don't wait", ai8x-training), cannot
    race anything: not reported.

    A `barrier()` or `torch.cuda.synchronize()` later in the same function
    orders the dropped request on the usual backends (in-order NCCL streams,
    Gloo's queue), so there the finding is a medium-confidence caution
    (hidden by default) rather than a defect.

    Confidence: high. The evidence is the call itself: an operation that is
    asynchronous by its name (`isend`, `irecv`) or by a literal
    `async_op=True`, whose request is dropped or bound to a name its function
    never reads -- nothing can wait for it.
    """

    code = "TR515"
    name = "async-request-not-waited"
    severity = Severity.MEDIUM
    kind = "likely-defect"
    severity_reason = (
        "Race: the buffer is read before the communication has finished (wrong data or a hang)."
    )
    summary = "Asynchronous distributed operation whose request is never waited on"
    node_types = (ast.Call,)
    call_prefixes = ("torch.distributed.",)

    def check(self, node: ast.Call, ctx) -> None:
        q = ctx.qualname(node.func) or ""
        if not q.startswith("torch.distributed."):
            return
        async_op = ctx.arg(node, "async_op")
        if q not in _ALWAYS_ASYNC and not (isinstance(async_op, ast.Constant) and async_op.value is True):
            return
        up = parent(node)
        short = q.rsplit(".", 1)[-1]
        fence = _later_fence(node, ctx)
        if isinstance(up, ast.Expr):
            if _buffer_unused_after(node, ctx):
                # a signal sent and never looked at again (ai8x-training's rank 0 broadcasting a
                # one-element semaphore "but don't wait"): no later read or write can race it
                return
            if fence is not None:
                ctx.report(node, f"the request returned by `{short}(...)` is discarded and only the later "
                                 f"`{fence[0]}` (line {fence[1]}) orders it: that holds on "
                                 "the usual backends but is not guaranteed; keep the request and call "
                                 "`.wait()` before using the buffer", confidence="medium")
                return
            ctx.report(node, f"the request returned by `{short}(...)` is discarded: nothing waits for the "
                             "asynchronous operation to finish; keep it and call `.wait()` before using "
                             "the buffer", confidence="high")
            return
        if isinstance(up, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            targets = up.targets if isinstance(up, ast.Assign) else [up.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if names and len(names) == len(targets) and not any(_read_later(n, up, ctx) for n in names):
                ctx.report(node, f"`{names[0]}` holds the request of `{short}(...)` but is never used: "
                                 f"call `{names[0]}.wait()` before reading or reusing the buffer",
                           confidence="high" if fence is None else "medium")


_FENCES = frozenset({"torch.distributed.barrier", "torch.distributed.monitored_barrier",
                     "torch.cuda.synchronize"})


def _later_fence(node: ast.Call, ctx) -> tuple[str, int] | None:
    """A ``barrier()`` / ``torch.cuda.synchronize()`` later in the same function: it
    orders the dropped request on the usual backends (NCCL, Gloo), so a finding is a
    caution, not a defect."""
    scope = ctx.enclosing_function(node) or ctx.tree
    after = (node.lineno, node.col_offset)
    for sub in ast.walk(scope):
        if isinstance(sub, ast.Call) and (sub.lineno, sub.col_offset) > after and \
                (ctx.qualname(sub.func) or "") in _FENCES:
            return (ctx.qualname(sub.func) or "").rsplit(".", 1)[-1] + "()", sub.lineno
    return None


def _buffer_unused_after(node: ast.Call, ctx) -> bool:
    """The operation's buffer is a name its function builds and that nothing there reads or
    writes after the call: nothing can see it half-sent or half-received."""
    buffer = ctx.arg(node, "tensor", 0)
    if not isinstance(buffer, ast.Name):
        return False
    scope = ctx.enclosing_function(node) or ctx.tree
    if any(isinstance(sub, (ast.For, ast.While, ast.AsyncFor)) for sub in ctx.ancestors(node)):
        return False  # in a loop: the next pass uses it again
    if scope is ctx.tree or any(a.arg == buffer.id for a in [*scope.args.posonlyargs, *scope.args.args,
                                                                *scope.args.kwonlyargs]):
        return False  # a parameter (or a module global): the caller may reuse it after the return
    made = [v for v in ctx.model.assignments(buffer)[0] if ctx.enclosing_function(v) is scope]
    if not made:
        return False  # not built here: someone else holds it
    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
    return not any(isinstance(sub, ast.Name) and sub.id == buffer.id and
                   (sub.lineno, sub.col_offset) > end for sub in ast.walk(scope))


def _read_later(name: str, assign: ast.AST, ctx) -> bool:
    scope = ctx.enclosing_function(assign) or ctx.tree
    for sub in ast.walk(scope):
        if isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, ast.Load):
            return True
    return False
