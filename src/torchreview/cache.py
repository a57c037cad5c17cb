"""On-disk cache of per-file results, keyed by content hash (like ruff's).

Entries are JSON, never pickle: a repository could ship a crafted cache file,
and reading it must not be able to run code. A missing, corrupted,
half-written, wrong-typed or too deeply nested entry is simply a miss (see
cache_schema) and is rewritten; writes are atomic, so concurrent runs never
see a torn file.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from dataclasses import fields
from functools import lru_cache

from torchreview import cache_schema
from torchreview.cache_facts import facts_from_json, facts_to_json
from torchreview.version import __version__
from torchreview.engine.facts import FileFacts
from torchreview.engine.results import FileResult
from torchreview.findings import Edit, Finding, Fix, ReviewError, Severity

CACHE_DIR_NAME = ".torchreview_cache"
SCHEMA = 3  # 2: entries record their path and are validated on load; 3: typed facts (cache_facts.py)


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
    parts = [code_fingerprint(), str(SCHEMA), ",".join(settings.rule_codes), repr(settings.target_torch),
             str(getattr(settings, "max_source_size", "")),
             # advice the run hides is not examined further (engine/runner.py): a result
             # made with other advice shown is another result
             repr(getattr(settings, "advice_codes", None))]
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
    if f.subject:
        d["subject"] = f.subject
    return d


_OPTIONAL_FIELDS = ("kind", "confidence", "subject")


def _finding_from(d: dict) -> Finding:
    fix = None
    if d.get("fix"):
        fx = d["fix"]
        fix = Fix(fx["applicability"], tuple(Edit(**e) for e in fx["edits"]), fx.get("title", ""))
    known = {f.name for f in fields(Finding)}
    optional = {k: d[k] for k in _OPTIONAL_FIELDS if k in d and k in known}
    if d.get("related") and "related" in known:
        from torchreview.findings import Related

        optional["related"] = tuple(Related(**r) for r in d["related"])
    return Finding(
        code=d["code"], name=d["name"], severity=Severity.parse(d["severity"]), category=d["category"],
        review=tuple(d["review"]), path=d["path"], line=d["line"], column=d["column"],
        end_line=d["end_line"], end_column=d["end_column"], message=d["message"],
        detection=d["detection"], cell=d["cell"], fix=fix, scope=d["scope"],
        source_line=d["source_line"], context=d["context"], **optional,
    )


def _facts_to(f: FileFacts | None) -> dict | None:
    return None if f is None else facts_to_json(f)


def _facts_from(d: dict | None) -> FileFacts | None:
    return None if d is None else facts_from_json(d)


def _read_entry(path: str) -> bytes | None:
    """The entry's bytes if it is a regular file of sane size (a FIFO or a
    device planted in the cache folder must not block or flood the run)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > cache_schema.MAX_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(cache_schema.MAX_BYTES + 1)
    finally:
        os.close(fd)


def load(folder: str, key: str, display: str | None = None):
    """A cached FileResult, or None on any miss or damage.

    Every entry is validated (schema, types, nesting depth, same path) before
    use: an entry that does not validate is a miss, never an error, and the
    caller rewrites it."""
    try:
        data = _read_entry(_path(folder, key))
        if data is None or len(data) > cache_schema.MAX_BYTES or cache_schema.too_deep(data):
            return None
        doc = json.loads(data.decode("utf-8"))
        if not cache_schema.entry_ok(doc, SCHEMA):
            return None
        if display is not None and doc["path"] != display:
            return None
        return FileResult(
            findings=[_finding_from(x) for x in doc["findings"]],
            errors=[ReviewError(**e) for e in doc["errors"]],
            facts=_facts_from(doc["facts"]),
            reviewed=doc["reviewed"],
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError):
        return None
    except Exception:  # a cache can only cost time: any other surprise is a miss too
        return None


def store(folder: str, key: str, result, display: str) -> None:
    path = _path(folder, key)
    doc = {"schema": SCHEMA, "path": display, "findings": [_finding_to(f) for f in result.findings],
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
