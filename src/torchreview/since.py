"""`--since REF`: keep only findings on lines changed since a git ref (PR review).

File findings count when their line was added or changed (untracked files are
all new). Project findings count when their anchor line changed, or when the
finding did not exist at REF: project facts at REF are computed from
``git cat-file`` blobs, without checking anything out.
"""

from __future__ import annotations

import os
import re
import subprocess

from torchreview.errors import UsageError
from torchreview.engine.discovery import SOURCE_SUFFIXES
from torchreview.engine.merge import keep_places
from torchreview.engine.runner import Settings, _run_project_rules, review_source
from torchreview.engine.source import LoadError, load_notebook, load_python
from torchreview.report import Report

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def _git(root: str, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", root, *args], input=data, capture_output=True, timeout=120)
    except FileNotFoundError:
        raise UsageError("--since needs git, which is not installed") from None


def repo_root(start: str) -> str:
    folder = start if os.path.isdir(start) else os.path.dirname(os.path.abspath(start)) or "."
    proc = _git(folder, "rev-parse", "--show-toplevel")
    if proc.returncode != 0:
        raise UsageError(f"--since needs a git repository, and {start!r} is not in one")
    return proc.stdout.decode().strip()


def changed_lines(root: str, ref: str) -> tuple[dict[str, set[int]], set[str]]:
    """Repo-relative path -> changed line numbers; and the set of wholly new files."""
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise UsageError(f"--since: unknown git ref {ref!r}")
    proc = _git(root, "diff", "--unified=0", "--no-color", "--no-ext-diff", "--no-renames", ref, "--")
    if proc.returncode != 0:
        raise UsageError(f"--since: git diff failed: {proc.stderr.decode(errors='replace').strip()}")
    changed: dict[str, set[int]] = {}
    current: str | None = None
    for line in proc.stdout.decode("utf-8", errors="replace").splitlines():
        if line.startswith("+++ "):
            target = line[4:]
            current = None if target == "/dev/null" else target[2:] if target.startswith("b/") else target
            if current is not None:
                changed.setdefault(current, set())
        elif current is not None:
            match = _HUNK.match(line)
            if match:
                start, count = int(match.group(1)), int(match.group(2) or 1)
                changed[current].update(range(start, start + count))
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "-z")
    new_files = {p for p in untracked.stdout.decode("utf-8", errors="replace").split("\0") if p}
    return changed, new_files


def _facts_at(root: str, ref: str, settings: Settings, prefixes: list[str]):
    listing = _git(root, "ls-tree", "-r", "-z", "--name-only", ref)
    names = [n for n in listing.stdout.decode("utf-8", errors="replace").split("\0")
             if n.endswith(SOURCE_SUFFIXES) and any(n == p or n.startswith(p) or not p for p in prefixes)]
    if not names:
        return []
    batch = "".join(f"{ref}:{n}\n" for n in names).encode()
    out = _git(root, "cat-file", "--batch", data=batch).stdout
    facts, pos = [], 0
    for name in names:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        pos = header_end + 1
        if len(header) < 3 or header[1] != b"blob":
            continue
        size = int(header[2])
        data = out[pos:pos + size]
        pos += size + 1
        try:
            loader = load_notebook if name.endswith(".ipynb") else load_python
            source = loader(name, name, data)
        except LoadError:
            continue
        result = review_source(source, settings, rules=[])
        if result.facts is not None:
            facts.append(result.facts)
    return facts


def resolve_ref(root: str, ref: str) -> str:
    """``BASE...`` (three dots, as in ``git diff BASE...``) means the merge base of
    BASE and HEAD: a pull request's own changes, not what BASE gained since."""
    if not ref.endswith("...") or len(ref) == 3:
        return ref
    base = ref[:-3]
    proc = _git(root, "merge-base", base, "HEAD")
    if proc.returncode != 0:
        raise UsageError(f"--since: no merge base of {base!r} and HEAD (unknown ref, or a shallow clone: "
                         "fetch with enough history)")
    return proc.stdout.decode().strip()


def _on_changed_lines(f, changed: dict, new_files: set, repo_path) -> bool:
    """A file finding's place in a new file or on a changed line (a notebook cell: any change)."""
    rp = repo_path(f.path)
    if rp in new_files:
        return True
    lines = changed.get(rp)
    return lines is not None and (f.cell is not None or any(line in lines for line in range(f.line, f.end_line + 1)))


def filter_since(report: Report, paths: list[str], settings: Settings, ref: str) -> Report:
    root = repo_root(paths[0] if paths else ".")
    shown_ref, ref = ref, resolve_ref(root, ref)
    changed, new_files = changed_lines(root, ref)
    cwd = os.getcwd()

    def repo_path(path: str) -> str:
        return os.path.relpath(os.path.join(cwd, path), root).replace(os.sep, "/")

    prefixes = []
    for p in paths or ["."]:
        rel = repo_path(p)
        prefixes.append("" if rel == "." else rel.rstrip("/") + ("/" if os.path.isdir(p) else ""))
    before = None
    kept = []
    for f in report.findings:
        rp = repo_path(f.path)
        if f.scope == "project":
            if rp in new_files:
                kept.append(f)
                continue
            if f.cell is None and f.line in changed.get(rp, ()):
                kept.append(f)
                continue
            if before is None:
                old_facts = _facts_at(root, ref, settings, prefixes)
                old_findings = _run_project_rules(old_facts, settings)
                before = {(o.code, o.path) for o in old_findings}
            if (f.code, rp) not in before:
                kept.append(f)
            continue
        kept.append(f)  # a file finding: kept place by place below
    report.findings = keep_places(kept, lambda p: p.scope == "project" or _on_changed_lines(p, changed, new_files,
                                                                                             repo_path))
    report.notes.append(f"Reviewed the change since {shown_ref}: {len(changed) + len(new_files)} changed file(s).")
    return report
