"""The second axis: kind and confidence per finding, and the default reporting policy."""

from __future__ import annotations

from torchreview.engine.runner import Settings, run_review

HEURISTIC = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(3))

    def forward(self, x):
        return x.squeeze() + self.w.data


def step(net: Net, logits, labels: torch.Tensor):
    probs = torch.softmax(logits, dim=-1)
    return torch.nn.functional.mse_loss(probs.squeeze(), labels), logits.data, labels.data
"""

REMOVED_AND_DEPRECATED = """\
import torch
from torch._six import inf

a = torch.solve(torch.ones(2, 1), torch.eye(2))
b = torch.range(0, 3)
"""


def _review(tmp_path, text, codes, **kw):
    path = tmp_path / "code.py"
    path.write_text(text)
    findings = run_review([str(path)], Settings(rule_codes=codes, jobs=1, **kw)).findings
    return [p for f in findings for p in (f.parts or (f,))]  # each place of a merged finding


def _by_line(findings):
    return {(f.code, f.line): (f.severity.label, f.kind, f.confidence) for f in findings}


def test_name_only_guesses_lower_the_confidence(tmp_path):
    got = _by_line(_review(tmp_path, HEURISTIC, ("TR410", "TR505")))
    # `x` in forward: its kind is not even known by name -> low; `probs` is assigned -> rule default
    assert got[("TR505", 11)] == ("medium", "advice", "low")
    assert got[("TR505", 16)] == ("medium", "advice", "medium")
    # `.data` of an assigned parameter / an annotated tensor: sure; of an untyped `logits`: a guess
    assert got[("TR410", 11)] == ("low", "advice", "high")
    data = {f.message.split("`")[1]: f.confidence for f in _review(tmp_path, HEURISTIC, ("TR410",))}
    assert data == {"self.w.data": "high", "logits.data": "medium", "labels.data": "high"}


def test_removed_api_is_a_high_defect_and_a_deprecation_is_hidden_advice(tmp_path):
    codes = ("TR423", "TR429")
    shown = _by_line(_review(tmp_path, REMOVED_AND_DEPRECATED, codes, target_torch=(2, 4), advice_codes=()))
    assert shown == {("TR429", 2): ("high", "defect", "high"), ("TR423", 4): ("high", "defect", "high")}
    everything = _by_line(_review(tmp_path, REMOVED_AND_DEPRECATED, codes, target_torch=(2, 4)))
    assert everything[("TR423", 5)] == ("low", "advice", "high")


def test_advice_is_kept_for_the_codes_asked_for(tmp_path):
    text = "import torch\nmodel = torch.nn.DataParallel(torch.nn.Linear(2, 2))\n"
    assert _review(tmp_path, text, ("TR212",), advice_codes=()) == []
    assert [f.code for f in _review(tmp_path, text, ("TR212",), advice_codes=("TR212",))] == ["TR212"]
    assert [f.code for f in _review(tmp_path, text, ("TR212",))] == ["TR212"]  # library default: all


def test_security_advice_is_shown_only_when_asked(tmp_path):
    from torchreview.engine.runner import is_shown
    from torchreview.catalog import rule_by_code

    finding = rule_by_code()["TR104"].make_finding(path="a.py", line=1, message="m", kind="advice")
    assert not is_shown(finding, Settings(rule_codes=("TR104",), advice_codes=()))
    assert is_shown(finding, Settings(rule_codes=("TR104",), advice_codes=("TR104",)))
    defect = rule_by_code()["TR104"].make_finding(path="a.py", line=1, message="m")
    assert is_shown(defect, Settings(rule_codes=("TR104",), advice_codes=()))
    other = rule_by_code()["TR212"].make_finding(path="a.py", line=1, message="m")
    assert not is_shown(other, Settings(rule_codes=("TR212",), advice_codes=()))


LOADS = """\
import argparse
import torch

args = argparse.ArgumentParser().parse_args()
a = torch.load("model.pt")
b = torch.load(args.resume)
c = torch.load("model.pt", weights_only=False)
d = torch.load(args.resume, weights_only=False)
"""


def test_missing_weights_only_follows_the_target_torch(tmp_path):
    """torch >= 2.6 (or unknown: newest) loads weights-only by default, so a missing
    argument is hidden advice; older targets keep the defect; an explicit False is a
    defect on every target -- at medium confidence in a one-off script (a deliberate
    opt-out on the operator's own file), and on an object of unknown kind in a package."""
    codes = ("TR101", "TR102")
    for target in (None, (2, 6), (2, 13)):
        every = _by_line(_review(tmp_path, LOADS, codes, target_torch=target))
        assert every == {("TR102", 5): ("medium", "advice", "high"), ("TR101", 6): ("medium", "advice", "high"),
                         ("TR102", 7): ("high", "defect", "medium"), ("TR101", 8): ("high", "defect", "medium")}
        shown = _by_line(_review(tmp_path, LOADS, codes, target_torch=target, advice_codes=(),
                                 min_confidence="medium"))
        assert set(shown) == {("TR102", 7), ("TR101", 8)}
    old = _by_line(_review(tmp_path, LOADS, codes, target_torch=(2, 5), advice_codes=()))
    # before 2.6: TR102 (nothing shows who makes the file) medium, TR101 (a command-line path:
    # the operator's own file) medium too
    assert old == {("TR102", 5): ("high", "defect", "medium"), ("TR101", 6): ("high", "defect", "medium"),
                   ("TR102", 7): ("high", "defect", "medium"), ("TR101", 8): ("high", "defect", "medium")}
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "loads.py").write_text(LOADS.replace("args = ", "def load():\n    args = ")
                                      .replace("\na = ", "\n    a = ").replace("\nb = ", "\n    b = ")
                                      .replace("\nc = ", "\n    c = ").replace("\nd = ", "\n    d = "))
    shipped = run_review([str(package / "loads.py")], Settings(rule_codes=codes, jobs=1, advice_codes=())).findings
    # an explicit opt-out on an object of unknown kind: mostly deliberate, medium (high where the
    # result goes to `load_state_dict` or the project's own save is plain: test_residue_classes_dev4);
    # a path from the command line is the operator's own file, medium in a package too
    assert {(f.code, f.line): f.confidence for f in shipped} == {("TR102", 8): "medium", ("TR101", 9): "medium"}


def test_review_security_select_and_show_advice_show_security_advice(tmp_path, monkeypatch, capsys):
    import json

    from torchreview.cli import main

    (tmp_path / "a.py").write_text(LOADS)
    monkeypatch.chdir(tmp_path)

    def lines(*extra):
        main(["check", ".", "--format", "json", "--no-cache", "--exit-zero", *extra])
        return sorted((f["code"], f["line"]) for f in json.loads(capsys.readouterr().out)["findings"]
                      if f["code"] in ("TR101", "TR102"))

    assert lines() == []  # a one-off script: advice and the deliberate opt-outs are hidden
    assert lines("--min-confidence", "medium") == [("TR101", 8), ("TR102", 7)]
    everything = [("TR101", 6), ("TR101", 8), ("TR102", 5), ("TR102", 7)]
    assert lines("--review", "security") == everything
    assert lines("--show-advice") == [("TR101", 6), ("TR102", 5)]  # the advice, at high confidence
    assert lines("--show-advice", "--min-confidence", "medium") == everything
    assert lines("--select", "TR101,TR102") == everything
    # before torch 2.6 a missing weights_only unpickles everything: a defect -- at medium
    # confidence for a path the operator gives on the command line (their own file)
    assert lines("--target-torch", "2.4") == []
    assert ("TR101", 6) in lines("--target-torch", "2.4", "--min-confidence", "medium")


def test_fix_skips_hidden_advice(tmp_path):
    from torchreview.fixer import fix_file

    path = tmp_path / "code.py"
    path.write_text("import torch\nx = torch.zeros(3).to('cuda')\n")  # TR211 advice, safe fix
    hidden = fix_file(str(path), "code.py", Settings(rule_codes=("TR211",), jobs=1, advice_codes=()),
                      unsafe=False)
    assert not hidden.changed
    asked = fix_file(str(path), "code.py", Settings(rule_codes=("TR211",), jobs=1, advice_codes=("TR211",)),
                     unsafe=False)
    assert asked.changed and b"device=" in asked.fixed
