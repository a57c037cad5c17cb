"""Text for people: ruff-like code frames and a one-line summary by severity."""

from __future__ import annotations

from collections import Counter

from torchreview.findings import Finding
from torchreview.report import Report

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
    """Source lines for code frames, per (path, cell); read lazily, best effort."""
    from torchreview.engine.source import LoadError, load_source

    wanted = {f.path for f in report.findings if f.scope != "artifact"}
    out: dict = {}
    for path in wanted:
        try:
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


def render_text(report: Report, *, color: bool = False, statistics: bool = False, quiet: bool = False) -> str:
    paint = _Paint(color)
    out: list[str] = []
    if not quiet:
        lines_of = _load_lines(report)
        for f in report.findings:
            where = f"{f.path}:" + (f"cell {f.cell}:" if f.cell else "") + f"{f.line}:{f.column}:"
            head = (f"{paint(where, BOLD)} {paint(f.code, _COLORS[f.severity.label])} "
                    f"[{f.label()}] {f.message}")
            out.append(head)
            out.extend(_frame(f, lines_of, paint))
            if f.fix is not None and f.fix.applicability != "display":
                hint = "--fix" if f.fix.applicability == "safe" else "--unsafe-fixes"
                out.append(f"  = fix available with {hint}" + (f": {f.fix.title}" if f.fix.title else ""))
            out.append("")
    for e in report.errors:
        out.append(f"{paint('error', _COLORS['high'])}: {e.path}: {e.message}")
    if statistics and report.findings:
        out.append("")
        counts = Counter((f.code, f.name, f.severity.label) for f in report.findings)
        for (code, name, severity), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            out.append(f"{n:6d}  {code}  [{severity}] {name}")
    out.extend(report.notes)
    files = f"{report.files} file{'s' if report.files != 1 else ''}"
    if report.findings:
        parts = ", ".join(f"{n} {s}" for s, n in report.by_severity().items())
        parts += "; " + ", ".join(f"{n} {k}" for k, n in report.by_kind().items())
        summary = f"Found {len(report.findings)} finding{'s' if len(report.findings) != 1 else ''} ({parts}) in {files}"
    else:
        summary = f"No findings in {files}"
    if report.errors:
        summary += f"; {len(report.errors)} could not be reviewed"
    out.append(paint(summary + ".", BOLD))
    return "\n".join(out) + "\n"
