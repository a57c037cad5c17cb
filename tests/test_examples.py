"""The bundled example project: many real bugs found, and the fixed twin clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchreview.catalog import all_rules
from torchreview.engine.runner import Settings, run_review

EXAMPLES = Path(__file__).parent.parent / "examples"
ALL = tuple(r.code for r in all_rules())


def test_fixed_examples_have_no_finding():
    # every rule with all advice shown: a superset of every --review mode and of the default
    report = run_review([str(EXAMPLES / "fixed")], Settings(rule_codes=ALL, jobs=1))
    assert not report.errors
    assert [f"{f.path}:{f.line} {f.code} {f.message}" for f in report.findings] == []


def test_buggy_examples_trigger_many_rules():
    report = run_review([str(EXAMPLES)], Settings(rule_codes=ALL, jobs=1))
    assert not report.errors
    buggy = [f for f in report.findings if "/fixed/" not in f.path.replace("\\", "/")]
    codes = {f.code for f in buggy}
    assert len(codes) >= 40, sorted(codes)


@pytest.mark.shipped_track_record
def test_default_settings_show_at_least_15_distinct_defects(capsys, monkeypatch):
    """`torchreview check examples/` as a new user runs it: defects and likely
    defects only (advice hidden), still many distinct problems."""
    import json

    from torchreview.cli import main

    monkeypatch.chdir(EXAMPLES.parent)
    assert main(["check", "examples", "--format", "json", "--no-cache"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert not [f for f in findings if "/fixed/" in f["path"]]
    assert all(f["kind"] != "advice" or f["category"] == "security" for f in findings)
    defects = {f["code"] for f in findings if f["kind"] in ("defect", "likely-defect")}
    assert len(defects) >= 15, sorted(defects)
