"""SARIF and GitHub annotations place notebook findings in the raw .ipynb file
(the JSON line holding that cell line), not at the cell-relative line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from torchreview.cli import main
from torchreview.report.notebook_positions import NotebookPositions

EXAMPLES = Path(__file__).parent.parent / "examples"

CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Loading \"weights\"\n", "m = torch.load(p)"]},
    {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
     "source": ["import torch\n", "import pickle\n", "\n",
                "label = \"caf\u00e9\\t\"; state = torch.load('a.pt')\n"]},
    {"cell_type": "code", "execution_count": 2, "metadata": {},
     "outputs": [{"name": "stdout", "output_type": "stream", "text": ["state = torch.load('b.pt')\n"]}],
     # one string holding several lines (nbformat allows it)
     "source": "x = 1\ns = \"\t\"; blob = pickle.loads(b'')\ny = torch.load('c.pt')"},
]


def write_notebook(path: Path) -> str:
    raw = json.dumps({"cells": CELLS, "metadata": {"kernelspec": {"name": "python3"}},
                      "nbformat": 4, "nbformat_minor": 5}, indent=1)  # ensure_ascii: \u00e9 escapes
    path.write_text(raw + "\n")
    return raw + "\n"


def cell_lines(cell: int) -> list[str]:
    source = CELLS[cell - 1]["source"]
    return ("".join(source) if isinstance(source, list) else source).splitlines()


def expected(raw: str, cell: int, line: int, column: int) -> tuple[int, int]:
    """Search the raw JSON text for the encoded cell line; the column counts the
    encoded characters before ``column`` (escapes are longer than what they mean)."""
    text = cell_lines(cell)[line - 1]
    encoded = json.dumps(text)[1:-1]
    if isinstance(CELLS[cell - 1]["source"], str):  # all lines in one JSON string
        whole = json.dumps(CELLS[cell - 1]["source"])[1:-1]
        prefix = json.dumps("\n".join(cell_lines(cell)[:line - 1]) + ("\n" if line > 1 else ""))[1:-1]
        assert whole.startswith(prefix + encoded)
        encoded = whole
        skip = len(prefix)
    else:
        skip = 0
    hits = [(n, row.index(encoded)) for n, row in enumerate(raw.splitlines(), start=1)
            if encoded in row and row.lstrip().startswith('"') and not row.lstrip().startswith('"text"')]
    hits = [h for h in hits if '"output_type"' not in raw.splitlines()[h[0] - 2]]
    assert len(hits) >= 1
    number, at = hits[0]
    return number, at + skip + len(json.dumps(text[:column - 1])[1:-1]) + 1


@pytest.fixture
def notebook(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return write_notebook(tmp_path / "nb.ipynb")


def run(capsys, fmt: str, *paths: str) -> str:
    main(["check", *paths, "--format", fmt, "--no-cache", "--select", "TR102,TR103,TR107"])
    return capsys.readouterr().out


def test_sarif_regions_point_into_the_raw_notebook(notebook, capsys):
    json_report = json.loads(run(capsys, "json", "nb.ipynb"))
    # the second load has the first one's message: one finding, the other cell a related place
    cells = {(f["cell"], f["line"], f["column"], f["code"]) for g in json_report["findings"]
             for f in (g, *g.get("related", ()))}
    assert {(2, 4, 27, "TR102"), (3, 2, 17, "TR103"), (3, 3, 5, "TR102")} <= cells
    sarif = json.loads(run(capsys, "sarif", "nb.ipynb"))
    results = sarif["runs"][0]["results"]
    assert len(results) == len(json_report["findings"])
    for result, finding in zip(results, json_report["findings"]):
        location = result["locations"][0]
        region = location["physicalLocation"]["region"]
        assert location["physicalLocation"]["artifactLocation"]["uri"] == "nb.ipynb"
        line, column = expected(notebook, finding["cell"], finding["line"], finding["column"])
        assert (region["startLine"], region["startColumn"]) == (line, column), finding
        assert location["logicalLocations"][0]["name"] == f"cell {finding['cell']}"
        assert result["properties"]["cell"] == finding["cell"]
        assert result["properties"]["cellLine"] == finding["line"]
        raw_line = notebook.splitlines()[line - 1]
        assert raw_line[column - 1:].startswith(json.dumps(cell_lines(finding["cell"])[finding["line"] - 1]
                                                           [finding["column"] - 1:])[1:6])


def test_github_annotations_point_into_the_raw_notebook(notebook, capsys):
    findings = json.loads(run(capsys, "json", "nb.ipynb"))["findings"]
    annotations = run(capsys, "github", "nb.ipynb").splitlines()
    assert len(annotations) == len(findings)
    for text, finding in zip(annotations, findings):
        got = re.search(r"line=(\d+),col=(\d+),endLine=(\d+)", text)
        line, column = expected(notebook, finding["cell"], finding["line"], finding["column"])
        assert (int(got[1]), int(got[2])) == (line, column)
        assert int(got[3]) >= line
        assert text.endswith(f"(cell {finding['cell']}, line {finding['line']})")


def test_example_notebook_positions(tmp_path, monkeypatch, capsys):
    shutil.copy(EXAMPLES / "explore.ipynb", tmp_path / "explore.ipynb")
    monkeypatch.chdir(tmp_path)
    raw = (tmp_path / "explore.ipynb").read_text()
    doc = json.loads(raw)
    main(["check", "explore.ipynb", "--format", "sarif", "--no-cache", "--show-advice"])
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert len(results) >= 5
    rows = raw.splitlines()
    for result in results:
        props = result["properties"]
        region = result["locations"][0]["physicalLocation"]["region"]
        source = doc["cells"][props["cell"] - 1]["source"]
        text = ("".join(source) if isinstance(source, list) else source).splitlines()[props["cellLine"] - 1]
        assert json.dumps(text)[1:-1] in rows[region["startLine"] - 1]
        assert region["startLine"] != props["cellLine"]  # the cell-relative line would be wrong here


def test_positions_unit_cases():
    raw = json.dumps({"cells": [{"cell_type": "code", "source": "a = 1\nb = \"\u00e9\" + c\n"}]})
    positions = NotebookPositions(raw)
    assert positions.locate(1, 1, 1) == (1, raw.index("a = 1") + 1)
    # second line of a one-string source: same raw line, column after the \n escape
    assert positions.locate(1, 2, 1) == (1, raw.index("b = ") + 1)
    # after the escaped quote and \u00e9 (6 raw characters for one)
    assert positions.locate(1, 2, 9) == (1, raw.index("+ c") + 1)
    assert positions.locate(1, 2, 99) == (1, raw.index("+ c") + 3 + 1)  # clamped at the line end
    assert positions.locate(1, 3, 1) is None and positions.locate(2, 1, 1) is None
    assert NotebookPositions("{not json").locate(1, 1, 1) is None


def test_unreadable_notebook_gives_file_level_annotation(capsys):
    from torchreview.report import Report, render
    from torchreview.catalog import rule_by_code

    finding = rule_by_code()["TR102"].make_finding(path="gone.ipynb", line=2, column=1, end_line=2,
                                                   end_column=5, cell=4, message="m")
    report = Report(findings=[finding])
    assert render(report, "github").startswith("::error file=gone.ipynb,title=")
    location = json.loads(render(report, "sarif"))["runs"][0]["results"][0]["locations"][0]
    assert "region" not in location["physicalLocation"]
    assert location["logicalLocations"][0]["name"] == "cell 4"
