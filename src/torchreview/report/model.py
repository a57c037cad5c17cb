"""The report value every renderer reads."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchreview.findings import Finding, ReviewError, Severity

# ``full`` is text with code frames (``text`` is its former name), ``concise`` one line per finding.
FORMATS = ("concise", "full", "text", "json", "sarif", "github", "markdown")


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    errors: list[ReviewError] = field(default_factory=list)
    files: int = 0
    seconds: float = 0.0
    # Extra lines for the text summary (fixed counts, stale baseline entries...).
    notes: list[str] = field(default_factory=list)
    # Raw text of inputs that are not files on disk (stdin), by display path: the
    # SARIF/GitHub renderers read notebooks from it to place findings in the file.
    texts: dict[str, str] = field(default_factory=dict)

    def by_severity(self) -> dict[str, int]:
        counts = {s.label: 0 for s in sorted(Severity, reverse=True)}
        for f in self.findings:
            counts[f.severity.label] += 1
        return {k: v for k, v in counts.items() if v}

    def by_kind(self) -> dict[str, int]:
        from torchreview.findings import KINDS

        counts = {k: sum(f.kind == k for f in self.findings) for k in KINDS}
        return {k: v for k, v in counts.items() if v}
