"""Shared by TR419/TR423/TR429: the API tables (data files) and the rewrites
that turn an old call into the new one as text edits."""

from __future__ import annotations

import ast
import json
from functools import lru_cache
from importlib import resources

from torchreview.findings import Fix
from torchreview.fixes import insert_at, replace_node


@lru_cache(maxsize=None)
def load_table(filename: str) -> dict[str, dict]:
    """A data table of ``torchreview/data`` keyed by its ``name`` field (read once)."""
    text = resources.files("torchreview.data").joinpath(filename).read_text(encoding="utf-8")
    return {entry["name"]: entry for entry in json.loads(text)}


def version(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def spell(ctx, qualname: str) -> str | None:
    """How this file can write ``qualname`` with the modules it imports
    (``torch.nn.Upsample`` -> ``nn.Upsample`` after ``from torch import nn``)."""
    parts = qualname.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        alias = ctx.model.module_alias(".".join(parts[:cut]))
        if alias is not None:
            return ".".join([alias, *parts[cut:]])
    return None


def _closing_paren(ctx, call: ast.Call) -> tuple[int, int] | None:
    line_text = ctx.source.line_text(call.end_lineno).encode("utf-8")
    col = call.end_col_offset - 1
    return (call.end_lineno, col) if col >= 0 and line_text[col:col + 1] == b")" else None


def rewrite(ctx, node: ast.AST, entry: dict, new_name: str | None = None) -> Fix | None:
    """The fix for a use of a table entry: ``node`` is a call, or a bare reference
    (a decorator such as ``@torch.cuda.amp.custom_fwd``)."""
    applicability = entry.get("fix")
    callee = spell(ctx, new_name or entry["replacement"]) if applicability else None
    if callee is None:
        return None
    title = f"use `{entry['replacement']}`"
    insert, add = entry.get("insert_args"), entry.get("add_keywords")
    if not isinstance(node, ast.Call):
        inner = ", ".join(t for t in (insert, add) if t)
        text = f"{callee}({inner})" if (insert or add) else callee
        return Fix(applicability, (replace_node(ctx, node, text),), title)
    args, keywords = node.args, node.keywords
    if any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in keywords):
        return None
    if len(args) > entry.get("max_positional", 99) or (keywords and entry.get("no_keywords")):
        return None
    special = entry.get("special")
    if special:
        return SPECIAL[special](ctx, node, callee, applicability, title)
    inserts: dict[tuple[int, int], list[str]] = {}
    names = entry.get("keyword_positionals") or []
    if len(args) > len(names) and names:
        return None
    first = min((*args, *keywords), key=lambda n: (n.lineno, n.col_offset), default=None)
    paren = _closing_paren(ctx, node)
    if paren is None:
        return None
    if first is None:
        inner = ", ".join(t for t in (insert, add) if t)
        if inner:
            inserts[paren] = [inner]
    else:
        if insert:
            inserts.setdefault((first.lineno, first.col_offset), []).append(insert + ", ")
        if add:
            sep = " " if ctx.text(node)[:-1].rstrip().endswith(",") else ", "
            inserts.setdefault(paren, []).append(sep + add)
    for arg, name in zip(args, names):
        inserts.setdefault((arg.lineno, arg.col_offset), []).append(name + "=")
    edits = [replace_node(ctx, node.func, callee)]
    edits += [insert_at(ctx, line, col, "".join(texts)) for (line, col), texts in sorted(inserts.items())]
    return Fix(applicability, tuple(edits), title)


def _text(ctx, node: ast.AST | None) -> str | None:
    return ctx.text(node) if node is not None else None


def _qr(ctx, call, callee, applicability, title):
    some = ctx.arg(call, "some", 1)
    parts = [ctx.text(call.args[0])] if call.args else []
    if not parts:
        return None
    if some is not None:
        if not (isinstance(some, ast.Constant) and isinstance(some.value, bool)):
            return None
        parts.append('mode="reduced"' if some.value else 'mode="complete"')
    parts += [ctx.text(k) for k in call.keywords if k.arg not in ("some", "input")]
    return Fix(applicability, (replace_node(ctx, call, f"{callee}({', '.join(parts)})"),), title)


def _multi_dot(ctx, call, callee, applicability, title):
    if len(call.args) < 2:
        return None
    first, last = call.args[0], call.args[-1]
    return Fix(applicability, (replace_node(ctx, call.func, callee),
                               insert_at(ctx, first.lineno, first.col_offset, "["),
                               insert_at(ctx, last.end_lineno, last.end_col_offset, "]")), title)


def _int(node) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return -inner if inner is not None else None
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _arange(ctx, call, callee, applicability, title):
    positional = call.args
    end = ctx.arg(call, "end", 0 if len(positional) == 1 else 1)
    step_node = ctx.arg(call, "step", 2)
    step = 1 if step_node is None else _int(step_node)
    if end is None or step is None:
        return None
    value = _int(end)
    if value is not None:
        new_end = str(value + step)
    elif step == 1 and isinstance(end, ast.BinOp) and isinstance(end.op, ast.Sub) and _int(end.right) == 1:
        new_end = ctx.text(end.left)
    elif step == 1:
        text = ctx.text(end)
        new_end = f"{text} + 1" if isinstance(end, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) \
            else f"({text}) + 1"
    else:
        return None
    return Fix("unsafe", (replace_node(ctx, call.func, callee), replace_node(ctx, end, new_end)), title)


def _norm(ctx, call, callee, applicability, title):
    if not call.args or len(call.args) > 4:
        return None
    p, dim, keepdim = ctx.arg(call, "p", 1), ctx.arg(call, "dim", 2), ctx.arg(call, "keepdim", 3)
    numeric = isinstance(p, ast.Constant) and isinstance(p.value, (int, float)) and not isinstance(p.value, bool)
    if p is not None and not numeric and not (isinstance(p, ast.Constant) and p.value == "fro"):
        return None
    if not numeric and dim is not None and _int(dim) is None and not (
            isinstance(dim, (ast.Tuple, ast.List)) and len(dim.elts) <= 2):
        return None
    parts = [ctx.text(call.args[0])]
    parts += [f"ord={ctx.text(p)}"] if numeric else []
    parts += [f"dim={ctx.text(dim)}"] if dim is not None else []
    parts += [f"keepdim={ctx.text(keepdim)}"] if keepdim is not None else []
    parts += [ctx.text(k) for k in call.keywords if k.arg in ("dtype", "out")]
    return Fix(applicability, (replace_node(ctx, call, f"{callee}({', '.join(parts)})"),), title)


SPECIAL = {"qr": _qr, "multi_dot": _multi_dot, "arange": _arange, "norm": _norm}
