"""Confidence calibrated on judged real code.

A rule sets each finding's confidence from the evidence it saw in the code. That
is one half of "how sure are we"; the other half is how often findings of this
rule, with that evidence, were actually worth a reviewer's comment on code
nobody here wrote. The precision sweeps (``bench/precision``) record exactly
that: every finding a default review made on a public repository, judged
true / noise / false by a reviewer who wrote no rule. ``bench/precision/calibrate.py``
re-runs the judged sets at the current code, matches each finding to its verdict
and writes the counts per rule to ``data/track_record.json``.

Two records are kept per rule: "fresh" (first passes, each finding judged when
its repository was new to the rules) and "rerun" (the current code on every
judged set). The policy (``ceiling``): a static code rule with a record of at
least ``MIN_JUDGED`` judged findings, fewer than ``HIGH_SHARE`` of them true,
reports at most **medium** confidence; so does one whose two records added up
are (two short records that agree). Its findings are hidden by the default report
(minimum confidence high) and shown with ``--min-confidence medium``, a
``--review`` mode, or when the rule is selected by name; the message says why.
A rule with a short or good record keeps the confidence its own evidence gives.
Runtime findings (TR6xx, what a run observed) and advice are not capped: the sweeps judge
the default report of static review.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

from .findings import Finding

MIN_JUDGED = 5
HIGH_SHARE = 0.6
# The two records kept per rule (data/track_record.json "sources" says what each holds):
# "fresh": first passes, each finding judged when its repository was new to the rules;
# "rerun": the current code re-run on every judged set, findings matched to their verdicts
# (optimistic: classes judged false there were fixed since).
RECORDS = ("fresh", "rerun")


@dataclass(frozen=True)
class Record:
    """Judged findings of one rule in one record."""
    true: int = 0
    noise: int = 0
    false: int = 0

    @property
    def judged(self) -> int:
        return self.true + self.noise + self.false

    @property
    def true_share(self) -> float:
        return self.true / self.judged if self.judged else 0.0

    def below_bar(self) -> bool:
        """Enough judged findings, too few of them true."""
        return self.judged >= MIN_JUDGED and self.true_share < HIGH_SHARE

    def ceiling(self) -> str:
        """The highest confidence this record lets a finding of the rule claim."""
        return "medium" if self.below_bar() else "high"

    def text(self) -> str:
        return (f"{self.true} of {self.judged} findings worth a reviewer's comment "
                f"({round(100 * self.true_share)} %; {self.noise} noise, {self.false} false)")


@lru_cache(maxsize=1)
def _records() -> dict[str, dict[str, Record]]:
    try:
        raw = json.loads(resources.files("torchreview.data").joinpath("track_record.json").read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    out: dict[str, dict[str, Record]] = {}
    for code, kinds in raw.get("rules", {}).items():
        out[code] = {kind: Record(int(c.get("true", 0)), int(c.get("noise", 0)), int(c.get("false", 0)))
                     for kind, c in kinds.items() if kind in RECORDS}
    return out


def records(code: str) -> dict[str, Record]:
    """The judged records of ``code`` by source ("fresh", "rerun"; empty: never judged)."""
    return _records().get(code, {}) if applies(code) else {}


def ceiling(code: str) -> str:
    """Medium when a record of the rule, or the two records added up, is below the bar,
    else high (the sum counts a finding of a recent set twice when the re-run still
    reports it; it lets two short records that agree, 0 of 4 and 0 of 1, count)."""
    return "medium" if _lowest(code) is not None else "high"


def _lowest(code: str) -> Record | None:
    """The record below the bar with the lowest true share (None: none is below)."""
    recs = list(records(code).values())
    total = Record(sum(r.true for r in recs), sum(r.noise for r in recs), sum(r.false for r in recs))
    below = [r for r in (*recs, total) if r.below_bar()]
    return min(below, key=lambda r: r.true_share) if below else None


def describe(code: str) -> str:
    """Sentences for the rule's docs: the records and what they do to the default report."""
    recs = records(code)
    if not any(r.judged for r in recs.values()):
        return "Not yet judged on real code in the precision sweeps."
    names = {"fresh": "First passes on repositories new to the rules",
             "rerun": "The current code re-run on every judged repository"}
    text = " ".join(f"{names[k]}: {r.text()}." for k, r in recs.items() if r.judged)
    if ceiling(code) != "high":
        text += (f" Below the bar ({MIN_JUDGED} or more judged, under {round(100 * HIGH_SHARE)} % true, in one "
                 "record or in both added up), so its "
                 "findings report at most medium confidence: hidden by the default report, shown with "
                 f"`--min-confidence medium`, a `--review` mode, or `--select {code}`.")
    return text


_CALIBRATED_PREFIXES = ("TR1", "TR2", "TR3", "TR4", "TR5")


def applies(code: str) -> bool:
    """Static code rules are calibrated (runtime rules report what a run observed)."""
    return code.startswith(_CALIBRATED_PREFIXES)


def calibrated(finding: Finding) -> Finding:
    """``finding`` with its confidence capped by its rule's track record."""
    if finding.detection != "static" or finding.kind == "advice" or finding.confidence != "high" or \
            ceiling(finding.code) == "high":  # advice: hidden by default, not what the record judged
        return finding
    low = _lowest(finding.code)
    assert low is not None
    return replace(finding, confidence="medium",
                   message=finding.message + f" (medium confidence: this rule's findings were worth a comment in "
                                             f"{low.true} of {low.judged} judged reviews of real code)")
