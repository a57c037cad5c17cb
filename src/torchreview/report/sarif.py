"""SARIF 2.1.0 for GitHub code scanning and other SARIF consumers."""

from __future__ import annotations

import json
import os

from torchreview.version import __version__
from torchreview.report.model import Report

_LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note"}
_SCORE = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "2.0"}
# SARIF ``rank`` (0-100, priority): severity weighted by kind and confidence.
_RANK_SEVERITY = {"critical": 95.0, "high": 80.0, "medium": 55.0, "low": 25.0}
_RANK_KIND = {"defect": 1.0, "likely-defect": 0.85, "advice": 0.6}
_RANK_CONFIDENCE = {"high": 1.0, "medium": 0.8, "low": 0.6}
# GitHub's ``problem.severity`` for rules that are not security queries.
_PROBLEM = {"defect": "error", "likely-defect": "warning", "advice": "recommendation"}


def rank(severity: str, kind: str, confidence: str) -> float:
    return round(_RANK_SEVERITY.get(severity, 50.0) * _RANK_KIND.get(kind, 0.6)
                 * _RANK_CONFIDENCE.get(confidence, 0.6), 1)
INFO_URI = "https://pypi.org/project/torchreview/"


def _uri(path: str) -> str:
    return path.replace(os.sep, "/")


def render_sarif(report: Report) -> str:
    from torchreview.catalog import rule_by_code

    catalog = rule_by_code()
    used = sorted({f.code for f in report.findings})
    rules = []
    index = {}
    for i, code in enumerate(used):
        index[code] = i
        rule = catalog.get(code)
        docs = rule.docs() if rule else {}
        entry = {
            "id": code,
            "name": rule.name if rule else code,
            "shortDescription": {"text": (rule.summary if rule and rule.summary else code)},
            "fullDescription": {"text": docs.get("What it does", rule.summary if rule else code)},
            "help": {"text": docs.get("Why is this bad?", "")},
            "defaultConfiguration": {"level": _LEVEL[rule.severity.label] if rule else "warning"},
            "properties": {
                "tags": [rule.category()] if rule else [],
                "security-severity": _SCORE[rule.severity.label] if rule else "5.0",
                "precision": rule.precision() if rule else "medium",
                "problem.severity": _PROBLEM[rule.default_kind()] if rule else "warning",
                "kind": rule.default_kind() if rule else "defect",
                "confidence": rule.default_confidence() if rule else "medium",
            },
        }
        rules.append(entry)
    from torchreview.report.notebook_positions import Locator

    locator = Locator(report.texts)

    def physical(path: str, cell: int | None, line: int, column: int, end_line: int,
                 end_column: int) -> dict:
        """The place in the file on disk: for a notebook, the lines of the raw
        .ipynb JSON holding that cell line (no region when it cannot be found)."""
        out: dict = {"artifactLocation": {"uri": _uri(path)}}
        found = locator.region(path, cell, line, column, end_line, end_column)
        if found is not None:
            out["region"] = dict(zip(("startLine", "startColumn", "endLine", "endColumn"), found))
        return out

    def cell_location(path: str, cell: int) -> list[dict]:
        return [{"name": f"cell {cell}", "fullyQualifiedName": f"{_uri(path)}#cell{cell}",
                 "kind": "module"}]

    results = []
    for f in report.findings:
        location = {"physicalLocation": physical(f.path, f.cell, f.line, f.column, f.end_line,
                                                 f.end_column)}
        if f.cell is not None:
            location["logicalLocations"] = cell_location(f.path, f.cell)
        result = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _LEVEL[f.severity.label],
            "message": {"text": f.message},
            "locations": [location],
            "rank": rank(f.severity.label, f.kind, f.confidence),
            "properties": {"severity": f.severity.label, "kind": f.kind, "confidence": f.confidence,
                           "detection": f.detection},
        }
        if f.cell is not None:  # the position inside the cell, as the text report shows it
            result["properties"].update(cell=f.cell, cellLine=f.line, cellColumn=f.column)
        if f.related:
            result["relatedLocations"] = [
                {"id": i, "message": {"text": f"{r.code}: {r.message}"},
                 "physicalLocation": physical(r.path, r.cell, r.line, r.column, r.end_line,
                                              r.end_column),
                 **({"logicalLocations": cell_location(r.path, r.cell)} if r.cell is not None else {})}
                for i, r in enumerate(f.related, start=1)]
        results.append(result)
    notifications = [
        {"level": "error", "message": {"text": e.message},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(e.path)}}}]}
        for e in report.errors
    ]
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "torchreview", "version": __version__,
                                "informationUri": INFO_URI, "rules": rules}},
            "results": results,
            "invocations": [{"executionSuccessful": not report.errors,
                             "toolExecutionNotifications": notifications}],
        }],
    }
    return json.dumps(doc, indent=2) + "\n"
