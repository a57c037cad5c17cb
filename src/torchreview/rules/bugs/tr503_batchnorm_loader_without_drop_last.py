from __future__ import annotations

import os

from torchreview.catalog import Rule
from torchreview.findings import Severity


class BatchNormLoaderWithoutDropLast(Rule):
    """
    ## What it does
    In a project whose models use `BatchNorm`, flags training `DataLoader`s
    (shuffling, a random or distributed sampler, or iterated by a training
    loop) that do not pass `drop_last=True`.

    ## Why is this bad?
    Unless the dataset size is a multiple of the batch size, the last batch of
    every epoch is short. BatchNorm normalises with that batch's statistics, so
    a handful of samples produce noisy running statistics and a spike in the
    gradient norm once per epoch; a last batch of one sample makes BatchNorm
    raise `Expected more than 1 value per channel when training`. Dropping the
    remainder costs at most one batch of samples per epoch, and a shuffling
    loader sees those samples in later epochs.

    ## Example
    ```python
    import torch
    from torch import nn
    from torch.utils.data import DataLoader

    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU())
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn
    from torch.utils.data import DataLoader

    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU())
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True)
    ```

    ## Heuristics
    The loader's file must build a `BatchNorm*`/`SyncBatchNorm` layer itself
    or import (through up to three local imports) a project module that does;
    module names are matched to files by path in the same, a parent or a
    child folder, so independent examples that share a repository, or a
    folder, do not count for each other. A loader counts as
    a training loader when it shuffles, has a random/distributed sampler (or
    one named `train...`), or is iterated by a training loop; loaders whose target, dataset or sampler
    mentions `val`, `test` or `eval` are left alone, and so are loaders with a
    `batch_sampler` or `**kwargs`, loaders in notebooks (demos and tutorials)
    and loaders over in-memory data (`TensorDataset`, tensors, lists).
    """

    code = "TR503"
    name = "batchnorm-loader-without-drop-last"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = (
        "A rare crash (a last batch of one sample in BatchNorm training) or a noisy last step, only "
        "for some dataset sizes (catalog: medium)."
    )
    scope = ("project",)
    summary = "Training DataLoader without `drop_last=True` in a project whose models use BatchNorm"
    root_cause = "dataloader-setup"

    def check_project(self, project) -> None:
        with_bn = {f.path for f in project.files if f.builds_batchnorm}
        if not with_bn:
            return
        by_name: dict[str, list] = {}
        for facts in project.files:
            by_name.setdefault(_stem(facts.path).rsplit("/", 1)[-1], []).append(facts)
        for facts in project.files:
            loaders = facts.train_loaders_without_drop_last
            where = _batchnorm_source(facts, with_bn, by_name) if loaders else None
            for anchor in loaders if where else ():
                project.report(anchor,
                               "training `DataLoader` keeps a short last batch (no `drop_last=True`) "
                               f"while the model it feeds uses BatchNorm (in {where}): pass "
                               "`drop_last=True` so every training batch has full size")


def _stem(path: str) -> str:
    path = os.path.normpath(path).replace(os.sep, "/")
    for suffix in ("/__init__.py", ".py", ".ipynb"):
        if path.endswith(suffix):
            return path[: -len(suffix)]
    return path


def _batchnorm_source(facts, with_bn: set, by_name: dict, depth: int = 3) -> str | None:
    """The BatchNorm file this file is, or imports (through up to ``depth`` local imports)."""
    if facts.path in with_bn:
        return facts.path
    seen, frontier = {facts.path}, [facts]
    for _ in range(depth):
        found = []
        for current in frontier:
            for module in current.imports:
                for target in _resolve(module, current.path, by_name):
                    if target.path in with_bn:
                        return target.path
                    if target.path not in seen:
                        seen.add(target.path)
                        found.append(target)
        frontier = found
    return None


def _resolve(module: str, importer: str, by_name: dict) -> list:
    """Project files a module name can denote: same path suffix, in a related folder."""
    rel = module.lstrip(".").replace(".", "/")
    if not rel:
        return []
    return [f for f in by_name.get(rel.rsplit("/", 1)[-1], ())
            if (_stem(f.path) == rel or _stem(f.path).endswith("/" + rel)) and _related(f.path, importer)]


def _related(model_file: str, loader_file: str) -> bool:
    """Same folder, or one folder inside the other (``models/net.py`` and ``train.py``);
    sibling folders (independent examples in one repository) are not related."""
    a = [part for part in os.path.dirname(os.path.normpath(model_file)).split(os.sep) if part]
    b = [part for part in os.path.dirname(os.path.normpath(loader_file)).split(os.sep) if part]
    n = min(len(a), len(b))
    return a[:n] == b[:n]
