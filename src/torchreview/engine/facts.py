"""File facts (small, typed, picklable) and the project context that project rules read.

Project rules never see a tree: only these facts, gathered once per file by the
collectors of ``engine/collectors/`` (this module knows none of them).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchreview.engine.anchor import Anchor
from torchreview.engine.checkpoint_index import CheckpointIndex, iter_loads, iter_saves, link_saves, loads_file, \
    loads_that_may_read
from torchreview.engine.semantic import position
from torchreview.findings import Finding, Severity

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.catalog import Rule
    from torchreview.engine.checkpoint_index import CheckpointLoad, Link
    from torchreview.engine.context import FileContext
    from torchreview.findings import Fix

# The detection signals of the rule pack, plus the frameworks built on torch.
SIGNALS = (
    ("import torch", re.compile(r"^[ \t]*import[ \t]+torch\b", re.M)),
    ("from torch", re.compile(r"^[ \t]*from[ \t]+torch\b", re.M)),
    ("torch.nn", re.compile(r"\btorch\.nn\b")),
    ("torch.Tensor", re.compile(r"\btorch\.Tensor\b")),
    ("DataLoader", re.compile(r"\bDataLoader\b")),
    ("nn.Module", re.compile(r"\bnn\.Module\b")),
    ("optimizer.step()", re.compile(r"\boptimi[sz]er\.step\(\)")),
    ("loss.backward()", re.compile(r"\bloss\.backward\(")),
    ("torch framework import", re.compile(
        r"^[ \t]*(?:import|from)[ \t]+(?:torchvision|torchaudio|torchtext|lightning|pytorch_lightning"
        r"|timm|accelerate|torchmetrics)\b", re.M)),
)


def detect_signals(text: str) -> list[str]:
    return [name for name, pattern in SIGNALS if pattern.search(text)]


_CHEAP_MARKERS = ("torch", "DataLoader", "nn.Module", "optimizer.step", "optimiser.step", "loss.backward",
                  "lightning", "timm", "accelerate")


# For each of ``SIGNALS`` (same order), substrings one of which its pattern's match
# always holds: a pattern whose substrings are all absent is not run (a file without
# torch would otherwise be scanned by every pattern).
_SIGNAL_LITERALS = (("torch",), ("torch",), ("torch.nn",), ("torch.Tensor",), ("DataLoader",), ("nn.Module",),
                    ("er.step()",), ("loss.backward(",), ("torch", "lightning", "timm", "accelerate"))


# Another tensor framework with the same vocabulary (`nn.Module`, `DataLoader`,
# `loss.backward()`, `.numpy()`): a file that imports one of them and not torch is not
# torch code (deep-hough-transform's Jittor port: a Jittor variable's `.numpy()` was read
# as a torch tensor's, judged false)
_OTHER_FRAMEWORK = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(?:jittor|paddle|mindspore|oneflow|megengine|tensorflow|keras|jax|flax"
    r"|mxnet)\b", re.M)
# one of which the pattern's match always holds (substring tests first: the pattern, anchored at
# line starts, is tried at every character of a file that names none of them)
_OTHER_FRAMEWORK_NAMES = ("jittor", "paddle", "mindspore", "oneflow", "megengine", "tensorflow", "keras", "jax",
                          "flax", "mxnet")


# The signals a file can show by names alone (`optimizer.step()`, `loss.backward()`, `nn.Module`,
# `DataLoader`): a course's hand-written NumPy framework copies torch's vocabulary, so these
# say nothing about torch once the objects are known to be someone else's (``homemade_framework``)
_NAME_ONLY_SIGNALS = frozenset({"DataLoader", "nn.Module", "optimizer.step()", "loss.backward()"})


def name_only_torch_signals(text: str) -> bool:
    """The file's torch signals, if any, are all of the by-name kind (no torch import, no
    ``torch.`` attribute, no torch framework import)."""
    return not any(pattern.search(text) for (name, pattern), literals in zip(SIGNALS, _SIGNAL_LITERALS)
                   if name not in _NAME_ONLY_SIGNALS and any(literal in text for literal in literals))


# a method computing gradients by hand (`def backward(self, grad)`): a framework of its own
_HANDWRITTEN_BACKWARD = re.compile(r"^[ \t]+def[ \t]+backward[ \t]*\([ \t]*self\b", re.M)


def handwritten_backward(text: str) -> bool:
    """The text defines a method ``backward(self, ...)`` and shows no torch signal beyond
    names: the layers of a hand-written NumPy framework (a custom ``torch.autograd.Function``
    has a static ``backward(ctx, ...)`` and imports torch)."""
    return bool(_HANDWRITTEN_BACKWARD.search(text)) and name_only_torch_signals(text)


def _imports_other_framework(text: str) -> bool:
    """``_OTHER_FRAMEWORK`` matches in ``text``: tried at the start of each line naming one
    of the frameworks (a search tries every character of the file)."""
    match = _OTHER_FRAMEWORK.match
    for name in _OTHER_FRAMEWORK_NAMES:
        at = text.find(name)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            if match(text, start) is not None:
                return True
            end = text.find("\n", at)
            if end < 0:
                break
            at = text.find(name, end)
    return False


def other_framework_only(text: str) -> bool:
    """The file imports another tensor framework (Jittor, Paddle, TensorFlow, JAX ...)
    and no torch package."""
    return _imports_other_framework(text) and not any(
        pattern.search(text) for _, pattern in (SIGNALS[0], SIGNALS[1], SIGNALS[-1]))


def has_torch_signal(text: str) -> bool:
    """Whether any detection signal is present (the engine's fast path: a
    substring test first, then the patterns, cheapest and commonest first). A
    file that imports another tensor framework and no torch package has none."""
    if not any(marker in text for marker in _CHEAP_MARKERS):
        return False
    if other_framework_only(text):
        return False
    return any(pattern.search(text) for (_, pattern), literals in zip(SIGNALS, _SIGNAL_LITERALS)
               if any(literal in text for literal in literals))


@dataclass(frozen=True)
class Download:
    """A call that fetches data over the network without verifying a checksum."""
    anchor: Anchor
    url: str = ""  # the one URL it fetches when a single literal names it, else ""
    unpickled: bool = False  # this file hands what it fetched to an unpickler (engine/facts_downloads.py)


@dataclass(frozen=True)
class ClassBuild:
    """``Name(...)`` building a project class at ``anchor``."""
    class_name: str
    anchor: Anchor


@dataclass(frozen=True)
class CounterRestart:
    """A loop resumed at an offset while the counter its learning rate is set from restarts."""
    anchor: Anchor  # the resume (first call of the ``if args.resume:`` branch), else the counter's first assignment
    counter: str  # the counter's name (``step_index``)
    start: str  # the loop's start, as written (``args.start_iter``)
    warmup_only: bool = False  # every LR the counter feeds is a ramp capped at a constant (``min(itr / n, 1.0)``)


@dataclass
class FileFacts:
    """What project rules know about one file: typed fields, each filled by one
    collector (``engine/collectors/``, ``@collects("<field>")``) and cached with the
    file (``cache.py``: every field is written and validated by its type)."""

    path: str
    is_notebook: bool = False
    has_torch: bool = False

    # --- the file's shape ------------------------------------------------------------
    # Names of nn.Module subclasses defined here (for cross-file base resolution).
    module_classes: tuple[str, ...] = ()
    # Every module this file imports (dotted), and the modules of the names it imports.
    imports: tuple[str, ...] = ()
    is_test_file: bool = False
    # Written for an old torch (`volatile=True`, `loss.data[0]`: 0.3; `iter(loader).next()`: 1.12):
    # with no pin, reviewed as that version (config.legacy_torch_target).
    legacy_torch: bool = False
    # The torch (major, minor) the file is reviewed against -- the pin of its nearest project
    # folder, the command line, or what its idioms were written for; () when the newest.
    target_torch: tuple[int, ...] = ()

    # --- training ----------------------------------------------------------------------
    # The first training loop (backward + optimizer step) and the first epoch loop around one.
    training_loop: Anchor | None = None
    epoch_loop: Anchor | None = None
    # Training DataLoaders that keep a short last batch (no drop_last, batch_sampler or **kwargs).
    train_loaders_without_drop_last: tuple[Anchor, ...] = ()
    # BatchNorm layers built (torch.nn.BatchNorm*/SyncBatchNorm, also inside a Module class).
    builds_batchnorm: bool = False
    builds_conv_layers: bool = False
    # Calls a trainer/launcher framework entry point (Lightning, Fabric, Accelerate,
    # HF Trainer, DeepSpeed) or imports one of those frameworks.
    trainer_framework: bool = False
    # Hands the loop to a trainer that checkpoints and logs on its own (Lightning / HF Trainer, TRL).
    managed_training: bool = False
    # Steps an online reinforcement-learning environment (gym / gymnasium).
    steps_environment: bool = False
    saves_checkpoint: bool = False
    # Logs to an experiment tracker (TensorBoard, W&B, MLflow, Aim, Comet, Neptune, ClearML ...).
    tracking: bool = False
    # Reads its settings from a command line or a configuration file.
    reads_config: bool = False
    # Module-level hyper-parameter constants (LR, BATCH_SIZE ...) that feed an optimizer,
    # loader, model, scheduler or the range of a loop: name -> where, in line order.
    hparams: dict[str, Anchor] = field(default_factory=dict)

    # --- devices and precision ---------------------------------------------------------
    # The first call showing the module runs on CUDA (``ctx.model.cuda_evidence``).
    cuda_explicit: bool = False
    # cuda_explicit in research code written for GPU clusters (``ctx.advice.gpu_only_research``).
    gpu_only_research: bool = False
    # Mentions an accelerator device: ``.cuda()``, ``device=``/``.to()`` naming cuda/mps/xpu or a device.
    uses_cuda: bool = False
    # Asks which accelerator there is, or selects one (is_available, set_device, DDP ...).
    checks_accelerator: bool = False
    # Places tensors or modules on an accelerator (or may: an unknown device counts).
    places_on_accelerator: bool = False
    # The devices this file builds, as tokens: "cpu", "cuda" (the default GPU spelled
    # out: "cuda", "cuda:0"), "cuda()" (a bare `.cuda()`), "cuda:1" ..., "mps" ..., "?" for a computed
    # or spread device (`f"cuda:{rank}"`, `.cuda(args.gpu)`, a `--gpu` option,
    # DataParallel/DDP, `set_device`); engine/facts_devices.py.
    devices: tuple[str, ...] = ()
    # ``device = "cpu"`` bound once, unconditionally, in a module that trains.
    hardcoded_cpu_device: Anchor | None = None
    # Enables mixed precision (autocast, torch.amp, .half(), precision=/fp16= options, --amp switches).
    mixed_precision: bool = False
    # Compiles or exports a model (torch.compile, TorchScript, torch.export, ONNX, TensorRT ...).
    compiles: bool = False
    # The first function (or module-level statement) that runs a model in eval mode
    # with autograd off, in a file that does not train.
    inference_entry: Anchor | None = None

    # --- randomness --------------------------------------------------------------------
    seeds_torch: bool = False  # torch.manual_seed and friends, seed_everything, set_seed
    seeds_numpy: bool = False  # numpy.random.seed
    seeds_python: bool = False  # random.seed
    # A seeding call other than torch's own manual_seed (a helper assumed to seed every RNG).
    seed_helper: bool = False
    # The first draw from NumPy's / Python's global generator.
    numpy_random: Anchor | None = None
    python_random: Anchor | None = None
    # ``if args.seed: torch.manual_seed(args.seed)``: a seed of 0 skips seeding.
    seed_truthiness_guards: tuple[Anchor, ...] = ()
    seed_truthiness_from_cli: tuple[Anchor, ...] = ()  # those whose seed is a command-line value

    # --- data from outside -------------------------------------------------------------
    downloads: tuple[Download, ...] = ()
    checks_hashes: bool = False  # hashlib, torchvision's check_integrity / md5 helpers
    # The pickle-family libraries this file writes files with ("pickle", "dill", "joblib").
    pickle_dumps: tuple[str, ...] = ()

    # --- checkpoints and resuming ------------------------------------------------------
    # The checkpoint save/load index as compact JSON; rules read it typed, through ``checkpoints``.
    checkpoint_json: str = ""
    # ``loader = skip_first_batches(loader, n)`` under a condition inside the epoch loop.
    resume_skips_kept: tuple[Anchor, ...] = ()
    # A class's ``state_dict()`` holding the optimizer but not the GradScaler it builds.
    state_dicts_without_scaler: tuple[Anchor, ...] = ()
    # Classes whose ``__init__`` takes an update counter (``updates=0``) that another method advances.
    counter_classes: dict[str, Anchor] = field(default_factory=dict)
    # ``Cls(...)`` built without such a counter after a counter is read back from a checkpoint.
    built_after_resume: tuple[ClassBuild, ...] = ()
    # ``for it in range(args.start_iter, ...)`` resuming while ``step_index = 0; step_index += 1``,
    # from which the learning rate is set, starts again.
    lr_counter_restarts: tuple[CounterRestart, ...] = ()

    @property
    def trains(self) -> bool:
        return self.training_loop is not None

    @property
    def checkpoints(self) -> CheckpointIndex:
        """What each ``torch.save`` of this file writes and each ``torch.load`` reads back
        (``engine/checkpoint_index.py``)."""
        return CheckpointIndex.parse(self.checkpoint_json)


# Fields every FileFacts has from the start (not collected).
BASE_FIELDS = ("path", "is_notebook", "has_torch")


def _anchor(ctx: "FileContext", node: ast.AST) -> Anchor:
    line, col = position(node)
    cell, cell_line = ctx.source.locate(line)
    return Anchor(ctx.path, cell_line, ctx._column(line, col), cell, ctx.source.line_text(line).strip())


@dataclass
class ProjectContext:
    """What a project rule's ``check_project`` receives: the facts of every file of
    one project, the questions asked across them, and ``report``."""
    files: list[FileFacts]
    findings: list[Finding] = field(default_factory=list)
    rule: "type[Rule] | None" = None
    # The torch version the project targets (None: unknown, assume the newest).
    target_torch: tuple[int, int] | None = None

    def torch_at_least(self, major: int, minor: int) -> bool:
        return self.target_torch is None or self.target_torch >= (major, minor)

    def trusted_release(self, url: str, facts: FileFacts) -> str | None:
        """Why a download of ``url`` by the file ``facts`` needs no pinned hash (a release
        asset of the project's own GitHub repository, as its setup.py/setup.cfg/
        pyproject.toml/README badges name it, or of a package that file imports), else
        None (engine/project_identity.py)."""
        from torchreview.engine.discovery import project_root
        from torchreview.engine.project_identity import trusted_release

        return trusted_release(url, project_root(facts.path, {}), facts.imports)

    def single_default_device(self, path: str | None = None) -> bool:
        """Every device the project builds is the CPU or the default GPU, and none is
        computed (``FileFacts.devices``): ``.cuda()`` and ``.to(x.device)`` agree. With
        ``path``, the devices of the code that can hand that file its tensors: the file and
        the project files that import it (directly or through others); a sibling package
        the entry script also imports (a speaker encoder placed on a computed device next
        to a vocoder that only uses the default GPU) does not place that file's tensors."""
        files = self.files if path is None else importers(self.files, path)
        tokens = {t for f in files for t in f.devices}
        # "cuda" (spelled out) must be there: bare `.cuda()` calls alone (a snippet, a
        # project that sets the device elsewhere) do not show which GPU is current
        return "cuda" in tokens and tokens <= {"cpu", "cuda", "cuda()", "meta"}

    def report(self, anchor: Anchor, message: str, *, severity: Severity | None = None,
               kind: str | None = None, confidence: str | None = None, fix: "Fix | None" = None,
               subject: str = "") -> None:
        """Report a finding of the running project rule at ``anchor``; ``subject``: what the
        finding is about, for the rule's ``repeat_key`` (the save a load cannot read)."""
        assert self.rule is not None
        self.findings.append(self.rule.make_finding(
            path=anchor.path, line=anchor.line, column=anchor.column, cell=anchor.cell,
            end_column=anchor.column + max(1, len(anchor.source_line)),
            message=message, severity=severity, scope="project", source_line=anchor.source_line,
            kind=kind, confidence=confidence, fix=fix, subject=subject,
        ))

    def checkpoint_saves(self) -> list:
        """Every ``(FileFacts, CheckpointSave)`` of the project."""
        return list(iter_saves(self.files))

    def checkpoint_loads(self) -> list:
        """Every ``(FileFacts, CheckpointLoad)`` of the project."""
        return list(iter_loads(self.files))

    def torch_loads_file(self, path: str) -> bool:
        """A ``torch.load`` of the project names the file ``path`` (its file-name
        pattern matches it; ``checkpoint_index.loads_file``)."""
        return loads_file(self.files, path)

    def loads_that_may_read(self, path: str) -> list:
        """The project's loads that may read the file ``path``: named by their file-name
        pattern, or with a wholly computed file name (``checkpoint_index.loads_that_may_read``)."""
        return loads_that_may_read(self.files, path)

    def saves_for(self, load: "CheckpointLoad") -> "Link | None":
        """The saves of the checkpoint ``load`` reads (``checkpoint_index.link_saves``)."""
        return link_saves(self.files, load)

    def parsed_args_near(self, path: str) -> str:
        """What the parsed command-line arguments are in the code that can hand the file ``path``
        its values -- the file and the project files that import it, directly or through others:
        ``"namespace"`` when one of them keeps a ``parse_args()`` result a Namespace, ``"dict"``
        when they parse arguments and turn every result into a dict (``vars(parser.parse_args())``),
        ``""`` when none of them parses any."""
        kinds = {f.checkpoints.parsed_args for f in importers(self.files, path)}
        return "namespace" if "namespace" in kinds else "dict" if "dict" in kinds else ""

    def written_for_old_torch(self, facts: FileFacts, depth: int = 3) -> bool:
        """The file ``facts``, or a project module it imports (``imported_files``), was visibly
        written for a torch older than 2.6 (``FileFacts.legacy_torch``: its idioms, or another
        library's API removed before Python 3.8 -- ``from scipy.misc import imread`` in the
        dataset module a prediction script imports): the file cannot run on a newer torch."""
        return facts.legacy_torch or any(f.legacy_torch for f in imported_files(self.files, facts, depth))

    def safe_globals(self) -> set[str]:
        """Class names the project registers with ``torch.serialization.add_safe_globals``."""
        return {name for f in self.files for name in f.checkpoints.safe_globals}


def _module_names(path: str) -> list[str]:
    """The dotted names a project file can be imported by (``vocoder/models/net.py``:
    ``vocoder.models.net``, ``models.net``, ``net``; a package's ``__init__`` by its folder)."""
    stem = os.path.splitext(os.path.normpath(path).replace(os.sep, "/"))[0]
    if stem.endswith("/__init__"):
        stem = stem[: -len("/__init__")]
    parts = [p for p in stem.split("/") if p not in ("", ".")]
    return [".".join(parts[i:]) for i in range(len(parts))]


def imported_files(files: list[FileFacts], facts: FileFacts, depth: int = 3) -> list[FileFacts]:
    """The project files ``facts`` imports, directly or through other project files (``depth``
    hops): an absolute module name is looked up from the importer's folder and the folders above
    it (where a script run from the project puts it on ``sys.path``), a relative one from its
    package; a module name two project files could be is left out (unknown which runs)."""
    by_path = {os.path.normpath(f.path).replace(os.sep, "/"): f for f in files}
    out: list[FileFacts] = []
    seen = {id(facts)}
    frontier = [facts]
    for _ in range(depth):
        nxt = []
        for f in frontier:
            folders = os.path.normpath(f.path).replace(os.sep, "/").split("/")[:-1]
            for module in f.imports:
                dots = len(module) - len(module.lstrip("."))
                parts = [p for p in module.lstrip(".").split(".") if p]
                if dots:
                    bases = [folders[: len(folders) - (dots - 1)]] if dots <= len(folders) + 1 else []
                else:
                    bases = [folders[:i] for i in range(len(folders), -1, -1)]
                found = []
                for base in bases:
                    stem = "/".join([*base, *parts])
                    hit = by_path.get(stem + ".py") or by_path.get(stem + "/__init__.py")
                    if hit is not None and all(hit is not g for g in found):
                        found.append(hit)
                if len(found) == 1 and id(found[0]) not in seen:
                    seen.add(id(found[0]))
                    out.append(found[0])
                    nxt.append(found[0])
        frontier = nxt
    return out


def importers(files: list[FileFacts], path: str) -> list[FileFacts]:
    """``path``'s facts and those of every project file that imports it, directly or
    through other project files (relative imports resolved from the importer's folder)."""
    by_name: dict[str, list[FileFacts]] = {}
    for f in files:
        for name in _module_names(f.path):
            by_name.setdefault(name, []).append(f)

    def imported(f: FileFacts) -> set[str]:
        out = set()
        for module in f.imports:
            if module.startswith("."):
                dots = len(module) - len(module.lstrip("."))
                base = os.path.normpath(f.path).replace(os.sep, "/").split("/")[:-1]
                base = base[: len(base) - (dots - 1)] if dots > 1 else base
                module = ".".join([*base, module.lstrip(".")]).strip(".")
            out.update(id(g) for g in by_name.get(module, ()))
        return out

    edges = {id(f): imported(f) for f in files}
    chain = [f for f in files if f.path == path]
    seen = {id(f) for f in chain}
    frontier = set(seen)
    while frontier:
        found = [f for f in files if id(f) not in seen and edges[id(f)] & frontier]
        seen.update(id(f) for f in found)
        chain.extend(found)
        frontier = {id(f) for f in found}
    return chain
