from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules._helpers import is_false, short_text

DATALOADER = "torch.utils.data.DataLoader"


class DataLoaderWithoutPinMemory(Rule):
    """
    ## What it does
    Flags `DataLoader(...)` calls without `pin_memory=True` (missing, or a
    literal `False`) in a module that moves its work to CUDA.

    ## Why is this bad?
    Batches produced in pageable host memory must be staged through a
    pinned buffer before the GPU can copy them, and the copy cannot overlap
    with compute. With `pin_memory=True` the loader's pinning thread puts
    batches in page-locked memory, so `.to(device, non_blocking=True)` is a
    direct, asynchronous DMA transfer.

    ## Example
    ```python
    import torch
    from torch.utils.data import DataLoader

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.data import DataLoader

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4,
                        pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Heuristics
    "Uses CUDA" is decided per module: a `.cuda()` call, `.to("cuda")`,
    `torch.device("cuda")`, `device="cuda"`, or a `torch.cuda.is_available()`
    style query. Modules with none of these (CPU-only code) stay quiet, as do
    loaders whose `pin_memory` comes from a variable or `**kwargs`, loaders
    over a `TensorDataset` whose tensors were already moved to a device
    (pinning would fail), and test files. The advice pays on a training
    loader that reads real data: evaluation loaders (not shuffling, named or
    built for validation/test/prediction, or only read under `no_grad`),
    in-memory datasets (`TensorDataset`, tensors, lists) and notebooks
    (demos and tutorials) stay quiet.
    """

    code = "TR203"
    name = "dataloader-without-pin-memory"
    severity = Severity.LOW
    severity_reason = (
        "Small waste: pageable host-to-device copies are slower and cannot overlap compute; it "
        "matters only when copies are on the critical path (catalog: high)."
    )
    summary = "`DataLoader` feeding CUDA without `pin_memory=True`"
    root_cause = "dataloader-setup"
    node_types = (ast.Call,)
    call_qualnames = frozenset({DATALOADER})

    def check(self, node: ast.Call, ctx) -> None:
        if ctx.is_test_file or ctx.qualname(node.func) != DATALOADER:
            return
        evidence = ctx.model.cuda_evidence
        if evidence is None:
            return
        pin = ctx.arg(node, "pin_memory", 7)
        if pin is None and ctx.has_kwargs_splat(node):
            return
        if pin is not None and not is_false(pin):
            return  # True, or a variable/config value we trust
        dataset = ctx.arg(node, "dataset", 0)
        if _already_on_device(dataset, ctx) or ctx.advice.loader_skip(node):
            return  # evaluation loader, in-memory data or notebook: pinning does not pay
        what = short_text(ctx, dataset, "the dataset")
        how = "`pin_memory=False`" if pin is not None else "no `pin_memory`"
        line = getattr(evidence, "lineno", 0)
        ctx.report(node, f"`DataLoader` over `{what}` with {how} in a module that uses CUDA "
                         f"(line {line}): host-to-GPU copies go through pageable memory; pass "
                         "`pin_memory=True` and move batches with `.to(device, non_blocking=True)`")


def _already_on_device(dataset, ctx) -> bool:
    """A TensorDataset built from tensors that were moved off the host."""
    if dataset is None:
        return False
    for value in ctx.flow.values_of(dataset):
        if not (isinstance(value, ast.Call) and
                ctx.qualname(value.func) == "torch.utils.data.TensorDataset"):
            continue
        for arg in value.args:
            for v in ctx.flow.values_of(arg):
                for sub in ast.walk(v):
                    if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                            sub.func.attr in ("cuda", "to"):
                        return True
                    if isinstance(sub, ast.keyword) and sub.arg == "device":
                        return True
    return False
