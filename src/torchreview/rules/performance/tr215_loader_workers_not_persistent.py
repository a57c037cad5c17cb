from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules._helpers import int_value


class LoaderWorkersNotPersistent(Rule):
    """
    ## What it does
    Flags a `DataLoader` with `num_workers > 0` and no `persistent_workers`
    argument that is iterated once per epoch (its `for` loop sits in an epoch
    loop, or in a function that an epoch loop calls).

    ## Why is this bad?
    Without `persistent_workers=True`, every `for batch in loader` starts
    `num_workers` fresh processes and shuts them down when the epoch ends.
    Each start re-imports modules, re-pickles the dataset and re-runs worker
    initialisation, and the first batches of every epoch wait for it, leaving
    the accelerator idle at each epoch boundary.

    ## Example
    ```python
    from torch.utils.data import DataLoader

    def fit(model, dataset, step, epochs):
        loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=8)
        for epoch in range(epochs):
            for batch in loader:
                step(model, batch)
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader

    def fit(model, dataset, step, epochs):
        loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=8,
                            persistent_workers=True)
        for epoch in range(epochs):
            for batch in loader:
                step(model, batch)
    ```

    ## Heuristics
    The loader is followed through names, `self` attributes and parameters
    of same-module functions. A loader created inside the epoch loop, or in a
    function that the loop calls (a new one every epoch), an explicit `persistent_workers=` of any value, a literal
    `num_workers=0` and `**kwargs` are not reported. When `num_workers` comes
    from a variable the message suggests `persistent_workers=<it> > 0`, since
    `persistent_workers=True` with zero workers raises.
    Evaluation loaders (not shuffling, named or built for
    validation/test/prediction, or only read under `no_grad`), in-memory
    datasets, notebooks and loaders with a lambda or nested `collate_fn`
    stay quiet: the advice pays on a script's training loader. Test files
    are not reviewed.
    """

    code = "TR215"
    name = "loader-workers-not-persistent"
    severity = Severity.LOW
    severity_reason = "Small waste: worker processes restart every epoch."
    summary = "`DataLoader` with workers iterated every epoch re-spawns them; set `persistent_workers=True`"
    root_cause = "dataloader-setup"

    def check_file(self, ctx) -> None:
        if ctx.is_test_file:
            return  # test code is not where step time is spent
        done: set[ast.Call] = set()
        for loop in ctx.model.loops:
            for loader in ctx.flow.iterated_loaders(loop):
                if loader in done or ctx.advice.loader_skip(loader, workers=True):
                    continue
                workers = self._workers(loader, ctx)
                if workers is None:
                    continue
                epoch = ctx.flow.repeating_loop(loop)
                if epoch is None or ctx.flow.repeating_loop(loader) is not None:
                    continue  # not repeated, or a new loader is built every time anyway
                done.add(loader)
                literal = int_value(workers) is not None
                suggestion = "persistent_workers=True" if literal else \
                    f"persistent_workers={ctx.text(workers)} > 0"
                ctx.report(loader, f"this DataLoader (`num_workers={ctx.text(workers)}`) is iterated "
                                   "every epoch and re-spawns its worker processes each time; pass "
                                   f"`{suggestion}` to keep them alive between epochs")

    @staticmethod
    def _workers(loader: ast.Call, ctx) -> ast.AST | None:
        if ctx.has_kwargs_splat(loader) or ctx.arg(loader, "persistent_workers") is not None:
            return None
        workers = ctx.arg(loader, "num_workers", 5)
        if workers is None:
            return None
        values = ctx.flow.values_of(workers)
        if all(int_value(v) is not None and int_value(v) <= 0 for v in values):
            return None
        return workers

