"""TR601: NaN or Inf in the loss or the gradients (runtime)."""

from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity


class NanOrInf(Rule):
    """
    ## What it does
    Watches a training run and reports the first optimizer step whose
    gradients hold NaN or Inf values, with the names of the parameters
    affected. Gradient norms are gathered on the device every step and read
    back only every N steps and at exit, so the check adds no host-device
    synchronisation per step.

    ## Why is this bad?
    Once a NaN reaches the weights every later step is wasted: the loss stays
    NaN, the checkpoint is garbage, and the run may go on for hours before
    anyone looks. The usual causes are a learning rate that is too high, a
    `log`/division of zero, fp16 overflow without a `GradScaler`, or a bad
    sample in the data.

    ## Example
    ```python
    loss = criterion(model(x), y) / mask.sum()  # mask.sum() can be 0
    loss.backward()
    optimizer.step()
    ```

    ## Use instead
    ```python
    loss = criterion(model(x), y) / mask.sum().clamp_min(1)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    ```
    """

    code = "TR601"
    name = "nan-or-inf"
    severity = Severity.HIGH
    kind = "defect"
    severity_reason = (
        "Silently wrong training: a NaN or Inf poisons every later step. Observed at runtime."
    )
    extra_review = ("BR",)
    scope = ("runtime",)
    needs_torch = True
    summary = "NaN/Inf in the loss or gradients during training (first step, parameter names)"
