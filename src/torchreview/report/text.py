"""Text for people: ruff-like code frames and a one-line summary by severity."""

from __future__ import annotations

from torchreview.findings import Finding
from torchreview.fixes import apply_edits
from torchreview.report.model import Report

_COLORS = {"critical": "\033[1;35m", "high": "\033[1;31m", "medium": "\033[33m", "low": "\033[36m"}
BOLD, DIM, RESET = "\033[1m", "\033[2m", "\033[0m"


class _Paint:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, style: str) -> str:
        return f"{style}{text}{RESET}" if self.on else text


def _frame(f: Finding, lines_of: dict, paint: _Paint) -> list[str]:
    """A few lines of context with carets under the flagged range."""
    text_lines = lines_of.get((f.path, f.cell))
    if text_lines is None or not (1 <= f.line <= len(text_lines)):
        if f.source_line:
            text_lines = {f.line: f.source_line}
        else:
            return []
        numbered = [(f.line, f.source_line)]
    else:
        lo, hi = max(1, f.line - 1), min(len(text_lines), f.line + 1)
        numbered = [(n, text_lines[n - 1]) for n in range(lo, hi + 1)]
    width = len(str(numbered[-1][0]))
    out = [f"{' ' * width} |"]
    for number, text in numbered:
        out.append(f"{str(number).rjust(width)} | {text.rstrip()}")
        if number == f.line:
            start = f.column - 1
            end = f.end_column - 1 if f.end_line == f.line and f.end_column > f.column else len(text.rstrip())
            end = max(end, start + 1)
            carets = " " * start + "^" * (end - start)
            out.append(f"{' ' * width} | {paint(carets, _COLORS[f.severity.label])} {f.code}")
    out.append(f"{' ' * width} |")
    return out


def _load_lines(report: Report) -> dict:
    """Source lines for code frames, per (path, cell); read lazily, best effort
    (inputs not on disk, such as standard input, from ``report.texts``)."""
    from torchreview.engine.source import LoadError, load_notebook, load_python, load_source

    wanted = {f.path for f in report.findings if f.scope != "artifact"}
    out: dict = {}
    for path in wanted:
        try:
            if path in report.texts:
                data = report.texts[path].encode("utf-8")
                loader = load_notebook if path.endswith(".ipynb") else load_python
                source = loader(path, path, data)
            else:
                source = load_source(path, path)
        except (LoadError, OSError):
            continue
        if source.line_map is None:
            out[(path, None)] = source.lines
        else:
            cells: dict[int, list[str]] = {}
            shown = source.display_lines or source.lines
            for i, (cell, _) in enumerate(source.line_map):
                cells.setdefault(cell, []).append(shown[i] if i < len(shown) else "")
            for cell, lines in cells.items():
                out[(path, cell)] = lines
    return out


def _fixable(f: Finding, unsafe: bool) -> bool:
    """The finding's fix would be applied by ``--fix`` (with ``--unsafe-fixes``: unsafe ones too)."""
    return f.fix is not None and bool(f.fix.edits) and (
        f.fix.applicability == "safe" or (unsafe and f.fix.applicability == "unsafe"))


def _fix_preview(f: Finding, lines_of: dict, paint: _Paint) -> list[str]:
    """``--show-fixes``: the lines the fix changes, as removed/added lines."""
    import difflib

    text_lines = lines_of.get((f.path, f.cell))
    if f.fix is None or not f.fix.edits or text_lines is None:
        return []
    old = "".join(line.rstrip("\r\n") + "\n" for line in text_lines)
    try:
        new = apply_edits(old, list(f.fix.edits))
    except (IndexError, ValueError):
        return []
    label = "Safe fix" if f.fix.applicability == "safe" else "Unsafe fix"
    out = [f"  {label}" + (f": {f.fix.title}" if f.fix.title else "")]
    width = len(str(len(text_lines) + 1))
    matcher = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            continue
        out += [f"  {str(n + 1).rjust(width)} {paint('- ' + line, _COLORS['high'])}"
                for n, line in enumerate(old.splitlines()[a0:a1], start=a0)]
        out += [f"  {' ' * width} {paint('+ ' + line, _COLORS['low'])}"
                for line in new.splitlines()[b0:b1]]
    return out


def _where(f: Finding) -> str:
    return f"{f.path}:" + (f"cell {f.cell}:" if f.cell else "") + f"{f.line}:{f.column}:"


def statistics_rows(report: Report, unsafe: bool = False) -> list[dict]:
    """Counts per rule code, most frequent first, as ``--statistics`` prints them."""
    rows: dict[str, dict] = {}
    for f in report.findings:
        row = rows.setdefault(f.code, {"code": f.code, "name": f.name, "count": 0, "fixable": False})
        row["count"] += 1
        row["fixable"] = row["fixable"] or _fixable(f, unsafe)
    return sorted(rows.values(), key=lambda r: (-r["count"], r["code"]))


def _statistics(report: Report, unsafe: bool) -> list[str]:
    rows = statistics_rows(report, unsafe)
    count_width = max((len(str(r["count"])) for r in rows), default=1)
    code_width = max((len(r["code"]) for r in rows), default=5)
    return [f"{str(r['count']).rjust(count_width)}\t{r['code'].ljust(code_width)}\t"
            f"{'[*]' if r['fixable'] else '[ ]'} {r['name']}" for r in rows]


def _summary(report: Report, unsafe: bool) -> list[str]:
    files = f"{report.files} file{'s' if report.files != 1 else ''}"
    if report.findings:
        parts = ", ".join(f"{n} {s}" for s, n in report.by_severity().items())
        parts += "; " + ", ".join(f"{n} {k}" for k, n in report.by_kind().items())
        summary = f"Found {len(report.findings)} finding{'s' if len(report.findings) != 1 else ''} ({parts}) in {files}"
    else:
        summary = f"No findings in {files}"
    if report.errors:
        summary += f"; {len(report.errors)} could not be reviewed"
    out = [summary + "."]
    fixable = sum(_fixable(f, unsafe) for f in report.findings)
    hidden = 0 if unsafe else sum(_fixable(f, True) for f in report.findings) - fixable
    if fixable:
        more = f" ({hidden} more with `--fix --unsafe-fixes`)" if hidden else ""
        out.append(f"[*] {fixable} fixable with `--fix`{more}.")
    elif hidden:
        out.append(f"{hidden} fixable with `--fix --unsafe-fixes`.")
    return out


def render_text(report: Report, *, color: bool = False, statistics: bool = False, quiet: bool = False,
                concise: bool = False, show_fixes: bool = False, unsafe: bool = False) -> str:
    """``full`` (code frames) or ``concise`` (one line per finding) text.

    As in ruff: ``statistics`` prints counts per rule instead of the findings;
    ``quiet`` prints the findings (or counts) and errors only, no notes and no
    summary, so a clean run prints nothing; ``show_fixes`` shows each fix's edit.
    """
    paint = _Paint(color)
    out: list[str] = []
    if statistics:
        out.extend(_statistics(report, unsafe))
    elif concise:
        lines_of = _load_lines(report) if show_fixes else {}
        for f in report.findings:
            mark = "[*] " if _fixable(f, unsafe) else ""
            out.append(f"{paint(_where(f), BOLD)} {paint(f.code, _COLORS[f.severity.label])} {mark}{f.message}")
            if show_fixes:
                out.extend(_fix_preview(f, lines_of, paint))
    else:
        lines_of = _load_lines(report)
        for f in report.findings:
            head = (f"{paint(_where(f), BOLD)} {paint(f.code, _COLORS[f.severity.label])} "
                    f"[{f.label()}] {f.message}")
            out.append(head)
            out.extend(_frame(f, lines_of, paint))
            if show_fixes:
                out.extend(_fix_preview(f, lines_of, paint))
            elif f.fix is not None and f.fix.applicability != "display":
                hint = "--fix" if _fixable(f, unsafe) else "--fix --unsafe-fixes"
                out.append(f"  = fix available with {hint}" + (f": {f.fix.title}" if f.fix.title else ""))
            out.append("")
    for e in report.errors:
        out.append(f"{paint('error', _COLORS['high'])}: {e.path}: {e.message}")
    if not quiet:
        if statistics and out:
            out.append("")
        out.extend(report.notes)
        summary = _summary(report, unsafe)
        out.append(paint(summary[0], BOLD))
        out.extend(summary[1:])
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n" if out else ""
