"""Edit one notebook cell's source in the raw JSON text, touching nothing else.

Re-serialising a notebook with ``json.dumps`` changes whitespace, key order or
escapes that the user's tools chose. Instead we locate the exact byte span of
``cells[i].source`` with a small position-tracking scanner and replace only
that span, written in the same style (list of lines or one string).
"""

from __future__ import annotations

import json
import re

_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")


class NotebookEditError(Exception):
    pass


def _skip_ws(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()


def _skip_value(text: str, pos: int) -> int:
    """Return the index just after the JSON value starting at ``pos``."""
    pos = _skip_ws(text, pos)
    ch = text[pos:pos + 1]
    if ch == '"':
        m = _STRING.match(text, pos)
        if not m:
            raise NotebookEditError("unterminated string")
        return m.end()
    if ch in "{[":
        close = "}" if ch == "{" else "]"
        pos += 1
        depth_stack = [close]
        while depth_stack:
            pos = _skip_ws(text, pos)
            c = text[pos:pos + 1]
            if c == "":
                raise NotebookEditError("unexpected end of notebook JSON")
            if c == '"':
                pos = _STRING.match(text, pos).end()
            elif c in "{[":
                depth_stack.append("}" if c == "{" else "]")
                pos += 1
            elif c in "}]":
                if depth_stack.pop() != c:
                    raise NotebookEditError("mismatched brackets")
                pos += 1
            else:
                pos += 1
        return pos
    for literal in ("true", "false", "null"):
        if text.startswith(literal, pos):
            return pos + len(literal)
    m = _NUMBER.match(text, pos)
    if m:
        return m.end()
    raise NotebookEditError(f"unexpected character at offset {pos}")


def _object_members(text: str, pos: int):
    """Yield (key, value_start, value_end) of the object starting at ``pos``."""
    pos = _skip_ws(text, pos)
    if text[pos:pos + 1] != "{":
        raise NotebookEditError("expected an object")
    pos += 1
    while True:
        pos = _skip_ws(text, pos)
        if text[pos:pos + 1] == "}":
            return
        m = _STRING.match(text, pos)
        if not m:
            raise NotebookEditError("expected a key")
        key = json.loads(m.group(0))
        pos = _skip_ws(text, m.end())
        if text[pos:pos + 1] != ":":
            raise NotebookEditError("expected ':'")
        start = _skip_ws(text, pos + 1)
        end = _skip_value(text, start)
        yield key, start, end
        pos = _skip_ws(text, end)
        if text[pos:pos + 1] == ",":
            pos += 1


def _array_items(text: str, pos: int):
    pos = _skip_ws(text, pos)
    if text[pos:pos + 1] != "[":
        raise NotebookEditError("expected an array")
    pos += 1
    while True:
        pos = _skip_ws(text, pos)
        if text[pos:pos + 1] == "]":
            return
        end = _skip_value(text, pos)
        yield pos, end
        pos = _skip_ws(text, end)
        if text[pos:pos + 1] == ",":
            pos += 1


def source_span(raw: str, cell_index: int) -> tuple[int, int]:
    """Span of ``cells[cell_index - 1].source`` (1-based cell index) in ``raw``."""
    for key, start, _ in _object_members(raw, 0):
        if key != "cells":
            continue
        for number, (cstart, _) in enumerate(_array_items(raw, start), start=1):
            if number != cell_index:
                continue
            for ckey, vstart, vend in _object_members(raw, cstart):
                if ckey == "source":
                    return vstart, vend
            raise NotebookEditError(f"cell {cell_index} has no source")
    raise NotebookEditError(f"no cell {cell_index}")


def _indent_before(raw: str, pos: int) -> str:
    line_start = raw.rfind("\n", 0, pos) + 1
    return re.match(r"[ \t]*", raw[line_start:]).group(0)


def replace_cell_source(raw: str, cell_index: int, new_source: str) -> str:
    start, end = source_span(raw, cell_index)
    old_value = raw[start:end]
    ensure_ascii = not any(ord(c) > 127 for c in raw)
    if old_value.lstrip().startswith("["):
        lines = new_source.splitlines(keepends=True)
        items = [json.dumps(line, ensure_ascii=ensure_ascii) for line in lines]
        if not items:
            rendered = "[]"
        elif "\n" in old_value:
            # keep the notebook's own indentation of list items
            first = re.search(r"\[\s*\n([ \t]*)", old_value)
            item_indent = first.group(1) if first else _indent_before(raw, start) + " "
            closing = _indent_before(raw, start)
            rendered = "[\n" + ",\n".join(item_indent + i for i in items) + "\n" + closing + "]"
        else:
            rendered = "[" + ", ".join(items) + "]"
    else:
        rendered = json.dumps(new_source, ensure_ascii=ensure_ascii)
    return raw[:start] + rendered + raw[end:]
