from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.engine.context import NAMESPACE, where
from torchreview.findings import Fix, Severity
from torchreview.rules._checkpoints import describe, refused_by_project, save_side_remedy


class WeightsOnlyLoadOfPickledObjects(Rule):
    """
    ## What it does
    Reports a `torch.load` that loads weights-only (`weights_only=True`, or
    no `weights_only` when the targeted torch is 2.6 or newer, where that is
    the default) a checkpoint that the same project writes with objects a
    weights-only load refuses: a whole `nn.Module`, an `argparse.Namespace`,
    a config object (a dataclass or `*Config` class, `OmegaConf`,
    `SimpleNamespace`, `EasyDict`), a NumPy array or scalar (`np.random.get_state()`,
    `np.mean(accs)`, `t.cpu().numpy()`). The message points at the `torch.save`.

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
    In a test file the save and the load are the check itself -- on a torch
    that refuses the load, the test fails and says so -- so the finding is
    medium confidence there, hidden by default. So is a checkpoint whose only
    refused entry is an options object known by its name alone (`opt`,
    `self.args`, a parameter), with nothing showing it was built by
    `parse_args()` or `argparse.Namespace`: projects keep plain dicts under
    those names too.
    Reads the project's checkpoint index and reports only where the code shows
    that the load reads that save's file. A save and a load are linked by the
    same file name (literals, f-strings, `os.path.join`, `%`/`format` with
    computed parts as wildcards; when both names are known they decide alone,
    a shared folder variable does not make two names one file, and two folders
    spelled out right above them, `baseline/` and `models/`, make two files; a
    name bound twice is read through the binding that reaches the load), or by the
    variable holding the whole path: in one function, or the same option or
    constant (`args.resume`, `CKPT_PATH`) across functions and files (a local
    `model_path` of one script says nothing about another's); else by the
    saves of the loading function; a loaded object used as a module
    (`net = torch.load(p); net.eval()`) links to the project's whole-module
    saves. For loads that look like the project's own checkpoints (a resume,
    or a file that also writes checkpoints), never `--pretrained`/`--finetune`
    paths or a named file the project does not write, the keys the load reads
    (at least two, or a resume) link it to the saves holding those keys, and
    every such save must hold a refused object. A load whose file is unknown
    is not tied to the project's saves. A load whose whole result goes into a
    model's `load_state_dict` (`net.load_state_dict(torch.load("alpha/model.pt"))`)
    reads one state dict: a whole-module save linked to it only by a file name
    that admits it is not the file it reads (the same path variable or option
    still links them: the load then breaks). Saves through a project helper that
    hands its first argument to `torch.save` (`utils.save_on_master({...},
    path)`) count as saves; a save in a helper nothing calls, whose call is written out and
    commented out (`# save_checkpoint(args, ...)`), writes no file and counts for nothing. A
    module that imports torchtext at its top level runs on torch 2.3 at most (torchtext's last
    release), where whole objects still load; so does a load that a module-level torchtext import
    precedes (a notebook whose earlier cells use torch before importing it). A value is a Namespace when bound to
    `parse_args()` (or named `args`/`opt`/`hparams` in a project that parses
    arguments -- not where the code that can hand the saving file its values,
    the file and the project files importing it, turns every `parse_args()`
    it makes into a dict, `args = vars(parser.parse_args())` -- and not when
    the file reads it by string key, `self.opt['cuda']`: a dict), a module when what built it shows one (an `nn.Parameter` is a
    tensor, which a weights-only load accepts) (a `torch.nn` or
    library model constructor, an `nn.Module` subclass, a function returning
    one, `.to()`/DDP of one; a name such as `model` alone is not enough: it
    may be a dict), a config object when built by a `*Config`/`*Args`/
    `*Params` class or a known config factory (also through the project's own
    `parse_args()` returning `OmegaConf.create(...)`). A parameter of a save helper is
    what this file's calls hand it, when they agree (`save_model(model, opt, args)` called
    from `train(args)`, itself called with a `SimpleNamespace`); a name bound several
    times is the binding that always reaches the save, or what every binding builds. A
    script that reads one weights key (`["state_dict"]`) from an option's path on every
    run, before anything of that run saves, reads a model something else wrote, not its
    own save under other options. Loads with `weights_only=False`
    or a variable, loads inside `try` with a fallback handler, and classes
    registered with `add_safe_globals` or an enclosing `safe_globals(...)` are
    not reported.
    Without an explicit `weights_only=True` the rule needs target torch >= 2.6
    (the default when the version is unknown), and a loading file that shows it
    was written for an older torch with no pin (its own `pip install` line
    pinning torch, torchvision/torchtext/torchaudio or pytorch-lightning 1.x
    -- a notebook's `!pip install pytorch-lightning==1.5.2` --, `volatile=True`,
    `loss.data[0]`, Python 2's `iter(loader).next()`: a tutorial of its time
    that modern torch stops earlier anyway; or a module-level import of
    another library's API removed before Python 3.8, `from scipy.misc import
    imread`, `sklearn.cross_validation`, Pyro 0.2's `set_seed`) is not
    reported -- nor when a project module it imports shows that (a prediction
    script importing a dataset module built on `scipy.misc.imread`), or when
    the file that saves the checkpoint does (a trainer that only runs on torch
    0.3 writes it: whoever loads it runs that stack) --, nor is a loading
    file whose own nearest project folder pins a torch older than 2.6 (a
    course's chapter with `torch==1.12.0` in its requirements, beside other
    chapters that pin nothing).

    Loads of one file (a notebook, a script) are one finding, and so are
    loads anywhere in the project of the checkpoint one save writes (a
    resume in `train.py` and an evaluation in `eval.py`: the fix is on the
    save side, once): the places after the first are listed in it and kept
    as related locations.

    Confidence: high when the load and the save are in one file and linked
    by the file name (or the variable holding the path), or by the keys the
    load reads (the reading code expects the layout this file writes): the
    checkpoint read is visibly the one written. Medium for the other links
    (a save in another file, the loading function's saves, a module use).
    """

    code = "TR520"
    name = "weights-only-load-of-pickled-objects"
    severity = Severity.HIGH
    scope = ("project",)
    summary = "weights-only `torch.load` of a checkpoint the project saves with a module, Namespace or config object"
    severity_reason = "the load raises UnpicklingError on the targeted torch (resume/evaluation crash)"
    root_cause = "torch-load"
    # one file (a notebook) loading two whole-module checkpoints it saved is one habit and
    # one comment (thorough-pytorch's chapter 6, a plain and a DataParallel copy: judged a repeat);
    # so are loads in several scripts of the checkpoint one save writes (the resume in train.py
    # and the evaluation in eval.py of efficientdet's Namespace save: one fix, on the save side)
    summarize = "project"

    @classmethod
    def repeat_key(cls, finding) -> str:
        if finding.subject:
            return f"save:{finding.subject}|{finding.kind}"
        return f"{finding.path}|{finding.kind}|{finding.confidence}"

    def check_project(self, project) -> None:
        for facts, load in project.checkpoint_loads():
            if load.guarded or load.keyword_fallback or load.weights_only in ("false", "dynamic"):
                continue
            if load.weights_only == "missing" and (not project.torch_at_least(2, 6) or load.after_torchtext or
                                                   (project.target_torch is None and
                                                    project.written_for_old_torch(facts)) or
                                                   (facts.target_torch and facts.target_torch < (2, 6))):
                # an older torch, or a file written for one or pinned to one by its own folder
                # (a course's chapter with `torch==1.12.0` in its requirements): no weights-only default
                continue
            refused = refused_by_project(project, load)
            if refused is None:
                continue
            save_facts, save, entries = refused
            if load.weights_only == "missing" and project.target_torch is None and save_facts is not facts and \
                    project.written_for_old_torch(save_facts):
                # the checkpoint comes from code that only runs on an older torch (visdial's
                # `loss.cpu().data[0]` trainer): whoever loads it runs that stack too
                continue
            how = "with `weights_only=True`" if load.weights_only == "true" else \
                "without `weights_only` (weights-only by default since torch 2.6)"
            remedy = save_side_remedy(entries)
            link = project.saves_for(load)
            # direct: written and read in one file, linked by the file name (or path variable) or
            # by the keys the load reads: the reading code expects the layout this file writes
            direct = link is not None and link.how in ("path", "keys") and save_facts.path == load.anchor.path
            # a test that saves and loads back is the check itself: on a torch that refuses
            # the load, the test fails in CI and says so (torchtext's pickling tests, judged
            # noise): medium
            direct = direct and not facts.is_test_file
            # an options object known by its name alone (`opt`, `self.args`: HMNet's and APISR's
            # are plain dicts from the project's own config parser, judged false): no evidence
            # of a Namespace, medium
            named_only = all(e.kind == NAMESPACE and not e.certain for e in entries)
            project.report(load.anchor,
                           f"this `torch.load` {how} reads a checkpoint saved at {where(save_facts, save)} "
                           f"with {describe(entries)}: the weights-only unpickler refuses it and the load "
                           f"raises `UnpicklingError`; {remedy}",
                           fix=Fix("display", (), remedy),
                           confidence="medium" if named_only else "high" if direct else None,
                           subject=where(save_facts, save))
