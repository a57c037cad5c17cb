"""Writing the runtime report, with a small fallback renderer.

The project's renderers (``torchreview.report``) are used when present; if a
renderer module cannot be imported, a minimal text/JSON rendering keeps the
runtime review usable on its own.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import TextIO

from torchreview.report import Report


@dataclass
class RuntimeReport(Report):
    """A runtime review's report: the findings plus the run's series.

    ``runtime`` is the ``"runtime"`` object of the JSON report (see
    ``torchreview.runtime.series.Series.to_json`` and docs/runtime-report.md).
    """

    runtime: dict | None = None


def render_report(report: Report, fmt: str, *, color: bool = False) -> str:
    from torchreview.report import render

    try:
        return render(report, fmt, color=color)
    except Exception:  # renderer missing or being written: keep the report readable
        return _fallback(report, fmt)


def _fallback(report: Report, fmt: str) -> str:
    if fmt == "json":
        from torchreview.version import __version__

        data = {
            "version": __version__,
            "findings": [f.to_json() for f in report.findings],
            "errors": [e.to_json() for e in report.errors],
            "summary": {"files": report.files, "findings": len(report.findings),
                        "by_severity": report.by_severity(), "seconds": round(report.seconds, 3)},
        }
        if getattr(report, "runtime", None) is not None:
            data["runtime"] = report.runtime
        return json.dumps(data, indent=2) + "\n"
    lines = [f"{f.path}:{f.line}:{f.column}: {f.code} [{f.severity.label}] {f.message}"
             for f in report.findings]
    lines += [f"{e.path}: error: {e.message}" for e in report.errors]
    lines += report.notes
    count = len(report.findings)
    lines.append(f"Found {count} runtime finding{'s' if count != 1 else ''}."
                 if count else "No runtime findings.")
    return "\n".join(lines) + "\n"


def _write_file(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a reader never sees half a file)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_extras(report: "RuntimeReport", options, stream: TextIO | None = None) -> None:
    """The HTML page (``options.report``) and TensorBoard scalars
    (``options.tensorboard``) of a finished run.  A failure is one line on
    stderr; the run and its report go on."""
    err = stream or sys.stderr
    if options.report:
        try:
            from torchreview.runtime.html_report import render_html

            _write_file(options.report, render_html(report, title=options.script))
        except Exception as exc:
            _say(err, f"torchreview: cannot write the HTML report {options.report}: "
                      f"{_reason(exc)}")
    if options.tensorboard:
        try:
            from torchreview.runtime.tensorboard import write_scalars

            write_scalars(options.tensorboard, report.runtime or {})
        except Exception as exc:
            _say(err, f"torchreview: cannot write TensorBoard scalars to {options.tensorboard}: "
                      f"{_reason(exc)}")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _say(stream: TextIO, line: str) -> None:
    try:
        stream.write(line + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def write_report(report: Report, fmt: str, output: str | None, *, color: bool = False,
                 stream: TextIO | None = None) -> None:
    text = render_report(report, fmt, color=color)
    if output:
        _write_file(output, text)
        return
    out = stream or sys.stderr
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    out.write(text)
    out.flush()
