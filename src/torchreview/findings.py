"""The data every part of torchreview reports with: severities, fixes, findings.

Everything here is a frozen dataclass (or close to it) and picklable, so file
results can cross process boundaries and be cached by content hash.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from enum import IntEnum
from typing import Any


class Severity(IntEnum):
    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(
                f"unknown severity {text!r} (expected low, medium, high or critical)"
            ) from None

    @property
    def label(self) -> str:
        return self.name.lower()


SEVERITY_NAMES = ("low", "medium", "high", "critical")

# The second axis of a finding (next to severity): what kind of comment it is,
# and how sure we are that the code does what the message says.
#   defect         -- the code will misbehave (crash, wrong results, code execution);
#   likely-defect  -- it misbehaves on the common path, unless something we cannot see holds;
#   advice         -- it works; a change would make it faster, sturdier or clearer.
KINDS = ("defect", "likely-defect", "advice")
CONFIDENCES = ("high", "medium", "low")

# Categories and the review modes of the rule pack (GR/SR/PR/AR/BR).
CATEGORY_OF_PREFIX = {
    "1": ("security", "SR"),
    "2": ("performance", "PR"),
    "3": ("architecture", "AR"),
    "4": ("quality", "GR"),
    "5": ("bugs", "BR"),
    "6": ("runtime", "BR"),
}
REVIEW_MODES = {
    "general": "GR",
    "security": "SR",
    "performance": "PR",
    "architecture": "AR",
    "bugs": "BR",
}


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 1-based (line, column) positions.

    Columns are 1-based character offsets, as in the JSON report.  An insertion
    has ``start == end``.
    """

    line: int
    column: int
    end_line: int
    end_column: int
    content: str


@dataclass(frozen=True)
class Fix:
    applicability: str  # "safe" | "unsafe" | "display"
    edits: tuple[Edit, ...]
    title: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "applicability": self.applicability,
            "title": self.title,
            "edits": [asdict(e) for e in self.edits],
        }


@dataclass(frozen=True)
class Related:
    """Another place of the same root cause, merged into one finding."""

    code: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    cell: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: Severity
    category: str
    review: tuple[str, ...]
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    detection: str = "static"
    cell: int | None = None
    fix: Fix | None = None
    scope: str = "file"
    # Text of the flagged line (for baselines and code frames); not in JSON.
    source_line: str = field(default="", compare=False)
    # Dotted name of the enclosing class/function (for baseline fingerprints).
    context: str = field(default="", compare=False)
    # The root value the finding is about (``output`` for `output[1][0].numpy()`);
    # findings of a ``summarize = "scope"`` rule about one subject in one
    # function or notebook cell fold into one (engine/merge.py). Not in JSON.
    subject: str = field(default="", compare=False)
    # See KINDS / CONFIDENCES; the rule's defaults unless the finding overrides them.
    kind: str = "defect"
    confidence: str = "high"
    # Other findings merged into this one (same root cause; see engine/merge.py).
    related: tuple[Related, ...] = ()
    # The unmerged findings this one stands for (empty when nothing was merged into
    # it): baselines record and match each place on its own. Not in JSON.
    parts: tuple["Finding", ...] = field(default=(), compare=False, repr=False)

    def label(self) -> str:
        """``high, defect`` / ``medium, advice, low confidence``: severity and kind,
        plus the confidence when it is not high (text, GitHub and Markdown reports)."""
        text = f"{self.severity.label}, {self.kind}"
        return text if self.confidence == "high" else f"{text}, {self.confidence} confidence"

    def with_severity(self, severity: Severity) -> "Finding":
        return replace(self, severity=severity)

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.label,
            "kind": self.kind,
            "confidence": self.confidence,
            "category": self.category,
            "review": list(self.review),
            "detection": self.detection,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "cell": self.cell,
            "message": self.message,
            "fix": self.fix.to_json() if self.fix else None,
            **({"related": [r.to_json() for r in self.related]} if self.related else {}),
        }


@dataclass(frozen=True)
class ReviewError:
    """An input that could not be (fully) reviewed: one line, no traceback."""

    path: str
    message: str
    line: int | None = None  # where it happened, when known (a runtime crash: the script's line)
    kind: str | None = None  # the exception type of a runtime crash ("AttributeError")

    def to_json(self) -> dict:
        data: dict = {"path": self.path, "message": self.message}
        if self.line is not None:
            data["line"] = self.line
        if self.kind is not None:
            data["type"] = self.kind
        return data
