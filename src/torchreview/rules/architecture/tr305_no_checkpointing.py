from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity


class NoCheckpointing(Rule):
    """
    ## What it does
    Reports a project that trains over epochs (a training loop inside an
    epoch loop) but never saves a checkpoint anywhere: no `torch.save`,
    `save_checkpoint`, `accelerator.save_state`, `save_pretrained`,
    `save_model`, safetensors `save_file` or Lightning `ModelCheckpoint`.

    ## Why is this bad?
    A crash, a pre-empted spot instance or a cluster time limit throws away
    every epoch done so far, and the trained weights are lost when the
    process exits. Saving `model.state_dict()` and `optimizer.state_dict()`
    regularly makes training resumable and the result usable.

    ## Example
    ```python
    import torch

    def fit(model, loader, optimizer, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
    ```

    ## Use instead
    ```python
    import torch

    def fit(model, loader, optimizer, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
            torch.save({"epoch": epoch, "model": model.state_dict(),
                        "optimizer": optimizer.state_dict()}, "last.pt")
    ```

    ## Heuristics
    A project rule over file facts (`epoch_loop`, `saves_checkpoint`).
    Projects driven by the Lightning or Hugging Face `Trainer`, which
    checkpoint on their own, are not reported. Any save call anywhere in the
    checked tree counts. Reported once, at the first epoch loop.
    """

    code = "TR305"
    name = "no-checkpointing"
    severity = Severity.LOW
    severity_reason = (
        "Structure: a run without checkpoints works until it is interrupted; no data of the project "
        "is damaged (catalog: medium)."
    )
    scope = ("project",)
    summary = "training over epochs with no checkpoint saved anywhere in the project"

    def check_project(self, project) -> None:
        trainers = sorted((f for f in project.files if f.epoch_loop is not None), key=lambda f: f.path)
        if not trainers or any(f.saves_checkpoint or f.managed_training for f in project.files):
            return
        anchor = trainers[0].epoch_loop
        project.report(anchor, "training runs over epochs but no checkpoint is saved: no `torch.save`, "
                               "`save_checkpoint`, `save_state` or `ModelCheckpoint` found in "
                               f"{len(project.files)} file(s); save the model and optimizer `state_dict()` "
                               "every epoch (or N steps) so a crash does not lose the run")
