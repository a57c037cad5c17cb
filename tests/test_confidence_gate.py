"""The minimum-confidence gate of the default report (README, What is reported):
below-threshold findings are hidden and counted, unless the rule is asked for by
name or prefix, a `--review` mode other than general is given (it reports its
rules at every confidence) or `--min-confidence` lowers the bar."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchreview.cli import main
from torchreview.engine.runner import Settings, is_shown

# TR430 twice in one forward: on a layer's output (direct evidence: high) and on an
# untyped argument that may be an array (medium). TR504: `.eval()` in the epoch loop
# while the model goes to a callback we cannot read (medium; a bugs-mode rule).
CODE = """\
import numpy as np
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask):
        h = self.proj(x)
        g = np.exp(h.detach().cpu().numpy())
        z = np.asarray(mask)
        return h * torch.as_tensor(g) + torch.as_tensor(z)


def fit(model, loader, optimizer, log_fn):
    model.train()
    for epoch in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
        model.eval()
        log_fn(model)
"""
HIGH_430, MEDIUM_430, MEDIUM_504 = ("TR430", 13), ("TR430", 14), ("TR504", 25)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "gate.py").write_text(CODE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv) -> tuple[int, dict]:
    code = main(["check", "gate.py", "--no-cache", "--format", "json", *argv])
    return code, json.loads(capsys.readouterr().out)


def found(report: dict) -> set[tuple[str, int]]:
    return {(f["code"], f["line"]) for f in report["findings"]}


def text(capsys, *argv) -> tuple[int, str]:
    code = main(["check", "gate.py", "--no-cache", *argv])
    return code, capsys.readouterr().out


def test_default_report_hides_below_high_and_says_how_to_see_them(project, capsys):
    code, out = text(capsys)
    assert code == 1
    assert "gate.py:13:13: TR430" in out and "gate.py:14:" not in out and "TR504" not in out
    assert ("2 findings below high confidence not shown (--min-confidence medium shows them, --select a "
            "rule's; see README, What is reported).") in out
    _, report = run(capsys)
    assert found(report) == {HIGH_430}
    assert {f["confidence"] for f in report["findings"]} == {"high"}


def test_min_confidence_lowers_the_bar(project, capsys):
    _, report = run(capsys, "--min-confidence", "medium")
    assert found(report) == {HIGH_430, MEDIUM_430, MEDIUM_504}
    _, out = text(capsys, "--min-confidence", "medium")
    assert "below" not in out  # nothing hidden for confidence, so no note


def test_a_rule_asked_for_by_name_or_prefix_reports_every_confidence(project, capsys):
    for selection in (["--select", "TR430"], ["--select", "TR4"], ["--select", "numpy-in-forward"]):
        _, report = run(capsys, *selection)
        assert {f for f in found(report) if f[0] == "TR430"} == {HIGH_430, MEDIUM_430}, selection
    _, report = run(capsys, "--extend-select", "TR504")
    assert found(report) == {HIGH_430, MEDIUM_504}  # the other rule keeps the gate


def test_an_explicit_minimum_holds_for_named_rules_too(project, capsys):
    # naming a rule lowers the bar only while no minimum is asked for
    _, report = run(capsys, "--select", "TR430", "--min-confidence", "high")
    assert found(report) == {HIGH_430}
    _, report = run(capsys, "--extend-select", "TR504", "--min-confidence", "high")
    assert found(report) == {HIGH_430}
    (project / "pyproject.toml").write_text('[tool.torchreview]\nmin-confidence = "high"\n')
    _, report = run(capsys, "--select", "TR430")
    assert found(report) == {HIGH_430}


def test_a_review_mode_shows_every_confidence_unless_told_otherwise(project, capsys):
    _, report = run(capsys, "--review", "bugs")
    assert found(report) == {MEDIUM_504}
    _, report = run(capsys, "--review", "bugs", "--min-confidence", "high")
    assert found(report) == set()
    _, report = run(capsys, "--review", "general")  # general is the default report
    assert found(report) == {HIGH_430}
    (project / "pyproject.toml").write_text('[tool.torchreview]\nreview = "bugs"\n')
    _, report = run(capsys)
    assert found(report) == {MEDIUM_504}


def test_fail_on_only_sees_what_is_reported(project, capsys):
    (project / "gate.py").write_text(CODE.replace("g = np.exp(h.detach().cpu().numpy())", "g = h"))
    code, report = run(capsys)
    assert code == 0 and report["findings"] == []
    code, report = run(capsys, "--min-confidence", "low")
    assert code == 1 and found(report) == {MEDIUM_430, MEDIUM_504}


def test_configuration_key(project, capsys):
    (project / "pyproject.toml").write_text('[tool.torchreview]\nmin-confidence = "medium"\n')
    _, report = run(capsys)
    assert found(report) == {HIGH_430, MEDIUM_430, MEDIUM_504}
    _, report = run(capsys, "--min-confidence", "high")  # the command line wins
    assert found(report) == {HIGH_430}
    (project / "pyproject.toml").write_text('[tool.torchreview]\nmin-confidence = "sure"\n')
    assert main(["check", "gate.py", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "'min-confidence' must be one of low, medium, high" in err and "Traceback" not in err


def test_hidden_means_not_reported_in_every_format(project, capsys):
    for fmt in ("sarif", "markdown", "github", "concise"):
        main(["check", "gate.py", "--no-cache", "--format", fmt])
        out = capsys.readouterr().out
        assert "TR430" in out and "TR504" not in out, fmt
    sarif = json.loads(main(["check", "gate.py", "--no-cache", "--format", "sarif"]) and capsys.readouterr().out)
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"]
            for r in sarif["runs"][0]["results"]] == [13]


def test_baseline_records_and_hides_only_what_is_reported(project, capsys):
    assert main(["check", "gate.py", "--no-cache", "--write-baseline", "base.json"]) == 0
    capsys.readouterr()
    recorded = json.loads((project / "base.json").read_text())
    assert "TR504" not in json.dumps(recorded) and "TR430" in json.dumps(recorded)
    code, report = run(capsys, "--baseline", "base.json")
    assert code == 0 and report["findings"] == []
    _, report = run(capsys, "--baseline", "base.json", "--min-confidence", "medium")
    assert found(report) == {MEDIUM_430, MEDIUM_504}  # not in the baseline: shown once asked for


def test_is_shown_policy():
    from torchreview.catalog import rule_by_code

    rule = rule_by_code()["TR430"]
    medium = rule.make_finding(path="a.py", line=1, message="m", confidence="medium")
    low = rule.make_finding(path="a.py", line=1, message="m", confidence="low")
    high = rule.make_finding(path="a.py", line=1, message="m", confidence="high")
    gate = Settings(rule_codes=("TR430",), min_confidence="high")
    assert is_shown(high, gate) and not is_shown(medium, gate) and not is_shown(low, gate)
    assert is_shown(medium, Settings(rule_codes=("TR430",), min_confidence="medium"))
    assert not is_shown(low, Settings(rule_codes=("TR430",), min_confidence="medium"))
    assert is_shown(low, Settings(rule_codes=("TR430",), min_confidence="high", any_confidence_codes=("TR430",)))
    assert is_shown(low, Settings(rule_codes=("TR430",)))  # the library default shows every confidence


def test_lsp_settings_follow_the_gate(tmp_path):
    from torchreview.lsp.analysis import SettingsError, build_review_settings, default_settings, \
        normalise_settings

    assert default_settings().min_confidence == "high"
    assert build_review_settings(str(tmp_path), {}).min_confidence == "high"
    editor = normalise_settings({"torchreview": {"minConfidence": "medium"}})
    assert build_review_settings(str(tmp_path), editor).min_confidence == "medium"
    assert build_review_settings(str(tmp_path), {"review": "bugs"}).min_confidence == "low"
    assert build_review_settings(str(tmp_path), {"review": "general"}).min_confidence == "high"
    asked = build_review_settings(str(tmp_path), {"select": ["TR430"]})
    assert asked.min_confidence == "high" and asked.any_confidence_codes == ("TR430",)
    with pytest.raises(SettingsError, match="min-confidence"):
        build_review_settings(str(tmp_path), {"min-confidence": "certain"})


def _flake8(cwd: Path, *argv: str) -> set[tuple[int, str]]:
    done = subprocess.run([sys.executable, "-m", "flake8", "--jobs", "1", "--format", "%(row)d:%(code)s",
                           *argv, "gate.py"], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return {(int(row), code) for row, code in (line.split(":") for line in done.stdout.splitlines())}


def test_flake8_plugin_applies_the_same_gate(project):
    # the gate on the rules' own evidence (TR430's record on judged real code would cap it)
    (project / "pyproject.toml").write_text('[tool.torchreview]\ntrack-record = false\n')
    assert _flake8(project, "--select", "TR") == {(13, "TR430")}
    assert _flake8(project, "--select", "TR", "--torchreview-min-confidence", "medium") >= {
        (13, "TR430"), (14, "TR430"), (25, "TR504")}
    assert _flake8(project, "--select", "TR430") == {(13, "TR430"), (14, "TR430")}
    (project / "pyproject.toml").write_text('[tool.torchreview]\nmin-confidence = "medium"\ntrack-record = false\n')
    assert {(14, "TR430"), (25, "TR504")} <= _flake8(project, "--select", "TR")
