"""The bundled example project: many real bugs found, and the fixed twin clean."""

from __future__ import annotations

from pathlib import Path

from torchreview.catalog import all_rules
from torchreview.engine.runner import Settings, run_review

EXAMPLES = Path(__file__).parent.parent / "examples"
ALL = tuple(r.code for r in all_rules())


def test_fixed_examples_have_no_finding():
    report = run_review([str(EXAMPLES / "fixed")], Settings(rule_codes=ALL, jobs=1))
    assert not report.errors
    assert [f"{f.path}:{f.line} {f.code} {f.message}" for f in report.findings] == []


def test_buggy_examples_trigger_many_rules():
    report = run_review([str(EXAMPLES)], Settings(rule_codes=ALL, jobs=1))
    assert not report.errors
    buggy = [f for f in report.findings if "/fixed/" not in f.path.replace("\\", "/")]
    codes = {f.code for f in buggy}
    assert len(codes) >= 40, sorted(codes)
