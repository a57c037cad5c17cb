"""Which pickle globals are fine, which need trust, which run code.

The knowledge lives in ``torchreview/data/pickle_allowlist.json``:

* ``allow.torch`` mirrors what ``torch.load(weights_only=True)`` accepts in the
  torch version recorded next to it;
* ``allow.numpy`` is what ``numpy.load(allow_pickle=True)`` needs to rebuild an
  object array (applies only to pickles embedded in ``.npy``/``.npz`` files);
* ``deny`` decides the critical severity.

Anything else is "unknown": a weights-only load refuses it, so the file needs
trust (medium).  Names are normalised the way the unpicklers do it (Python 2
module names such as ``__builtin__`` map to their Python 3 homes) and both the
written and the normalised name are checked against the deny-list, so an alias
never hides a dangerous global.
"""

from __future__ import annotations

import _compat_pickle
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from torchreview.findings import Severity

CONTEXT_TORCH = "torch"
CONTEXT_NUMPY = "numpy"
# the pickles of a TorchScript archive (`torch.jit.save`): torch.jit.load's own unpickler reads
# them, resolving only its list/type helpers and the classes compiled into the archive
CONTEXT_TORCHSCRIPT = "torchscript"


@dataclass(frozen=True)
class Policy:
    torch_version: str
    allow: dict[str, frozenset[str]]
    deny_modules: frozenset[str]
    deny_globals: frozenset[str]
    deny_attributes: frozenset[str]
    deny_names: frozenset[str]
    rebuilders: frozenset[str] = frozenset()
    compiled_classes: frozenset[str] = frozenset()
    library_classes: frozenset[str] = frozenset()
    # exact classes of a denied module that rebuild plain data (`types.SimpleNamespace`: the
    # `types` module is denied for FunctionType/CodeType, its namespace class runs nothing)
    deny_exempt: frozenset[str] = frozenset()


@lru_cache(maxsize=1)
def load_policy() -> Policy:
    text = resources.files("torchreview.data").joinpath("pickle_allowlist.json").read_text(
        encoding="utf-8"
    )
    raw = json.loads(text)
    deny = raw["deny"]
    return Policy(
        torch_version=str(raw["torch_version"]),
        allow={key: frozenset(values) for key, values in raw["allow"].items()},
        deny_modules=frozenset(deny["modules"]),
        deny_globals=frozenset(deny["globals"]),
        deny_attributes=frozenset(deny["attributes"]),
        deny_names=frozenset(deny["names"]),
        rebuilders=frozenset(raw.get("rebuilders", ())),
        compiled_classes=frozenset(raw.get("compiled_classes", ())),
        library_classes=frozenset(raw.get("library_classes", ())),
        deny_exempt=frozenset(deny.get("exempt", ())),
    )


def normalise(module: str, name: str) -> tuple[str, str]:
    """Map Python 2 names to Python 3 the way ``pickle`` (fix_imports) and torch do."""
    key = (module, name)
    if key in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[key]
    if module in _compat_pickle.IMPORT_MAPPING:
        return _compat_pickle.IMPORT_MAPPING[module], name
    return module, name


def _module_denied(policy: Policy, dotted: str) -> str | None:
    """The deny-list module that ``dotted`` is, or lives in."""
    parts = dotted.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if prefix in policy.deny_modules:
            return prefix
    return None


def _global_denied(policy: Policy, module: str, name: str) -> str | None:
    """Why ``module.name`` can run code, or None."""
    if not module or not name:
        return "empty module or name"
    full = f"{module}.{name}"
    if full in policy.deny_exempt:
        return None
    hit = _module_denied(policy, full)
    if hit is not None:
        return f"module {hit}"
    parts = full.split(".")
    for i in range(2, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if prefix in policy.deny_globals:
            return prefix
    name_parts = name.split(".")
    if name_parts[-1] in policy.deny_names:
        return f"name {name_parts[-1]!r}"
    if len(name_parts) > 1:
        # Protocol 4+ resolves dotted names attribute by attribute: a walk
        # through a dunder or through a dangerous module reaches anything.
        for part in name_parts:
            if part in policy.deny_attributes or (part.startswith("__") and part.endswith("__")):
                return f"attribute walk through {part!r}"
    return None


@dataclass(frozen=True)
class Verdict:
    severity: Severity | None  # None: allowed
    reason: str


def classify(module: str, name: str, context: str = CONTEXT_TORCH) -> Verdict:
    """Severity of one global referenced by a pickle (None when it is allowed)."""
    policy = load_policy()
    mapped_module, mapped_name = normalise(module, name)
    for mod, nam in {(module, name), (mapped_module, mapped_name)}:
        why = _global_denied(policy, mod, nam)
        if why is not None:
            return Verdict(Severity.CRITICAL, f"can execute code ({why})")
    full = f"{mapped_module}.{mapped_name}"
    if full in policy.allow.get(CONTEXT_TORCH, frozenset()):
        return Verdict(None, "allowed by torch.load(weights_only=True)")
    if context != CONTEXT_TORCH and full in policy.allow.get(context, frozenset()):
        return Verdict(None, f"allowed for {context} arrays" if context == CONTEXT_NUMPY
                       else "a TorchScript archive's own rebuild helper")
    if context == CONTEXT_TORCHSCRIPT and (mapped_module == "__torch__" or mapped_module.startswith("__torch__.")):
        return Verdict(None, "a class compiled into the TorchScript archive")
    return Verdict(Severity.MEDIUM, "not on the torch.load(weights_only=True) allow-list")


def judge(ref, context: str = CONTEXT_TORCH) -> Verdict:
    """Severity of a global as the pickle uses it (``ref`` is an ``opcodes.GlobalRef``).

    Deny-list and allow-list first (the deny-list only gives better wording);
    then what is called decides: instantiating a class needs trust (medium),
    calling anything that cannot be shown to be a class -- a function, a
    method, a name bound by an assignment, a name without source -- is code
    execution at load time (critical).  Class or function is read from the
    source text (``callables``), never by importing; classes of compiled
    extension modules, whose source cannot be read, are named in the data
    (``compiled_classes``: scikit-learn's Cython ``Tree`` ...).
    """
    verdict = classify(ref.module, ref.name, context)
    if verdict.severity is not Severity.MEDIUM:
        return verdict
    from torchreview.artifacts.callables import CLASS, kind_of

    module, name = normalise(ref.module, ref.name)
    full = f"{module}.{name}"
    policy = load_policy()
    known = [ctx for ctx, names in policy.allow.items() if full in names]
    if known and (ref.called or ref.instantiated):
        return Verdict(Severity.MEDIUM, f"a rebuilder allowed for {known[0]} arrays only")
    if full in policy.rebuilders:
        return Verdict(Severity.MEDIUM, "a function known to only rebuild data")
    # a named extension type is a class, and so is a named class of a data library that may not
    # be installed here (pandas' BlockManager: its source cannot be read then)
    if ref.called and full not in policy.compiled_classes and full not in policy.library_classes:
        kind = kind_of(module, name)
        if kind.kind != CLASS:
            what = "is not a class" if kind.kind == "function" else "cannot be shown to be a class"
            return Verdict(
                Severity.CRITICAL,
                f"called at load time and {what}: {kind.why}",
            )
    if ref.called or ref.instantiated:
        reason = "a class: rebuilding it runs its constructor"
        if ref.built and kind_of(module, f"{name}.__setstate__").kind == "function":
            reason += " and its own __setstate__"
        return Verdict(Severity.MEDIUM, reason)
    return verdict
