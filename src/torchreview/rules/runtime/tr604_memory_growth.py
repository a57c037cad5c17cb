"""TR604: memory grows step over step (runtime)."""

from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity


class MemoryGrowth(Rule):
    """
    ## What it does
    Samples memory once per optimizer step (accelerator memory allocated by
    PyTorch when training on an accelerator, the process's resident memory on
    CPU) and reports a steady step-over-step growth after warm-up. When the
    growth comes from autograd graphs kept alive, TR507 is reported instead.
    The detection is a heuristic: it needs a clear, sustained trend and stays
    quiet on noise and on growth that stops.

    ## Why is this bad?
    A leak that grows with every step ends in an out-of-memory crash hours
    into training, or slows the run as the allocator fights fragmentation.
    Typical causes: tensors appended to a list every step, caches keyed by
    step, or per-step tensors kept in a global.

    ## Example
    ```python
    history = []
    for x, y in loader:
        out = model(x)
        history.append(out.detach())  # every batch's output stays in memory
        criterion(out, y).backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    running = torch.zeros(())
    for x, y in loader:
        out = model(x)
        running += out.detach().mean()  # keep a summary, not the tensors
        criterion(out, y).backward()
        optimizer.step()
        optimizer.zero_grad()
    ```
    """

    code = "TR604"
    name = "memory-growth"
    severity = Severity.HIGH
    severity_reason = "Memory growth ends in an out-of-memory crash."
    extra_review = ("BR", "PR")
    scope = ("runtime",)
    needs_torch = True
    summary = "Memory that grows step over step (a leak)"
