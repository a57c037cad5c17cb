"""Shared by the model tests (tests/test_model_*.py, test_module_modes.py,
test_project_index.py): a file's context from a code snippet or a written project, and the
nodes of a snippet by what they spell (so tests read ``node(ctx, "opt.step()")``)."""

from __future__ import annotations

import ast
import textwrap

from torchreview.engine.context import FileContext
from torchreview.engine.source import SourceFile


def ctx_of(code: str, path: str = "m.py") -> FileContext:
    text = textwrap.dedent(code)
    return FileContext(SourceFile(path=path, text=text), ast.parse(text), target_torch=None, has_torch=True)


def nodes(ctx: FileContext, spelled: str, kind: type = ast.AST) -> list[ast.AST]:
    """Every node of ``kind`` whose source text is ``spelled``, in source order."""
    found = [n for n in ast.walk(ctx.tree) if isinstance(n, kind) and hasattr(n, "lineno")
             and ctx.text(n) == spelled]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def node(ctx: FileContext, spelled: str, kind: type = ast.AST, index: int = -1) -> ast.AST:
    """The last (or ``index``-th) node spelled so; a test fails loudly if none is."""
    found = nodes(ctx, spelled, kind)
    assert found, f"no node spelled {spelled!r}"
    return found[index]


def write(root, files: dict[str, str]) -> None:
    """A small project under ``root`` (a pyproject.toml marks its top)."""
    (root / "pyproject.toml").write_text("")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def ctx_for(path) -> FileContext:
    """The context of a file written on disk (so the project index can find its neighbours)."""
    text = path.read_text()
    return FileContext(SourceFile(path=str(path), text=text), ast.parse(text), target_torch=None, has_torch=True)
