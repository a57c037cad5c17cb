"""Writing the runtime report, with a small fallback renderer.

The project's renderers (``torchreview.report``) are used when present; if a
renderer module cannot be imported, a minimal text/JSON rendering keeps the
runtime review usable on its own.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TextIO

from torchreview.report import Report


def render_report(report: Report, fmt: str, *, color: bool = False) -> str:
    from torchreview.report import render

    try:
        return render(report, fmt, color=color)
    except Exception:  # renderer missing or being written: keep the report readable
        return _fallback(report, fmt)


def _fallback(report: Report, fmt: str) -> str:
    if fmt == "json":
        import torchreview

        data = {
            "version": torchreview.__version__,
            "findings": [f.to_json() for f in report.findings],
            "errors": [e.to_json() for e in report.errors],
            "summary": {"files": report.files, "findings": len(report.findings),
                        "by_severity": report.by_severity(), "seconds": round(report.seconds, 3)},
        }
        return json.dumps(data, indent=2) + "\n"
    lines = [f"{f.path}:{f.line}:{f.column}: {f.code} [{f.severity.label}] {f.message}"
             for f in report.findings]
    lines += [f"{e.path}: error: {e.message}" for e in report.errors]
    lines += report.notes
    count = len(report.findings)
    lines.append(f"Found {count} runtime finding{'s' if count != 1 else ''}."
                 if count else "No runtime findings.")
    return "\n".join(lines) + "\n"


def write_report(report: Report, fmt: str, output: str | None, *, color: bool = False,
                 stream: TextIO | None = None) -> None:
    text = render_report(report, fmt, color=color)
    if output:
        directory = os.path.dirname(os.path.abspath(output))
        os.makedirs(directory, exist_ok=True)
        tmp = f"{output}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, output)
        return
    out = stream or sys.stderr
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    out.write(text)
    out.flush()
