"""Is ``module.qualname`` a class or a function?  Decided from source text, never by importing.

A pickle that *calls* a global runs it at load time.  Rebuilding an instance of
a class is what checkpoints of whole objects do (it needs trust); calling any
other function or method is code execution.  To tell the two apart without
running anything, the module's file is located with the import system's path
finder (``importlib.machinery.PathFinder.find_spec`` reads directories only,
it executes nothing), its text is parsed with ``ast`` and the name is looked up
among the module's top-level bindings:

* ``class Name`` -> a class (a nested class for dotted names);
* ``def name`` -> a function; any attribute of a class other than a nested
  class (``Path.write_text``, ``ForwardRef._evaluate``) -> a method;
* ``from x import name [as alias]`` / ``import x as alias`` -> followed into x;
* ``name = other`` where ``other`` is a name or ``module.attr`` -> followed;
  any other assignment, a name bound in several ways, a module without Python
  source or a name that cannot be found -> unknown.

Unknown counts as a function (critical): the conservative default. One generated name is
known: ``<module>.__pyx_unpickle_<Class>``, Cython's rebuilder of a ``cdef class``, is a class
when the artifact's project holds ``<module>.pyx`` defining that class.  Extension
modules are read through their ``.pyi`` stubs when they ship them (torch, numpy);
built-in modules already loaded by the interpreter (``builtins``, ``_codecs``,
``posix``...) are looked at in memory, which imports nothing.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from importlib.machinery import PathFinder

CLASS = "class"
FUNCTION = "function"
UNKNOWN = "unknown"

MAX_SOURCE_BYTES = 1024 * 1024  # larger modules are not parsed (unknown): bounded memory
MAX_HOPS = 12  # import/alias hops followed for one name


@dataclass(frozen=True)
class Kind:
    kind: str  # CLASS, FUNCTION or UNKNOWN
    why: str  # for messages: "a def in logging/config.py", "no Python source"...


# the project root of the artifact being scanned (``scanning``): its own modules are looked for there
_ARTIFACT_ROOT: ContextVar[str | None] = ContextVar("artifact_root", default=None)


def search_path() -> tuple[str, ...]:
    """Where modules are looked for: the interpreter's path, then the current project, then
    the project of the artifact being scanned (its nearest folder with ``.git``,
    ``setup.py``, ``requirements.txt`` ...: ``constants.ModelType`` of a checkpoint under
    ``TLOB/data/checkpoints/`` is ``TLOB/constants.py``, wherever the review runs from)."""
    cwd = os.getcwd()
    extra = [cwd, os.path.join(cwd, "src")]
    root = _ARTIFACT_ROOT.get()
    if root:
        extra += [root, os.path.join(root, "src")]
    return tuple(dict.fromkeys([p or cwd for p in sys.path] + extra))


@contextmanager
def scanning(path: str):
    """Look for the modules an artifact's pickle names in the artifact's own project too."""
    from torchreview.engine.project_index import project_root

    token = _ARTIFACT_ROOT.set(project_root(os.path.dirname(os.path.abspath(path))))
    try:
        yield
    finally:
        _ARTIFACT_ROOT.reset(token)


# -- finding and parsing a module's text ------------------------------------------------
@lru_cache(maxsize=1024)
def _locate(module: str, path: tuple[str, ...]) -> tuple[str | None, bool, str]:
    """(file with the module's text or None, is-a-package, why-not)."""
    parts = module.split(".")
    locations: list[str] | None = list(path)
    spec = None
    for i, part in enumerate(parts):
        if locations is None:
            return None, False, f"{'.'.join(parts[:i])} is not a package"
        try:
            # the bare name at every level: the locations already say where to look, and a
            # dotted name makes importlib look its parent up in sys.modules when the level is
            # a namespace package (a folder without __init__.py), which nothing imported here
            spec = PathFinder.find_spec(part, locations)
        except (ImportError, ValueError, OSError, KeyError):
            spec = None
        if spec is None:
            return None, False, f"module {'.'.join(parts[: i + 1])} not found"
        locations = list(spec.submodule_search_locations or []) or None
    origin = spec.origin if spec is not None else None
    is_pkg = spec is not None and spec.submodule_search_locations is not None
    if origin and origin.endswith(".py"):
        return origin, is_pkg, ""
    candidates = []
    if origin:  # an extension module: its stub, if it ships one
        base = os.path.dirname(origin)
        stem = os.path.basename(origin).split(".")[0]
        candidates += [os.path.join(base, stem + ".pyi"), os.path.join(base, stem, "__init__.pyi")]
    for loc in (spec.submodule_search_locations or []) if spec is not None else []:
        candidates += [os.path.join(loc, "__init__.pyi")]
    for cand in candidates:
        if os.path.isfile(cand):
            return cand, is_pkg, ""
    return None, is_pkg, "no Python source" if origin else "a namespace package"


@lru_cache(maxsize=128)
def _bindings(filename: str) -> dict[str, list[tuple]] | None:
    """Top-level bindings of a module file (through if/try/with blocks), as small records.

    The syntax tree is dropped once the records are made, so cached modules
    cost little memory.  A record is ``(kind, line, unconditional, ...)``:
    ``("class", line, top, name, members)``, ``("def", line, top)``,
    ``("import", line, top, module)``, ``("from", line, top, level, module, name)``,
    ``("star", line, top, level, module)``, ``("assign", line, top, dotted or None)``.
    """
    try:
        if os.path.getsize(filename) > MAX_SOURCE_BYTES:
            return None
        with open(filename, "rb") as handle:
            tree = ast.parse(handle.read(), filename)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    try:
        return _table(tree.body)
    except RecursionError:
        return None


def _table(body: list[ast.stmt]) -> dict[str, list[tuple]]:
    table: dict[str, list[tuple]] = {}
    _collect(body, table, True)
    return {name: _effective(records) for name, records in table.items()}


def _collect(body: list[ast.stmt], table: dict[str, list[tuple]], top: bool) -> None:
    def add(name: str, record: tuple) -> None:
        table.setdefault(name, []).append(record)

    for node in body:
        line = node.lineno
        if isinstance(node, ast.ClassDef):
            add(node.name, ("class", line, top, node.name, _table(node.body)))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(node.name, ("def", line, top))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                add(bound, ("import", line, top, alias.name if alias.asname else bound))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    add("*", ("star", line, top, node.level, node.module))
                else:
                    add(alias.asname or alias.name,
                        ("from", line, top, node.level, node.module, alias.name))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            simple = isinstance(node, ast.Assign) and len(targets) == 1 and isinstance(
                targets[0], ast.Name)
            dotted = _dotted(node.value) if simple else None
            for name in _bound_names(targets):
                add(name, ("assign", line, top, dotted))
        elif isinstance(node, ast.If):
            _collect(node.body, table, False)
            _collect(node.orelse, table, False)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            _collect(node.body, table, False)
            for handler in node.handlers:
                _collect(handler.body, table, False)
            _collect(node.orelse, table, False)
            _collect(node.finalbody, table, False)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            _collect(node.body, table, False)


def _bound_names(targets) -> list[str]:
    """Names an assignment binds (``a = ...``, ``a, b = ...``; not ``a.x = ...``)."""
    out: list[str] = []
    for target in targets:
        if isinstance(target, ast.Name):
            out.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            out += _bound_names(target.elts)
        elif isinstance(target, ast.Starred):
            out += _bound_names([target.value])
    return out


def _effective(records: list[tuple]) -> list[tuple]:
    """The bindings that can be live after import: from the last unconditional one on."""
    for i in range(len(records) - 1, -1, -1):
        if records[i][2]:
            return records[i:]
    return records


# -- resolving a dotted name ------------------------------------------------------------
class _Resolver:
    def __init__(self, path: tuple[str, ...]) -> None:
        self.path = path
        self.hops = 0

    def resolve(self, module: str, parts: list[str]) -> Kind:
        self.hops += 1
        if self.hops > MAX_HOPS:
            return Kind(UNKNOWN, "too many import hops to follow")
        if not parts:
            return Kind(UNKNOWN, f"{module} is a module, not a callable")
        if module in sys.builtin_module_names:
            return _in_memory(module, parts)
        filename, is_pkg, why = _locate(module, self.path)
        if filename is None:
            # "os.path" is no file of its own: a name bound inside "os".
            head, _, last = module.rpartition(".")
            if head and _locate(head, self.path)[0] is not None:
                return self.resolve(head, [last, *parts])
            return Kind(UNKNOWN, why)
        found = self._in_file(filename, module, is_pkg, parts)
        stub = filename + "i" if filename.endswith(".py") else ""
        if found.kind == UNKNOWN and stub and os.path.isfile(stub):
            from_stub = self._in_file(stub, module, is_pkg, parts)
            if from_stub.kind != UNKNOWN:
                return from_stub
        return found

    def _in_file(self, filename: str, module: str, is_pkg: bool, parts: list[str]) -> Kind:
        table = _bindings(filename)
        if table is None:
            return Kind(UNKNOWN, f"{_short(filename)} cannot be parsed")
        nodes = table.get(parts[0])
        if not nodes:
            if is_pkg:  # a submodule
                sub = self.resolve(f"{module}.{parts[0]}", parts[1:])
                if sub.kind != UNKNOWN or not table.get("*"):
                    return sub
            for star in table.get("*", []):
                found = self.resolve(_absolute(star[3], star[4], module, is_pkg), parts)
                if found.kind != UNKNOWN:
                    return found
            return Kind(UNKNOWN, f"{parts[0]} not found in {_short(filename)}")
        kinds = {self._node(node, module, is_pkg, parts, filename) for node in nodes}
        if len(kinds) == 1:
            return kinds.pop()
        if all(k.kind == CLASS for k in kinds):
            return sorted(kinds, key=lambda k: k.why)[0]
        worst = sorted((k for k in kinds if k.kind != CLASS), key=lambda k: (k.kind, k.why))
        if all(k.kind == worst[0].kind for k in kinds):
            return worst[0]
        return Kind(worst[0].kind, f"{parts[0]} is bound in several ways ({worst[0].why})")

    def _node(self, record: tuple, module: str, is_pkg: bool, parts: list[str],
              filename: str) -> Kind:
        kind, line = record[0], record[1]
        where = f"{_short(filename)}:{line}"
        if kind == "class":
            if len(parts) == 1:
                return Kind(CLASS, f"a class defined at {where}")
            return self._attribute(record, parts, where)
        if kind == "def":
            return Kind(FUNCTION, f"a function defined at {where}")
        if kind == "import":
            return self.resolve(record[3], parts[1:])
        if kind == "from":
            base = _absolute(record[3], record[4], module, is_pkg)
            found = self.resolve(base, [record[5], *parts[1:]])
            if found.kind == UNKNOWN and "not found" in found.why:
                sub = self.resolve(f"{base}.{record[5]}", parts[1:])
                if sub.kind != UNKNOWN:
                    return sub
            return found
        if kind == "assign" and record[3]:
            return self.resolve(module, list(record[3]) + parts[1:])
        return Kind(UNKNOWN, f"{parts[0]} is bound by an assignment at {where}")

    def _attribute(self, cls: tuple, parts: list[str], where: str) -> Kind:
        name, members = cls[3], cls[4].get(parts[1], [])
        nested = [m for m in members if m[0] == "class"]
        if nested and len(nested) == len(members):
            if len(parts) == 2:
                return Kind(CLASS, f"a class nested in {name} ({where})")
            return self._attribute(nested[0], parts[1:], where)
        if not members:
            return Kind(UNKNOWN, f"{parts[1]} is not defined in the class {name} ({where}): "
                                 "inherited or set at run time")
        if any(m[0] == "def" for m in members):
            return Kind(FUNCTION, f"a method of the class {name} ({where})")
        return Kind(FUNCTION, f"an attribute of the class {name} ({where}), not a class")


def _dotted(node) -> tuple[str, ...] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return (node.id, *reversed(parts))
    return None


def _absolute(level: int, name: str | None, module: str, is_pkg: bool) -> str:
    """The absolute module of ``from <level dots><name> import ...`` written in ``module``."""
    if not level:
        return name or ""
    package = module if is_pkg else module.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{name}" if name else package


def _short(filename: str) -> str:
    parts = filename.replace(os.sep, "/").split("/")
    return "/".join(parts[-2:])


def _in_memory(module: str, parts: list[str]) -> Kind:
    """A module compiled into the interpreter: look at it only if it is loaded already."""
    loaded = sys.modules.get(module)
    if loaded is None:
        return Kind(UNKNOWN, f"{module} is a built-in module without source")
    value = loaded
    for part in parts:
        if not isinstance(value, type) and value is not loaded:
            return Kind(FUNCTION, f"an attribute of {module} that is not a class")
        value = getattr(value, part, None) if not part.startswith("__") else None
        if value is None:
            return Kind(UNKNOWN, f"{'.'.join(parts)} not found in the built-in module {module}")
    if isinstance(value, type):
        return Kind(CLASS, f"a built-in class of {module}")
    return Kind(FUNCTION, f"a built-in function of {module}")


@lru_cache(maxsize=4096)
def _kind_cached(module: str, name: str, path: tuple[str, ...]) -> Kind:
    parts = name.split(".")
    if not module or not all(p.isidentifier() for p in parts) or not all(
        p.isidentifier() for p in module.split(".")
    ):
        return Kind(UNKNOWN, "not a valid dotted name")
    try:
        return _Resolver(path).resolve(module, parts)
    except (RecursionError, ValueError, OSError) as exc:
        return Kind(UNKNOWN, f"could not be resolved ({type(exc).__name__})")


def kind_of(module: str, name: str) -> Kind:
    """Is ``module.name`` a class, a function, or unknown?  Reads source text only."""
    found = _kind_cached(module, name, search_path())
    if found.kind == UNKNOWN and name.startswith(_CYTHON_RECONSTRUCTOR):
        cdef = _cython_class(module, name[len(_CYTHON_RECONSTRUCTOR):], _ARTIFACT_ROOT.get())
        if cdef is not None:
            return Kind(CLASS, f"Cython's rebuilder of `cdef class {name[len(_CYTHON_RECONSTRUCTOR):]}` in {cdef}")
    return found


# Cython generates `__pyx_unpickle_<Class>` in a compiled module for each picklable `cdef class`: it
# rebuilds an instance of that class (`Class.__new__` and its saved state), as a class's own reduce does
_CYTHON_RECONSTRUCTOR = "__pyx_unpickle_"


@lru_cache(maxsize=256)
def _cython_class(module: str, cls: str, root: str | None) -> str | None:
    """The project's Cython source of ``module`` (``<module>.pyx`` anywhere under the artifact's
    project ``root``, at most six folders deep) when it defines ``cdef class <cls>``: dqn-trading's
    pickled ``Agent`` objects, rebuilt by ``Agent.__pyx_unpickle_Agent`` (judged false as code
    execution in blind test 82)."""
    if not root or not cls.isidentifier():
        return None
    target = module.split(".")[-1] + ".pyx"
    base = root.rstrip(os.sep).count(os.sep)
    for folder, subfolders, files in os.walk(root):
        if folder.count(os.sep) - base >= 6:
            subfolders[:] = []
        subfolders[:] = [d for d in subfolders if not d.startswith(".")]
        if target in files:
            path = os.path.join(folder, target)
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    text = handle.read(MAX_SOURCE_BYTES)
            except OSError:
                continue
            if re.search(r"^\s*cdef\s+(?:public\s+|api\s+)*class\s+" + re.escape(cls) + r"\b", text, re.M):
                return os.path.relpath(path, root)
    return None
