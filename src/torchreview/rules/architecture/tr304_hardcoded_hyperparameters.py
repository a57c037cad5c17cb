from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity


class HardcodedHyperparameters(Rule):
    """
    ## What it does
    Reports module-level constants named like hyper-parameters (`LR`,
    `LEARNING_RATE`, `BATCH_SIZE`, `EPOCHS`, `WEIGHT_DECAY`, `MOMENTUM`,
    `HIDDEN_DIM`, `DROPOUT`, ...) that feed an optimizer, a scheduler, a
    `DataLoader`, a model or the epoch `range(...)`, in a project with no
    configuration mechanism at all (argparse, click, typer, fire, Hydra,
    OmegaConf, YAML/JSON/TOML loading, jsonargparse, LightningCLI, absl,
    gin, tyro, ...).

    ## Why is this bad?
    Every experiment becomes an edit of the source: runs cannot be launched
    side by side with different settings, a sweep needs a copy of the file,
    and the settings of a past run are only known if someone committed them
    at the right moment. A command line or a config file makes a run
    reproducible from its invocation.

    ## Example
    ```python
    import torch
    from torch.utils.data import DataLoader

    LEARNING_RATE = 3e-4
    BATCH_SIZE = 64

    def build(model, dataset):
        optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
        loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True)
        return optimizer, loader
    ```

    ## Use instead
    ```python
    import argparse

    import torch
    from torch.utils.data import DataLoader

    def build(model, dataset, args):
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
        loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)
        return optimizer, loader

    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--batch-size", type=int, default=64)
    ```

    ## Heuristics
    A project rule over file facts (`hardcoded_hparams`, `config`). Only
    numeric literals bound at module level to a hyper-parameter name, and
    used as an argument of an optimizer/scheduler/loader/model constructor or
    of the `range` a `for` loop iterates, count. Any configuration mechanism
    anywhere in the checked tree silences the rule. Notebooks are not
    reported: editing a cell is how a notebook is meant to be re-run.
    Reported once, at the first constant.
    """

    code = "TR304"
    name = "hardcoded-hyperparameters"
    severity = Severity.LOW
    severity_reason = (
        "Structure: hard-coded hyper-parameters work; runs are harder to reproduce and compare "
        "(catalog: medium)."
    )
    scope = ("project",)
    summary = "hyper-parameters hard-coded as module constants in a project with no config mechanism"

    def check_project(self, project) -> None:
        files = sorted((f for f in project.files if f.hparams and not f.is_notebook), key=lambda f: f.path)
        if not files or any(f.reads_config for f in project.files):
            return
        constants = [(f, name, anchor) for f in files for name, anchor in f.hparams.items()]
        if not constants:
            return
        first_file = files[0]
        anchor = min((a for f, _, a in constants if f is first_file), key=lambda a: (a.cell or 0, a.line))
        names = sorted({name for _, name, _ in constants})
        shown = ", ".join(f"`{n}`" for n in names[:6]) + (" …" if len(names) > 6 else "")
        where = f" in {len(files)} files" if len(files) > 1 else ""
        project.report(anchor, f"hyper-parameters are hard-coded as constants ({shown}{where}) and no "
                               f"configuration mechanism (argparse, click, typer, Hydra, a YAML/JSON/TOML "
                               f"config, ...) was found in {len(project.files)} file(s): expose them on the "
                               "command line or in a config file so runs can differ without code edits")
