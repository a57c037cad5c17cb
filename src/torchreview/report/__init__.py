"""Reports: one ``Report`` value, several renderers (text, json, sarif, github, markdown)."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchreview.findings import Finding, ReviewError, Severity

# ``full`` is text with code frames (``text`` is its former name), ``concise`` one line per finding.
FORMATS = ("concise", "full", "text", "json", "sarif", "github", "markdown")


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    errors: list[ReviewError] = field(default_factory=list)
    files: int = 0
    seconds: float = 0.0
    # Extra lines for the text summary (fixed counts, stale baseline entries...).
    notes: list[str] = field(default_factory=list)
    # Raw text of inputs that are not files on disk (stdin), by display path: the
    # SARIF/GitHub renderers read notebooks from it to place findings in the file.
    texts: dict[str, str] = field(default_factory=dict)

    def by_severity(self) -> dict[str, int]:
        counts = {s.label: 0 for s in sorted(Severity, reverse=True)}
        for f in self.findings:
            counts[f.severity.label] += 1
        return {k: v for k, v in counts.items() if v}

    def by_kind(self) -> dict[str, int]:
        from torchreview.findings import KINDS

        counts = {k: sum(f.kind == k for f in self.findings) for k in KINDS}
        return {k: v for k, v in counts.items() if v}


def render(report: Report, fmt: str, *, color: bool = False, statistics: bool = False,
           quiet: bool = False, show_fixes: bool = False, unsafe: bool = False) -> str:
    """The report in ``fmt``. ``statistics`` (counts per rule), ``quiet`` (no
    summary), ``show_fixes`` (each fix's edit) and ``unsafe`` (unsafe fixes count
    as fixable) shape the text formats; JSON with ``statistics`` is the list of
    counts, as in ruff."""
    if fmt == "json" and statistics:
        import json

        from torchreview.report.text import statistics_rows

        return json.dumps(statistics_rows(report, unsafe), indent=2) + "\n"
    if fmt == "json":
        from torchreview.report.json_report import render_json

        return render_json(report)
    if fmt == "sarif":
        from torchreview.report.sarif import render_sarif

        return render_sarif(report)
    if fmt == "github":
        from torchreview.report.github import render_github

        return render_github(report)
    if fmt == "markdown":
        from torchreview.report.markdown import render_markdown

        return render_markdown(report)
    from torchreview.report.text import render_text

    return render_text(report, color=color, statistics=statistics, quiet=quiet,
                       concise=fmt == "concise", show_fixes=show_fixes, unsafe=unsafe)
