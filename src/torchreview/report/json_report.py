"""The stable JSON report (see SPEC.md)."""

from __future__ import annotations

import json

from torchreview.version import __version__
from torchreview.report.model import Report


def report_dict(report: Report) -> dict:
    data = {
        "version": __version__,
        "findings": [f.to_json() for f in report.findings],
        "errors": [e.to_json() for e in report.errors],
        "summary": {
            "files": report.files,
            "findings": len(report.findings),
            "by_severity": report.by_severity(),
            "by_kind": report.by_kind(),
            "seconds": round(report.seconds, 3),
        },
    }
    runtime = getattr(report, "runtime", None)  # a runtime review's series (docs/runtime-report.md)
    if runtime is not None:
        data["runtime"] = runtime
    return data


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2) + "\n"
