from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules._helpers import int_value

_CPU_COUNTS = frozenset({"os.cpu_count", "multiprocessing.cpu_count", "os.process_cpu_count"})
_RUNNERS = frozenset({"fit", "validate", "test", "predict", "tune", "train"})


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
    """

    code = "TR309"
    name = "dataloader-workers-without-main-guard"
    severity = Severity.MEDIUM
    kind = "likely-defect"
    severity_reason = (
        "Crash under the `spawn` start method (Windows, macOS) only; Linux's default `fork` works, so "
        "the targeted platform decides."
    )
    summary = "multi-worker `DataLoader` started at import time without an `if __name__ == \"__main__\"` guard"

    def check_file(self, ctx) -> None:
        if ctx.source.is_notebook:
            return
        loaders = [c for c in ctx.model.calls if ctx.qualname(c.func) == "torch.utils.data.DataLoader"
                   and self._workers(c, ctx) and ctx.flow.runs_at_import(c)]
        if not loaders:
            return
        for loader in loaders:
            start = self._started_at_import(loader, ctx)
            if start is None:
                continue
            workers = ctx.text(ctx.arg(loader, "num_workers", 5))
            ctx.report(loader, f"this `DataLoader` (num_workers={workers}) is created and iterated when the "
                               f"module is imported (line {start.lineno}): under the spawn start method "
                               "(Windows, macOS) every worker re-imports this file and starts the loop again; "
                               "move the entry point under `if __name__ == \"__main__\":`")

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
