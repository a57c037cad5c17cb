"""TR605: the training loop waits for the input pipeline (runtime)."""

from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity


class InputPipelineBound(Rule):
    """
    ## What it does
    Times how long each training step waits for the next batch from its
    `DataLoader` and reports loaders whose waiting is a large share of the
    step time (30% by default), with the loader's settings. A loader with
    `num_workers=0` is reported as TR202 (the static rule for that cause);
    this code covers loaders that already use worker processes.

    ## Why is this bad?
    While the model waits for data the accelerator idles: the run takes
    longer and costs more for the same result. More workers, a larger
    `prefetch_factor`, `persistent_workers=True`, cheaper transforms or a
    pre-processed data set usually fix it.

    ## Example
    ```python
    loader = DataLoader(images, batch_size=256, num_workers=1)
    for x, y in loader:
        train_step(x, y)
    ```

    ## Use instead
    ```python
    loader = DataLoader(images, batch_size=256, num_workers=8,
                        persistent_workers=True, prefetch_factor=4)
    for x, y in loader:
        train_step(x, y)
    ```
    """

    code = "TR605"
    name = "input-pipeline-bound"
    severity = Severity.MEDIUM
    kind = "advice"
    severity_reason = (
        "Waste on the hot path: the accelerator waits for data; results are unchanged (catalog: "
        "high)."
    )
    extra_review = ("PR",)
    scope = ("runtime",)
    needs_torch = True
    summary = "The training loop waits for the next batch for a large share of each step"
