"""The project index: what the project's own modules define, for rules of another file.

A file rule reviewing ``train.py`` that meets ``from model import Net`` or
``from utils import evaluate`` asks ``ctx.project`` what ``Net`` is (an
``nn.Module`` with BatchNorm, a loss, a ``Dataset``) or what ``evaluate`` does
(returns a model/optimizer/loader; puts its first parameter in eval mode).

The index is built lazily, module by module, from per-file *summaries*
(:class:`ModuleSummary`, plain data: tuples and strings, picklable and
JSON-able). A summary is made from the module's source alone -- parsed, never
imported -- and memoised by the hash of its bytes, once per process.

Bounds (documented, so results stay cheap and cache keys exact):

* a summary knows only its own module: a class deriving from a class of
  another project module is not followed (``torch.nn`` bases are resolved);
* a name re-exported by ``from .x import Name`` / ``from .x import *``
  (package ``__init__``) is followed at most ``REEXPORT_HOPS`` times;
* modules are found from the reviewed file's folder, its parents up to the
  project root (the nearest folder with ``pyproject.toml``, ``setup.py``,
  ``.git`` ...), and ``<root>/src``; relative imports from the file's package.

:func:`dependencies` lists every file a review of one file can read through
the index (its imports, then theirs, ``REEXPORT_HOPS`` deep): the runner
folds their contents into the file's cache key.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import time
import warnings
from dataclasses import dataclass, field

REEXPORT_HOPS = 2
_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git")
_IMPORT_LINE = re.compile(rb"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+([^#\n]*)|import[ \t]+([^#\n]*))",
                          re.MULTILINE)
_MAX_BYTES = 2 * 1024 * 1024  # larger modules are not summarised (generated code)


@dataclass(frozen=True)
class ClassSummary:
    name: str
    kind: str | None  # "model", "loss_fn", "dataset" or None
    layers: tuple[str, ...] = ()  # "batchnorm", "dropout", "training" (reads self.training)


@dataclass(frozen=True)
class FunctionSummary:
    name: str
    params: tuple[str, ...]  # positional parameters, in order
    returns: str | None = None  # the kind every `return` of its body agrees on
    # (parameter index, "eval"/"train") for each mode call on a parameter, in source order
    modes: tuple[tuple[int, str], ...] = ()

    def mode_calls(self, call: ast.Call) -> list[tuple[ast.AST, str]]:
        """The (argument, mode) pairs a call of this function switches, in order."""
        out = []
        for index, mode in self.modes:
            name = self.params[index]
            arg = next((kw.value for kw in call.keywords if kw.arg == name), None)
            if arg is None and index < len(call.args) and \
                    not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
                arg = call.args[index]
            if arg is not None:
                out.append((arg, mode))
        return out


@dataclass(frozen=True)
class ModuleSummary:
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # local name -> "module.name" (dots kept)
    star_imports: tuple[str, ...] = ()


_EMPTY = ModuleSummary()
_BN = re.compile(r"(BatchNorm|SyncBatchNorm|InstanceNorm)")
_DROPOUT = re.compile(r"Dropout")


def summarize(tree: ast.Module) -> ModuleSummary:
    """The summary of one parsed module (its top-level classes and functions)."""
    from torchreview.engine.semantic import SemanticModel

    model = SemanticModel(tree)
    classes: dict[str, ClassSummary] = {}
    functions: dict[str, FunctionSummary] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            classes[stmt.name] = _class_summary(model, stmt)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[stmt.name] = _function_summary(model, stmt)
    imports = {k: v for k, v in model.aliases.items() if not v.startswith(("torch", "builtins."))}
    return ModuleSummary(classes, functions, imports, tuple(model.star_imports))


def _class_summary(model, cls: ast.ClassDef) -> ClassSummary:
    if cls.name in model.module_classes:
        kind = "loss_fn" if model.is_loss_class(cls.name) else "model"
    elif cls.name in model.dataset_classes:
        kind = "dataset"
    else:
        kind = None
    layers = set()
    for node in model.subtree(cls):
        if isinstance(node, ast.Call):
            q = model.qualname(node.func) or ""
            if q.startswith("torch.nn."):
                if _BN.search(q):
                    layers.add("batchnorm")
                elif _DROPOUT.search(q) or q.endswith(".dropout"):
                    layers.add("dropout")
        elif isinstance(node, ast.Attribute) and node.attr == "training":
            layers.add("training")
    return ClassSummary(cls.name, kind, tuple(sorted(layers)))


def _function_summary(model, func: ast.AST) -> FunctionSummary:
    args = func.args  # type: ignore[attr-defined]
    params = tuple(a.arg for a in [*args.posonlyargs, *args.args])
    modes = []
    for node in sorted((n for n in model.own_nodes(func) if isinstance(n, ast.Call)),
                       key=lambda n: (n.lineno, n.col_offset)):
        func_expr = node.func
        if not (isinstance(func_expr, ast.Attribute) and isinstance(func_expr.value, ast.Name)
                and func_expr.value.id in params and not node.keywords):
            continue
        if func_expr.attr == "eval" and not node.args:
            modes.append((params.index(func_expr.value.id), "eval"))
        elif func_expr.attr == "train" and len(node.args) <= 1:
            off = node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is False
            modes.append((params.index(func_expr.value.id), "eval" if off else "train"))
    return FunctionSummary(func.name, params, model.returned_kind(func.name),  # type: ignore[attr-defined]
                           tuple(modes))


# ---------------------------------------------------------------- finding modules
# File-system answers (existence, project roots, resolved imports, content
# hashes), memoised for a few seconds only (``forget_files``): a batch review
# shares them across files, while files that come and go between the reviews
# of a long-lived process (the LSP server) are seen again.
_exists: dict[str, bool] = {}
_roots: dict[str, str] = {}
_edges: dict[str, list[str]] = {}  # file -> project files its imports resolve to
_stamps: dict[str, str] = {}  # file -> content hash
_MEMO_SECONDS = 5.0
_memo_since = [0.0]


def forget_files(force: bool = False) -> None:
    now = time.monotonic()
    if force or now - _memo_since[0] > _MEMO_SECONDS:
        _exists.clear()
        _roots.clear()
        _edges.clear()
        _stamps.clear()
        _memo_since[0] = now


def _isfile(path: str) -> bool:
    hit = _exists.get(path)
    if hit is None:
        hit = _exists[path] = os.path.isfile(path)
    return hit


def project_root(folder: str) -> str:
    """The nearest folder at or above ``folder`` with a project marker, else ``folder``."""
    hit = _roots.get(folder)
    if hit is not None:
        return hit
    probe = folder
    while True:
        if any(os.path.exists(os.path.join(probe, m)) for m in _MARKERS):
            root = probe
            break
        up = os.path.dirname(probe)
        if up == probe:
            root = folder
            break
        probe = up
    _roots[folder] = root
    return root


def resolve(from_file: str, ref: str) -> str | None:
    """The project file a module reference (``model``, ``pkg.utils``, ``.layers``,
    ``..data``) names, seen from ``from_file``; None for anything else
    (installed libraries, missing files)."""
    folder = os.path.dirname(os.path.abspath(from_file))
    level = len(ref) - len(ref.lstrip("."))
    parts = [p for p in ref[level:].split(".") if p]
    if level:
        base = folder
        for _ in range(level - 1):
            base = os.path.dirname(base)
        bases = [base]
    else:
        if not parts:
            return None
        root = project_root(folder)
        bases, probe = [], folder
        while True:
            bases.append(probe)
            if probe == root or os.path.dirname(probe) == probe:
                break
            probe = os.path.dirname(probe)
        bases.append(os.path.join(root, "src"))
    for base in bases:
        stem = os.path.join(base, *parts)
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            if _isfile(candidate) and os.path.abspath(candidate) != os.path.abspath(from_file):
                return candidate
    return None


# ---------------------------------------------------------------- summaries
_summaries: dict[str, ModuleSummary] = {}  # content hash -> summary
_by_path: dict[str, tuple[tuple[int, int], str]] = {}  # path -> ((mtime, size), content hash)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(_MAX_BYTES + 1)
    except OSError:
        return None


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def content_hash(path: str) -> str:
    """The sha1 of a file's bytes (memoised on its modification time and size)."""
    hit = _stamps.get(path)
    if hit is not None:
        return hit
    _stamps[path] = digest = _content_hash(path)
    return digest


def _content_hash(path: str) -> str:
    stamp = _stamp(path)
    known = _by_path.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    data = _read(path) or b""
    digest = hashlib.sha1(data).hexdigest()
    if stamp is not None:
        _by_path[path] = (stamp, digest)
    return digest


def module_summary(path: str) -> ModuleSummary:
    """The summary of the module in ``path`` (empty when it cannot be read or parsed)."""
    digest = _content_hash(path)  # checked against the file's time and size on every lookup
    hit = _summaries.get(digest)
    if hit is not None:
        return hit
    data = _read(path)
    summary = _EMPTY
    if data is not None and len(data) <= _MAX_BYTES:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(data.decode("utf-8-sig", errors="replace"), filename=path)
            summary = summarize(tree)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            summary = _EMPTY
    if len(_summaries) > 4096:
        _summaries.clear()
    _summaries[digest] = summary
    return summary


def lookup_in(path: str, name: str, hops: int = REEXPORT_HOPS) -> ClassSummary | FunctionSummary | None:
    """What ``name`` is in the module file ``path``: its own class or function, or
    one it re-exports (``from .x import name``, ``from .x import *``)."""
    summary = module_summary(path)
    own = summary.classes.get(name) or summary.functions.get(name)
    if own is not None or hops <= 0:
        return own
    ref = summary.imports.get(name)
    if ref is not None and "." in ref.lstrip("."):
        module, _, original = ref.rpartition(".")
        target = resolve(path, module or ".")
        if target is not None:
            return lookup_in(target, original, hops - 1)
    for module in summary.star_imports:
        target = resolve(path, module)
        if target is not None:
            found = lookup_in(target, name, hops - 1)
            if found is not None:
                return found
    return None


# ---------------------------------------------------------------- cache keys
_imports_of: dict[str, tuple[str, ...]] = {}  # content hash -> module refs


def _module_refs(data: bytes) -> tuple[str, ...]:
    refs = []
    for match in _IMPORT_LINE.finditer(data):
        if match.group(1) is not None:
            base = match.group(1).decode("ascii", "replace")
            refs.append(base)
            # `from . import x` / `from pkg import sub`: the imported names may be modules
            for name in re.split(rb"[,\s()]+", match.group(2)):
                if name and name != b"*" and name != b"as":
                    word = name.decode("ascii", "replace")
                    refs.append(base + word if base.endswith(".") else f"{base}.{word}")
        else:
            for item in match.group(3).split(b","):
                item = item.strip().split(b" as ")[0].strip()
                if re.fullmatch(rb"[\w.]+", item):
                    refs.append(item.decode("ascii", "replace"))
    return tuple(refs)


def dependencies(path: str, data: bytes, hops: int = REEXPORT_HOPS + 1) -> list[tuple[str, str]]:
    """(path, content hash) of every project file the index may read while one
    file (``path`` with content ``data``) is reviewed: the modules it imports,
    and theirs, ``REEXPORT_HOPS`` further. Over-approximates the files read."""
    forget_files()
    seen: dict[str, str] = {}
    frontier = _targets(path, data)
    for _ in range(hops):
        following = []
        for target in frontier:
            if target not in seen and target != path:
                seen[target] = content_hash(target)
                following.extend(_targets(target, None))
        frontier = following
        if not frontier:
            break
    return sorted(seen.items())


def _targets(source: str, content: bytes | None) -> list[str]:
    """The project files the imports of ``source`` resolve to."""
    if content is None:
        hit = _edges.get(source)
        if hit is not None:
            return hit
    digest = hashlib.sha1(content).hexdigest() if content is not None else content_hash(source)
    refs = _imports_of.get(digest)
    on_disk = content is None
    if refs is None:
        refs = _imports_of[digest] = _module_refs(_read(source) or b"" if content is None else content)
    out = []
    for ref in refs:
        if ref.split(".")[0] in ("torch", "numpy", "os", "sys", "typing"):
            continue
        target = resolve(source, ref)
        if target is not None and target not in out:
            out.append(target)
    if on_disk:
        _edges[source] = out
    return out


class ProjectView:
    """What a file rule asks about the rest of the project (``ctx.project``)."""

    def __init__(self, path: str | None) -> None:
        forget_files()
        self.path = path if path and os.path.isfile(path) else None
        self._memo: dict[str, ClassSummary | FunctionSummary | None] = {}

    def lookup(self, module: str, name: str) -> ClassSummary | FunctionSummary | None:
        """What ``name`` is in the project module ``module`` (a reference as written
        in an import of this file: ``model``, ``pkg.nets``, ``.layers``)."""
        if self.path is None:
            return None
        target = resolve(self.path, module)
        return lookup_in(target, name) if target is not None else None

    def lookup_qualname(self, qualname: str | None) -> ClassSummary | FunctionSummary | None:
        """What a qualified name of this file (``ctx.qualname``: ``model.Net`` from
        ``from model import Net``, ``utils.evaluate`` from ``import utils``) is in
        the project; None for libraries and unknown names."""
        if self.path is None or not qualname or "." not in qualname.lstrip(".") or \
                qualname.startswith(("torch.", "builtins.", "numpy.", "os.", "typing.")):
            return None
        if qualname in self._memo:
            return self._memo[qualname]
        module, _, name = qualname.rpartition(".")
        found = self.lookup(module or ".", name)
        if found is None and module.startswith("..") and not module.startswith("..."):
            found = self.lookup(module[1:], name)  # `from . import m` spells m.name as `..m.name`
        self._memo[qualname] = found
        return found
