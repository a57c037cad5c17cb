"""What reviewing one file produces (findings, errors, facts): the runner makes
it, the result cache stores and validates it, ``--fix`` reads it."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchreview.engine.facts import FileFacts
from torchreview.findings import Finding, ReviewError


@dataclass
class FileResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[ReviewError] = field(default_factory=list)
    facts: FileFacts | None = None
    reviewed: bool = True
    notes: list[str] = field(default_factory=list)  # files skipped on purpose (too large)
