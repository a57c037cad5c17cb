"""Rule documentation: the catalog as a table, and one rule explained."""

from __future__ import annotations

from torchreview import track_record
from torchreview.catalog import DOC_HEADINGS, Rule


def rules_table(rules: list[type[Rule]]) -> str:
    lines = [f"{'code':6}  {'severity':8}  {'kind':13}  {'category':12}  {'review':6}  {'fix':6}  name"]
    for r in rules:
        lines.append(f"{r.code:6}  {r.severity.label:8}  {r.default_kind():13}  {r.category():12}  "
                     f"{','.join(r.review()):6}  {(r.fixable or '-'):6}  {r.name}")
    lines.append(f"{len(rules)} rules. `torchreview rules CODE` explains one.")
    return "\n".join(lines) + "\n"


def rules_markdown_table(rules: list[type[Rule]]) -> str:
    lines = ["| Code | Name | Severity | Kind | Category | Review | Scope | Fix | Summary |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rules:
        summary = r.summary.replace("|", "\\|")
        lines.append(f"| {r.code} | `{r.name}` | {r.severity.label} | {r.default_kind()} | {r.category()} | "
                     f"{', '.join(r.review())} | {', '.join(r.scope)} | {r.fixable or ''} | "
                     f"{summary} |")
    return "\n".join(lines) + "\n"


def _shown_by_default(rule: type[Rule]) -> str:
    """Whether the default report (advice hidden, minimum confidence high) holds the rule's findings."""
    if not rule.shown_by_default():
        return "no (advice)"
    if "file" not in rule.scope and "project" not in rule.scope:
        return "yes"  # `torchreview run` reports what it observed: no confidence gate
    if track_record.ceiling(rule.code) != "high":
        return "no (medium confidence at most: see Measured on real code)"
    if rule.default_confidence() == "high":
        return "yes"
    return "its findings of high confidence (see Heuristics; --min-confidence low shows all)"


def explain_rule(rule: type[Rule]) -> str:
    docs = rule.docs()
    out = [f"{rule.code} {rule.name}", "",
           f"Severity: {rule.severity.label}   Category: {rule.category()}   "
           f"Review: {', '.join(rule.review()) or '-'}   Scope: {', '.join(rule.scope)}   "
           f"Fix: {rule.fixable or 'none'}",
           f"Kind: {rule.default_kind()}   Confidence: {rule.default_confidence()}   "
           f"Shown by default: {_shown_by_default(rule)}", ""]
    if rule.summary:
        out += [rule.summary, ""]
    for heading in (*DOC_HEADINGS, "Fix safety", "Context", "Heuristics", "Options"):
        if heading in docs:
            out += [f"## {heading}", "", docs[heading], ""]
    if "Context" not in docs and "Heuristics" not in docs:
        out += ["## Context", "", "No context gate: reported wherever the pattern described above occurs.", ""]
    out += ["## Severity reason", "", rule.explain_severity(), ""]
    if track_record.applies(rule.code):
        out += ["## Measured on real code", "", track_record.describe(rule.code), ""]
    return "\n".join(out).rstrip() + "\n"
