"""Where a project fact was seen: the position a project finding points at."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Anchor:
    path: str
    line: int
    column: int
    cell: int | None
    source_line: str
