"""A rule's track record on judged real code caps its confidence (track_record.py;
README, What is reported): below the bar, its findings are medium confidence,
hidden by the default report and shown when asked for."""

from __future__ import annotations

import json

import pytest

from torchreview import track_record
from torchreview.cli import main
from torchreview.findings import Finding, Severity
from torchreview.track_record import Record

# TR411 (cross-entropy on softmax output) and TR514 (a silent no-op typo), both high
# confidence from their own evidence.
CODE = """\
import torch
from torch import nn
import torch.nn.functional as F


def fit(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        probs = F.softmax(model(x), dim=1)
        loss = F.cross_entropy(probs, y)
        loss.backward()
        optimizer.step()
    model.eval
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(CODE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def records(monkeypatch):
    """Replace the shipped record with a chosen one."""
    table: dict[str, dict[str, Record]] = {}
    monkeypatch.setattr(track_record, "_records", lambda: table)
    return table


def codes(capsys, *argv) -> dict[str, str]:
    main(["check", "train.py", "--no-cache", "--format", "json", "--exit-zero", *argv])
    return {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}


def test_record_ceiling_needs_enough_judged_findings_and_a_low_true_share():
    assert Record(1, 2, 1).ceiling() == "high"  # four judged: too few to say
    assert Record(2, 2, 1).ceiling() == "medium"  # 40 %
    assert Record(3, 1, 1).ceiling() == "high"  # 60 %: at the bar
    assert Record(5, 3, 2).ceiling() == "medium"  # 50 %
    assert Record(9, 1, 0).ceiling() == "high"


def test_two_short_records_that_agree_add_up(records):
    records["TR411"] = {"fresh": Record(0, 2, 2), "rerun": Record(0, 1, 0)}
    records["TR514"] = {"fresh": Record(2, 1, 1), "rerun": Record(1, 0, 0)}
    assert track_record.ceiling("TR411") == "medium"  # 0 of 5 added up
    assert track_record.ceiling("TR514") == "high"  # 3 of 5


def test_without_a_record_nothing_changes(project, capsys, records):
    found = codes(capsys)
    assert {"TR411", "TR514"} <= set(found)
    assert found["TR411"]["confidence"] == "high"


def test_a_rule_below_the_bar_is_hidden_by_default_and_shown_when_asked(project, capsys, records):
    records["TR411"] = {"fresh": Record(true=1, noise=3, false=4), "rerun": Record(true=6, noise=1, false=1)}
    records["TR514"] = {"fresh": Record(true=8, noise=1, false=1), "rerun": Record(true=2, noise=2, false=0)}
    found = codes(capsys)
    assert "TR411" not in found and "TR514" in found
    shown = codes(capsys, "--min-confidence", "medium")
    assert shown["TR411"]["confidence"] == "medium"
    assert "worth a comment in 1 of 8 judged reviews of real code" in shown["TR411"]["message"]
    assert shown["TR514"]["confidence"] == "high"
    # asked for by name: any confidence
    assert codes(capsys, "--select", "TR411")["TR411"]["confidence"] == "medium"
    # the user can set the record aside
    assert codes(capsys, "--ignore-track-record")["TR411"]["confidence"] == "high"


def test_config_key_sets_the_record_aside(project, capsys, records):
    records["TR411"] = {"rerun": Record(true=0, noise=5, false=5)}
    (project / "pyproject.toml").write_text("[tool.torchreview]\ntrack-record = false\n")
    assert codes(capsys)["TR411"]["confidence"] == "high"


def test_only_static_code_rules_and_only_high_findings_are_capped(records):
    records["TR411"] = {"fresh": Record(0, 5, 5)}
    records["TR601"] = {"fresh": Record(0, 5, 5)}
    base = dict(path="a.py", line=1, column=1, end_line=1, end_column=2, severity=Severity.HIGH, message="m",
                name="n", category="bugs", review=("bugs",))
    low = Finding(code="TR411", confidence="low", **base)
    assert track_record.calibrated(low) is low
    runtime = Finding(code="TR601", detection="runtime", **base)
    assert track_record.calibrated(runtime) is runtime
    capped = track_record.calibrated(Finding(code="TR411", **base))
    assert capped.confidence == "medium" and capped.message.startswith("m (medium confidence")


def test_rule_docs_and_catalog_show_the_record(capsys, records):
    records["TR411"] = {"fresh": Record(2, 3, 5), "rerun": Record(7, 1, 0)}
    assert main(["rules", "TR411"]) == 0
    out = capsys.readouterr().out
    assert "## Measured on real code" in out and "2 of 10 findings" in out and "7 of 8 findings" in out
    assert "Shown by default: no (medium confidence at most" in out
    assert main(["rules", "--format", "json"]) == 0
    rules = {r["code"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    assert rules["TR411"]["measured"] == {"fresh": {"true": 2, "noise": 3, "false": 5},
                                          "rerun": {"true": 7, "noise": 1, "false": 0}, "ceiling": "medium"}
    assert rules["TR601"]["measured"] is None


@pytest.mark.shipped_track_record
def test_shipped_record_is_well_formed():
    raw = json.loads((track_record.resources.files("torchreview.data") / "track_record.json").read_text("utf-8"))
    assert raw["rules"], "the shipped record is empty"
    for code, kinds in raw["rules"].items():
        assert code.startswith("TR") and set(kinds) <= set(track_record.RECORDS)
        for counts in kinds.values():
            assert all(isinstance(counts[k], int) and counts[k] >= 0 for k in ("true", "noise", "false"))
    # the policy reads what the file holds
    capped = [code for code in raw["rules"] if track_record.ceiling(code) == "medium"]
    assert all(track_record._lowest(code) is not None for code in capped)
