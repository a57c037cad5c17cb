"""Baselines: record today's findings, hide them tomorrow, show only what is new.

A fingerprint ignores line numbers: it hashes the rule, the file, the
whitespace-normalised text of the flagged line and the enclosing function, so
a finding stays recognised when unrelated lines are inserted above it.
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


def write_baseline(path: str, findings: list[Finding]) -> int:
    entries = [{"fingerprint": fingerprint(f), "code": f.code, "path": f.path, "line": f.line,
                "message": f.message} for f in findings]
    doc = {"torchreview_baseline": FORMAT_VERSION, "version": __version__, "findings": entries}
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(doc, handle, indent=2)
            handle.write("\n")
    except OSError as exc:
        raise UsageError(f"cannot write baseline {path}: {exc.strerror or exc}") from None
    return len(entries)


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
    known = read_baseline(path)
    shown, hidden = [], 0
    for f in findings:
        fp = fingerprint(f)
        if known[fp] > 0:
            known[fp] -= 1
            hidden += 1
        else:
            shown.append(f)
    return shown, hidden, sum(known.values())
