"""Rule documentation: the catalog as a table, and one rule explained."""

from __future__ import annotations

from torchreview.catalog import DOC_HEADINGS, Rule


def rules_table(rules: list[type[Rule]]) -> str:
    lines = [f"{'code':6}  {'severity':8}  {'category':12}  {'review':6}  {'fix':6}  name"]
    for r in rules:
        lines.append(f"{r.code:6}  {r.severity.label:8}  {r.category():12}  "
                     f"{','.join(r.review()):6}  {(r.fixable or '-'):6}  {r.name}")
    lines.append(f"{len(rules)} rules. `torchreview rules CODE` explains one.")
    return "\n".join(lines) + "\n"


def rules_markdown_table(rules: list[type[Rule]]) -> str:
    lines = ["| Code | Name | Severity | Category | Review | Scope | Fix | Summary |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rules:
        summary = r.summary.replace("|", "\\|")
        lines.append(f"| {r.code} | `{r.name}` | {r.severity.label} | {r.category()} | "
                     f"{', '.join(r.review())} | {', '.join(r.scope)} | {r.fixable or ''} | "
                     f"{summary} |")
    return "\n".join(lines) + "\n"


def explain_rule(rule: type[Rule]) -> str:
    docs = rule.docs()
    out = [f"{rule.code} {rule.name}", "",
           f"Severity: {rule.severity.label}   Category: {rule.category()}   "
           f"Review: {', '.join(rule.review()) or '-'}   Scope: {', '.join(rule.scope)}   "
           f"Fix: {rule.fixable or 'none'}", ""]
    if rule.summary:
        out += [rule.summary, ""]
    for heading in (*DOC_HEADINGS, "Fix safety", "Heuristics", "Options"):
        if heading in docs:
            out += [f"## {heading}", "", docs[heading], ""]
    return "\n".join(out).rstrip() + "\n"
