"""Runtime review: watch a real training run and report silent bugs.

Two entry points::

    torchreview run train.py --epochs 3          # CLI: run_script()

    with torchreview.watch():                     # in code or a notebook
        train()

    watcher = torchreview.watch(model, optimizer, loader)
    ...
    report = watcher.stop()

torch is imported lazily; without it these raise (or ``run_script`` prints)
"runtime review needs PyTorch: pip install 'torchreview[runtime]'".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchreview.runtime._env import TORCH_MISSING, TorchMissingError
from torchreview.runtime.runner import run_script

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.report import Report
    from torchreview.runtime.watcher import Watcher

__all__ = ["TORCH_MISSING", "TorchMissingError", "run_script", "watch"]


class _Attached:
    """What ``watch()`` returns when a review is already running (``torchreview run``).

    The objects are added to the running review; stopping is left to it.
    """

    def __init__(self, watcher: "Watcher") -> None:
        self.watcher = watcher

    def __enter__(self) -> "_Attached":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        return False

    def stop(self) -> "Report":
        from torchreview.report import Report

        return Report(findings=self.watcher.collect())

    @property
    def findings(self):
        return self.watcher.collect()


def watch(model=None, optimizer=None, loader=None, **options):
    """Start reviewing the training that runs in this process.

    Use it as a context manager (the report is written when the block ends) or
    call it and keep the returned watcher (the report is written by
    ``watcher.stop()`` or at interpreter exit).  ``model``, ``optimizer`` and
    ``loader`` are optional: everything is found through PyTorch's global
    hooks, but passing the optimizer lets the very first step be checked too.

    Options: ``fmt`` (text/json/sarif/github/markdown), ``output`` (file;
    default stderr), ``color``, ``live`` (one-line warnings on stderr, default
    True), ``write_report`` (default True), ``check_every`` (steps between
    reads of device-side statistics, default 50), ``report`` (an HTML page
    of the run's charts and findings, as ``torchreview run --report``),
    ``tensorboard`` (a directory for TensorBoard scalars), and thresholds
    ``spike_factor``, ``data_wait_share``, ``min_data_wait``.  The returned
    report's ``runtime`` holds the run's series (docs/runtime-report.md).
    """
    from torchreview.runtime.watcher import Watcher, active_watcher

    running = active_watcher()
    if running is not None:
        running.add(model, optimizer, loader)
        for name in ("report", "tensorboard"):  # outputs the running review does not write yet
            if options.get(name) and not getattr(running.options, name):
                setattr(running.options, name, options[name])
        return _Attached(running)
    watcher = Watcher(**options)
    watcher.start()
    try:
        watcher.add(model, optimizer, loader)
    except Exception:
        watcher.stop()
        raise
    return watcher
