"""TR602: the gradient norm spikes far above its running median (runtime)."""

from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity


class ExplodingGradientNorm(Rule):
    """
    ## What it does
    Keeps the total gradient norm of every optimizer step (computed on the
    device, read back every N steps) and reports steps whose norm is many
    times the running median of the steps before.

    ## Why is this bad?
    A gradient spike moves the weights far in one step: the loss jumps, Adam's
    moment estimates are polluted for many steps, and the run may diverge to
    NaN later. Spikes come from a learning rate that is too high, a short or
    degenerate batch, outliers in the data, or a missing gradient clip.

    ## Example
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
    ```
    """

    code = "TR602"
    name = "exploding-gradient-norm"
    severity = Severity.MEDIUM
    severity_reason = "A gradient spike destabilises training; it may recover."
    extra_review = ("BR",)
    scope = ("runtime",)
    needs_torch = True
    summary = "Gradient-norm spike far above the running median of earlier steps"
