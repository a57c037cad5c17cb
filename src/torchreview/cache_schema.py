"""What a valid cache entry looks like, checked before any of it is used.

The cache folder lives in the reviewed tree, so an entry may be truncated,
garbage, hand-edited or crafted. An entry is used only if every field has the
type and shape torchreview writes; anything else is a miss (the file is
reviewed again and the entry rewritten). Nothing here raises on bad data.
"""

from __future__ import annotations

import re

from torchreview.cache_facts import FactsError, facts_from_json
from torchreview.findings import SEVERITY_NAMES

# The deepest nesting torchreview itself writes is 6 (entry, findings, finding,
# fix, edits, edit; entry, facts, downloads, download, anchor is 5). Anything deeper is not ours.
MAX_DEPTH = 8
# A real entry is a few kilobytes; a file with thousands of findings stays far below this.
MAX_BYTES = 32 * 1024 * 1024

_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(rb"[\[\]{}]+")
FIX_KINDS = ("safe", "unsafe", "display")


def too_deep(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text nests deeper than ``limit`` (checked before parsing,
    so a crafted entry cannot make the decoder recurse)."""
    depth = 0
    for run in _BRACKETS.finditer(_STRINGS.sub(b'""', data)):
        for byte in run.group():
            depth += 1 if byte in b"[{" else -1
            if depth > limit:
                return True
    return False


def _int(value, low: int = 0) -> bool:
    return type(value) is int and value >= low


def _str(value) -> bool:
    return type(value) is str


def _strs(value) -> bool:
    return type(value) is list and all(type(v) is str for v in value)


def _has(d, keys) -> bool:
    return type(d) is dict and all(k in d for k in keys)


_EDIT = ("line", "column", "end_line", "end_column", "content")


def _edit_ok(e) -> bool:
    return (_has(e, _EDIT) and len(e) == len(_EDIT) and all(_int(e[k]) for k in _EDIT[:4])
            and _str(e["content"]))


def _fix_ok(fx) -> bool:
    if fx is None:
        return True
    return (_has(fx, ("applicability", "edits")) and fx["applicability"] in FIX_KINDS
            and _str(fx.get("title", "")) and type(fx["edits"]) is list and all(_edit_ok(e) for e in fx["edits"]))


_FINDING_STR = ("code", "name", "category", "path", "message", "detection", "scope", "source_line", "context")
_FINDING_INT = ("line", "column", "end_line", "end_column")


_RELATED = ("code", "path", "line", "column", "end_line", "end_column", "message")


def _related_ok(r) -> bool:
    return (_has(r, _RELATED) and set(r) <= set(_RELATED) | {"cell"} and all(_str(r[k]) for k in _RELATED[:2])
            and all(_int(r[k]) for k in _RELATED[2:6]) and _str(r["message"])
            and (r.get("cell") is None or _int(r["cell"])))


def _optional_ok(d) -> bool:
    """Fields newer findings carry (kind, confidence, merged places)."""
    return (all(_str(d[k]) for k in ("kind", "confidence", "subject") if k in d)
            and ("related" not in d or d["related"] is None
                 or (type(d["related"]) is list and all(_related_ok(r) for r in d["related"]))))


def finding_ok(d, path: str) -> bool:
    return (_optional_ok(d) and _has(d, _FINDING_STR + _FINDING_INT + ("severity", "review", "cell"))
            and all(_str(d[k]) for k in _FINDING_STR) and all(_int(d[k]) for k in _FINDING_INT)
            and d["severity"] in SEVERITY_NAMES and _strs(d["review"])
            and (d["cell"] is None or _int(d["cell"])) and _fix_ok(d.get("fix"))
            and d["path"] == path)


def error_ok(d, path: str) -> bool:
    return _has(d, ("path", "message")) and len(d) == 2 and d["path"] == path and _str(d["message"])


def facts_ok(d, path: str) -> bool:
    """Facts of this entry's file, every field of its declared type (cache_facts.py)."""
    if d is None:
        return True
    try:
        return facts_from_json(d).path == path
    except (FactsError, TypeError, ValueError, RecursionError):
        return False


def entry_ok(doc, schema: int) -> bool:
    """Whether a decoded entry is exactly what torchreview writes."""
    if not _has(doc, ("schema", "findings", "errors", "facts", "reviewed", "path")):
        return False
    path = doc["path"]
    if doc["schema"] != schema or not _str(path) or type(doc["reviewed"]) is not bool:
        return False
    if type(doc["findings"]) is not list or type(doc["errors"]) is not list:
        return False
    return (all(finding_ok(f, path) for f in doc["findings"]) and all(error_ok(e, path) for e in doc["errors"])
            and facts_ok(doc["facts"], path))
