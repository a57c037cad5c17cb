from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text

DATALOADER = "torch.utils.data.DataLoader"


class DataLoaderWithoutWorkers(Rule):
    """
    ## What it does
    Flags `DataLoader(...)` calls that leave `num_workers` at its default or
    set it to a literal `0`.

    ## Why is this bad?
    With no workers, every batch is read, decoded, transformed and collated
    in the training process itself, between two optimizer steps: the
    accelerator sits idle while Python opens files and augments images.
    Worker processes prepare the next batches in parallel with the step.

    ## Example
    ```python
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms

    train_set = datasets.ImageFolder("data/train", transform=transforms.ToTensor())
    loader = DataLoader(train_set, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms

    train_set = datasets.ImageFolder("data/train", transform=transforms.ToTensor())
    loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4)
    ```

    ## Heuristics
    Loaders over data that is already in memory and needs no per-item work
    stay quiet: a `TensorDataset`/`StackDataset`, a tensor or a literal
    list, `Subset`/`ConcatDataset`/`random_split` of those, or a dataset
    class of the same module whose `__getitem__` only indexes and converts.
    There, worker processes would only add start-up and inter-process copy
    cost. Evaluation loaders (not shuffling, named or built for
    validation/test/prediction, or only read under `no_grad`), notebooks
    (demos and tutorials) and loaders whose `collate_fn` is a lambda or a
    function nested in another function (workers cannot pickle it under the
    spawn start method) stay quiet too: the advice pays on a script's
    training loader. `num_workers` taken from a variable, a config or
    `**kwargs` is trusted, and test files are skipped.
    """

    code = "TR202"
    name = "dataloader-without-workers"
    severity = Severity.MEDIUM
    severity_reason = (
        "Waste on the hot path: loading and transforms run between steps in the training process; "
        "results are unchanged (catalog: high)."
    )
    summary = "`DataLoader` without worker processes loads every batch in the training process"
    root_cause = "dataloader-setup"
    node_types = (ast.Call,)
    call_qualnames = frozenset({DATALOADER})

    def check(self, node: ast.Call, ctx) -> None:
        if ctx.is_test_file or ctx.qualname(node.func) != DATALOADER:
            return
        workers = ctx.arg(node, "num_workers", 5)
        if workers is None and ctx.has_kwargs_splat(node):
            return
        if workers is not None and not (isinstance(workers, ast.Constant) and workers.value == 0):
            return  # a positive literal, or a variable/config value we trust
        dataset = ctx.arg(node, "dataset", 0)
        if ctx.advice.loader_skip(node, workers=True):
            return  # evaluation loader, in-memory data, notebook, or a local collate_fn
        what = short_text(ctx, dataset, "the dataset")
        how = "`num_workers=0`" if workers is not None else "no `num_workers`"
        ctx.report(node, f"`DataLoader` over `{what}` with {how}: every batch is loaded in the "
                         "main process while the model waits; set `num_workers` "
                         "(e.g. from `os.cpu_count()` or a config value)")
