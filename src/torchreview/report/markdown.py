"""A review comment in Markdown, grouped by severity (for PR bots)."""

from __future__ import annotations

from torchreview.findings import Severity
from torchreview.report.model import Report


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    out = ["## torchreview", ""]
    if not report.findings:
        out.append(f"No findings in {report.files} file{'s' if report.files != 1 else ''}.")
    else:
        counts = ", ".join(f"{n} {s}" for s, n in report.by_severity().items())
        counts += "; " + ", ".join(f"{n} {k}" for k, n in report.by_kind().items())
        out.append(f"**{len(report.findings)} finding{'s' if len(report.findings) != 1 else ''}** "
                   f"({counts}) in {report.files} file{'s' if report.files != 1 else ''}.")
    for severity in sorted(Severity, reverse=True):
        group = [f for f in report.findings if f.severity == severity]
        if not group:
            continue
        out += ["", f"### {severity.label.capitalize()} ({len(group)})", "",
                "| Rule | Kind | Location | Message |", "| --- | --- | --- | --- |"]
        for f in group:
            where = f"{f.path}:{f.line}" + (f" (cell {f.cell})" if f.cell else "")
            kind = f.kind if f.confidence == "high" else f"{f.kind} ({f.confidence} confidence)"
            out.append(f"| `{f.code}` {f.name} | {kind} | `{_cell(where)}` | {_cell(f.message)} |")
    if report.notes:
        out += [""] + [f"_{_cell(note)}_" for note in report.notes]
    if report.errors:
        out += ["", f"### Not reviewed ({len(report.errors)})", ""]
        for e in report.errors:
            out.append(f"- `{_cell(e.path)}`: {_cell(e.message)}")
    return "\n".join(out) + "\n"
