"""Fixes as text edits computed from ast positions (applied by torchreview.changes)."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchreview.findings import Edit, Fix

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext


def _pos(ctx: "FileContext", line: int, col_offset: int) -> tuple[int, int]:
    """Virtual (line, utf-8 col offset) -> report frame (line in cell, 1-based char column)."""
    _, cell_line = ctx.source.locate(line)
    return cell_line, ctx._column(line, col_offset)


def replace_node(ctx: "FileContext", node: ast.AST, text: str) -> Edit:
    line, col = _pos(ctx, node.lineno, node.col_offset)
    end_line, end_col = _pos(ctx, node.end_lineno, node.end_col_offset)
    return Edit(line, col, end_line, end_col, text)


def replace_range(ctx: "FileContext", start: ast.AST, end: ast.AST, text: str) -> Edit:
    line, col = _pos(ctx, start.lineno, start.col_offset)
    end_line, end_col = _pos(ctx, end.end_lineno, end.end_col_offset)
    return Edit(line, col, end_line, end_col, text)


def insert_at(ctx: "FileContext", line: int, col_offset: int, text: str) -> Edit:
    l, c = _pos(ctx, line, col_offset)
    return Edit(l, c, l, c, text)


def insert_keyword(call: ast.Call, ctx: "FileContext", keyword: str, title: str,
                   applicability: str = "safe") -> Fix | None:
    """Add ``keyword`` as the last argument of ``call``."""
    end_line, end_col = call.end_lineno, call.end_col_offset
    if end_line is None or end_col is None:
        return None
    line_text = ctx.source.line_text(end_line).encode("utf-8")
    if end_col < 1 or line_text[end_col - 1:end_col] != b")":
        return None
    before = ctx.text(call)[:-1].rstrip()
    if call.args or call.keywords:
        sep = " " if before.endswith(",") else ", "
    else:
        sep = ""
    return Fix(applicability, (insert_at(ctx, end_line, end_col - 1, sep + keyword),), title)


def replace_attr_name(ctx: "FileContext", node: ast.Attribute, new_attr: str) -> Edit:
    """Rename the attribute part of ``node`` (``x.view`` -> ``x.reshape``), keeping
    whatever sits between the receiver and the name (line breaks, comments)."""
    end_line, end_col = node.end_lineno, node.end_col_offset
    start_col = end_col - len(node.attr.encode("utf-8"))
    line, col = _pos(ctx, end_line, start_col)
    e_line, e_col = _pos(ctx, end_line, end_col)
    return Edit(line, col, e_line, e_col, new_attr)


_LINE_END = re.compile(r"\r\n|\r|\n")


def _offsets(text: str) -> list[int]:
    """Offsets where each line starts, with Python's own notion of a line end."""
    return [0] + [m.end() for m in _LINE_END.finditer(text)]


def _to_offset(starts: list[int], line: int, column: int) -> int:
    index = min(max(line - 1, 0), len(starts) - 1)
    return starts[index] + column - 1


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (positions 1-based line/column on ``text``)."""
    starts = _offsets(text)
    spans = sorted(((_to_offset(starts, e.line, e.column), _to_offset(starts, e.end_line, e.end_column), e.content)
                    for e in edits), reverse=True)
    for start, end, content in spans:
        text = text[:start] + content + text[end:]
    return text
