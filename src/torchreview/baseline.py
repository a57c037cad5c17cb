"""Baselines: record today's findings, hide them tomorrow, show only what is new.

A fingerprint ignores line numbers: it hashes the rule, the file, the
whitespace-normalised text of the flagged line and the enclosing function, so
a finding stays recognised when unrelated lines are inserted above it.
Merged findings (one root cause in several places, engine/merge.py) are
recorded and matched place by place: a known problem that turns up in a new
place shows the new place.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter

from torchreview.version import __version__
from torchreview.errors import UsageError
from torchreview.findings import Finding

FORMAT_VERSION = 1


def fingerprint(f: Finding) -> str:
    text = re.sub(r"\s+", " ", f.source_line).strip()
    path = f.path.replace(os.sep, "/")
    key = "\x1f".join([f.code, path, str(f.cell or ""), f.context, text])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def _places(f: Finding) -> tuple[Finding, ...]:
    """Each place a finding stands for: itself, or the findings merged into it."""
    return f.parts or (f,)


def write_baseline(path: str, findings: list[Finding]) -> int:
    """Record every place of every finding (a merged finding's places each on
    their own, so a later run that merges differently still recognises them);
    returns the number of findings."""
    entries = [{"fingerprint": fingerprint(p), "code": p.code, "path": p.path, "line": p.line,
                "message": p.message} for f in findings for p in _places(f)]
    doc = {"torchreview_baseline": FORMAT_VERSION, "version": __version__, "findings": entries}
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(doc, handle, indent=2)
            handle.write("\n")
    except OSError as exc:
        raise UsageError(f"cannot write baseline {path}: {exc.strerror or exc}") from None
    return len(findings)


def read_baseline(path: str) -> Counter:
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except OSError as exc:
        raise UsageError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not a torchreview baseline (invalid JSON at line {exc.lineno})") from None
    if not isinstance(doc, dict) or doc.get("torchreview_baseline") != FORMAT_VERSION:
        raise UsageError(f"{path}: not a torchreview baseline (version {FORMAT_VERSION} expected)")
    return Counter(str(e.get("fingerprint")) for e in doc.get("findings", []) if isinstance(e, dict))


def apply_baseline(path: str, findings: list[Finding]) -> tuple[list[Finding], int, int]:
    """Hide baselined findings; return (shown, hidden count, stale entry count)."""
    from torchreview.engine.merge import keep_places

    known = read_baseline(path)

    def new(place: Finding) -> bool:
        fp = fingerprint(place)
        if known[fp] > 0:
            known[fp] -= 1
            return False
        return True

    shown, hidden = [], 0
    for f in findings:  # a known problem in new places shows the new places
        kept = keep_places([f], new)
        hidden += not kept
        shown.extend(kept)
    return shown, hidden, sum(known.values())
