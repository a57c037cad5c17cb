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
def test_default_settings_show_the_examples_defects(capsys, monkeypatch):
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
    # The same review with the rules' own confidence (no track record): the examples hold at
    # least 15 distinct high-confidence defects, and the record is the only thing between that
    # report and the default one -- it hides exactly the rules it caps (TR401 and TR517 since
    # record v13), each of which says so at medium confidence. Under record v21 (TR107, TR514
    # uncapped by v18, TR426 by v21) the default report again holds issue 11's "at least 15
    # distinct defects at default settings".
    assert main(["check", "examples", "--format", "json", "--no-cache", "--ignore-track-record"]) == 1
    own = json.loads(capsys.readouterr().out)["findings"]
    high = {f["code"] for f in own if f["kind"] in ("defect", "likely-defect") and "/fixed/" not in f["path"]}
    assert len(high) >= 15, sorted(high)
    from torchreview.track_record import ceiling

    capped = {code for code in high if ceiling(code) == "medium"}
    assert defects == high - capped, (sorted(defects), sorted(high), sorted(capped))
    # Record v49 (blind tests to 60) capped TR423 and TR513 too (judged 16 of 28 and 47 of 79 true
    # on fresh repositories), leaving 14 distinct defects. train.py's final validation reloading the
    # whole module it pickled (TR520, uncapped by v60: 38 of 61 true on fresh repositories) made
    # fifteen, until record v62 (blind test 73) capped TR209 (0 of 5 true on fresh repositories):
    # fourteen again, one short of issue 11's 15. Record v71 (blind test 84) uncapped TR423 (20 of
    # 33 true on fresh repositories): fifteen. Every rule the record leaves uncapped that can
    # report a high-confidence defect is shown here. Record v86 (blind test 104: three true
    # missing `set_epoch()` findings) uncapped TR513: sixteen. Record v101 (blind test 120: 56 of
    # 93 TR401 findings true on fresh repositories) uncapped TR401: seventeen. Record v106 (blind
    # test 125: one more TR401 finding judged noise, 56 of 94) capped it again, and record v107
    # (blind test 126: one more true, 57 of 95) uncapped it: TR401 sits on the bar, so it is left to
    # the general check above (shown exactly when its ceiling is high). Record v126 (blind test
    # 144: three more TR520 findings judged noise on old course archives, 64 of 107) capped TR520,
    # which sits on the bar too and is left to the general check.
    assert {"TR517", "TR209"} <= capped and len(defects) >= 15, sorted(defects)
    assert "TR513" in defects, sorted(defects)
    assert main(["check", "examples", "--format", "json", "--no-cache", "--min-confidence", "medium"]) == 1
    medium = json.loads(capsys.readouterr().out)["findings"]
    # TR520's two loads in train.py are one finding at its first place (line 54, medium by its own
    # evidence: a command-line checkpoint), whose message is its own; the capped one is listed in it
    assert any(f["code"] == "TR520" and "same in 1 more place" in f["message"] for f in medium)
    assert all(any(f["code"] == code and "this rule's findings were worth a comment" in f["message"]
                   for f in medium) for code in capped - {"TR520"}), sorted(capped)
