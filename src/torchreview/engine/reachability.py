"""Which modules of a project run at all: reachability from its entry points.

A repository often carries code that nothing in it runs: a library vendored whole
(conv-emotion's copy of simpletransformers, of which its scripts use two model
classes), sub-projects copied from an upstream repository, abandoned drafts. A
reviewer does not comment on a defect there: the code never runs, so the defect
never shows.

The entry points of a project are its notebooks and its scripts: Python files that
do something when run (a ``__main__`` guard, or a statement at module level that
is not an import, a definition, an assignment, a docstring or a guard such as
``try:``/``if``), test files (``test_*.py``, ``*_test.py``, ``conftest.py``) and
``setup.py``. A module is reached when an entry point imports it, directly or
through reached modules (importing ``a.b.c`` runs ``a/__init__.py`` and
``a/b/__init__.py`` too); imports are read from the text (the project index's
import lines, resolved by ``project_index.resolve``), never by importing.

Nothing is judged unreached -- every module counts as reached -- in a project that
may import modules by name at run time (``importlib.import_module``/``importlib.util``,
``import_module(``,
``__import__(``, Hydra's ``_target_``, registries' ``register_module``), that has
no entry point, or that is larger than ``MAX_FILES``; nor is a module of an
installable package (its users import it). A run-time import confined to one
package by a literal prefix (``import_module("models.VIT." + name)``) reaches
every module of that package and nothing else; one on a commented-out line
imports nothing. The answer is computed once per
project root and review, after the per-file results (never cached with them: it
depends on every file of the project).
"""

from __future__ import annotations

import os
import re

from torchreview.engine import project_index as P
from torchreview.engine.advice import installable_module
from torchreview.engine.call_paths import file_bytes, project_files

MAX_FILES = 3000

# a module imported by a name computed at run time (an `import importlib` alone imports nothing:
# RawGAT-ST's startup_config)
_DYNAMIC = re.compile(rb"importlib\.(?:import_module|util|machinery)|import_module\(|__import__\(|_target_|"
                      rb"register_module")
_MAIN = re.compile(rb"__name__\s*==\s*['\"]__main__['\"]")
# a statement at column 0 that does something when the file runs: a call, a loop, a with
_ACTION = re.compile(rb"^(?:[A-Za-z_][\w.]*\s*\(|(?:for|while|with|async\s+with)\b|print\b)", re.M)
_TESTS = re.compile(r"^(?:test_.*|.*_test|conftest|setup)\.py$")
_NOTEBOOK_IMPORT = re.compile(r'"\s*(?:from\s+[\w.]+\s+import\s+[^"\\]*|import\s+[\w., ]+)(?:\\n)?"')


def _notebook_code(data: bytes) -> bytes:
    """The import lines of a notebook's JSON, as Python lines (enough for the refs)."""
    text = data.decode("utf-8", "replace")
    lines = []
    for match in _NOTEBOOK_IMPORT.finditer(text):
        line = match.group(0).strip('"').replace("\\n", "").strip()
        lines.append(line)
    return "\n".join(lines).encode("utf-8", "replace")


# `import_module("models.VIT." + name)`, `import_module(f"models.VIT.{name}")`: a run-time import
# confined to one package, named by its literal prefix
_PREFIXED_IMPORT = re.compile(rb"""import_module\(\s*(?:f?(["'])([A-Za-z_][\w.]*)\.(?:\{|\1\s*\+))""")


def _dynamic_prefixes(data: bytes) -> set[str] | None:
    """The packages the file's run-time imports are confined to (empty when it has none), or
    None when one of them may name any module. A commented-out line imports nothing."""
    out: set[str] = set()
    if not _DYNAMIC.search(data):
        return out
    for match in _DYNAMIC.finditer(data):
        start = data.rfind(b"\n", 0, match.start()) + 1
        end = data.find(b"\n", match.start())
        line = data[start:end if end >= 0 else len(data)]
        if line.lstrip().startswith(b"#"):
            continue
        prefixed = _PREFIXED_IMPORT.search(line)
        if prefixed is None or not match.group(0).endswith(b"import_module") and b"import_module(" not in match.group(0):
            return None
        out.add(prefixed.group(2).decode("ascii", "replace"))
    return out


def _entry(path: str, data: bytes) -> bool:
    if path.endswith(".ipynb") or _TESTS.match(os.path.basename(path)):
        return True
    return bool(_MAIN.search(data) or _ACTION.search(data))


def _packages_above(path: str, root: str) -> list[str]:
    """The ``__init__.py`` files of the packages holding ``path`` (they run on import)."""
    out = []
    folder = os.path.dirname(path)
    while folder.startswith(root) and folder != root:
        init = os.path.join(folder, "__init__.py")
        if not os.path.isfile(init):
            break
        out.append(init)
        folder = os.path.dirname(folder)
    return out


def reached_modules(root: str) -> frozenset[str] | None:
    """The absolute paths of the project's modules that its entry points reach, or
    None when every module is to count as reached (see the module's docstring)."""
    files = [os.path.abspath(f) for f in project_files(root)]
    if not files or len(files) >= MAX_FILES:
        return None
    texts = {f: file_bytes(f) for f in files}
    prefixes: set[str] = set()
    for data in texts.values():
        found = _dynamic_prefixes(data)
        if found is None:
            return None
        prefixes |= found
    entries = [f for f in files if _entry(f, texts[f])]
    if not entries:
        return None
    # modules a run-time import may name under a literal package prefix (`import_module("models.VIT."
    # + name)`): every module of that package may run
    folders = tuple(os.sep + os.path.join(*prefix.split(".")) + os.sep for prefix in prefixes)
    entries += [f for f in files if folders and any(folder in f for folder in folders)]
    reached: set[str] = set()
    stack = list(entries)
    while stack:
        path = stack.pop()
        if path in reached:
            continue
        reached.add(path)
        data = texts.get(path, b"")
        code = _notebook_code(data) if path.endswith(".ipynb") else data
        for ref in P._module_refs(code):
            target = P.resolve(path, ref)
            if target is None:
                continue
            target = os.path.abspath(target)
            for module in (target, *_packages_above(target, os.path.abspath(root))):
                if module not in reached and module in texts:
                    stack.append(module)
    return frozenset(reached)


class Reachability:
    """Per review: ``unreached(path)`` for the files of any project, each project's
    answer computed once."""

    def __init__(self, root_of) -> None:
        self._root_of = root_of
        self._memo: dict[str, frozenset[str] | None] = {}

    def unreached(self, path: str) -> bool:
        """A ``.py`` module of a project that its entry points never import (and not a
        module of an installable package, not an entry point itself)."""
        if not path.endswith(".py") or not os.path.isfile(path) or installable_module(path):
            return False
        root = self._root_of(path)
        if not root:
            return False
        if root not in self._memo:
            self._memo[root] = reached_modules(root)
        reached = self._memo[root]
        return reached is not None and os.path.abspath(path) not in reached
