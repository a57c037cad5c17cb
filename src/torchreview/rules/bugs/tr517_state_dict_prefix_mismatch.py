from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.engine.context import MODEL_STATE, where
from torchreview.findings import Fix, Severity
from torchreview.rules._checkpoints import save_repeat_key


_WRAPPERS = (("module.", "`DataParallel`/DDP", "module"), ("_orig_mod.", "`torch.compile`", "_orig_mod"))


def _describe(prefix: str) -> str:
    if not prefix:
        return "an unwrapped model"
    parts, rest = [], prefix
    while rest:
        head = next((w for w in _WRAPPERS if rest.startswith(w[0])), None)
        if head is None:
            break
        parts.append(head[1])
        rest = rest[len(head[0]):]
    return f"a model wrapped by {' and '.join(parts) or 'a wrapper'} (`{prefix}` keys)"


def _layers(prefix: str) -> set[str]:
    """``module._orig_mod.`` -> {"module.", "_orig_mod."}."""
    out, rest = set(), prefix
    while rest:
        head = next((w[0] for w in _WRAPPERS if rest.startswith(w[0])), None)
        if head is None:
            return out | {rest}
        out.add(head)
        rest = rest[len(head):]
    return out


def _unwrap_attr(prefix: str) -> str:
    """`.module` / `._orig_mod` (chained) that removes ``prefix``."""
    out, rest = "", prefix
    while rest:
        head = next((w for w in _WRAPPERS if rest.startswith(w[0])), None)
        if head is None:
            return ".module"
        out += "." + head[2]
        rest = rest[len(head[0]):]
    return out


_KEY_PRESERVING = frozenset({"dict", "OrderedDict", "deepcopy", "copy"})


class StateDictPrefixMismatch(Rule):
    """
    ## What it does
    Reports a `load_state_dict` whose state dict was saved, by the same
    project, from a model wrapped in `DataParallel`/`DistributedDataParallel`
    (every key starts with `module.`) or returned by `torch.compile` (keys
    start with `_orig_mod.`), and is loaded into a model that is not wrapped
    the same way, or the reverse, with no code that strips or adds the prefix.

    ## Why is this bad?
    The keys do not match: `load_state_dict` raises "Missing key(s) /
    Unexpected key(s)" (often only on the multi-GPU machine, where the wrapper
    is applied), and with `strict=False` it silently loads nothing, so
    evaluation or fine-tuning runs on random weights.

    ## Example
    ```python
    import torch
    from torch import nn

    def train(epochs):
        model = nn.DataParallel(nn.Linear(8, 2))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(epochs):
            optimizer.step()
        torch.save(model.state_dict(), "classifier.pt")

    def evaluate():
        model = nn.Linear(8, 2)
        model.load_state_dict(torch.load("classifier.pt", weights_only=True))
        return model
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    def train(epochs):
        model = nn.DataParallel(nn.Linear(8, 2))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(epochs):
            optimizer.step()
        torch.save(model.module.state_dict(), "classifier.pt")

    def evaluate():
        model = nn.Linear(8, 2)
        model.load_state_dict(torch.load("classifier.pt", weights_only=True))
        return model
    ```

    ## Heuristics
    A `load_state_dict` in the body of a `try` whose handler loads again
    (after wrapping the model in `DataParallel` or renaming the keys) is the
    author's own fallback for the mismatch: not reported.
    Reads the project's checkpoint index. A model is wrapped when a
    `x = DataParallel(...)`/`DistributedDataParallel(...)`/`torch.compile(...)`
    assignment to the same name (same function, or the same class for `self.x`)
    comes before the save or load, conditional or not (a wrap under `if
    torch.cuda.device_count() > 1` is the classic case; wraps on the two
    branches of one test -- `DDP(model)` or else `DataParallel(model)` -- are
    one layer; a wrap under a test that never holds is none: `if device ==
    'cuda':` with `device` a `torch.device`, which never equals a string, or
    `if torch.cuda.device_count() > 1:` in a script whose top sets
    `os.environ["CUDA_VISIBLE_DEVICES"] = "0"`, which leaves one GPU visible);
    `x.module` /
    `x._orig_mod` remove one layer; a plain rebinding of the name (`model =
    Tracker()` again for the evaluation; also earlier in a block that holds the
    load, a per-fold rebuild in an inference loop) that always runs before the save or
    load builds a fresh model, and the wraps before it no longer count. For `self.x`, a wrap in `__init__` holds in
    the other methods except those `__init__` calls before wrapping; wraps in
    other methods make the state unknown; `self.x = x` from a parameter of
    `__init__` (a trainer handed its model by the script, which may have
    wrapped it) is unknown too. Models that are parameters of the function,
    `model.module if ... else model` and `unwrap_model(...)` results count as
    unknown and are not reported. A save and a load are linked by the file
    name pattern or path variable, else by the loading function's saves, else
    (for loads that look like the project's own: a resume, or a file that also
    saves) by the keys the load reads or by being the project's model
    checkpoints, which must then all disagree with the load. Of the saves
    of the loading function (or of a script's or notebook's top level) that
    write one file, the load reads the last one before it: a save that a
    later one overwrites, or (at top level) that rewrites the file only
    after the load, is not linked (a lesson saving `net.state_dict()`, then
    `net.module.state_dict()` to the same path before loading). A file that
    names `module.` / `_orig_mod.` in a string or slices `k[7:]` / `k[10:]`
    is taken to strip (or add) that prefix, and only that one: a loader that
    strips `module.` still gets a report for `_orig_mod.` keys. A call of a
    prefix helper defined elsewhere (`remove_prefix(sd)`) keeps the rule quiet.
    A state dict passed through a function on its way to `load_state_dict`
    (`load_state_dict(ckpt_proc(ckpt["model"]))`) may have its keys renamed
    in a function of another file (openvqa's `ckpt_proc` adds `module.`): not
    reported, unless the function keeps the keys (`dict`, `OrderedDict`,
    `copy.deepcopy`); a function of the same file is read like the rest of it.

    One save, one finding: every model loaded from the state dicts one save
    writes (four sub-models of one checkpoint dictionary, the same checkpoint
    read by a training and an evaluation script) is one finding, with the
    other loads as related locations.

    A save whose wraps all run under a command-line option that the script's
    defaults leave off (`if params.isPar: model = DataParallel(model)`,
    `--isPar` defaulting to False) writes the prefix only for runs made with
    the option set: medium confidence, and the message names the option.

    A load whose file is not known (its path an option or configuration value
    that nothing in the project writes: it may be a released or downloaded
    checkpoint) is tied to the project's saves only as a guess: low
    confidence, hidden by default (EpipolarPose's demo reading
    `config.MODEL.RESUME`, a released DataParallel checkpoint, judged false in
    blind test 57).

    Confidence: high when the save and the load are in one file and linked
    by the file name (or the variable holding the path): the state dict read
    is visibly the one written. Medium for the other links (another file,
    the loading function's saves, the keys read).
    """

    code = "TR517"
    name = "state-dict-prefix-mismatch"
    severity = Severity.HIGH
    scope = ("project",)
    summary = "state dict saved from a wrapped model (`module.`/`_orig_mod.` keys) loaded into an unwrapped one"
    severity_reason = "the load crashes, or with strict=False silently keeps random weights"
    # the models one checkpoint feeds are one root cause, on the save side: RRT-MIL's DTFD script
    # loads four sub-models (or one, on another branch) from the dictionary one save writes from
    # `DataParallel` wrappers -- one comment with the other loads as related locations
    summarize = "project"

    @classmethod
    def repeat_key(cls, finding) -> str:
        return save_repeat_key(finding)

    def check_project(self, project) -> None:
        for facts, load in project.checkpoint_loads():
            if "*" in load.renamed_prefixes:
                continue  # a prefix helper we cannot read
            link = None
            for state in load.state_loads:
                if state.target != "model" or state.prefix is None:
                    continue
                if state.retried:
                    continue  # `try: load; except: model = DataParallel(model); load` handles the prefix
                if state.through and state.through.rsplit(".", 1)[-1] not in _KEY_PRESERVING:
                    continue  # `load_state_dict(ckpt_proc(sd))`: the function may rename the keys
                link = link or project.saves_for(load)
                if link is None:
                    break
                hits = link.agree(lambda save: self._mismatch(save, state, load.renamed_prefixes))
                if hits:
                    # direct: the same file name (or path variable) written and read in one file
                    direct = link.how == "path" and hits[0][0].path == facts.path
                    self._report(project, state, hits[0], direct, unknown_file=link.how == "project")

    @staticmethod
    def _entries(save, state):
        entries = [e for e in save.entries if e.kind == MODEL_STATE]
        if state.key != "?":
            entries = [e for e in entries if e.key == state.key]
        return entries

    def _mismatch(self, save, state, renamed) -> bool:
        """Every saved entry has a known prefix whose wrapper layers differ from the
        target's in a layer the loading file does not rename."""
        entries = self._entries(save, state)
        return bool(entries) and all(
            e.prefix is not None and bool((_layers(e.prefix) ^ _layers(state.prefix or "")) - set(renamed))
            for e in entries)

    def _report(self, project, state, hit, direct: bool = False, unknown_file: bool = False) -> None:
        facts, save = hit
        saved = next(e.prefix for e in self._entries(save, state))
        consequence = "with `strict=False` this silently loads nothing (the model keeps its random weights)" \
            if state.strict == "false" else "`load_state_dict` fails with missing/unexpected keys"
        if saved:
            remedy = (f"strip the prefix before loading (`{{k.removeprefix('{saved}'): v for k, v in sd.items()}}` "
                      "or `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "
                      f"'{saved}')`), or save `model{_unwrap_attr(saved)}.state_dict()`")
        else:
            remedy = f"load into the inner model (`{state.target_text}{_unwrap_attr(state.prefix or '')}" \
                     ".load_state_dict(...)`) or load before wrapping"
        # the save side wraps only under a command-line option the defaults leave off (RRT-MIL's
        # `if params.isPar: ... DataParallel(...)`): a mismatch only for runs made with it set
        option = next((e.wrap_option for e in self._entries(save, state) if e.wrap_option), "")
        when = f" (only for a checkpoint written with `{option}` set: it is off by default)" if option else ""
        confidence = "medium" if option else "high" if direct else None
        if unknown_file:
            # the path is an option or config value the code does not show (EpipolarPose's demo reads
            # `config.MODEL.RESUME`, a released checkpoint): every save of the project is only a guess
            when += " (if that is the file read here: the path comes from an option or a configuration)"
            confidence = "low"
        project.report(state.anchor,
                       f"state dict saved at {where(facts, save)} from {_describe(saved)}{when} is loaded into "
                       f"`{state.target_text}`, {_describe(state.prefix or '')} here: {consequence}; {remedy}",
                       fix=Fix("display", (), remedy), confidence=confidence,
                       subject=where(facts, save))
