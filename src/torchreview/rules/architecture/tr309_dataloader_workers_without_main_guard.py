from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules._helpers import int_value

_CPU_COUNTS = frozenset({"os.cpu_count", "multiprocessing.cpu_count", "os.process_cpu_count"})
_RUNNERS = frozenset({"fit", "validate", "test", "predict", "tune", "train"})
# Calls that choose a start method (their first argument / `method=`), and calls that always spawn.
_CHOOSERS = frozenset({"multiprocessing.set_start_method", "torch.multiprocessing.set_start_method",
                       "multiprocessing.get_context", "torch.multiprocessing.get_context"})
_SPAWNERS = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"})
_REIMPORTING = frozenset({"spawn", "forkserver"})


class DataLoaderWorkersWithoutMainGuard(Rule):
    """
    ## What it does
    Flags a `DataLoader` with `num_workers > 0` that is created and iterated
    when the module is imported: at module level, or in functions called
    from module level, outside an `if __name__ == "__main__":` block.

    ## Why is this bad?
    With the spawn start method (the default on Windows and macOS), each
    worker process starts by importing the main module again. Unguarded
    top-level code then builds the loader and starts iterating it inside the
    worker, which tries to spawn workers of its own: the run dies with
    "An attempt has been made to start a new process before the current
    process has finished its bootstrapping phase", or hangs.

    ## Example
    ```python
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.randn(256, 8), torch.randint(0, 2, (256,)))
    loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=4)
    for x, y in loader:
        print(x.shape)
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    def main():
        data = TensorDataset(torch.randn(256, 8), torch.randint(0, 2, (256,)))
        loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=4)
        for x, y in loader:
            print(x.shape)

    if __name__ == "__main__":
        main()
    ```

    ## Heuristics
    Only loaders with a literal `num_workers` above 0 (or `os.cpu_count()`)
    are considered, and only when the same file both creates and starts
    iterating them at import time: a `for` loop over the loader (through
    names, `enumerate`, `tqdm`, parameters), `next(iter(loader))`, or a
    `.fit(...)`-style call receiving it. Notebooks are exempt (their kernel
    is the main process and is never re-imported).

    Where it reports: under `fork` (the Linux default) the unguarded code is
    harmless, so by default this is advice (hidden; `--review architecture`,
    `--select TR309`, `--show-advice`). It is a likely defect when the file
    selects a start method that re-imports the main module:
    `set_start_method("spawn"/"forkserver")`, `get_context("spawn")`,
    `torch.multiprocessing.spawn(...)`/`start_processes(...)`, or the loader's
    own `multiprocessing_context="spawn"`.
    """

    code = "TR309"
    name = "dataloader-workers-without-main-guard"
    severity = Severity.MEDIUM
    kind = "advice"
    severity_reason = (
        "Crash under the `spawn` start method (Windows, macOS) only; Linux's default `fork` works, so "
        "the targeted platform decides (a likely defect when the file itself selects spawn)."
    )
    summary = "multi-worker `DataLoader` started at import time without an `if __name__ == \"__main__\"` guard"

    def check_file(self, ctx) -> None:
        if ctx.source.is_notebook or "torch.utils.data.DataLoader" not in ctx.model.called_qualnames:
            return
        loaders = [c for c in ctx.model.calls if ctx.qualname(c.func) == "torch.utils.data.DataLoader"
                   and self._workers(c, ctx) and ctx.flow.runs_at_import(c)]
        if not loaders:
            return
        chosen = _spawn_chosen(ctx)
        for loader in loaders:
            start = self._started_at_import(loader, ctx)
            if start is None:
                continue
            workers = ctx.text(ctx.arg(loader, "num_workers", 5))
            spawn = _spawn_value(ctx.arg(loader, "multiprocessing_context")) and loader or chosen
            head = (f"this `DataLoader` (num_workers={workers}) is created and iterated when the module is "
                    f"imported ({ctx.line_of(start)}): ")
            fix = "move the entry point under `if __name__ == \"__main__\":`"
            if spawn is not None:
                ctx.report(loader, head + f"this file selects a start method that re-imports the main module "
                                          f"(`{ctx.text(spawn.func)}`, {ctx.line_of(spawn)}), so every worker "
                                          f"re-imports this file and starts the loop again; {fix}",
                           kind="likely-defect")
            else:
                ctx.report(loader, head + "harmless under fork (Linux), but under the spawn start method "
                                          "(Windows, macOS) every worker re-imports this file and starts the "
                                          f"loop again; {fix}")

    @staticmethod
    def _workers(call: ast.Call, ctx) -> bool:
        value = ctx.arg(call, "num_workers", 5)
        number = int_value(value)
        if number is not None:
            return number > 0
        return isinstance(value, ast.Call) and ctx.qualname(value.func) in _CPU_COUNTS

    @staticmethod
    def _started_at_import(loader: ast.Call, ctx):
        flow = ctx.flow
        for node_type in (ast.For, ast.AsyncFor):
            for loop in ctx.model.nodes_by_type.get(node_type, ()):
                if loader in flow.iterated_loaders(loop) and flow.runs_at_import(loop):
                    return loop
        for call in ctx.model.calls:
            q = ctx.qualname(call.func)
            starts = q in ("builtins.next", "builtins.list", "builtins.iter") or \
                (isinstance(call.func, ast.Attribute) and call.func.attr in _RUNNERS)
            if not starts:
                continue
            args = [*call.args, *(kw.value for kw in call.keywords)]
            for arg in args:
                inner = arg.args[0] if isinstance(arg, ast.Call) and arg.args and \
                    ctx.qualname(arg.func) == "builtins.iter" else arg
                if (inner is loader or loader in flow.values_of(inner)) and flow.runs_at_import(call):
                    return call
        return None


def _spawn_value(value: ast.AST | None) -> bool:
    """`"spawn"`/`"forkserver"`, or a `get_context("spawn")` call."""
    if isinstance(value, ast.Constant):
        return value.value in _REIMPORTING
    return isinstance(value, ast.Call) and any(_spawn_value(a) for a in value.args[:1])


def _spawn_chosen(ctx) -> ast.Call | None:
    """The first call of the file that selects a re-importing start method."""
    for call in ctx.model.calls:
        q = ctx.qualname(call.func)
        if q in _SPAWNERS:
            return call
        if q in _CHOOSERS and _spawn_value(ctx.arg(call, "method", 0)):
            return call
    return None
