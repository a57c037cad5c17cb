"""Fenced code blocks of README.md, by section, for the tests that run them."""

from __future__ import annotations

import os
import re

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
NOT_RUN = "# not run by the tests"  # the visible marker on a block the tests leave out


def sections() -> dict[str, str]:
    """Heading text (any level) -> the text up to the next heading of any level."""
    text = open(README, encoding="utf-8").read()
    out: dict[str, str] = {}
    current, lines, fence = None, [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            fence = not fence
        if not fence and re.match(r"#{1,6} ", line):
            if current is not None:
                out[current] = "".join(lines)
            current, lines = line.lstrip("#").strip(), []
            continue
        lines.append(line)
    if current is not None:
        out[current] = "".join(lines)
    return out


def subsections(parent: str) -> list[str]:
    """The headings under the ``## parent`` heading, in order (the parent first)."""
    text = open(README, encoding="utf-8").read()
    out, inside, fence = [], False, False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        if fence or not re.match(r"#{1,6} ", line):
            continue
        level, title = len(line) - len(line.lstrip("#")), line.lstrip("#").strip()
        if level <= 2:
            inside = title == parent
        if inside:
            out.append(title)
    return out


def blocks(section: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced block in one section."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```", sections()[section], re.S | re.M)]


def block(section: str, first_line: str) -> str:
    """The one block of ``section`` whose first line is ``first_line``."""
    found = [body for _, body in blocks(section) if body.splitlines()[0].strip() == first_line]
    assert len(found) == 1, f"README section {section!r}: {len(found)} blocks start with {first_line!r}"
    return found[0]
