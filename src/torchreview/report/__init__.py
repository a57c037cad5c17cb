"""Reports: one ``Report`` value, several renderers (text, json, sarif, github, markdown)."""

from __future__ import annotations

from torchreview.report.model import FORMATS, Report  # noqa: F401 (the package's face)


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
