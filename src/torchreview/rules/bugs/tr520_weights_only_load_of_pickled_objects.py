from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.engine.checkpoint_index import MODULE, NAMESPACE, REFUSED_BY_WEIGHTS_ONLY, where
from torchreview.findings import Fix, Severity


def refused_entries(save, registered: set[str], argparse_project: bool) -> list:
    """The entries of ``save`` a weights-only load refuses, given the class names
    registered with ``add_safe_globals`` (a namespace known only by its name counts
    when the project parses arguments)."""
    out = []
    for entry in save.entries:
        if entry.kind not in REFUSED_BY_WEIGHTS_ONLY:
            continue
        if entry.kind == NAMESPACE and not entry.certain and not argparse_project:
            continue
        if entry.type_name and entry.type_name.rsplit(".", 1)[-1] in registered:
            continue
        if entry.kind == MODULE and registered and not entry.type_name:
            continue  # a module of unknown class, in a project that registers classes: unsure
        out.append(entry)
    return out


def save_side_remedy(entries) -> str:
    """What to change where the checkpoint is written."""
    parts = []
    for entry in entries:
        what = f"`{entry.key}`: " if entry.key else ""
        if entry.kind == MODULE:
            parts.append(f"{what}save `{entry.text}.state_dict()` instead of the module")
        elif entry.kind == NAMESPACE:
            parts.append(f"{what}save `vars({entry.text})` instead of the Namespace")
        else:
            parts.append(f"{what}save a plain dict of `{entry.text}` (e.g. `dataclasses.asdict`, "
                         "`OmegaConf.to_container`)")
    names = sorted({e.type_name for e in entries if e.type_name})
    register = f"`torch.serialization.add_safe_globals([{', '.join(names)}])`" if names and \
        all(e.kind != MODULE for e in entries) else "`torch.serialization.add_safe_globals([...])`"
    return "; ".join(parts) + f" (or register the classes with {register} before loading)"


def describe(entries) -> str:
    words = {MODULE: "a whole `nn.Module`", NAMESPACE: "an `argparse.Namespace`"}
    out = []
    for entry in entries:
        kind = words.get(entry.kind) or f"a config object{f' `{entry.type_name}`' if entry.type_name else ''}"
        out.append(f"{kind} under key `{entry.key}`" if entry.key else f"{kind} (`{entry.text}`)")
    return ", ".join(dict.fromkeys(out))


class WeightsOnlyLoadOfPickledObjects(Rule):
    """
    ## What it does
    Reports a `torch.load` that loads weights-only (`weights_only=True`, or
    no `weights_only` when the targeted torch is 2.6 or newer, where that is
    the default) a checkpoint that the same project writes with objects a
    weights-only load refuses: a whole `nn.Module`, an `argparse.Namespace`,
    a config object (a dataclass or `*Config` class, `OmegaConf`,
    `SimpleNamespace`, `EasyDict`). The message points at the `torch.save`.

    ## Why is this bad?
    The weights-only unpickler accepts tensors and plain containers only; any
    other class raises `UnpicklingError` ("Weights only load failed ...
    Unsupported global"). Resume and evaluation scripts that worked on torch
    2.5 crash on 2.6. The fix belongs on the save side: save
    `model.state_dict()` and `vars(args)`, or allow the classes with
    `torch.serialization.add_safe_globals` (not `weights_only=False`, which
    reopens code execution for every file loaded there).

    ## Example
    ```python
    import argparse
    import torch
    from torch import nn

    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    model = nn.Linear(4, 2)
    torch.save({"model": model.state_dict(), "args": args}, "run/last.pt")

    state = torch.load("run/last.pt", weights_only=True)
    model.load_state_dict(state["model"])
    ```

    ## Use instead
    ```python
    import argparse
    import torch
    from torch import nn

    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    model = nn.Linear(4, 2)
    torch.save({"model": model.state_dict(), "args": vars(args)}, "run/last.pt")

    state = torch.load("run/last.pt", weights_only=True)
    model.load_state_dict(state["model"])
    ```

    ## Heuristics
    Reads the project's checkpoint index. A save and a load are linked by the
    file name pattern (literals, f-strings, `os.path.join`, `%`/`format`
    with computed parts as wildcards) or by the variable the path is read
    from; else by the keys the load reads (every linked save must hold them);
    else, when the load's path is not known and is not a `--pretrained` /
    `--finetune` path, by being in the same project, and then every model
    checkpoint the project writes must hold a refused object. A value is a
    Namespace when bound to `parse_args()` (or named `args`/`opt`/`hparams`
    in a project that parses arguments), a module when the model kind says
    so, a config object when built by a `*Config`/`*Args`/`*Params` class or
    a known config factory. Loads with `weights_only=False` or a variable,
    loads inside `try` with a fallback handler, and classes registered with
    `add_safe_globals` or an enclosing `safe_globals(...)` are not reported.
    Without an explicit `weights_only=True` the rule needs target torch >= 2.6
    (the default when the version is unknown).
    """

    code = "TR520"
    name = "weights-only-load-of-pickled-objects"
    severity = Severity.HIGH
    scope = ("project",)
    summary = "weights-only `torch.load` of a checkpoint the project saves with a module, Namespace or config object"
    severity_reason = "the load raises UnpicklingError on the targeted torch (resume/evaluation crash)"

    def check_project(self, project) -> None:
        registered = project.safe_globals()
        argparse_project = any(f.checkpoints.parses_args for f in project.files)
        for facts, load in project.checkpoint_loads():
            if load.guarded or load.weights_only in ("false", "dynamic"):
                continue
            if load.weights_only == "missing" and not project.torch_at_least(2, 6):
                continue
            link = project.saves_for(load)
            if link is None:
                continue
            allowed = registered | set(load.safe_globals)
            hits = link.agree(lambda save: bool(refused_entries(save, allowed, argparse_project)))
            if not hits:
                continue
            save_facts, save = hits[0]
            entries = refused_entries(save, allowed, argparse_project)
            how = "with `weights_only=True`" if load.weights_only == "true" else \
                "without `weights_only` (weights-only by default since torch 2.6)"
            remedy = save_side_remedy(entries)
            project.report(load.anchor,
                           f"this `torch.load` {how} reads a checkpoint saved at {where(save_facts, save)} "
                           f"with {describe(entries)}: the weights-only unpickler refuses it and the load "
                           f"raises `UnpicklingError`; {remedy}",
                           fix=Fix("display", (), remedy))
