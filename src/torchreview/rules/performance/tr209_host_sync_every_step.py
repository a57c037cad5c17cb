from __future__ import annotations

import ast

from torchreview.engine.semantic import ancestors

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.engine.names import kind_from_name

_SYNC_METHODS = frozenset({"item", "cpu", "tolist", "numpy"})
_CONVERTERS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})


class HostSyncEveryStep(Rule):
    """
    ## What it does
    Flags `.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `float(t)` and
    `print(t)` on tensors that run unconditionally on every iteration of a
    training loop.

    ## Why is this bad?
    CUDA work is queued asynchronously: the Python loop normally runs ahead
    of the GPU and keeps it busy. Reading a tensor's value on the host forces
    the CPU to wait until every queued kernel has finished, so each step ends
    with an idle GPU while the next batch is prepared. Accumulate metrics on
    the device (`running += loss.detach()`) and read them every N steps or once
    per epoch.

    ## Example
    ```python
    def train(model, loader, optimizer, criterion):
        running = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss.item()
        return running
    ```

    ## Use instead
    ```python
    def train(model, loader, optimizer, criterion, log_every=100):
        running = 0.0
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss.detach()
            if step % log_every == 0:
                print(f"step {step}: {running.item() / (step + 1):.4f}")
        return running.item()
    ```

    ## Heuristics
    Only training loops are inspected (a loop with backward and an optimizer
    step), with the same-module functions they call directly. Calls under an
    `if`, in an `except` block or after a short-circuit `and`/`or` are taken to
    be periodic and are not reported. The receiver must be known to hold a
    tensor (a loss, a model output, a tensor method chain).
    Test files are not reviewed.
    """

    code = "TR209"
    name = "host-sync-every-step"
    severity = Severity.LOW
    scope = ("file", "runtime")
    summary = "`.item()`/`.cpu()`/`print(tensor)` on every training step forces a host-device sync"

    def check_file(self, ctx) -> None:
        if ctx.is_test_file:
            return  # test code is not where step time is spent
        reported: set[int] = set()
        for tl in ctx.training_loops:
            self._scan(tl.node, ctx, reported, depth=0, via=None)

    def _scan(self, owner, ctx, reported, depth, via) -> None:
        # Calls of the loop (or callee) body, in source order, that run on every step.
        calls = sorted((n for n in ctx.model.subtree(owner) if type(n) is ast.Call), key=_where)
        for node in calls:
            if not _runs_every_step(node, owner):
                continue
            what = _sync_text(node, ctx)
            if what is None:
                if depth == 0:
                    callee = ctx.flow.resolve_local_call(node)
                    if callee is not None:
                        self._scan(callee, ctx, reported, depth + 1, node)
                continue
            stmt = _statement(node)
            if id(stmt) in reported:
                continue
            reported.add(id(stmt))
            where = f" (through `{ctx.text(via.func)}()`, called on every step)" if via is not None else ""
            ctx.report(node, f"`{what}` makes the host wait for the GPU on every training step{where}; "
                             "keep the value on the device (e.g. `total += loss.detach()`) and read it "
                             "every N steps or once per epoch")


def _sync_text(call: ast.Call, ctx) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _SYNC_METHODS:
        receiver = func.value
        if ctx.kind_of(receiver) in ("tensor", "parameter") or (
                # `loss = self.step(batch)`: a value we cannot type but named like a tensor
                isinstance(receiver, ast.Name) and ctx.kind_of(receiver) is None
                and kind_from_name(receiver.id) == "tensor" and func.attr == "item"):
            return _short(ctx.text(call))
        return None
    q = ctx.qualname(func)
    if q in _CONVERTERS and len(call.args) == 1 and ctx.kind_of(call.args[0]) == "tensor":
        return _short(ctx.text(call))
    if q == "builtins.print":
        for arg in call.args:
            values = [v.value for v in arg.values if isinstance(v, ast.FormattedValue)] \
                if isinstance(arg, ast.JoinedStr) else [arg]
            for value in values:
                if ctx.kind_of(value) == "tensor":
                    return f"print({_short(ctx.text(value))})"
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 48 else text[:45] + "..."


def _where(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)


def _runs_every_step(node: ast.AST, owner: ast.AST) -> bool:
    """Is ``node`` in ``owner``'s body (a loop or a function) and not under an
    ``if``/``except``/``match`` case, the later operands of ``and``/``or``, or a
    nested function? """
    child = node
    for anc in ancestors(node):
        if anc is owner:
            return child in owner.body  # the loop's iterable or else-branch does not count
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(anc, (ast.If, ast.IfExp)) and child is not anc.test:
            return False
        if isinstance(anc, ast.ExceptHandler) or isinstance(anc, ast.match_case):
            return False
        if isinstance(anc, ast.Match) and child is not anc.subject:
            return False
        if isinstance(anc, ast.BoolOp) and child is not anc.values[0]:
            return False
        child = anc
    return False


def _statement(node: ast.AST) -> ast.AST:
    from torchreview.engine.semantic import ancestors

    for anc in ancestors(node):
        if isinstance(anc, ast.stmt):
            return anc
    return node
