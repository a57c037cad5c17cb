"""Library knowledge as data: the single front door for every table of it.

Two files of ``torchreview/data`` hold it, and only this module opens them
(loaded once, their shape checked; a test enforces it):

``library_models.json`` -- what library *calls* return and what frameworks do:

* ``constructor(qualname)``: a :class:`Constructor` -- what a library call returns
  (its kind, the mode the module comes back in, ``"train"``/``"eval"``, and the
  layers it may hold, ``"batchnorm"``/``"dropout"``) -- for torchvision/timm
  builders, hub loads, ``from_pretrained`` of transformers/diffusers model
  classes, ``torch.jit.load``.
* ``hub_entry(call)``: the name a literal ``torch.hub.load(repo, entry)`` is listed under
  (``torch.hub.load:<repo>:<entry>``); a constructor's ``no_grad_calls`` says its calls run
  without autograd (YOLOv5's hub ``AutoShape`` runs its forward under inference mode).
* ``publisher(repository)``: an ``owner/name`` whose owner publishes the code of its own
  models (``model_publishers``: a research lab's or vendor's official repositories).
* ``vendored_package(name)``: a folder name that is a library projects copy into their own
  tree (``vendored_packages``: ``timm/``, ``detectron2/`` ...).
* ``metaclass_init_base(qualname)``: a library base class whose metaclass runs
  ``nn.Module.__init__`` before a subclass's own ``__init__`` (``metaclass_init_bases``:
  fastai's ``Module``).
* ``test_protocol_benchmark(text)``: the benchmark without a validation split
  (``test_protocol_benchmarks``: Market-1501, ModelNet40 ...) a file's text names, if any.
* ``loads_in_eval(qualname)``: a call whose module comes back in eval mode
  whatever class it loads (``eval_loaders``: ``X.from_pretrained``,
  ``torch.jit.load``), for the mode questions of call paths and project summaries.
* ``frameworks(model)`` / ``takes_over(model, duty)``: the training frameworks a
  file hands its loop to (:class:`Framework`), recognised by evidence (an entry
  call such as ``Trainer(...)``, ``Accelerator(...)``, ``create_supervised_trainer(...)``,
  or a class deriving from ``LightningModule`` / ``transformers.Trainer``), never by
  a plain import (``from transformers import AutoModel`` trains nothing), and
  the duties each performs for the user (``zero_grad``, ``backward``, ``step``,
  ``eval``, ``no_grad``, ``set_epoch``, ``scaling``, ``device``, ``clipping``,
  ``no_sync``).

``mode_layers.json`` -- which library *layers* depend on the train/eval mode
(read by ``engine/module_modes.py`` through this module):

* ``layer(qualname)``: a :class:`Layer` -- ``"free"`` (the same in both modes),
  ``"active"`` (differs in train mode) or ``"conditional"`` (differs only when one
  of its dropout-like ``rates`` is not 0 or one of its ``flags`` is true; with a
  ``stack`` argument, such as a recurrent layer's ``num_layers``, the rates act
  only between stacked layers, so one layer is the same in both modes), with
  each argument as an :class:`Arg` (name, position, default); None when unlisted.
* ``functional(qualname)``: a :class:`Functional` -- a ``torch.nn.functional``
  call whose ``training`` argument (and dropout ``rate``) decide the mode.

A malformed table raises :class:`LibraryDataError` naming the file and the entry
(the tables ship with the package: that is a packaging bug, not bad user input).
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

DUTIES = frozenset({"zero_grad", "backward", "step", "eval", "no_grad", "set_epoch", "scaling", "device",
                    "clipping", "no_sync"})
LAYER_MODES = ("free", "active", "conditional")
CONTENTS = frozenset({"batchnorm", "dropout"})
MODELS_FILE = "library_models.json"
LAYERS_FILE = "mode_layers.json"


class LibraryDataError(ValueError):
    """A library-knowledge table does not have the shape this module expects."""


@dataclass(frozen=True)
class Arg:
    """An argument of a library call: its keyword ``name``, its ``position``
    (from 0, without ``self``; None: keyword only) and its ``default``."""
    name: str
    position: int | None
    default: object


@dataclass(frozen=True)
class Layer:
    """A library layer class (or ``torch.nn`` base) and how it depends on the mode."""
    qualname: str
    mode: str  # one of LAYER_MODES
    rates: tuple[Arg, ...] = ()
    flags: tuple[Arg, ...] = ()
    stack: Arg | None = None  # the rates apply between stacked layers only (`num_layers` > 1)


@dataclass(frozen=True)
class Functional:
    """A functional call that depends on the mode only through its ``training``
    argument (and, for dropout-like ones, a non-zero ``rate``)."""
    qualname: str
    training: Arg
    rate: Arg | None = None


@dataclass(frozen=True)
class Constructor:
    """What a library call returns: ``kind`` (``"model"``), the ``mode`` its module
    comes back in (``"train"``/``"eval"``, None when unknown) and the mode-dependent
    layers it may hold (``contains``: ``"batchnorm"``, ``"dropout"``; empty: none)."""
    match: str
    kind: str
    mode: str | None
    contains: frozenset[str]
    class_words: tuple[str, ...] = ()
    note: str = ""
    # its calls run without autograd (a wrapper whose forward is under inference mode)
    no_grad_calls: bool = False
    # the keyword that replaces its normalisation layer (torchvision ResNets' `norm_layer=`):
    # with a layer that keeps no running statistics, "batchnorm" is not among its contents
    norm_argument: str = ""

    @property
    def mode_free(self) -> bool:
        """eval() changes nothing in what it returns (no BatchNorm, no Dropout)."""
        return not self.contains


@dataclass(frozen=True)
class Framework:
    """A training framework that runs the user's loop and the duties it performs."""
    name: str
    entry: tuple[str, ...]
    base_classes: tuple[str, ...]
    takes_over: frozenset[str]
    note: str = ""


@dataclass(frozen=True)
class _Tables:
    constructors: tuple[Constructor, ...]
    frameworks: tuple[Framework, ...]
    layers: dict[str, Layer]
    functionals: dict[str, Functional]
    eval_loaders: tuple[str, ...] = ()
    publishers: frozenset[str] = frozenset()
    test_protocol_benchmarks: tuple[str, ...] = ()
    vendored_packages: frozenset[str] = frozenset()
    metaclass_init_bases: tuple[str, ...] = ()


def _read(filename: str) -> dict:
    text = resources.files("torchreview.data").joinpath(filename).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise LibraryDataError(f"data/{filename}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise LibraryDataError(f"data/{filename}: expected an object at the top")
    return data


def _check(ok: bool, filename: str, where: str, what: str) -> None:
    if not ok:
        raise LibraryDataError(f"data/{filename}: {where}: {what}")


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _arg(raw: object, where: str) -> Arg:
    _check(isinstance(raw, list) and len(raw) == 3 and isinstance(raw[0], str) and
           (raw[1] is None or (isinstance(raw[1], int) and not isinstance(raw[1], bool) and raw[1] >= 0)),
           LAYERS_FILE, where, "an argument is [name, position or null, default]")
    return Arg(raw[0], raw[1], raw[2])  # type: ignore[index]


def parse_models(data: dict, filename: str = MODELS_FILE) -> tuple[tuple[Constructor, ...], tuple[Framework, ...]]:
    """The constructors and frameworks of a ``library_models.json`` object, checked."""
    _check(isinstance(data.get("constructors"), list) and isinstance(data.get("frameworks"), list), filename,
           "top", "needs the lists 'constructors' and 'frameworks'")
    constructors = []
    for i, entry in enumerate(data["constructors"]):
        where = f"constructors[{i}]"
        _check(isinstance(entry, dict) and isinstance(entry.get("match"), str) and
               isinstance(entry.get("kind"), str), filename, where, "needs the strings 'match' and 'kind'")
        _check(entry.get("mode") in (None, "train", "eval"), filename, where, "'mode' is 'train', 'eval' or absent")
        _check(_strings(entry.get("contains")) and set(entry["contains"]) <= CONTENTS, filename, where,
               f"'contains' is a list drawn from {sorted(CONTENTS)}")
        _check(_strings(entry.get("class_words", [])), filename, where, "'class_words' is a list of strings")
        _check(isinstance(entry.get("no_grad_calls", False), bool), filename, where, "'no_grad_calls' is a boolean")
        _check(isinstance(entry.get("norm_argument", ""), str), filename, where, "'norm_argument' is a string")
        constructors.append(Constructor(entry["match"], entry["kind"], entry.get("mode"),
                                        frozenset(entry["contains"]), tuple(entry.get("class_words", ())),
                                        str(entry.get("note", "")), bool(entry.get("no_grad_calls", False)),
                                        entry.get("norm_argument", "")))
    frameworks = []
    for i, entry in enumerate(data["frameworks"]):
        where = f"frameworks[{i}]"
        _check(isinstance(entry, dict) and isinstance(entry.get("name"), str) and _strings(entry.get("entry")) and
               _strings(entry.get("base_classes")) and _strings(entry.get("takes_over")), filename, where,
               "needs 'name' and the string lists 'entry', 'base_classes', 'takes_over'")
        unknown = set(entry["takes_over"]) - DUTIES
        _check(not unknown, filename, where, f"unknown duties {sorted(unknown)}")
        frameworks.append(Framework(entry["name"], tuple(entry["entry"]), tuple(entry["base_classes"]),
                                    frozenset(entry["takes_over"]), str(entry.get("note", ""))))
    return tuple(constructors), tuple(frameworks)


def parse_eval_loaders(data: dict, filename: str = MODELS_FILE) -> tuple[str, ...]:
    """The ``eval_loaders`` patterns of a ``library_models.json`` object (optional), checked."""
    loaders = data.get("eval_loaders", [])
    _check(_strings(loaders), filename, "eval_loaders", "a list of qualified-name patterns")
    return tuple(loaders)


def parse_layers(data: dict, filename: str = LAYERS_FILE) -> tuple[dict[str, Layer], dict[str, Functional]]:
    """The layers and functional calls of a ``mode_layers.json`` object, checked."""
    _check(_strings(data.get("free")) and _strings(data.get("active")) and
           isinstance(data.get("conditional"), dict) and isinstance(data.get("functional"), dict), filename,
           "top", "needs the lists 'free', 'active' and the objects 'conditional', 'functional'")
    layers: dict[str, Layer] = {}
    for mode in ("free", "active"):
        for q in data[mode]:
            _check(q not in layers, filename, q, "listed twice")
            layers[q] = Layer(q, mode)
    for q, spec in data["conditional"].items():
        _check(q not in layers, filename, q, "listed twice")
        _check(isinstance(spec, dict) and set(spec) <= {"rates", "flags", "stack"} and
               all(isinstance(spec.get(k, []), list) for k in ("rates", "flags", "stack")), filename, q,
               "a conditional layer has only the lists 'rates' and 'flags' and the argument 'stack'")
        layers[q] = Layer(q, "conditional", tuple(_arg(a, q) for a in spec.get("rates", ())),
                          tuple(_arg(a, q) for a in spec.get("flags", ())),
                          _arg(spec["stack"], q) if "stack" in spec else None)
    functionals: dict[str, Functional] = {}
    for q, spec in data["functional"].items():
        if q.startswith("_"):
            continue  # "_about"
        _check(isinstance(spec, dict) and "training" in spec and set(spec) <= {"training", "rate"}, filename, q,
               "a functional call has 'training' and optionally 'rate'")
        functionals[q] = Functional(q, _arg(spec["training"], q), _arg(spec["rate"], q) if "rate" in spec else None)
    return layers, functionals


def parse_publishers(data: dict, filename: str = MODELS_FILE) -> frozenset[str]:
    """The ``model_publishers`` of a ``library_models.json`` object (optional), checked."""
    owners = data.get("model_publishers", [])
    _check(_strings(owners) and all(o == o.lower() and "/" not in o for o in owners), filename,
           "model_publishers", "a list of lower-case owner names")
    return frozenset(owners)


def parse_benchmarks(data: dict, filename: str = MODELS_FILE) -> tuple[str, ...]:
    """The ``test_protocol_benchmarks`` of a ``library_models.json`` object (optional), checked."""
    names = data.get("test_protocol_benchmarks", [])
    _check(_strings(names) and all(n == n.lower() and n.isalnum() for n in names), filename,
           "test_protocol_benchmarks", "a list of lower-case names of letters and digits")
    return tuple(names)


def parse_vendored(data: dict, filename: str = MODELS_FILE) -> frozenset[str]:
    """The ``vendored_packages`` of a ``library_models.json`` object (optional), checked."""
    names = data.get("vendored_packages", [])
    _check(_strings(names) and all(n.isidentifier() for n in names), filename,
           "vendored_packages", "a list of package import names")
    return frozenset(names)


def parse_metaclass_bases(data: dict, filename: str = MODELS_FILE) -> tuple[str, ...]:
    """The ``metaclass_init_bases`` patterns of a ``library_models.json`` object (optional), checked."""
    bases = data.get("metaclass_init_bases", [])
    _check(_strings(bases), filename, "metaclass_init_bases", "a list of qualified-name patterns")
    return tuple(bases)


@lru_cache(maxsize=1)
def _tables() -> _Tables:
    models = _read(MODELS_FILE)
    constructors, frameworks_ = parse_models(models)
    layers, functionals = parse_layers(_read(LAYERS_FILE))
    return _Tables(constructors, frameworks_, layers, functionals, parse_eval_loaders(models),
                   parse_publishers(models), parse_benchmarks(models), parse_vendored(models),
                   parse_metaclass_bases(models))


def layer(qualname: str | None) -> Layer | None:
    """How a library layer class depends on the mode (``mode_layers.json``), or None."""
    return _tables().layers.get(qualname) if qualname else None


def functional(qualname: str | None) -> Functional | None:
    """A mode-dependent functional call (``F.dropout``, ``F.batch_norm``), or None."""
    return _tables().functionals.get(qualname) if qualname else None


@lru_cache(maxsize=4096)
def constructor(qualname: str | None) -> Constructor | None:
    """The entry of ``constructors`` a library call's qualified name matches (the
    most specific pattern first), or None."""
    if not qualname:
        return None
    best = None
    for entry in _tables().constructors:
        if fnmatch.fnmatchcase(qualname, entry.match):
            words = entry.class_words
            if words and not any(w in qualname.split(".")[-2] for w in words):
                continue
            if best is None or len(entry.match) > len(best.match):
                best = entry
    return best


def hub_entry(call) -> str | None:
    """``torch.hub.load("facebookresearch/dinov2:main", "dinov2_vits14")`` as the name the
    constructor table lists hub models under: ``torch.hub.load:facebookresearch/dinov2:dinov2_vits14``
    (literal repository, without its ``:ref``, and literal entry); None otherwise."""
    import ast

    repo = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "repo_or_dir"), None)
    model = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "model"), None)
    if not (isinstance(repo, ast.Constant) and isinstance(repo.value, str) and
            isinstance(model, ast.Constant) and isinstance(model.value, str)):
        return None
    return f"torch.hub.load:{repo.value.split(':', 1)[0].lower()}:{model.value}"


@lru_cache(maxsize=4096)
def loads_in_eval(qualname: str | None) -> bool:
    """A call whose module comes back in eval mode whatever class it loads
    (``eval_loaders``: ``X.from_pretrained(...)``, ``torch.jit.load(...)``)."""
    return bool(qualname) and any(fnmatch.fnmatchcase(qualname, p) for p in _tables().eval_loaders)


def metaclass_init_base(qualname: str | None) -> bool:
    """A library base class whose metaclass runs ``nn.Module.__init__`` before a subclass's
    ``__init__`` (``metaclass_init_bases``: fastai's ``Module``)."""
    return bool(qualname) and any(fnmatch.fnmatchcase(qualname, p) for p in _tables().metaclass_init_bases)


_SEPARATORS = str.maketrans("", "", "-_ .")


def vendored_package(name: str) -> bool:
    """``name`` is the import name of a library projects copy into their tree
    (``vendored_packages``: ``timm``, ``detectron2``, ``fairseq`` ...)."""
    return name in _tables().vendored_packages


def test_protocol_benchmark(text: str) -> str | None:
    """The benchmark without a validation split (``test_protocol_benchmarks``) that ``text``
    names (lower-cased, ``-``, ``_``, spaces and dots removed: ``Market-1501``,
    ``market_1501``, ``ModelNet40``), or None."""
    flat = text.lower().translate(_SEPARATORS)
    return next((name for name in _tables().test_protocol_benchmarks if name in flat), None)


def publisher(repository: str | None) -> bool:
    """``"facebookresearch/dinov2:main"`` or ``"microsoft/phi-2"``: a repository whose
    owner publishes the code of its own models (``model_publishers``)."""
    if not repository or "/" not in repository:
        return False
    return repository.split("/", 1)[0].strip().lower() in _tables().publishers


def frameworks(model) -> list[Framework]:
    """The frameworks this file (a ``SemanticModel``) hands its loop to, by evidence."""
    memo = model.__dict__.setdefault("_tr_frameworks", None)
    if memo is not None:
        return memo
    table = _tables().frameworks
    entries = {q: f for f in table for q in f.entry}
    bases = {q: f for f in table for q in f.base_classes}
    found: list[Framework] = []
    for call in model.calls if not model.called_qualnames.isdisjoint(entries) else ():
        f = entries.get(model.qualname(call.func) or "")
        if f is not None and f not in found:
            found.append(f)
    for cls in model.classes.values():
        for base in cls.bases:
            f = bases.get(model.qualname(base) or "")
            if f is not None and f not in found:
                found.append(f)
    model.__dict__["_tr_frameworks"] = found
    return found


def takes_over(model, duty: str) -> bool:
    """Does a framework this file uses perform ``duty`` for the user?"""
    if duty not in DUTIES:
        raise ValueError(f"unknown framework duty: {duty}")
    return any(duty in f.takes_over for f in frameworks(model))


def returns_in_mode(qualname: str | None) -> str | None:
    """The mode a library constructor's module comes back in, when the table says."""
    entry = constructor(qualname)
    return entry.mode if entry is not None else None


class FileLibrary:
    """``ctx.library``: the library knowledge as it applies to one file."""

    def __init__(self, model) -> None:
        self._model = model

    @property
    def frameworks(self) -> tuple[str, ...]:
        """Names of the training frameworks this file hands its loop to (by evidence)."""
        return tuple(f.name for f in frameworks(self._model))

    def takes_over(self, duty: str) -> bool:
        """A framework this file uses performs ``duty`` (one of ``DUTIES``) for the user."""
        return takes_over(self._model, duty)

    @staticmethod
    def constructor(qualname: str | None) -> Constructor | None:
        """What a library call returns (a :class:`Constructor`: kind, mode, contains) or None."""
        return constructor(qualname)

    @staticmethod
    def test_protocol_benchmark(text: str) -> str | None:
        """The benchmark whose standard protocol has no validation split (Market-1501,
        ModelNet40, ...) that ``text`` names, or None (``test_protocol_benchmarks``)."""
        return test_protocol_benchmark(text)

    @staticmethod
    def publisher(repository: str | None) -> bool:
        """A hub/Hub repository (``owner/name[:ref]``) of an owner that publishes its own
        models' code (``model_publishers``: facebookresearch, pytorch, google, ...)."""
        return publisher(repository)
