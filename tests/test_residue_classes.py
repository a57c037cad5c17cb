"""Classes of findings judged noise/false on the session-3 sweeps (residue), checked at
default settings: what the default report hides and what it keeps."""
from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review

FIXTURES = Path(__file__).parent / "fixtures"


def _default(path: Path, codes: tuple[str, ...], **kw):
    """The default report's gate: advice hidden, only high confidence shown."""
    settings = Settings(rule_codes=codes, jobs=1, advice_codes=(), min_confidence="high", **kw)
    return run_review([str(path)], settings).findings


def test_old_torch_load_of_an_operator_path_is_hidden_advice_and_a_download_stays_a_defect():
    path = FIXTURES / "security" / "TR101_old_torch_operator_path.py"
    everything = {f.line: f for f in run_review([str(path)], Settings(rule_codes=("TR101",), jobs=1,
                                                                        target_torch=(1, 4))).findings}
    assert sorted(everything) == [21, 26, 31]
    for line in (21, 26):
        f = everything[line]
        assert (f.kind, f.confidence, f.severity.label) == ("advice", "medium", "medium"), line
        assert "predates `weights_only`" in f.message
    assert (everything[31].kind, everything[31].severity.label) == ("defect", "high")
    shown = _default(path, ("TR101",), target_torch=(1, 4))
    assert [f.line for f in shown] == [31]


LAYERS = """\
import torch
from torch import nn


class MyDense(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = torch.randn(n_in, n_out, requires_grad=True)
        self.bias = torch.zeros(n_out, requires_grad=True)

    def forward(self, x):
        return x @ self.weight + self.bias


class TwoDevices(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Parameter(torch.randn(4, 4)).cuda(0)
        self.second = nn.Parameter(torch.randn(4, 4)).cuda(1)
        self.gate = torch.ones(4, requires_grad=True)

    def forward(self, x):
        return (x @ self.first + x @ self.second) * self.gate
"""


def test_one_constructor_keeping_tensors_the_same_wrong_way_is_one_finding(tmp_path):
    (tmp_path / "layers.py").write_text(LAYERS)
    found = sorted(run_review([str(tmp_path)], Settings(rule_codes=("TR511",), jobs=1)).findings,
                   key=lambda f: f.line)
    # weight + bias and the other class's gate (one habit in one file): one finding; the two moved
    # parameters (another message): one
    assert [(f.line, [r.line for r in f.related]) for f in found] == [(8, [9, 20]), (18, [19])]
    assert "same in 2 more places" in found[0].message


def test_remote_code_from_a_local_folder_is_hidden_advice_and_hub_ids_stay_reported():
    path = FIXTURES / "security" / "TR104_local_folder.py"
    everything = {p.line: p for f in run_review([str(path)], Settings(rule_codes=("TR104",), jobs=1)).findings
                  for p in (f.parts or (f,))}  # each place of a merged finding keeps its own confidence
    assert sorted(everything) == [14, 22, 26, 30]
    for line in (14, 22):
        f = everything[line]
        assert (f.kind, f.confidence, f.severity.label) == ("advice", "medium", "low"), line
        assert "local folder" in f.message and "revision" not in f.message
    # a one-off script: the Hub id from the command line (the operator names their own model)
    # and a fixed id are both medium confidence, hidden by default
    assert sorted(f.line for f in _default(path, ("TR104",))) == []
    assert (everything[26].kind, everything[26].confidence) == ("defect", "medium")
    assert everything[30].kind == "defect" and "revision" in everything[30].message
