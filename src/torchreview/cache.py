"""On-disk cache of per-file results, keyed by content hash (like ruff's).

Entries are JSON, never pickle: a repository could ship a crafted cache file,
and reading it must not be able to run code. A missing, corrupted or
half-written entry is simply a miss; writes are atomic, so concurrent runs
never see a torn file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache

from torchreview import __version__
from torchreview.engine.facts import Anchor, FileFacts
from torchreview.findings import Edit, Finding, Fix, ReviewError, Severity

CACHE_DIR_NAME = ".torchreview_cache"
SCHEMA = 1


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Changes whenever torchreview's own code changes (not only its version)."""
    root = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256(__version__.encode())
    for folder, _dirs, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith((".py", ".json")):
                st = os.stat(os.path.join(folder, name))
                digest.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


def settings_key(settings) -> str:
    parts = [code_fingerprint(), str(SCHEMA), ",".join(settings.rule_codes), repr(settings.target_torch)]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def entry_key(data: bytes, display: str, settings_digest: str) -> str:
    digest = hashlib.sha256(data)
    digest.update(b"\0" + display.encode("utf-8", "surrogatepass") + b"\0" + settings_digest.encode())
    return digest.hexdigest()


def ensure_dir(root: str) -> str | None:
    folder = os.path.join(root, CACHE_DIR_NAME)
    try:
        os.makedirs(folder, exist_ok=True)
        ignore = os.path.join(folder, ".gitignore")
        if not os.path.exists(ignore):
            with open(ignore, "w", encoding="utf-8") as handle:
                handle.write("# Created by torchreview: the whole folder is a cache.\n*\n")
    except OSError:
        return None
    return folder


def _path(folder: str, key: str) -> str:
    return os.path.join(folder, __version__, key[:2], key + ".json")


def _finding_to(f: Finding) -> dict:
    d = f.to_json()
    d.update(scope=f.scope, source_line=f.source_line, context=f.context)
    return d


def _finding_from(d: dict) -> Finding:
    fix = None
    if d.get("fix"):
        fx = d["fix"]
        fix = Fix(fx["applicability"], tuple(Edit(**e) for e in fx["edits"]), fx.get("title", ""))
    return Finding(
        code=d["code"], name=d["name"], severity=Severity.parse(d["severity"]), category=d["category"],
        review=tuple(d["review"]), path=d["path"], line=d["line"], column=d["column"],
        end_line=d["end_line"], end_column=d["end_column"], message=d["message"],
        detection=d["detection"], cell=d["cell"], fix=fix, scope=d["scope"],
        source_line=d["source_line"], context=d["context"],
    )


def _facts_to(f: FileFacts | None) -> dict | None:
    if f is None:
        return None
    return {"path": f.path, "is_notebook": f.is_notebook, "has_torch": f.has_torch,
            "flags": sorted(f.flags), "anchors": {k: list(vars(a).values()) for k, a in f.anchors.items()},
            "counts": f.counts, "module_classes": list(f.module_classes),
            "extra": {k: v for k, v in vars(f).items()
                      if k not in ("path", "is_notebook", "has_torch", "flags", "anchors", "counts",
                                   "module_classes") and _jsonable(v)}}


def _jsonable(value) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


def _facts_from(d: dict | None) -> FileFacts | None:
    if d is None:
        return None
    facts = FileFacts(path=d["path"], is_notebook=d["is_notebook"], has_torch=d["has_torch"],
                      flags=set(d["flags"]), anchors={k: Anchor(*v) for k, v in d["anchors"].items()},
                      counts=dict(d["counts"]), module_classes=tuple(d["module_classes"]))
    for key, value in d.get("extra", {}).items():
        if hasattr(facts, key):
            setattr(facts, key, type(getattr(facts, key))(value) if isinstance(getattr(facts, key), (set, tuple))
                    else value)
    return facts


def load(folder: str, key: str):
    """A cached FileResult, or None on any miss or damage."""
    from torchreview.engine.runner import FileResult

    try:
        with open(_path(folder, key), encoding="utf-8") as handle:
            doc = json.load(handle)
        if doc.get("schema") != SCHEMA:
            return None
        return FileResult(
            findings=[_finding_from(x) for x in doc["findings"]],
            errors=[ReviewError(**e) for e in doc["errors"]],
            facts=_facts_from(doc["facts"]),
            reviewed=bool(doc["reviewed"]),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def store(folder: str, key: str, result) -> None:
    path = _path(folder, key)
    doc = {"schema": SCHEMA, "findings": [_finding_to(f) for f in result.findings],
           "errors": [e.to_json() for e in result.errors], "facts": _facts_to(result.facts),
           "reviewed": result.reviewed}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(doc, handle, separators=(",", ":"))
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        try:
            os.unlink(tmp)  # type: ignore[possibly-undefined]
        except (OSError, UnboundLocalError, NameError):
            pass
