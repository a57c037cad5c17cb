"""TR603: parameters given to the optimizer never receive a gradient (runtime)."""

from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity


class ParameterWithoutGradient(Rule):
    """
    ## What it does
    Reports trainable parameters (``requires_grad=True``) that are registered
    with an optimizer but still have no gradient after every step of the run.
    Frozen parameters (``requires_grad=False``) are not reported here.

    ## Why is this bad?
    A parameter that never gets a gradient never learns: the layer is in a
    dead branch of `forward`, its output is detached (`.detach()`, `.data`,
    `.item()`, a NumPy round trip), or it is computed under `no_grad`. The
    model trains with less capacity than designed and nothing complains.

    ## Example
    ```python
    class Net(nn.Module):
        def forward(self, x):
            features = self.encoder(x).detach()  # the encoder never learns
            return self.head(features)
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def forward(self, x):
            features = self.encoder(x)
            return self.head(features)
    ```
    """

    code = "TR603"
    name = "parameter-without-gradient"
    severity = Severity.MEDIUM
    severity_reason = (
        "Parameters that never learn: a dead branch or a detached path, unless the freezing is "
        "intended."
    )
    extra_review = ("BR",)
    scope = ("runtime",)
    needs_torch = True
    summary = "Parameters registered with the optimizer never receive a gradient"
