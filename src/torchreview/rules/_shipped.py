"""Files that ship with the reviewed code: a literal path that exists in the tree,
or a literal path anchored at the module's own folder (``os.path.join(
os.path.dirname(__file__), "data/pnet.pt")``, ``Path(__file__).parent / "w.pt"``)
-- package data installed with the code. Whoever can change such a file can change
the code, so unpickling it is as trusted as importing the module.
"""

from __future__ import annotations

import ast
import os

from torchreview.rules._round_trip import with_target

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git")


def ships_with_the_code(call: ast.Call, ctx, source: ast.AST | None = None) -> bool:
    """The loaded file (``source``, else the call's first argument) is a literal path
    that exists in the reviewed tree."""
    source = source if source is not None else (call.args[0] if call.args else None)
    relative = _literal_path(source, call, ctx, 4)
    if not relative or os.path.isabs(relative) or relative.startswith("~"):
        return False
    here = os.path.dirname(os.path.abspath(ctx.path))
    bases, folder = [here, os.getcwd()], here
    for _ in range(6):  # the project root: scripts are often run from there
        if any(os.path.exists(os.path.join(folder, m)) for m in PROJECT_MARKERS):
            bases.append(folder)
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return any(os.path.isfile(os.path.join(base, relative)) for base in bases)


def _literal_path(expr, call: ast.Call, ctx, depth: int) -> str | None:
    if expr is None or depth <= 0:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Call):
        q = ctx.qualname(expr.func) or ""
        if q in ("builtins.open", "open", "io.open", "gzip.open", "bz2.open", "lzma.open") or \
                (isinstance(expr.func, ast.Name) and expr.func.id == "open"):
            return _literal_path(expr.args[0] if expr.args else None, call, ctx, depth - 1)
        if q == "os.path.join" and expr.args:
            parts = list(expr.args)
            if _is_file_dir(parts[0], ctx):
                parts = parts[1:]
            texts = [_literal_path(p, call, ctx, depth - 1) for p in parts]
            return os.path.join(*texts) if texts and all(texts) else None
        return None
    if isinstance(expr, ast.Name):
        handle = with_target(expr, call)
        if handle is not None:
            return _literal_path(handle, call, ctx, depth - 1)
        value = ctx.flow.reaching_value(expr)
        return _literal_path(value, call, ctx, depth - 1) if value is not None and value is not expr else None
    return None


def _is_file_dir(expr, ctx) -> bool:
    """``os.path.dirname(__file__)`` (also of ``os.path.abspath(__file__)``)."""
    if not (isinstance(expr, ast.Call) and ctx.qualname(expr.func) == "os.path.dirname" and expr.args):
        return False
    inner = expr.args[0]
    if isinstance(inner, ast.Call) and ctx.qualname(inner.func) in ("os.path.abspath", "os.path.realpath") \
            and inner.args:
        inner = inner.args[0]
    return isinstance(inner, ast.Name) and inner.id == "__file__"


def next_to_the_module(expr: ast.AST | None, call: ast.Call, ctx, depth: int = 4) -> bool:
    """``expr`` is (or names, through single assignments) a literal path anchored at
    the module's own folder: ``os.path.join(os.path.dirname(__file__), "lit", ...)``
    or ``Path(__file__).parent / "lit"`` (also ``.resolve().parent``)."""
    if expr is None or depth <= 0:
        return False
    if isinstance(expr, ast.Name):
        value = ctx.flow.reaching_value(expr)
        return value is not None and value is not expr and next_to_the_module(value, call, ctx, depth - 1)
    if isinstance(expr, ast.Call) and ctx.qualname(expr.func) == "os.path.join" and len(expr.args) >= 2:
        first = expr.args[0]
        if isinstance(first, ast.Name):
            first = ctx.flow.reaching_value(first) or first
        return _is_file_dir(first, ctx) and all(
            isinstance(a, ast.Constant) and isinstance(a.value, str) for a in expr.args[1:])
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div) and \
            isinstance(expr.right, ast.Constant) and isinstance(expr.right.value, str):
        left = expr.left
        return _is_path_parent(left, ctx) or next_to_the_module(left, call, ctx, depth - 1)
    return False


def _is_path_parent(expr: ast.AST, ctx) -> bool:
    """``Path(__file__).parent`` (also through ``.resolve()``/``.absolute()``)."""
    if not (isinstance(expr, ast.Attribute) and expr.attr == "parent"):
        return False
    inner = expr.value
    while isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and \
            inner.func.attr in ("resolve", "absolute") and not inner.args:
        inner = inner.func.value
    return isinstance(inner, ast.Call) and (ctx.qualname(inner.func) or "").endswith("Path") and \
        len(inner.args) == 1 and isinstance(inner.args[0], ast.Name) and inner.args[0].id == "__file__"
