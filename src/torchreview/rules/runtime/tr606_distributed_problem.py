"""TR606: problems seen on a rank of a distributed run (runtime)."""

from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity


class DistributedProblem(Rule):
    """
    ## What it does
    Under `torch.distributed` (torchrun or `torch.multiprocessing.spawn`),
    each rank records what it sees and rank 0 merges the reports. It reports
    parameters of a `DistributedDataParallel` model that receive no gradient
    in a step (with their names), and ranks whose numbers of optimizer steps
    differ. A `DistributedSampler` whose epoch is never set is TR513.

    ## Why is this bad?
    DDP expects every parameter to get a gradient each step: with
    `find_unused_parameters=False` an unused parameter makes the next step
    fail, and with `True` every step pays an extra graph traversal. Ranks that
    run different numbers of steps hang in a collective or silently train on
    different schedules.

    ## Example
    ```python
    class Net(nn.Module):
        def forward(self, x):
            return self.head(self.body(x))  # self.aux is never used

    model = DDP(Net(), find_unused_parameters=True)
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def forward(self, x):
            return self.head(self.body(x))  # no unused sub-module left

    model = DDP(Net())
    ```
    """

    code = "TR606"
    name = "distributed-problem"
    severity = Severity.MEDIUM
    severity_reason = "Distributed runs that diverge, hang or waste a traversal per step."
    extra_review = ("BR",)
    scope = ("runtime",)
    needs_torch = True
    summary = ("Distributed-training problems seen on a rank (unused DDP parameters, "
               "diverging ranks)")
