"""In-source suppression comments, as flake8/ruff users expect them."""

from __future__ import annotations

import re

# `# noqa`, `# noqa: <code>, <code>`, `# NOQA:<code>`
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
# `# torchreview: ignore[<code>,<code>]` (bare `ignore` means all)
_IGNORE = re.compile(r"#\s*torchreview:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
_SKIP_FILE = re.compile(r"#\s*torchreview:\s*skip-file\b", re.I)
SKIP_FILE_HEAD_LINES = 30


def _codes(text: str | None) -> set[str] | None:
    if text is None:
        return None
    return {c.strip().upper() for c in re.split(r"[\s,]+", text) if c.strip()}


def suppressed_codes(line: str) -> set[str] | None:
    """Codes suppressed on this line; an empty set means none, None means all."""
    if "#" not in line:
        return set()
    found: set[str] = set()
    for pattern in (_NOQA, _IGNORE):
        for match in pattern.finditer(line):
            codes = _codes(match.group("codes"))
            if codes is None or not codes:
                return None
            found |= codes
    return found


def is_suppressed(line: str, code: str) -> bool:
    codes = suppressed_codes(line)
    return codes is None or code in codes


def skips_file(text: str, is_notebook: bool = False) -> bool:
    if "torchreview" not in text:
        return False
    if is_notebook:
        return bool(_SKIP_FILE.search(text))
    head = "\n".join(text.splitlines()[:SKIP_FILE_HEAD_LINES])
    return bool(_SKIP_FILE.search(head))
