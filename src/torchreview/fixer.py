"""Applying fixes: non-overlapping edits per pass, re-parse, converge, write atomically.

A file is only written when every pass produced code that parses; the write
(``fix_write``) is atomic, goes through symbolic links, keeps hard links, skips
a file changed since it was read, and keeps the mode, encoding and line
endings. Notebooks change only the edited cells.
"""

from __future__ import annotations

import ast
import difflib
import io
import json
import tokenize
import warnings
from dataclasses import dataclass, field

from torchreview.engine.runner import FileResult, Settings, review_source, is_shown
from torchreview.engine.source import LoadError, SourceFile, load_notebook, load_python
from torchreview.fix_write import Snapshot, read_with_snapshot
from torchreview.fixes import apply_edits
from torchreview.findings import Edit, Finding, ReviewError

MAX_PASSES = 10


@dataclass
class FixOutcome:
    path: str
    original: bytes
    fixed: bytes
    applied: list[str] = field(default_factory=list)  # codes, one per applied fix
    error: ReviewError | None = None
    snapshot: Snapshot | None = None  # what was read; the write checks the file still matches it

    @property
    def changed(self) -> bool:
        return self.original != self.fixed


def _applicable(finding: Finding, unsafe: bool) -> bool:
    fix = finding.fix
    if fix is None or not fix.edits:
        return False
    return fix.applicability == "safe" or (unsafe and fix.applicability == "unsafe")


def _choose(findings: list[Finding], unsafe: bool) -> tuple[dict[int | None, list[Edit]], list[str]]:
    """Pick fixes whose edits do not overlap (per cell); the rest waits for the next pass."""
    taken: dict[int | None, list[tuple[tuple[int, int], tuple[int, int]]]] = {}
    chosen: dict[int | None, list[Edit]] = {}
    codes: list[str] = []
    for finding in sorted(findings, key=lambda f: (f.cell or 0, f.line, f.column)):
        if not _applicable(finding, unsafe):
            continue
        spans = [((e.line, e.column), (e.end_line, e.end_column)) for e in finding.fix.edits]
        busy = taken.setdefault(finding.cell, [])
        if any(not (b_end <= s_start or s_end <= b_start) or (s_start == b_start)
               for s_start, s_end in spans for b_start, b_end in busy):
            continue
        busy.extend(spans)
        chosen.setdefault(finding.cell, []).extend(finding.fix.edits)
        codes.append(finding.code)
    return chosen, codes


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _cells(raw: str) -> dict[int, str]:
    doc = json.loads(raw)
    out = {}
    for index, cell in enumerate(doc.get("cells", []), start=1):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            src = cell.get("source", "")
            out[index] = "".join(src) if isinstance(src, list) else str(src)
    return out


def fix_file(real: str, display: str, settings: Settings, *, unsafe: bool, refine=None) -> FixOutcome:
    """Fix one file. ``refine`` (engine/refine.py) adjusts its findings with the
    project's facts before edits are chosen (a fix unsafe for this project is dropped)."""
    original, snapshot = read_with_snapshot(real)  # a regular file only; remembered for the write
    return fix_bytes(original, real, display, settings, unsafe=unsafe, refine=refine, snapshot=snapshot)


def fix_bytes(original: bytes, real: str, display: str, settings: Settings, *, unsafe: bool,
              refine=None, snapshot: Snapshot | None = None) -> FixOutcome:
    """Fix the content ``original`` of ``real`` (standard input: nothing is read or
    written here); ``outcome.fixed`` is ``original`` when nothing could be fixed."""
    outcome = FixOutcome(display, original, original, snapshot=snapshot)
    is_nb = real.endswith(".ipynb")
    current = original
    for _ in range(MAX_PASSES):
        try:
            source = load_notebook(real, display, current) if is_nb else load_python(real, display, current)
        except LoadError as exc:
            outcome.error = ReviewError(display, str(exc))
            break
        result: FileResult = review_source(source, settings)
        if refine is not None:
            result.findings = refine(result.findings)
        # hidden advice is not fixed either: --fix changes what the report shows
        chosen, codes = _choose([f for f in result.findings if is_shown(f, settings)], unsafe)
        if not codes:
            break
        try:
            new = _apply(current, source, chosen, is_nb)
        except Exception as exc:  # a fix we cannot place: keep what we had
            outcome.error = ReviewError(display, f"fixes not applied: {type(exc).__name__}: {exc}")
            break
        if new is None:
            outcome.error = ReviewError(display, "a fix produced code that does not parse; "
                                                 f"not applied ({', '.join(sorted(set(codes)))})")
            break
        if new == current:
            break
        current = new
        outcome.applied.extend(codes)
    outcome.fixed = current
    return outcome


def _encoding_of(data: bytes) -> str:
    try:
        return tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        return "utf-8"


def _apply(current: bytes, source: SourceFile, chosen: dict[int | None, list[Edit]], is_nb: bool) -> bytes | None:
    if not is_nb:
        encoding = _encoding_of(current)
        text = current.decode(encoding)
        bom = text.startswith("\ufeff")
        body = text[1:] if bom else text
        new = apply_edits(body, chosen.get(None, []))
        if not _parses(new):
            return None
        return (("\ufeff" if bom else "") + new).encode(encoding)
    from torchreview.notebook_edit import replace_cell_source

    raw = current.decode("utf-8-sig")
    cells = _cells(raw)
    for cell, edits in sorted(chosen.items(), key=lambda kv: kv[0] or 0):
        if cell is None or cell not in cells:
            continue
        new_src = apply_edits(cells[cell], edits)
        raw = replace_cell_source(raw, cell, new_src)
    try:
        probe = load_notebook("x.ipynb", "x.ipynb", raw.encode("utf-8"))
    except LoadError:
        return None
    if not _parses(probe.text):
        return None
    return raw.encode("utf-8")


def unified_diff(outcome: FixOutcome) -> str:
    def lines(data: bytes) -> list[str]:
        return data.decode("utf-8", errors="replace").splitlines(keepends=True)

    diff = difflib.unified_diff(lines(outcome.original), lines(outcome.fixed),
                                fromfile=f"a/{outcome.path}", tofile=f"b/{outcome.path}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)
