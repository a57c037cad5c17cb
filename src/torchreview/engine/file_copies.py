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
are compared on their code cells. Reading is lazy and memoised per merge; a file
that cannot be read (standard input, removed meanwhile) is nobody's copy.
"""

from __future__ import annotations

import re

from torchreview.engine.source import LoadError, load_source

MIN_JACCARD = 0.4
MIN_LINES = 20
MIN_LINE = 8

_SPACES = re.compile(r"\s+")


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
