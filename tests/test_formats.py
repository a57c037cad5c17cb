"""Report formats: JSON fields, SARIF validity, exact github/markdown text."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from torchreview.catalog import rule_by_code
from torchreview.findings import ReviewError
from torchreview.report import Report, render

HERE = Path(__file__).parent
OFFICIAL_SCHEMA_CANDIDATES = [
    os.environ.get("TORCHREVIEW_SARIF_SCHEMA", ""),
    str(HERE.parent.parent / "shared" / "sarif-schema-2.1.0.json"),
]


def sample_report() -> Report:
    tr102 = rule_by_code()["TR102"]
    findings = [
        tr102.make_finding(path="train.py", line=12, column=5, end_line=12, end_column=30,
                           message="`torch.load` without `weights_only=True`"),
        tr102.make_finding(path="nb.ipynb", line=3, column=1, end_line=3, end_column=9, cell=2,
                           message="a message with | pipe, 100% and a:colon",
                           kind="likely-defect", confidence="low"),
    ]
    return Report(findings=findings, errors=[ReviewError("bad.py", "syntax error at line 3: invalid syntax")],
                  files=3, seconds=0.25, texts={"nb.ipynb": NOTEBOOK})


NOTEBOOK = json.dumps({
    "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# notes"]},
              {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
               "source": ["import torch\n", "path = 'm.pt'\n", "m = torch.load(path)\n"]}],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def raw_line_of(raw: str, text: str) -> int:
    """The 1-based line of the raw notebook JSON that holds ``text`` (searched)."""
    hits = [n for n, line in enumerate(raw.splitlines(), start=1) if json.dumps(text)[1:-1] in line]
    assert len(hits) == 1, hits
    return hits[0]


def test_json_fields_match_spec():
    data = json.loads(render(sample_report(), "json"))
    assert set(data) == {"version", "findings", "errors", "summary"}
    first = data["findings"][0]
    assert set(first) == {"code", "name", "severity", "kind", "confidence", "category", "review",
                          "detection", "path", "line", "column", "end_line", "end_column", "cell",
                          "message", "fix"}
    assert first["kind"] == "defect" and first["confidence"] == "high"
    assert data["findings"][1]["kind"] == "likely-defect" and data["findings"][1]["confidence"] == "low"
    assert first["line"] == 12 and first["column"] == 5 and first["cell"] is None
    assert data["findings"][1]["cell"] == 2
    assert first["review"] == ["SR"] and first["category"] == "security"
    assert data["errors"] == [{"path": "bad.py", "message": "syntax error at line 3: invalid syntax"}]
    assert data["summary"] == {"files": 3, "findings": 2, "by_severity": {"high": 2},
                               "by_kind": {"defect": 1, "likely-defect": 1}, "seconds": 0.25}


def _schema():
    for candidate in OFFICIAL_SCHEMA_CANDIDATES:
        if candidate and os.path.isfile(candidate):
            return json.loads(Path(candidate).read_text()), "official"
    return json.loads((HERE / "data" / "sarif_2_1_0_subset.schema.json").read_text()), "subset"


def test_sarif_validates():
    jsonschema = pytest.importorskip("jsonschema")
    doc = json.loads(render(sample_report(), "sarif"))
    schema, _ = _schema()
    jsonschema.validate(doc, schema)
    run = doc["runs"][0]
    assert run["tool"]["driver"]["name"] == "torchreview"
    assert [r["ruleId"] for r in run["results"]] == ["TR102", "TR102"]
    assert run["results"][0]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 12, "startColumn": 5, "endLine": 12, "endColumn": 30}
    assert run["invocations"][0]["executionSuccessful"] is False
    first, second = run["results"]
    assert first["properties"]["kind"] == "defect" and first["properties"]["confidence"] == "high"
    assert second["properties"]["kind"] == "likely-defect" and second["properties"]["confidence"] == "low"
    assert 0 <= second["rank"] < first["rank"] <= 100  # a low-confidence likely defect ranks lower
    rule = run["tool"]["driver"]["rules"][0]["properties"]
    # a defect of high confidence: very high, or high when its track record caps it (test below)
    assert rule["precision"] == rule_by_code()["TR102"].precision() and rule["problem.severity"] == "error"


def test_sarif_precision_follows_kind_and_confidence(monkeypatch):
    from torchreview import track_record

    table: dict = {}
    monkeypatch.setattr(track_record, "_records", lambda: table)
    catalog = rule_by_code()
    assert catalog["TR102"].precision() == "very-high"   # a defect, high confidence
    assert catalog["TR403"].precision() == "medium"      # a likely defect, medium confidence
    assert catalog["TR302"].precision() == "high"        # advice we are sure of
    # a judged record below the bar caps the confidence, and the precision with it
    table["TR102"] = {"fresh": track_record.Record(1, 3, 3)}
    assert catalog["TR102"].precision() == "high"


def test_sarif_schema_rejects_broken_output():
    """The validator really checks: a result without a message must fail."""
    jsonschema = pytest.importorskip("jsonschema")
    doc = json.loads(render(sample_report(), "sarif"))
    del doc["runs"][0]["results"][0]["message"]
    schema, _ = _schema()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def test_github_exact_text():
    line = raw_line_of(NOTEBOOK, "m = torch.load(path)")  # cell 2, line 3 in the .ipynb file
    column = NOTEBOOK.splitlines()[line - 1].index('"m = torch') + 2
    assert render(sample_report(), "github") == (
        "::error file=train.py,line=12,col=5,endLine=12,endColumn=30,"
        "title=TR102 torch-load-without-weights-only::TR102 [high, defect] `torch.load` without `weights_only=True`\n"
        f"::error file=nb.ipynb,line={line},col={column},endLine={line},endColumn={column + 8},"
        "title=TR102 torch-load-without-weights-only::TR102 [high, likely-defect, low confidence] "
        "a message with | pipe, 100%25 and a:colon (cell 2, line 3)\n"
        "::error file=bad.py,title=torchreview::syntax error at line 3: invalid syntax\n"
    )


def test_markdown_exact_text():
    assert render(sample_report(), "markdown") == (
        "## torchreview\n"
        "\n"
        "**2 findings** (2 high; 1 defect, 1 likely-defect) in 3 files.\n"
        "\n"
        "### High (2)\n"
        "\n"
        "| Rule | Kind | Location | Message |\n"
        "| --- | --- | --- | --- |\n"
        "| `TR102` torch-load-without-weights-only | defect | `train.py:12` | `torch.load` without `weights_only=True` |\n"
        "| `TR102` torch-load-without-weights-only | likely-defect (low confidence) | `nb.ipynb:3 (cell 2)` | "
        "a message with \\| pipe, 100% and a:colon |\n"
        "\n"
        "### Not reviewed (1)\n"
        "\n"
        "- `bad.py`: syntax error at line 3: invalid syntax\n"
    )


def test_markdown_and_text_when_clean():
    clean = Report(files=1)
    assert render(clean, "markdown") == "## torchreview\n\nNo findings in 1 file.\n"
    assert render(clean, "text") == "No findings in 1 file.\n"
    assert render(clean, "github") == ""
