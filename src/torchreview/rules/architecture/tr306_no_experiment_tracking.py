from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity


class NoExperimentTracking(Rule):
    """
    ## What it does
    Reports a project with a training loop and no experiment tracking
    anywhere: no TensorBoard `SummaryWriter` (torch or tensorboardX), W&B,
    MLflow, Aim, Comet, Neptune, ClearML, DVCLive, Visdom, Accelerate
    trackers or Lightning loggers.

    ## Why is this bad?
    Without logged curves, a diverging loss, an over-fitting model or a
    learning-rate mistake is only noticed by scrolling a terminal, and two
    runs cannot be compared after the fact. A tracker records metrics,
    hyper-parameters and code version per run at almost no cost.

    ## Example
    ```python
    import torch

    def fit(model, loader, optimizer):
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.tensorboard import SummaryWriter

    def fit(model, loader, optimizer):
        writer = SummaryWriter()
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            writer.add_scalar("train/loss", loss.item(), step)
    ```

    ## Heuristics
    A project rule over file facts (`trains`, `tracking`). Projects driven by
    the Lightning or Hugging Face `Trainer`, which log on their own, are not
    reported. Printing or the `logging` module does not count as tracking.
    Reported once, at the first training loop.
    """

    code = "TR306"
    name = "no-experiment-tracking"
    severity = Severity.LOW
    severity_reason = "Structure: experiment tracking is a workflow choice."
    scope = ("project",)
    summary = "training loop with no experiment tracking (TensorBoard, W&B, MLflow, ...) in the project"
    root_cause = "training-setup"

    def check_project(self, project) -> None:
        trainers = sorted((f for f in project.files if f.trains), key=lambda f: f.path)
        if not trainers or any(f.tracking or f.managed_training for f in project.files):
            return
        anchor = trainers[0].training_loop
        project.report(anchor, "this training loop logs its metrics nowhere: no TensorBoard, W&B, MLflow, "
                               f"Aim, Comet, Neptune or ClearML use found in {len(project.files)} file(s); "
                               "record loss and metrics per step with a tracker (e.g. "
                               "`SummaryWriter().add_scalar`) to compare runs")
