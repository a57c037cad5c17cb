from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity

_BATCHNORM = ("torch.nn.BatchNorm1d", "torch.nn.BatchNorm2d", "torch.nn.BatchNorm3d",
              "torch.nn.SyncBatchNorm", "torch.nn.LazyBatchNorm1d", "torch.nn.LazyBatchNorm2d",
              "torch.nn.LazyBatchNorm3d")


class BatchNormBatchSizeOne(Rule):
    """
    ## What it does
    In a file that builds `BatchNorm` layers, flags training `DataLoader`s
    whose batch size is 1 -- `batch_size=1`, or no `batch_size` at all, which
    defaults to 1.

    ## Why is this bad?
    In training mode BatchNorm normalises each feature with the statistics of
    the current batch. With one sample, `BatchNorm1d` raises `Expected more
    than 1 value per channel when training`, and `BatchNorm2d` normalises over
    a single image's pixels, so running statistics and gradients become
    noise. Use a larger batch, or swap in `GroupNorm`/`LayerNorm` (or freeze
    BatchNorm in eval mode) when memory forces tiny batches.

    ## Example
    ```python
    from torch import nn
    from torch.utils.data import DataLoader

    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16))
    train_loader = DataLoader(train_set, batch_size=1, shuffle=True)
    ```

    ## Use instead
    ```python
    from torch import nn
    from torch.utils.data import DataLoader

    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16))
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True)
    ```

    ## Heuristics
    Needs a `BatchNorm*` layer built in the same file and a loader that is a
    training loader (it shuffles, has a random/distributed sampler, or a
    training loop iterates it); loaders named or built for evaluation, and
    loaders with a `batch_sampler`, `batch_size=None` or `**kwargs`, are not
    reported; nor is a loader built in a function that switches a model to
    eval mode and trains nothing itself (TF-C's `test_model`, which extracts
    features from the training set one sample at a time): BatchNorm uses its
    running statistics there. When every BatchNorm of the file is 2d/3d, a
    one-sample batch still averages over that sample's pixels: nothing fails
    and the statistics are an instance's (pix2pix trains so on purpose; both
    such findings of the 2026-11-29 sweeps were judged noise or false): low
    advice, hidden by default.
    """

    code = "TR512"
    name = "batchnorm-batch-size-one"
    severity = Severity.MEDIUM
    severity_reason = (
        "BatchNorm in training mode with one sample per batch raises for (N, C) inputs and normalises "
        "nothing useful otherwise."
    )
    summary = "BatchNorm model trained with batches of one sample"

    def check_file(self, ctx) -> None:
        calls = ctx.model.calls
        norms = ctx.model.called_qualnames & set(_BATCHNORM)
        if not norms:
            return
        # BatchNorm2d/3d of one sample still averages over its pixels (pix2pix trains so on
        # purpose): nothing fails; only a BatchNorm1d (or an unknown one) on (N, C) raises
        spatial = all(q.endswith(("2d", "3d")) for q in norms)
        for call in calls:
            if ctx.qualname(call.func) != "torch.utils.data.DataLoader" or ctx.has_kwargs_splat(call):
                continue
            if any(k.arg == "batch_sampler" for k in call.keywords) or len(call.args) > 4:
                continue
            size = ctx.arg(call, "batch_size", 1)
            explicit = size is not None
            if explicit and not (isinstance(size, ast.Constant) and size.value == 1
                                 and not isinstance(size.value, bool)):
                continue
            if not ctx.flow.is_training_loader(call) or _built_for_evaluation(ctx, call):
                continue
            how = "`batch_size=1`" if explicit else "no `batch_size` (the default is 1)"
            if spatial:
                ctx.report(size if explicit else call,
                           f"training `DataLoader` with {how} while this file's model uses BatchNorm2d/3d: "
                           "each batch's statistics come from one sample's pixels (instance "
                           "normalisation) and the running statistics follow single images; fine if "
                           "chosen (pix2pix), else use a larger batch",
                           severity=Severity.LOW, kind="advice", confidence="low")
                continue
            ctx.report(size if explicit else call,
                       f"training `DataLoader` with {how} while this file's model uses BatchNorm: "
                       "one-sample batches make BatchNorm fail or normalise noise; use a larger "
                       "batch or GroupNorm/LayerNorm")


def _built_for_evaluation(ctx, loader) -> bool:
    """The loader is built in a function that switches a model to eval mode and trains
    nothing (no backward/step of its own: ``def test_model(model, train_set, test_set):
    model.eval(); loader = DataLoader(train_set, batch_size=1, shuffle=True)`` to extract
    features): BatchNorm there uses its running statistics, one sample is fine."""
    func = ctx.enclosing_function(loader)
    if func is None or func in ctx.flow.training_functions:
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "eval" and
               not n.args for n in ast.walk(func))
