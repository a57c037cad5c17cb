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

import ast
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


def function_lines(path: str) -> list[tuple[int, int, frozenset[str]]] | None:
    """(first line, last line, distinct code lines) of every function of a module,
    None when it cannot be read or parsed (or is a notebook)."""
    if path.endswith(".ipynb"):
        return None
    try:
        text = load_source(path, path).text
        tree = ast.parse(text)
    except (LoadError, OSError, ValueError, SyntaxError, RecursionError, MemoryError):
        return None
    lines = text.splitlines()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno:
            body = (_code_line(raw) for raw in lines[node.lineno - 1: node.end_lineno])
            out.append((node.lineno, node.end_lineno, frozenset(b for b in body if b)))
    return out


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

    def __init__(self, read=code_lines, functions=function_lines) -> None:
        self._read = read
        self._functions = functions
        self._lines: dict[str, frozenset[str] | None] = {}
        self._defs: dict[str, list | None] = {}

    def _function_at(self, path: str, line: int) -> frozenset[str] | None:
        if path not in self._defs:
            self._defs[path] = self._functions(path)
        inside = [d for d in self._defs[path] or () if d[0] <= line <= d[1]]
        return min(inside, key=lambda d: d[1] - d[0])[2] if inside else None

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
