"""Where a notebook finding is in the raw ``.ipynb`` file.

Findings in notebooks are reported by cell (``cell 3, line 2``), which is what
people read; SARIF consumers and GitHub annotations only know the file on
disk, so they need the line and column of that cell line inside the JSON text.
This module finds every cell's ``source`` strings in the raw text (a small
position-keeping JSON scanner; other strings, such as large outputs, are
skipped by one regular expression) and maps decoded characters back to raw
offsets, escapes included.
"""

from __future__ import annotations

import bisect
import re

_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class _Bad(Exception):
    pass


class _Scanner:
    """Records the raw spans of the strings at ``cells[i].source`` (a string or
    a list of strings), by cell number (1-based, every cell counted, as in the
    reports)."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self.sources: dict[int, list[tuple[int, int]]] = {}

    def ws(self, pos: int) -> int:
        return _WS.match(self.raw, pos).end()

    def value(self, pos: int, path: tuple) -> int:
        pos = self.ws(pos)
        char = self.raw[pos:pos + 1]
        if char == "{":
            return self.members(pos + 1, path)
        if char == "[":
            return self.items(pos + 1, path)
        if char == '"':
            match = _STRING.match(self.raw, pos)
            if match is None:
                raise _Bad
            if self._is_source(path):
                self.sources.setdefault(path[1] + 1, []).append((pos, match.end()))
            return match.end()
        match = _SCALAR.match(self.raw, pos)
        if match is None:
            raise _Bad
        return match.end()

    @staticmethod
    def _is_source(path: tuple) -> bool:
        return (len(path) in (3, 4) and path[0] == "cells" and path[2] == "source"
                and isinstance(path[1], int))

    def members(self, pos: int, path: tuple) -> int:
        pos = self.ws(pos)
        if self.raw.startswith("}", pos):
            return pos + 1
        while True:
            pos = self.ws(pos)
            match = _STRING.match(self.raw, pos)
            if match is None:
                raise _Bad
            key = _decode(self.raw, match.start(), match.end())[0]
            pos = self.ws(match.end())
            if not self.raw.startswith(":", pos):
                raise _Bad
            # only the paths that can lead to a cell's source are followed by name
            inner = (*path, key) if len(path) < 3 else (*path, None)
            pos = self.ws(self.value(pos + 1, inner))
            if self.raw.startswith("}", pos):
                return pos + 1
            if not self.raw.startswith(",", pos):
                raise _Bad
            pos += 1

    def items(self, pos: int, path: tuple) -> int:
        pos = self.ws(pos)
        if self.raw.startswith("]", pos):
            return pos + 1
        index = 0
        while True:
            inner = (*path, index) if len(path) < 4 else (*path, None)
            pos = self.ws(self.value(pos, inner))
            index += 1
            if self.raw.startswith("]", pos):
                return pos + 1
            if not self.raw.startswith(",", pos):
                raise _Bad
            pos += 1


def _decode(raw: str, start: int, end: int) -> tuple[str, list[int]]:
    """The text of the JSON string token ``raw[start:end]`` and, per character,
    its raw offset (an escape maps to its backslash)."""
    chars: list[str] = []
    offsets: list[int] = []
    i, stop = start + 1, end - 1
    while i < stop:
        char = raw[i]
        if char != "\\":
            chars.append(char)
            offsets.append(i)
            i += 1
            continue
        kind = raw[i + 1]
        if kind == "u":
            code = int(raw[i + 2:i + 6], 16)
            width = 6
            if 0xD800 <= code < 0xDC00 and raw.startswith("\\u", i + 6):
                low = int(raw[i + 8:i + 12], 16)
                if 0xDC00 <= low < 0xE000:
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    width = 12
            chars.append(chr(code))
            offsets.append(i)
            i += width
        else:
            chars.append(_ESCAPES.get(kind, kind))
            offsets.append(i)
            i += 2
    return "".join(chars), offsets


class NotebookPositions:
    """``locate(cell, line, column)`` -> (line, column) in the raw file, 1-based;
    None when the cell or line is not found."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self._newlines = [m.start() for m in re.finditer("\n", raw)]
        scanner = _Scanner(raw)
        try:
            scanner.value(0, ())
        except (_Bad, RecursionError, ValueError, IndexError):
            scanner.sources = {}
        self._spans = scanner.sources
        self._cells: dict[int, tuple[list[tuple[int, int]], list[int], int]] = {}

    def _cell(self, cell: int):
        if cell not in self._cells:
            spans = self._spans.get(cell)
            if not spans:
                return None
            text, offsets = "", []
            for start, end in spans:
                part, where = _decode(self.raw, start, end)
                text += part
                offsets += where
            starts, total = [], 0
            for line in text.splitlines(keepends=True) or [""]:
                content = line.splitlines()[0] if line else ""
                starts.append((total, total + len(content)))  # start, end before the line break
                total += len(line)
            # one past the last character: the closing quote of the last string
            self._cells[cell] = (starts, offsets, spans[-1][1] - 1)
        return self._cells[cell]

    def _line_col(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_left(self._newlines, offset)
        line_start = self._newlines[index - 1] + 1 if index else 0
        return index + 1, offset - line_start + 1

    def locate(self, cell: int, line: int, column: int) -> tuple[int, int] | None:
        found = self._cell(cell)
        if found is None:
            return None
        starts, offsets, end = found
        if not 1 <= line <= len(starts):
            return None
        line_start, line_end = starts[line - 1]
        index = min(line_start + max(column, 1) - 1, line_end)
        return self._line_col(offsets[index] if index < len(offsets) else end)


class Locator:
    """Raw-file positions of a report's notebook findings, one parse per file.
    ``texts`` holds inputs that are not on disk (stdin), by display path."""

    def __init__(self, texts: dict[str, str] | None = None) -> None:
        self.texts = texts or {}
        self._files: dict[str, NotebookPositions | None] = {}

    def _positions(self, path: str) -> NotebookPositions | None:
        if path not in self._files:
            raw = self.texts.get(path)
            if raw is None:
                try:
                    with open(path, "rb") as handle:
                        raw = handle.read().decode("utf-8-sig")
                except (OSError, UnicodeDecodeError):
                    raw = None
            self._files[path] = NotebookPositions(raw) if raw is not None else None
        return self._files[path]

    def region(self, path: str, cell: int | None, line: int, column: int, end_line: int,
               end_column: int) -> tuple[int, int, int, int] | None:
        """(line, column, end line, end column) in the file; the given values for a
        plain file; None for a notebook position that cannot be found."""
        if cell is None:
            return line, column, max(end_line, line), max(end_column, 1)
        positions = self._positions(path)
        if positions is None:
            return None
        start = positions.locate(cell, line, column)
        if start is None:
            return None
        end = positions.locate(cell, max(end_line, line), end_column) or start
        if end < start:
            end = start
        return start[0], start[1], end[0], max(end[1], 1)
