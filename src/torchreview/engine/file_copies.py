"""Copies of one file: sibling scripts that are, line for line, mostly the same.

Research code often keeps one training script per dataset or per method
(``CIFAR/baseline.py``, ``SVHN/baseline.py``, ``CIFAR/oe_scratch.py``): the
files were copied from one another and then edited in a few places, so one
mistake in the original is in every copy. A reviewer writes that comment once
and names the copies; the merge step (engine/merge.py) asks this module
whether two files are such copies.

Two files are copies when the sets of their code lines (comments and blank
lines dropped, spacing folded, lines shorter than ``MIN_LINE`` characters left
out: brackets, ``else:``, ``return x``) overlap by at least ``MIN_JACCARD``
(shared lines over all distinct lines), and each has at least ``MIN_LINES`` such
lines. Measured on sibling training scripts of one project, copies share 48-83 %
of their lines and unrelated files of the same project at most 21 %. Notebooks
are compared on their code cells.

A function copied into another file (one ``train_step`` pasted into two
tutorial scripts that are otherwise different) is the same mistake too:
``same_function`` compares the innermost functions that hold two flagged lines,
the same way, with ``MIN_FUNCTION_JACCARD`` and at least ``MIN_FUNCTION_LINES``
code lines each (modules only: notebooks fold into modules elsewhere). Reading is lazy and memoised per merge; a file
that cannot be read (standard input, removed meanwhile) is nobody's copy.
"""

from __future__ import annotations

import re

from torchreview.engine.source import LoadError, load_source

MIN_JACCARD = 0.4
MIN_LINES = 20
MIN_LINE = 8
MIN_FUNCTION_JACCARD = 0.6
MIN_FUNCTION_LINES = 6

_SPACES = re.compile(r"\s+")


def _code_line(raw: str) -> str | None:
    line = raw.strip()
    if not line or line.startswith("#"):
        return None
    line = _SPACES.sub(" ", line)
    return line if len(line) >= MIN_LINE else None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


_DEF = re.compile(r"\s*(?:async\s+)?def\s")


def function_at(lines: list[str], line: int) -> frozenset[str] | None:
    """The distinct code lines of the innermost function holding 1-based ``line``,
    found from the indentation (no parse: the merge runs on cached findings too):
    the nearest ``def`` above that is indented less, down to the first code line
    indented no deeper than that ``def``. None when no function holds it."""
    if not 0 < line <= len(lines):
        return None
    target = _indent(lines[line - 1])
    start = None
    for i in range(line - 1, -1, -1):
        text = lines[i]
        if text.strip() and _DEF.match(text) and _indent(text) < target:
            start = i
            break
        if text.strip() and not text.lstrip().startswith(("#", ")", "]", "}")) and _indent(text) < target:
            target = _indent(text)  # an enclosing block: the def must be indented less still
    if start is None:
        return None
    depth = _indent(lines[start])
    body = []
    for text in lines[start:]:
        if body and text.strip() and not text.lstrip().startswith("#") and _indent(text) <= depth:
            break
        code = _code_line(text)
        if code:
            body.append(code)
    return frozenset(body)


def code_lines(path: str) -> frozenset[str] | None:
    """The distinct code lines of a file (see the module's docstring), None when unreadable."""
    try:
        text = load_source(path, path).text
    except (LoadError, OSError, ValueError):
        return None
    lines = set()
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = _SPACES.sub(" ", line)
        if len(line) >= MIN_LINE:
            lines.add(line)
    return frozenset(lines)


class CopyDetector:
    """Answers "is this file a copy of that one?" for one merge, reading each file once."""

    def __init__(self, read=code_lines) -> None:
        self._read = read
        self._lines: dict[str, frozenset[str] | None] = {}
        self._texts: dict[str, list[str] | None] = {}

    def _function_at(self, path: str, line: int) -> frozenset[str] | None:
        if path.endswith(".ipynb"):
            return None  # notebooks fold into modules elsewhere
        if path not in self._texts:
            try:
                self._texts[path] = load_source(path, path).text.splitlines()
            except (LoadError, OSError, ValueError):
                self._texts[path] = None
        lines = self._texts[path]
        return function_at(lines, line) if lines is not None else None

    def same_function(self, a: str, line_a: int, b: str, line_b: int) -> bool:
        """The innermost functions holding ``a:line_a`` and ``b:line_b`` (two files)
        are copies of each other (see the module's docstring)."""
        if a == b:
            return False
        fa, fb = self._function_at(a, line_a), self._function_at(b, line_b)
        if not fa or not fb or len(fa) < MIN_FUNCTION_LINES or len(fb) < MIN_FUNCTION_LINES:
            return False
        return len(fa & fb) >= MIN_FUNCTION_JACCARD * len(fa | fb)

    def _of(self, path: str) -> frozenset[str] | None:
        if path not in self._lines:
            self._lines[path] = self._read(path)
        return self._lines[path]

    def are_copies(self, a: str, b: str) -> bool:
        if a == b:
            return False
        la, lb = self._of(a), self._of(b)
        if not la or not lb or len(la) < MIN_LINES or len(lb) < MIN_LINES:
            return False
        return len(la & lb) >= MIN_JACCARD * len(la | lb)
