"""Checkpoint questions shared by rules: which saved objects a weights-only load
refuses, how to say so, and the project-aware refinement of the `weights_only=True`
fix (TR101/TR102 offer the automatic edit only when the project's own saves of that
checkpoint hold tensors and plain containers)."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from torchreview.engine.context import (
    MODEL_STATE, MODULE, NAMESPACE, NUMPY, OPTIMIZER_STATE, PLAIN, REFUSED_BY_WEIGHTS_ONLY, SCALER_STATE, SCHEDULER_STATE,
    UNKNOWN, installable_module, paired_save_function, where,
)
from torchreview.findings import Severity
from torchreview.findings import Fix
from torchreview.rules._helpers import NO_WEIGHTS_ONLY


# what a weights-only load needs allowed to read NumPy arrays and scalars (by their last name)
_NUMPY_GLOBALS = frozenset({"_reconstruct", "scalar", "ndarray"})


def refused_entries(save, registered: set[str], argparse_project: bool, module_keys=(),
                    module_classes=frozenset()) -> list:
    """The entries of ``save`` a weights-only load refuses, given the class names
    registered with ``add_safe_globals`` (a namespace known only by its name counts
    when the project parses arguments). ``module_keys``: keys the loading code uses
    as modules (``decoder = ckpt["decoder"]; decoder.eval()``), refused whatever the
    save side could tell. ``module_classes``: the project's ``nn.Module`` subclasses (a
    value built by one of them, in another file, is a module)."""
    out = []
    for entry in save.entries:
        if entry.key and entry.key in module_keys and entry.kind in (UNKNOWN, MODULE):
            entry = replace(entry, kind=MODULE)
        if entry.kind == UNKNOWN and entry.type_name and entry.type_name in module_classes:
            entry = replace(entry, kind=MODULE)
        if entry.kind not in REFUSED_BY_WEIGHTS_ONLY:
            continue
        if entry.kind == NAMESPACE and not entry.certain and not argparse_project:
            continue
        if entry.type_name and entry.type_name.rsplit(".", 1)[-1] in registered:
            continue
        if entry.kind == NUMPY and registered & _NUMPY_GLOBALS:
            continue  # the project allows NumPy's reconstructors (`add_safe_globals([_reconstruct, ...])`)
        if entry.kind == MODULE and registered and not entry.type_name:
            continue  # a module of unknown class, in a project that registers classes: unsure
        out.append(entry)
    return out


def _primary(text: str) -> str:
    """``text`` ready for a method call: parenthesised unless it is a name, attribute, call or
    subscript (``(net.module if cuda else net)``, not ``net.module if cuda else net.state_dict()``)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return f"({text})"
    return text if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else f"({text})"


def save_side_remedy(entries) -> str:
    """What to change where the checkpoint is written."""
    parts = []
    for entry in entries:
        what = f"`{entry.key}`: " if entry.key else ""
        if entry.kind == MODULE:
            parts.append(f"{what}save `{_primary(entry.text)}.state_dict()` instead of the module")
        elif entry.kind == NAMESPACE:
            parts.append(f"{what}save `vars({entry.text})` instead of the Namespace")
        elif entry.kind == NUMPY:
            parts.append(f"{what}convert `{entry.text}` to tensors or Python values (`torch.as_tensor(...)`, "
                         "`.tolist()`) before saving")
        else:
            parts.append(f"{what}save a plain dict of `{entry.text}` (e.g. `dataclasses.asdict`, "
                         "`OmegaConf.to_container`)")
    names = sorted({e.type_name for e in entries if e.type_name})
    register = f"`torch.serialization.add_safe_globals([{', '.join(names)}])`" if names and \
        all(e.kind not in (MODULE, NUMPY) for e in entries) else "`torch.serialization.add_safe_globals([...])`"
    return "; ".join(parts) + f" (or register the classes with {register} before loading)"


def describe(entries) -> str:
    words = {MODULE: "a whole `nn.Module`", NAMESPACE: "an `argparse.Namespace`", NUMPY: "a NumPy array or scalar"}
    out = []
    for entry in entries:
        kind = words.get(entry.kind) or f"a config object{f' `{entry.type_name}`' if entry.type_name else ''}"
        out.append(f"{kind} under key `{entry.key}`" if entry.key else f"{kind} (`{entry.text}`)")
    return ", ".join(dict.fromkeys(out))


def refused_by_project(project, load):
    """``(facts, save, entries)`` of the first save of the checkpoint ``load`` reads that
    holds objects a weights-only load refuses (every save must agree on weak links), or None.
    The link needs evidence that the load reads that file (its name, the variable or option
    holding its path, the keys it reads, the loading function's own saves, or the loaded
    object used as a module): a load whose file is unknown is never tied to every save."""
    link = project.saves_for(load)
    if link is None or link.how == "project":
        return None  # a load of an unknown file is not evidence that it reads any particular save
    allowed = project.safe_globals() | set(load.safe_globals)
    classes = frozenset(c for f in project.files for c in f.module_classes)
    # an `args` saved without other evidence may be a Namespace in a project that parses arguments,
    # unless the code that can hand the saving file its values turns every `parse_args()` it makes
    # into a dict (a GAN trainer's `args = vars(parser.parse_args())`, judged false in blind test 102)
    argparse_project = any(f.checkpoints.parses_args for f in project.files)
    saving_file = {id(save): facts for facts, save in link.saves}

    def refused(save):
        facts = saving_file.get(id(save))
        near = project.parsed_args_near(facts.path) if facts is not None else ""
        argparse_near = near == "namespace" or (near == "" and argparse_project)
        return refused_entries(save, allowed, argparse_near, load.module_keys, classes)

    # the whole loaded object goes into a model's `load_state_dict` (`net.load_state_dict(
    # torch.load("alpha/model.pt"))`): the author reads one state dict, so a save of a whole
    # module linked only by a file name that admits it is another file (a sleep-staging
    # notebook's weights linked to another notebook's `torch.save(model, "model.pt")`, judged
    # false in blind test 118); linked by the same path variable or option it is the file, and
    # the load breaks (UER-py's averaged model saved whole and read back into a model)
    whole_state_dict = bool(load.path_pattern) and any(s.key == "" and s.target == "model"
                                                        for s in load.state_loads)

    def refused_here(save):
        entries = refused(save)
        if whole_state_dict and save.path_pattern:
            entries = [e for e in entries if e.key]
        return entries

    hits = link.agree(lambda save: bool(refused_here(save)))
    if not hits:
        return None
    facts, save = hits[0]
    return facts, save, refused_here(save)


# Names under which a whole saved object is a state dict or a checkpoint dict (of unknown
# content, but made of tensors as a rule); other names (`transforms`, `vocab`) are objects.
_STATE_WORDS = ("state", "ckpt", "checkpoint", "weight", "param", "dict", "sd", "tensor", "emb", "vec", "data",
                "snapshot", "save", "out", "result", "obj")


def objects_of_unknown_type(project, load):
    """``(facts, save, entry)`` when ``load`` reads a file the project writes itself (same
    file-name pattern or path variable, or the loading function's own saves) as one whole
    object of unknown type whose name does not say state dict (``torch.save(transforms, p)``,
    ``transforms`` a parameter): nothing shows a weights-only load would accept it."""
    link = project.saves_for(load)
    if link is None or link.how not in ("path", "function"):
        return None
    for facts, save in link.saves:
        for entry in save.entries:
            if entry.key or entry.kind != UNKNOWN or entry.type_name or not entry.text.isidentifier():
                continue
            if not any(w in entry.text.lower() for w in _STATE_WORDS):
                return facts, save, entry
    return None


_PLAIN_KINDS = frozenset({MODEL_STATE, OPTIMIZER_STATE, SCHEDULER_STATE, SCALER_STATE, PLAIN})


def plain_by_project(project, load):
    """``(facts, save)`` when ``load`` reads a checkpoint this project writes (same file
    name pattern or path variable, or the loading function's own saves) and every such
    save holds only state dicts, tensors and plain values, else None."""
    link = project.saves_for(load)
    if link is None or link.how not in ("path", "function") or load.module_keys or load.used_as_module:
        return None
    if all(save.complete and save.entries and all(e.kind in _PLAIN_KINDS for e in save.entries)
           for _, save in link.saves):
        return link.saves[0]
    return None


def _own_plain_saves(project, load):
    """``(facts, save)``: the first save of the loading file when that file writes
    checkpoints and every one holds only state dicts, tensors and plain values."""
    saves = [(f, s) for f, s in project.checkpoint_saves() if f.path == load.anchor.path]
    if saves and all(s.complete and s.entries and all(e.kind in _PLAIN_KINDS for e in s.entries) for _, s in saves):
        return saves[0]
    return None


def load_at(project, finding):
    """The project's ``CheckpointLoad`` a file finding on a ``torch.load`` call points at."""
    best = None
    for _facts, load in project.checkpoint_loads():
        a = load.anchor  # the call, or a call the reported argument belongs to (same line, to its left)
        if a.path == finding.path and a.line == finding.line and a.cell == finding.cell and \
                a.column <= finding.column and (best is None or a.column > best.anchor.column):
            best = load
    return best


def own_pickler(finding, project):
    """A load with a custom ``pickle_module`` (``dill``) in a project whose own ``torch.save``
    calls write with the same pickler, in any file (robustness: ``train.py`` saves with
    ``pickle_module=dill``, ``model_utils.py`` loads): the project's checkpoint format, a
    deliberate choice -- medium confidence, as when the same module writes with it."""
    load = load_at(project, finding)
    if load is None or not load.pickle_module or finding.confidence == "medium":
        return finding
    if any(save.pickle_module == load.pickle_module for _f, save in project.checkpoint_saves()):
        return replace(finding, confidence="medium",
                       message=finding.message + " (the project writes its checkpoints with the same "
                                                 "pickler: load only files this project wrote)")
    return finding


def refine_weights_only_fix(finding, project, own_plain_is_low: bool = False, own_without_keyword_silent=False):
    """A TR101/TR102 finding on a load of a checkpoint the project writes with objects a
    weights-only load refuses: no automatic edit (it would break the load); the message
    points at the save and the real change. With ``own_plain_is_low``, a missing
    ``weights_only`` on a checkpoint the project itself writes with plain data only is
    a low-severity finding that says so (the edit is safe for this project). With
    ``own_without_keyword_silent``, a finding on a torch without the keyword (before 1.13)
    is dropped when the project itself writes the file (same name pattern or path
    variable, or the loading function's own saves): there is nothing to change in the code."""
    if "pickle_module" in finding.message:
        return own_pickler(finding, project)
    load = load_at(project, finding)
    if own_without_keyword_silent and NO_WEIGHTS_ONLY in finding.message:
        link = project.saves_for(load) if load is not None else None
        return None if link is not None and link.how in ("path", "function") else finding
    refused = refused_by_project(project, load) if load is not None else None
    if refused is None and load is not None and load.weights_only == "missing":
        unknown = objects_of_unknown_type(project, load)
        if unknown is not None:
            facts, save, entry = unknown
            return replace(finding, severity=Severity.MEDIUM, kind="advice",
                           fix=Fix("display", (), f"check that `{entry.text}` holds only tensors and plain "
                                                   "containers before passing `weights_only=True`"),
                           message=f"{finding.message}; but this project writes that file itself at "
                                   f"{where(facts, save)} with `{entry.text}`, an object of a type not known "
                                   "here: check it holds only tensors and plain containers first (a "
                                   "weights-only load refuses other objects)")
    if refused is None:
        own = plain_by_project(project, load) if load is not None and own_plain_is_low else None
        resume = own is None and own_plain_is_low and load is not None and load.optional_resume
        if resume:
            own = _own_plain_saves(project, load)
        if own is None or load.weights_only != "missing":
            return finding
        states = any(e.kind != PLAIN for e in own[1].entries)
        what, held = ("checkpoint", "state dicts and plain values") if states else ("data file", "tensors and plain values")
        whose = (f"this optional load only resumes this project's own training (the weights with their "
                 f"optimizer/scaler state), from checkpoints written") if resume else \
            f"the file is this project's own {what} (written"
        return replace(finding, severity=Severity.LOW, kind="advice",
                       message=f"{finding.message}: low risk, {whose} at {where(*own)} with {held} only, so the "
                               f"edit is safe for it)" if not resume else
                       f"{finding.message}: low risk, {whose} at {where(*own)} with {held} only; the edit is "
                       f"safe for them")
    facts, save, entries = refused
    remedy = save_side_remedy(entries)
    if not project.torch_at_least(2, 4):
        remedy += "; `add_safe_globals` needs torch >= 2.4, newer than the project targets"
    message = (f"{finding.message}; weights-only loading needs the save changed first: this project "
               f"writes that checkpoint at {where(facts, save)} with {describe(entries)}, which a "
               "weights-only load refuses")
    if load.weights_only == "missing":
        # the project's own checkpoint format: passing the keyword would break the load, and
        # what to change is the save -- advice, not a defect of this call
        return replace(finding, fix=Fix("display", (), remedy), severity=Severity.MEDIUM, kind="advice",
                       message=message)
    return replace(finding, fix=Fix("display", (), remedy), message=message)


def opt_out_needed(finding, project):
    """An explicit ``weights_only=False`` (reported high) on a load of a checkpoint the
    project writes itself (linked as TR520 links them, or written by the paired method of
    the same file: ``save_checkpoint`` for ``load_checkpoint``) whose contents are open-ended -- a dict the caller hands in and
    the save extends (``checkpoint_dict = checkpoint_dict or {}; checkpoint_dict["module"]
    = ...``), or objects of a type not known here: a weights-only load may refuse what the
    project's own users put there, so the opt-out is the project's checkpoint format, not
    a slip -- medium, and the message says which save. The other way round, a medium
    opt-out in library code (a module of an installable package, not a test) whose
    linked (or paired) saves hold only state dicts and plain values gives up safe
    loading for its users for nothing: high, naming the save."""
    if finding is None:
        return finding
    load = load_at(project, finding)
    if load is None or load.weights_only != "false":
        return finding
    link = project.saves_for(load)
    saves = list(link.saves) if link is not None else _paired_saves(project, load)
    loader = next((f for f, _ in project.checkpoint_loads() if f.path == finding.path), None)
    library = loader is not None and not loader.is_test_file and installable_module(finding.path)
    if library and finding.confidence == "medium" and saves and not load.module_keys and \
            not load.used_as_module and all(
            save.complete and save.entries and all(e.kind in _PLAIN_KINDS for e in save.entries) for _, save in saves):
        facts, save = saves[0]
        # the project's own save of that file holds state dicts and plain values only: the
        # opt-out gives up safe loading for nothing (`weights_only=True` reads it)
        return replace(finding, confidence="high",
                       message=f"{finding.message}; this project writes that file at {where(facts, save)} with "
                               "state dicts and plain values only, which `weights_only=True` reads")
    if finding.confidence != "high":
        return finding
    for facts, save in saves:
        if not save.complete or any(e.kind == UNKNOWN and not e.key for e in save.entries):
            return replace(finding, confidence="medium",
                           message=f"{finding.message}; this project's own save at {where(facts, save)} writes "
                                   "contents not known here (what its callers put in), which a weights-only "
                                   "load may refuse: the opt-out matches that format")
    return finding


def _paired_saves(project, load):
    """The saves of the same file made by the function whose name pairs with the
    loading function's (``save_checkpoint`` for ``load_checkpoint``, ``save`` for
    ``load``): one format written and read by a pair of methods."""
    paired = paired_save_function(load.function)
    if not paired:
        return []
    return [(f, s) for f, s in project.checkpoint_saves()
            if f.path == load.anchor.path and s.function.rsplit(".", 1)[-1] == paired]


def weights_only_adopted(finding, project):
    """An explicit ``weights_only=False`` reported at medium confidence in one-off code
    (a script, a notebook; not a module of the installable package) is a defect after all when the same project's
    own library (a module of an installable package) loads with ``weights_only=True``:
    the opt-out is the exception to the project's own practice, and the place that
    does it right shows the fix works. Not in the project's tests: they read back
    files they wrote themselves; nor when the library itself mostly opts out (more than
    twice per weights-only load: its practice is opting out, the script follows it)."""
    if finding is None or finding.confidence != "medium" or finding.message.endswith(EXPLAINED_NOTE):
        return finding  # (an opt-out whose comment gives the reason stays a documented decision)
    if installable_module(finding.path):
        # an opt-out in the library itself is medium because nothing shows a weights-only
        # load would read that file (an object of unknown kind): a library that loads
        # weights-only where it can and opts out where its format needs pickling is
        # deliberate both ways (held-out 10: ogb, nnU-Net, sd-scripts, 5 of 6 judged noise)
        return finding
    load = load_at(project, finding)
    if load is None or load.weights_only != "false":
        return finding
    if any(facts.path == finding.path and facts.is_test_file for facts, _ in project.checkpoint_loads()):
        # a test reading back what it (or the code under test) just wrote in a temporary
        # folder: the library's practice protects its users, not its own test fixtures
        # (composer: 14 opt-outs in tests/, judged noise)
        return finding
    library = [other.weights_only for facts, other in project.checkpoint_loads()
               if installable_module(facts.path) and not facts.is_test_file]
    if library.count("false") > 2 * library.count("true"):
        # the library itself mostly opts out, more than twice per weights-only load (schnetpack: five
        # opt-outs for its models and MD checkpoints, two weights-only cache reads): a tutorial
        # doing the same follows the project's practice, not an exception to it (judged noise
        # on held-out 36)
        return finding
    for facts, other in project.checkpoint_loads():
        # the project's own library does it right (open_clip: src/open_clip loads weights-only,
        # scripts/ opt out); other one-off scripts of a tutorial collection set no practice
        if other.weights_only == "true" and installable_module(facts.path):
            cell = f" cell {other.anchor.cell}" if other.anchor.cell else ""
            return replace(finding, confidence="high",
                           message=f"{finding.message}; this project loads with `weights_only=True` "
                                   f"elsewhere ({facts.path}{cell}:{other.anchor.line})")
    return finding


EXPLAINED_NOTE = " (the comment here gives the reason)"
_EXPLAINED = re.compile(r"weights[_ ]only|\bpickle|\bunpickl|\btrusted\b|\bsafe globals?\b|\bnosec\b", re.I)


def explained_opt_out(ctx, node) -> bool:
    """A comment of the dozen lines above an explicit ``weights_only=False`` load (in
    its function), or at the end of the load's own lines, says
    why (``# the benchmark ships pickled arrays that a weights-only load rejects:
    trusted, load them directly``): a documented decision, as a reviewer reads it --
    the comment names weights-only loading, pickling or trust, or is a security
    linter's acknowledgement (``# nosec B614``)."""
    lines = ctx.source.lines
    stmt = next((a for a in ctx.ancestors(node) if isinstance(a, ast.stmt)), node)
    first, last = getattr(stmt, "lineno", 1), getattr(node, "end_lineno", None) or getattr(stmt, "lineno", 1)
    block = [lines[i - 1].split("#", 1)[1] for i in range(first, min(last, len(lines)) + 1) if "#" in lines[i - 1]]
    func = ctx.enclosing_function(node)
    floor = max(0, (func.lineno - 1) if func is not None else first - 13, first - 13)
    for index in range(first - 2, floor - 1, -1):  # the comment lines of the dozen lines above, in the function
        text = lines[index].strip()
        if text.startswith("#"):
            block.append(text)
    return bool(block) and _EXPLAINED.search(" ".join(block)) is not None


def save_repeat_key(finding, *parts: str) -> str:
    """The repeat key of a finding about a checkpoint: the save it names (``subject``: the
    loads of one save are one root cause, fixed on the save side) and ``parts``; a finding
    without a save keeps its own place."""
    tail = "|".join(parts)
    if finding.subject:
        return f"save:{finding.subject}|{tail}"
    return f"{finding.path}|{finding.line}|{tail}"
