"""A finding that claims its line raises (``Rule.claims_raise``) is low confidence
in a notebook cell the stored notebook shows ran without an error
(engine/source.py ``ran_cells``), so the default report hides it; findings of a
``summarize = "scope"`` rule about one value in one function or cell fold into
one (engine/merge.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from torchreview.catalog import all_rules
from torchreview.cli import main
from torchreview.engine.runner import Settings, run_review
from torchreview.engine.source import _ran_cells

BUGS = Path(__file__).parent / "fixtures" / "bugs"
RAN = BUGS / "TR502_ran_notebook.ipynb"
STRIPPED = BUGS / "TR502_stripped_outputs_notebook.ipynb"
FOLD = BUGS / "TR502_one_value_one_finding.py"


def test_ran_cells_need_a_count_no_error_and_outputs_kept_at_or_after_them():
    # (cell, execution_count, has outputs, has an error output)
    assert _ran_cells([(1, 1, False, False), (2, 2, False, False), (3, 3, True, False)]) == {1, 2, 3}
    assert _ran_cells([(1, 1, False, False), (2, 2, False, False)]) == frozenset()  # outputs stripped
    assert _ran_cells([(1, 1, True, False), (2, 5, False, False)]) == {1}  # ran after the last output
    assert _ran_cells([(1, 1, False, True), (2, 2, True, False)]) == {2}  # an error output: it raised


def _findings(paths, codes=("TR421", "TR502")):
    settings = Settings(rule_codes=codes, jobs=1)
    return run_review([str(p) for p in paths], settings).findings


def test_a_crash_claim_in_a_cell_that_ran_is_low_confidence():
    findings = _findings([RAN])
    got = {(f.code, f.cell, f.line): f.confidence for f in findings}
    # cells 6 and 7 say the same of two names (`fresh`, `late`): one notebook repeating one habit
    # is one comment (engine/merge.py), the second place kept as a related location
    assert got == {("TR502", 3, 2): "low", ("TR421", 4, 2): "low", ("TR502", 6, 2): "high"}
    lead = next(f for f in findings if f.cell == 6)
    assert [(r.cell, r.line) for r in lead.related] == [(7, 2)]
    assert all(f.confidence == "high" for f in _findings([STRIPPED]))


def test_only_rules_claiming_a_crash_declare_it():
    declared = {r.code for r in all_rules() if r.claims_raise}
    assert {"TR501", "TR502", "TR403", "TR421"} <= declared
    assert not declared & {"TR102", "TR207", "TR510", "TR520"}  # no crash claim on the flagged line


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copy(RAN, tmp_path / "viz.ipynb")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_default_report_hides_the_refuted_claims(project, capsys):
    assert main(["check", "viz.ipynb", "--no-cache", "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {(f["code"], f["cell"]) for f in report["findings"]} == {("TR502", 6)}


def test_one_value_in_one_scope_is_one_finding_with_related_places():
    findings = _findings([FOLD], ("TR502",))
    places = sorted((f.line, sorted(r.line for r in f.related)) for f in findings)
    assert places == [(13, [14, 15, 17, 23])]  # one file repeating one habit: one comment
    lead = next(f for f in findings if f.line == 13)
    assert "same in 4 more places" in lead.message
    notebook = [f for f in _findings([RAN], ("TR502",)) if f.cell == 3]
    assert len(notebook) == 1 and [r.line for r in notebook[0].related] == [3, 4]
