"""``torchreview run SCRIPT ARGS``: run a script like ``python SCRIPT ARGS`` under review."""

from __future__ import annotations

import os
import runpy
import sys

from torchreview.findings import Severity
from torchreview.runtime._env import TorchMissingError, display_path
from torchreview.runtime.guards import report_uncaught


def _exit_code(code) -> int:
    """The process exit status Python would use for ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, bool):
        return int(code)
    if isinstance(code, int):
        return code & 0xFF if code >= 0 else code % 256
    print(code, file=sys.stderr)
    return 1


def _module_file(name: str) -> str | None:
    """The file ``python -m name`` would run (a package's ``__main__``), or None.
    Finding it imports the parent packages, as ``python -m`` does."""
    import importlib.util

    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(name + ".__main__")
    except (ImportError, ValueError):
        return None
    finally:
        sys.path.pop(0)
    return spec.origin if spec is not None and spec.origin and os.path.isfile(spec.origin) else None


def run_script(script: str, args: list[str], *, fmt: str = "text", output: str | None = None,
               fail_on: str = "low", color: bool = False, module: bool = False,
               report: str | None = None, tensorboard: str | None = None) -> int:
    """Run ``script`` with ``args`` under runtime review and return the exit code.

    The script runs as ``__main__`` (``runpy.run_path``) with ``sys.argv`` set
    to ``[script, *args]`` and the script's directory as ``sys.path[0]``.  The
    report goes to ``output`` (or stderr).  A non-zero exit status of the
    script is returned as is; otherwise 1 when a finding is at or above
    ``fail_on``, else 0.  With ``module=True``, ``script`` is a module name run
    like ``python -m`` (``runpy.run_module``; the working directory is
    ``sys.path[0]`` and ``sys.argv[0]`` the module's file).  ``report`` names
    an HTML page of the run's series and findings to write as well;
    ``tensorboard`` a directory for the series as TensorBoard scalars.
    """
    from torchreview.report import FORMATS

    try:
        threshold = Severity.parse(fail_on)
    except ValueError as exc:
        print(f"torchreview run: {exc}", file=sys.stderr)
        return 2
    if fmt not in FORMATS:
        print(f"torchreview run: unknown format {fmt!r} (expected {', '.join(FORMATS)})",
              file=sys.stderr)
        return 2
    path = _module_file(script) if module else os.path.abspath(script)
    if path is None:
        print(f"torchreview run: no module named {script!r}", file=sys.stderr)
        return 2
    if not os.path.isfile(path):
        print(f"torchreview run: can't open file {script!r}: no such file", file=sys.stderr)
        return 2
    try:
        from torchreview.runtime.watcher import Watcher

        watcher = Watcher(fmt=fmt, output=output, color=color, script=display_path(path),
                          report=report, tensorboard=tensorboard)
    except TorchMissingError as exc:
        print(f"torchreview: {exc}", file=sys.stderr)
        return 2
    saved_argv = sys.argv
    saved_hook = sys.excepthook
    saved_path0 = sys.path[0] if sys.path else None
    sys.argv = [path if module else script, *args]
    first = os.getcwd() if module else os.path.dirname(path)
    if sys.path:
        sys.path[0] = first
    else:
        sys.path.append(first)
    code = 0
    watcher.start()
    try:
        if module:
            runpy.run_module(script, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt as exc:
        report_uncaught(exc, path)
        code = 130
    except BaseException as exc:  # the script's own error: report it like python does
        watcher.explain(exc)
        report_uncaught(exc, path)  # through the script's own sys.excepthook, if it set one
        code = 1
    finally:
        sys.argv = saved_argv
        sys.excepthook = saved_hook
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        report = watcher.stop()
    if code != 0:
        return code
    if not watcher.dist.is_writer:
        return 0
    return 1 if any(f.severity >= threshold for f in report.findings) else 0
