"""Options of a runtime review (``torchreview.watch(**options)``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO


@dataclass
class Options:
    fmt: str = "text"
    output: str | None = None
    color: bool = False
    live: bool = True  # one-line warnings on stderr as problems become certain
    write_report: bool = True
    stream: TextIO | None = None  # where live warnings and the text report go
    check_every: int = 50  # steps between reads of the device-side gradient stats
    spike_factor: float = 10.0  # TR602: norm above this many times the running median
    data_wait_share: float = 0.3  # TR605/TR202: share of step time waiting for data
    min_data_wait: float = 0.5  # ... and at least this many seconds waited in total
    merge_timeout: float = 60.0  # seconds rank 0 waits for the other ranks' findings
    report: str | None = None  # HTML page of the run's series and findings
    tensorboard: str | None = None  # directory for the series as TensorBoard scalars
    script: str | None = None
    rank_dir: str | None = None  # set in ranks started by a watched spawn()
    rank_hint: int | None = None


CHILD_OPTIONS = ("live", "check_every", "spike_factor", "data_wait_share", "min_data_wait")
