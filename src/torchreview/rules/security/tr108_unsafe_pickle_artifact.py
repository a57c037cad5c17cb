"""TR108: a checkpoint or pickle file whose pickle stream can run code."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import replace

from torchreview.catalog import Rule
from torchreview.findings import Severity

# the claim of a finding about globals outside the weights-only allow-list
REFUSED = "A weights-only load will refuse this file"
# file types torch.save writes or torch.load is meant to read (compressed copies too)
_CHECKPOINT_SUFFIXES = (".pt", ".pth", ".ckpt", ".bin", ".tar", ".mar", ".nemo", ".pt2")
_COMPRESSED = (".gz", ".bz2", ".xz")
_ZIP_MAGIC = b"PK\x03\x04"
# a global as the scan names it: "pandas.core.indexes.base._new_Index (GLOBAL at byte 109"
_NAMED_GLOBAL = re.compile(r"([A-Za-z_][\w.]*) \([A-Z_]+ at byte")
_VERDICTS = ("imports code-executing globals", "needs globals outside", "holds NumPy data",
             "could not be fully verified", "not a checkpoint")


# packages whose globals in a pickle are containers and values, not a project's classes
_CONTAINER_PACKAGES = frozenset(sys.stdlib_module_names) | {"__builtin__", "numpy", "copy_reg"}


class UnsafePickleArtifact(Rule):
    """## What it does
    Scans checkpoint and pickle files in the tree (`.pt`, `.pth`, `.ckpt`,
    `.bin`, `.pkl`, `.pickle`, `.joblib`, `.npy`, `.npz`, `.mar`, `.nemo`,
    `.tar`, the same followed by `.gz`/`.bz2`/`.xz`, and any file whose
    content is a pickle, a torch zip, a NumPy array, a tar, or gzip/bz2/xz/zlib
    data that decompresses to one of those) without ever unpickling them;
    `check` and `scan` recognise the same files. Every pickle stream inside is walked
    opcode by opcode; every global it imports is compared with the globals
    `torch.load(weights_only=True)` accepts, and every callable it invokes
    (`REDUCE`, `NEWOBJ`, `INST`, `OBJ`, `BUILD` with a `__setstate__`,
    `EXT1/2/4` codes registered through `copyreg.add_extension`, the
    `copyreg` rebuild helpers) is classified:

    - calling anything that is not a class is **critical**: a function or a
      method (`logging.config.dictConfig`, `pathlib.Path.write_text`,
      `typing.ForwardRef._evaluate`...), the result of another call, or a name
      that cannot be shown to be a class (bound by an assignment, without
      source, not installed). Class or function is read from the module's
      source text (or `.pyi` stub), found through the import system's path
      finder and parsed with `ast`, never imported; well-known gadgets (`os`,
      `subprocess`, `builtins.eval`, `torch.hub`, a nested `pickle.loads`...)
      are named as such;
    - rebuilding a class outside the allow-list (your own `nn.Module`, a
      dataclass, NumPy scalars) is **medium**: a weights-only load will refuse
      the file, so loading it needs trust in whoever made it;
    - a stream whose only globals outside the allow-list are NumPy's own data
      rebuilders (`numpy.core.multiarray.scalar`/`_reconstruct`,
      `numpy.core.numeric._frombuffer`, `numpy.dtype`, `numpy.ndarray`: the
      NumPy object-array allow-list, what `numpy.load(allow_pickle=True)`
      itself needs), with no call of anything else, is **low advice**, hidden
      by default: these build arrays, scalars and dtypes from bytes and run
      no code, so the file needs no trust; what remains is that a
      weights-only load refuses it, which the code that loads it decides
      (`torch.serialization.add_safe_globals`). The size of the file does not
      enter: it changes nothing about what its globals can do. Any other
      global next to them keeps the file medium (or critical);
    - a macOS AppleDouble sidecar (`._weights.npy`, the Finder's metadata written beside a
      copied file, starting with its `00 05 16 07` magic) holds no data anything loads: no
      finding, whatever its extension;
    - a pickle stored inside a string of the pickle is walked as well; bytes
      holding a whole legacy `torch.save` stream are walked pickle by pickle,
      and `torch.storage._load_from_bytes(b)` of such bytes (also a Python 2
      `str`, as Python 2's pickles hold them) whose pickles
      reference only tensor storages (how plain `pickle` stores a tensor) is
      a tensor, not code: no finding of its own; a member larger than the
      scanner reads (256 MiB) whose pickle parsed clean up to the cut is
      "only partly verified" at low confidence (a large array), while a
      bomb of filler bytes stays "could not be fully verified"; dill's
      `_get_attr(_import_module("<module>"), "<name>")` on constants loads
      exactly what a `GLOBAL <module>.<name>` loads and is judged as that
      global (NumPy's `_reconstruct` in DeepRC's dill-pickled splits is data;
      `os.system` named that way stays critical), and so is `getattr(<a global>,
      "<name>")` on constants -- how protocol 2 stores a class nested in another
      (a project's `Task.Name` enum) -- judged as the dotted global (never a
      dunder or private name); a call of a
      `functools.partial(<global>)` is a call of that global (pandas'
      `partial(new_block, ndim=2)` for each DataFrame block: a rebuilder that
      needs trust), unless a `BUILD` state swaps in another global (then
      that one) or a function the scan cannot name (critical); macOS's
      `__MACOSX/` resource forks inside zips are not scanned; the pickles of
      a TorchScript archive (a zip with compiled `code/` beside `data.pkl`)
      are read by `torch.jit.load`'s own unpickler, so its list and type
      helpers (`torch.jit._pickle.*`) and the archive's compiled classes
      (`__torch__.*`) are allowed there, and anything denied stays critical;
    - a file that cannot be read completely (truncated, corrupted, hostile,
      over a scan limit) is an error entry and a medium finding saying it
      could not be verified -- except binary data of another format under a
      pickle's name (no format's header, not even a pickle's `PROTO`: Flatland's
      msgpack scenes saved as `.pkl`) whose bytes break on a byte that is no
      opcode of any protocol before anything is imported or called (at most an
      extension-code lookup in the loader's own `copyreg` registry): an
      unpickler stops there too, so it is no finding, and an error entry
      ("not a pickle") only when the file was named to `torchreview scan`.

    The finding names the member (for example `archive/data.pkl`), the byte
    offset of each offending global and how it is used (called by `REDUCE`,
    instantiated, written to by `BUILD`). Torch zip checkpoints are scanned by
    reading only their pickle members, never the tensor data, so multi-GB
    files take milliseconds. The allow-list mirrors the torch version recorded
    in `torchreview/data/pickle_allowlist.json`.

    ## Why is this bad?
    Unpickling is running a program: a pickle can import any callable and call
    it with any arguments while it loads. `torch.load(weights_only=False)`,
    `pickle.load`, `joblib.load` and `numpy.load(allow_pickle=True)` give a
    downloaded or shared checkpoint full control of the machine that opens it.
    Files that save whole objects (a pickled `nn.Module`, custom classes)
    cannot be loaded with `weights_only=True` and so push every user to the
    unsafe path.

    ## Example
    ```python
    import torch

    model = torch.nn.Linear(4, 2)
    torch.save(model, "model.pt")  # pickles the class: needs an unsafe load
    model = torch.load("model.pt", weights_only=False)
    ```

    ## Use instead
    ```python
    import torch

    model = torch.nn.Linear(4, 2)
    torch.save(model.state_dict(), "model.pt")  # tensors only
    model.load_state_dict(torch.load("model.pt", weights_only=True))
    ```

    ## Heuristics
    The weights-only claim (a medium finding: globals outside the allow-list,
    nothing that runs code) matters for files `torch.load` reads. It is
    reported at default confidence for checkpoint-like files -- a torch
    checkpoint extension (`.pt`, `.pth`, `.ckpt`, `.bin`, `.tar`, `.mar`,
    `.nemo`, `.pt2`, also compressed), a zip laid out as `torch.save` writes
    one (a `data.pkl` member) whatever its name -- a zip of a plain pickle
    (`trn_mat.pkl.zip`) is a data pickle --,
    or a file whose name a `torch.load` call of the project names (a literal
    file name, or a pattern such as `f"{name}.pickle"`; where the pattern names
    its folder, `./models/{name}.pkl`, only files of a folder of that name). A data pickle
    (`.pkl`/`.pickle`/`.joblib` ...) in a project whose `torch.load` calls
    never name it is low confidence, hidden by default: no weights-only load
    applies to it. So is the refusal in a project every `torch.load` of which
    runs below torch 2.6 (the pin of its folder, an install script's
    `conda install pytorch==1.8.0` included; or torchtext's torch 2.3 for a
    module or notebook that imports torchtext before any torch code) without
    `weights_only=True`:
    there a load unpickles in full (only the loads that may read the file
    count: a weights-only load of another, named file changes nothing), and
    the note matters only once the
    project moves to torch >= 2.6 (a project without any `torch.load`: when
    all its torch files run below 2.6), and the refusal of a file every
    `torch.load` of the project that may read it (naming it, or taking any
    file) loads with `weights_only=False` written out: the project trusts its
    own files on purpose. Code-executing globals stay critical and files that could
    not be verified stay medium whatever reads them; a scan of artifacts
    alone (no Python file of the project reviewed) keeps every finding.
    A file a tool writes and reads itself is low confidence, whatever it
    holds, when the project's code is reviewed: Sphinx's build cache (a
    `.doctrees` folder, whose pickles name Sphinx's own classes) and a model
    MLflow logged (`artifacts/model/data/model.pth` under a folder holding an
    `MLmodel` file), which only `mlflow.<flavor>.load_model` reads; a scan of
    artifacts alone keeps those findings.
    Files of one kind are one finding: in one project, the files whose scans
    reach the same verdict about globals of the same modules (sixty pickled
    pandas frames of one results folder; one project's config classes in each
    run's checkpoints) are reported once, listing the others as related
    places; a file that runs code (critical) is always its own
    finding. The rebuild helpers of NumPy and pandas (`_reconstruct`,
    `_new_Index`, `_unpickle_block` ...) only rebuild data from their
    arguments: a pickled DataFrame needs trust (medium), it runs no code; so
    does Cython's `<module>.__pyx_unpickle_<Class>` when the project's
    `<module>.pyx` defines `cdef class <Class>` (the project's own compiled
    objects pickled: dqn-trading's `Agent`).
    A file without a pickle header is read as a protocol-0 pickle only when its
    first opcodes parse as one; a whole file that ends inside an opcode's
    argument with nothing called before (a 42-byte list of case ids starting
    with `c`, read as a GLOBAL cut short) cannot run anything when unpickled and
    is text, not an artifact. Neither is a Git LFS pointer left where the file
    would be (a checkout without `git lfs pull`): `check` passes over it,
    `scan` of it by name says it holds nothing to scan. The same holds for a
    short file of plain text in a checkpoint's place (at most 64 KiB of
    printable UTF-8: "This is just an example.", a note on where to download
    the weights) that no format reads and whose pickle reading breaks off
    before naming any global: a protocol-0 pickle that imports something names
    it first and is still scanned.
    """

    code = "TR108"
    name = "unsafe-pickle-artifact"
    severity = Severity.CRITICAL
    severity_reason = (
        "Code execution, certain: the pickle stream itself calls a global that runs code."
    )
    scope = ("artifact",)
    needs_torch = False
    summary = "Checkpoint or pickle file whose pickle stream imports code-executing or untrusted globals"

    summarize = "project"

    @classmethod
    def repeat_key(cls, finding) -> str:
        """One comment per kind of file in a project: files whose scans reach the same verdict
        (for code execution: code-executing globals of the same packages) about globals of
        the same modules (sixty pickled pandas frames of one results folder, the graphs a dataset
        script wrote, one project's config classes in each run's checkpoints) are one finding
        listing the places; a file with globals of other modules, or another verdict, severity
        or confidence, is its own finding."""
        message = finding.message
        if finding.severity is Severity.CRITICAL:
            # files that run the same code-executing globals are one alert listing them (138
            # pickles of one results folder, each calling the same function); a file calling any
            # other global is its own
            # the packages of the code-executing globals (not of the others the message lists
            # after "also outside the weights-only allow-list"): 138 pygad checkpoints each
            # pickling functions with cloudpickle, beside differing data classes, are one alert
            critical = message.split("; also outside", 1)[0]
            named = sorted({g.split(".", 1)[0] for g in _NAMED_GLOBAL.findall(critical)})
            return f"critical|{','.join(named)}" if named else f"{finding.path}|{finding.cell}"
        verdict = next((v for v in _VERDICTS if v in message), "")
        # the modules the globals come from: checkpoints that pickle one project's config objects
        # (`config.config.BiNCTABL` in one run's folder, `config.config.DeepLOB` in the next: TLOB,
        # judged a repeat in blind test 41) share one root cause
        named = sorted({g.rsplit(".", 1)[0] for g in _NAMED_GLOBAL.findall(message)})
        # the layers a whole pickled model holds (`torch.nn.modules.conv`, `...linear`) follow its
        # architecture, not the cause: two models of one script saved whole (`__main__.CNN1DModel`
        # with convolutions, `__main__.FCModel` with linear layers: a repeat in blind test 114) are
        # keyed by the modules of their own classes
        own = [m for m in named if m != "torch" and not m.startswith("torch.")]
        # ... and, for whole models (the pickle holds `torch.nn` layers), by the top-level package of
        # those classes: each algorithm of one project saving its network whole
        # (`algorithms.DQN.Net`, `algorithms.PPO.ActorNetwork`, `algorithms.SAC...` in a model zoo:
        # one habit, a repeat in blind test 131) is one comment, while data pickles of different
        # modules (a results folder's frames, a dataset script's graphs) stay apart; the standard
        # library's and numpy's containers beside them (`collections.defaultdict` of an optimizer's
        # state) are no class of the project's
        if any(m.startswith("torch.nn.modules") for m in named):
            tops = {m.split(".", 1)[0] for m in own}
            own = sorted(tops - _CONTAINER_PACKAGES or tops)
        named = own or named
        detail = ",".join(named) if named else re.sub(r"\d+", "#", message.split(verdict, 1)[-1])
        return f"{finding.severity.label}|{finding.kind}|{finding.confidence}|{verdict}|{detail}"

    @classmethod
    def refine_with_project(cls, finding, project):
        """A data pickle that no ``torch.load`` of the project names, or a file of a project
        whose every ``torch.load`` passes ``weights_only=False``: the weights-only refusal is
        low confidence (hidden by default). So is any finding on a file a tool writes and reads
        itself: Sphinx's build cache (a ``.doctrees`` folder) and a model MLflow logged (the
        ``data/`` folder beside an ``MLmodel`` file), which only ``mlflow.<flavor>.load_model``
        reads (in a review of the project's code; a scan of artifacts alone keeps them)."""
        owner = _tool_owned(finding.path) if project.files else None  # (a scan of artifacts alone keeps it)
        if owner is not None and finding.confidence != "low":
            return replace(finding, confidence="low", message=finding.message + f". But {owner}")
        if REFUSED not in finding.message or finding.severity is not Severity.MEDIUM or not project.files:
            return finding
        legacy = _full_unpickling_only(project, finding.path)
        if legacy is not None:
            return replace(finding, confidence="low",
                           message=finding.message + f". But this project targets torch {legacy}, where "
                                                     "`torch.load` unpickles in full unless told `weights_only=True`, "
                                                     "which none of its loads does: this matters once it moves to "
                                                     "torch >= 2.6")
        if _loads_in_full_everywhere(project, finding.path):
            return replace(finding, confidence="low",
                           message=finding.message + ". But every `torch.load` of this project passes "
                                                     "`weights_only=False` (it trusts its own files), so no "
                                                     "weights-only load of it refuses this file")
        if _checkpoint_like(finding.path) or project.torch_loads_file(finding.path):
            return finding
        return replace(finding, confidence="low",
                       message=finding.message + ". But no `torch.load` of this project reads it (a data "
                                                 "pickle, not a checkpoint), so no weights-only load applies; "
                                                 "whoever unpickles it must trust where it came from")


def _tool_owned(path: str) -> str | None:
    """Why a file is a tool's own pickle that no code of the project unpickles, or None: a
    Sphinx build cache (``docs/_build/.doctrees/environment.pickle``: it pickles Sphinx's own
    classes, which a scan without Sphinx installed cannot show to be plain classes), or a model
    MLflow logged (``artifacts/model/data/model.pth`` under a folder holding ``MLmodel``)."""
    parts = os.path.normpath(path).split(os.sep)
    if ".doctrees" in parts[:-1] or (len(parts) > 2 and parts[-2] == "doctrees" and parts[-3] == "_build"):
        return ("it is Sphinx's build cache (a `.doctrees` folder): Sphinx writes and reads it, no code of "
                "the project loads it; keep build output out of the repository")
    here = os.path.dirname(os.path.abspath(path))
    for _ in range(2):
        here = os.path.dirname(here)
        if os.path.isfile(os.path.join(here, "MLmodel")):
            return ("it is a model MLflow logged (an `MLmodel` folder), which `mlflow.<flavor>.load_model` "
                    "reads with the trust a logged model needs; the project never `torch.load`s it itself")
    return None


def _loads_in_full_everywhere(project, path: str) -> bool:
    """Some ``torch.load`` of the project may read ``path`` (it names the file, or takes any
    file), and every such load says ``weights_only=False`` in so many words: a weights-only
    refusal of the file cannot happen in the project's own code (a tokenizer pickled into each
    checkpoint on purpose, the README explaining why)."""
    loads = project.loads_that_may_read(path)
    return bool(loads) and all(load.weights_only == "false" for load in loads)


def _full_unpickling_only(project, path: str) -> str | None:
    """The torch version (text) every ``torch.load`` of the project that may read ``path``
    (naming it, or taking any file) targets when all of them run below torch 2.6 (the pin of
    their folder: ``pytorch=1.1.0``), where a load unpickles in full by default, and none asks
    for ``weights_only=True``: a weights-only refusal of the file cannot happen there (a
    weights-only load of another, named file changes nothing: a federated-learning project's
    `torch.load("num_users.pt", weights_only=True)` beside a committed whole-module checkpoint
    nothing loads). A file no load may read is judged by the targets of the project's torch
    files. None otherwise (a load or torch file on a newer or unknown torch, or a load of it
    that asks for weights-only)."""
    readers = project.loads_that_may_read(path)
    if any(load.weights_only in ("true", "dynamic") for load in readers):
        return None
    reading = {load.anchor.path for load in readers}
    # no load may read it: the project's torch files say which torch would read it
    judged = [f for f in project.files if f.path in reading] if readers else \
        [f for f in project.files if f.has_torch]
    targets = set()
    for facts in judged:
        if not facts.target_torch or tuple(facts.target_torch[:2]) >= (2, 6):
            return None
        targets.add(tuple(facts.target_torch[:2]))
    if not targets:
        return None
    low = min(targets)
    return f"{low[0]}.{low[1]}"


def _checkpoint_like(path: str) -> bool:
    """A torch checkpoint by name (``.pth``, ``.ckpt.gz`` ...) or a zip archive laid out as
    ``torch.save`` writes one (a ``data.pkl`` member, whatever the name). A zip of a plain
    pickle (OpenGraph's ``trn_mat.pkl.zip``: a scipy matrix read with ``pickle.load``) is data."""
    name = path.lower()
    for suffix in _COMPRESSED:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.endswith(_CHECKPOINT_SUFFIXES):
        return True
    try:
        with open(path, "rb") as handle:
            if handle.read(4) != _ZIP_MAGIC:
                return False
    except OSError:
        return True  # unreadable now: keep the finding as the scan made it
    import zipfile

    try:  # the central directory only: names, nothing is extracted or unpickled
        with zipfile.ZipFile(path) as archive:
            return any(n == "data.pkl" or n.endswith("/data.pkl") for n in archive.namelist())
    except (OSError, zipfile.BadZipFile, ValueError):
        return True
