"""GitHub Actions workflow commands: one annotation per finding and error."""

from __future__ import annotations

from torchreview.report.model import Report

_LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: Report) -> str:
    from torchreview.report.notebook_positions import Locator

    locator = Locator(report.texts)
    lines = []
    for f in report.findings:
        level = _LEVEL[f.severity.label]
        # a notebook finding points at the line of the .ipynb file holding that cell line
        where = f" (cell {f.cell}, line {f.line})" if f.cell else ""
        region = locator.region(f.path, f.cell, f.line, f.column, f.end_line, f.end_column)
        at = (f"line={region[0]},col={region[1]},endLine={region[2]},endColumn={region[3]},"
              if region else "")
        props = (f"file={_escape_prop(f.path)},{at}"
                 f"title={_escape_prop(f'{f.code} {f.name}')}")
        lines.append(f"::{level} {props}::{_escape_data(f'{f.code} [{f.label()}] {f.message}{where}')}")
    for e in report.errors:
        lines.append(f"::error file={_escape_prop(e.path)},title=torchreview::{_escape_data(e.message)}")
    return "\n".join(lines) + ("\n" if lines else "")
