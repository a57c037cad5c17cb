"""Issue 11, holdout sweep 2: noise classes judged on real code (TR516 unused
sub-modules outside DDP, correctness findings in test files, TR207 memory
banks)."""

from __future__ import annotations

from torchreview.engine.runner import Settings, run_review


def _review(tmp_path, files: dict[str, str], codes: tuple[str, ...], **kw):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return run_review([str(tmp_path)], Settings(rule_codes=codes, jobs=1, **kw)).findings


BACKBONE = """\
from torch import nn


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return self.conv(x)
"""

TRAIN = """\
import torch
from torch.nn.parallel import DistributedDataParallel
from backbone import ResNet

model = DistributedDataParallel(ResNet(){flag})
"""


def test_unused_submodule_is_a_defect_only_next_to_ddp_without_find_unused(tmp_path):
    # one folder per project: the project's file list is memoised for a few seconds
    alone = _review(tmp_path / "a", {"backbone.py": BACKBONE}, ("TR516",))
    assert [(f.line, f.kind, f.severity.label) for f in alone] == [(8, "advice", "low")]
    assert _review(tmp_path / "a", {}, ("TR516",), advice_codes=()) == []  # hidden by default
    tolerant = _review(tmp_path / "b", {"backbone.py": BACKBONE,
                                        "train.py": TRAIN.format(flag=", find_unused_parameters=True")}, ("TR516",))
    assert [f.kind for f in tolerant] == ["advice"]
    strict = _review(tmp_path / "c", {"backbone.py": BACKBONE, "train.py": TRAIN.format(flag="")}, ("TR516",),
                     advice_codes=())
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.kind) for f in strict] == [("backbone.py", 8, "likely-defect")]
    assert "find_unused_parameters=True" in strict[0].message


def test_unused_submodule_of_a_skeleton_forward_is_silent(tmp_path):
    skeleton = BACKBONE.replace("return self.conv(x)", "## encode ##\n        return x")
    assert _review(tmp_path, {"backbone.py": skeleton, "train.py": TRAIN.format(flag="")}, ("TR516",)) == []


FIXTURE_NET = """\
import torch
from torch import nn
import torch.nn.functional as F


class MyCriterion(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin0 = nn.Linear(2, 2)

    def forward(self, y_proba, y_true):
        y_proba = self.lin0(y_proba)
        return F.nll_loss(y_proba, y_true)


def load(path):
    return torch.load(path, weights_only=False)
"""


def test_correctness_findings_in_a_test_file_are_advice_and_security_stays(tmp_path):
    codes = ("TR413", "TR102")
    (tmp_path / "tests").mkdir()
    shown = _review(tmp_path, {"tests/test_doctor.py": FIXTURE_NET}, codes, advice_codes=())
    assert [f.code for f in shown] == ["TR102"]  # weights_only=False: security is not relaxed in tests
    every = {f.code: f.kind for f in _review(tmp_path, {}, codes)}
    assert every == {"TR413": "advice", "TR102": "defect"}
    # the same code outside a test file: the loss on raw scores is a defect
    library = _review(tmp_path / "lib", {"doctor.py": FIXTURE_NET}, codes, advice_codes=())
    assert {f.code: f.kind for f in library} == {"TR413": "defect", "TR102": "defect"}


def test_a_crash_on_the_targeted_torch_stays_a_defect_in_a_test_file(tmp_path):
    (tmp_path / "tests").mkdir()
    removed = "import torch\n\nx = torch.symeig(torch.eye(2))\n"
    found = _review(tmp_path, {"tests/test_linalg.py": removed}, ("TR423",), advice_codes=())
    assert [(f.code, f.kind) for f in found] == [("TR423", "defect")]
