"""``torchreview check -`` : review one file read from standard input, as ruff does.

The source is reported under ``--stdin-filename`` (default ``-``); its suffix
decides notebook or Python, and the configuration is looked up from there. Only
file rules run: project rules need the tree. ``--fix`` prints the fixed source
on standard output (the report goes to standard error); ``--diff`` prints the
diff; nothing is ever written to disk.
"""

from __future__ import annotations

import os
import sys

from torchreview.errors import EXIT_ERROR, EXIT_OK
from torchreview.engine.runner import Settings
from torchreview.engine.source import MAX_FILE_BYTES
from torchreview.findings import ReviewError
from torchreview.report import Report


def check_stdin(settings: Settings, args) -> tuple[Report | None, int | None]:
    """The report of the input (None for --diff, whose output is the diff) and an
    exit-code hint."""
    from torchreview.engine.runner import review_data

    name = args.stdin_filename
    display = name or "-"
    real = os.path.abspath(name) if name else "-"
    data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        error = ReviewError(display, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB; not reviewed")
        if args.fix:
            sys.stdout.buffer.write(data + sys.stdin.buffer.read())  # never lose a byte
            sys.stdout.flush()
        return Report(errors=[error], files=1), EXIT_ERROR
    if args.fix or args.diff:
        data, code = _fix(data, real, display, settings, args)
        if args.diff:
            return None, code
    return review_data(data, display, real, settings), None


def _fix(data: bytes, real: str, display: str, settings: Settings, args) -> tuple[bytes, int]:
    from torchreview.changes import tell_fixes
    from torchreview.fixer import fix_bytes, unified_diff

    outcome = fix_bytes(data, real, display, settings, unsafe=bool(args.unsafe_fixes))
    errors = [outcome.error] if outcome.error else []
    applied = [(display, outcome.applied)] if outcome.changed else []
    if args.diff:
        sys.stdout.write(unified_diff(outcome) if outcome.changed else "")
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(outcome.fixed)  # unchanged bytes when nothing was fixed
        sys.stdout.buffer.flush()
    tell_fixes(args, errors, applied, 1 if outcome.changed else 0)
    if args.diff:
        return data, 1 if outcome.changed else EXIT_OK
    return outcome.fixed, EXIT_OK
