"""The oldest torch a file can run on, read from the APIs it calls.

A project's pin says which torch it was set up for; the code says which torch it
runs on. A file that calls `torch.backends.mps.is_available()` or `torch.compile`
without a version or `hasattr` guard needs torch 1.12 or 2.0 at least, whatever an
older requirement beside it says (a repository-wide `torch==1.4` left from its first
release, a floor-only pin read as its floor). The runner raises such a file's target
to this floor (``floor_of``), so version-dependent rules (NumPy seeding before 1.9,
APIs removed since, the weights-only default of 2.6) judge the torch the file
actually needs. The table is data: ``data/torch_api_floors.json``.
"""

from __future__ import annotations

import ast
import json
import re
from functools import lru_cache
from importlib import resources

from torchreview.engine.semantic_common import ancestors

_VERSION_TEXT = re.compile(r"^\d+\.\d+")


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, tuple[int, int]], tuple[tuple[str, tuple[int, int]], ...]]:
    """(exact qualified names, module prefixes) -> first release."""
    raw = json.loads(resources.files("torchreview.data").joinpath("torch_api_floors.json").read_text("utf-8"))
    exact, prefixes = {}, []
    for name, version in raw["apis"].items():
        major, minor = (int(p) for p in version.split(".")[:2])
        if name.endswith("."):
            prefixes.append((name, (major, minor)))
        else:
            exact[name] = (major, minor)
    return exact, tuple(prefixes)


def newest_floor() -> tuple[int, int]:
    """The newest release the table knows: a target at or above it is never raised."""
    exact, prefixes = _table()
    return max([*exact.values(), *(v for _, v in prefixes)])


def _release_of(qualname: str) -> tuple[int, int] | None:
    exact, prefixes = _table()
    found = exact.get(qualname)
    if found is None:
        for prefix, release in prefixes:
            if qualname.startswith(prefix):
                return release
    return found


def _is_guard(test: ast.AST) -> bool:
    """A test that asks which torch is installed: `hasattr(torch, "compile")`,
    `torch.__version__ >= "2"`, `if TORCH_VERSION ...`, `is_torch_1_8_plus`."""
    for node in ast.walk(test):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None and (name in ("hasattr", "getattr") or "version" in name.lower()
                                 or re.search(r"torch_?\d", name.lower())):
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _VERSION_TEXT.match(node.value):
            return True
    return False


def _guarded(call: ast.Call) -> bool:
    """Whether the call sits where an older torch would not reach it: inside a `try`
    with handlers, or under (or inside) a test that asks for the torch version."""
    for node in ancestors(call):
        if isinstance(node, ast.Try) and node.handlers:
            return True
        if isinstance(node, (ast.If, ast.IfExp, ast.While)) and _is_guard(node.test):
            return True
        if isinstance(node, ast.BoolOp) and any(_is_guard(v) for v in node.values):
            return True
    return False


def floor_of(model) -> tuple[int, int] | None:
    """The newest first-release among the torch APIs the module calls unguarded, or None."""
    candidates = {q for q in model.called_qualnames if q.startswith("torch.") and _release_of(q) is not None}
    if not candidates:
        return None
    best = None
    qualname = model.qualname
    for call in model.calls:
        q = qualname(call.func)
        if q in candidates:
            release = _release_of(q)
            if (best is None or release > best) and not _guarded(call):
                best = release
    return best
