"""Residue classes from blind tests 103-104 (twenty-eighth session): each class has positives and
near-misses, written here (no code of the reviewed repositories)."""
from __future__ import annotations

import pytest

from residue_helpers import found, write

# --- torch pins: a requirements file saved from `conda list` (a pre-release version, then the build
# and channel columns) pins the torch the authors ran (contrastive segmentation's torch 1.4.0a0:
# TR429 on `torch._six` under it, judged noise in blind test 103) -------------------------------

CONDA_LIST = ("# packages in environment at /home/me/miniconda3/envs/seg:\n#\n"
              "# Name                    Version                   Build  Channel\n"
              "numpy                     1.19.2           py38h54aff64_0  \n"
              "TORCH_ROW\n"
              "torchvision               0.5.0a0+85b8fbf          pypi_0    pypi\n")


@pytest.mark.parametrize(("row", "pin"), [
    ("torch                     1.4.0a0+7f73f1d          pypi_0    pypi", (1, 4)),
    ("pytorch                   1.7.1           py3.8_cuda10.2.89_cudnn7.6.5_0    pytorch", (1, 7)),
    ("torch                     1.10.0rc1", (1, 10)),
])
def test_conda_list_rows_pin_the_torch(tmp_path, row, pin):
    from torchreview.config import nearest_torch_pin

    write(tmp_path, {"requirements.txt": CONDA_LIST.replace("TORCH_ROW", row), "train.py": "import torch\n"})
    assert nearest_torch_pin(str(tmp_path / "train.py"), memo=False) == (True, pin)


@pytest.mark.parametrize("row", [
    "torch is needed     1.4.0 or newer",  # prose, not a row
    "torchmetrics              0.5.0           pypi_0    pypi",  # another package
])
def test_rows_that_are_no_torch_pin_pin_nothing(tmp_path, row):
    from torchreview.config import nearest_torch_pin

    write(tmp_path, {"requirements.txt": CONDA_LIST.replace("TORCH_ROW", row), "train.py": "import torch\n"})
    assert nearest_torch_pin(str(tmp_path / "train.py"), memo=False)[1] != (1, 4)


def test_tr429_torch_six_under_a_conda_list_pin_is_advice(tmp_path):
    root = write(tmp_path, {"requirements.txt": CONDA_LIST.replace(
        "TORCH_ROW", "torch                     1.4.0a0+7f73f1d          pypi_0    pypi"),
        "collate.py": "from torch._six import string_classes\n\nNAMES = string_classes\n"})
    found_ = found(root, ("TR429",), detect_torch=True)
    assert found_ and all(f.kind == "advice" for f in found_), [(f.kind, f.message) for f in found_]


def test_tr429_torch_six_without_a_pin_stays_a_defect(tmp_path):
    root = write(tmp_path, {"collate.py": "from torch._six import string_classes\n\nNAMES = string_classes\n"})
    assert [f.kind for f in found(root, ("TR429",), detect_torch=True)] == ["defect"]


# --- a retired folder (`old_reference/`) in a checkout without a project marker (a downloaded
# archive): the file's own folder retires it (McCells' archived notebook, TR411 judged noise) ----

DOUBLE_SOFTMAX = '''import torch
from torch import nn


class Clf(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=1)


model = Clf()
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in [(torch.randn(2, 4), torch.tensor([0, 1]))]:
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def _tr411(tmp_path, folder: str) -> list:
    root = write(tmp_path / "repo", {f"{folder}/train.py": DOUBLE_SOFTMAX, "src/other.py": "import torch\n"})
    return [(f.confidence, "retired" in f.message) for f in found(root, ("TR411",))]


@pytest.mark.parametrize("folder", ["old_reference", "archive", "legacy"])
def test_tr411_in_a_retired_folder_of_an_unmarked_checkout_is_medium(tmp_path, folder):
    assert _tr411(tmp_path, folder) == [("medium", True)]


@pytest.mark.parametrize("folder", ["reference", "golden_old", "src"])
def test_tr411_in_a_live_folder_of_an_unmarked_checkout_stays_high(tmp_path, folder):
    assert _tr411(tmp_path, folder) == [("high", False)]


# --- TR510: a subclass of fastai's `Module` (its metaclass runs `nn.Module.__init__` first),
# named through a star import of a fastai module or imported by name (a fastai notebook's loss
# module, judged false in blind test 103) ----------------------------------------------------

FASTAI_LOSS = '''IMPORTS
import torch
from torch import nn


class TripletLossish(Module):
    def __init__(self, margin=0.2):
        self.loss = nn.TripletMarginLoss(margin=margin)
        self.margin = margin

    def forward(self, a, p, n):
        return self.loss(a, p, n)
'''


@pytest.mark.parametrize("imports", [
    "from fastai.vision.all import *",
    "from fastai import *\nfrom fastai.vision.all import *",
    "from fastai.torch_core import Module",
    "from fastai.layers import Module",
])
def test_tr510_fastai_module_subclass_is_initialised_by_its_metaclass(tmp_path, imports):
    root = write(tmp_path, {"loss.py": FASTAI_LOSS.replace("IMPORTS", imports)})
    assert not found(root, ("TR510",))


@pytest.mark.parametrize("imports", [
    "from torch.nn import Module",
    "from fastai.vision.all import *\nfrom torch.nn import Module",  # the later import wins
])
def test_tr510_torch_module_subclass_without_super_init_reports(tmp_path, imports):
    text = FASTAI_LOSS.replace("IMPORTS", imports)
    root = write(tmp_path, {"loss.py": text})
    assert [f.line for f in found(root, ("TR510",))] == [text.splitlines().index("    def __init__(self, margin=0.2):") + 1]


# ... and a retired sub-project (`old_reference/` with its own requirements.txt) of a repository
# with a project marker above it; a whole project so named, with nothing above, stays live

def test_tr411_in_a_retired_sub_project_is_medium(tmp_path):
    root = write(tmp_path / "repo", {"pyproject.toml": "[project]\nname = 'cells'\n",
                                     "old_reference/requirements.txt": "torch\n",
                                     "old_reference/train.py": DOUBLE_SOFTMAX, "src/cells/model.py": "import torch\n"})
    assert [(f.confidence, "old_reference" in f.message) for f in found(root, ("TR411",))] == [("medium", True)]


def test_tr411_in_a_whole_project_named_legacy_stays_high(tmp_path):
    root = write(tmp_path / "legacy-tools", {"requirements.txt": "torch\n", "train.py": DOUBLE_SOFTMAX})
    assert [f.confidence for f in found(root, ("TR411",))] == ["high"]


# --- TR518: the saved learning rate written back into the optimizer's groups, with only
# multiplicative schedulers (ExponentialLR, StepLR ...): the schedule carries on from the restored
# rate (sound2image's DDP trainer, "the LR schedule restarts" judged false in blind test 103) ----

RESUME_LR = '''import os

import torch
from torch import nn


class Trainer:
    def __init__(self, path):
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.scheduler = torch.optim.lr_scheduler.SCHED
        self.epochs_run = 0
        if os.path.exists(path):
            self._load(path)

    def _load(self, path):
        snapshot = torch.load(path)
        self.model.load_state_dict(snapshot["MODEL"])
        self.epochs_run = snapshot["EPOCHS_RUN"]
WRITE_BACK

    def train(self, epochs, path):
        for epoch in range(self.epochs_run, epochs):
            for x in [torch.randn(2, 4)]:
                self.optimizer.zero_grad()
                self.model(x).sum().backward()
                self.optimizer.step()
            self.scheduler.step()
            torch.save({"MODEL": self.model.state_dict(), "EPOCHS_RUN": epoch + 1,
                        "LR": self.scheduler.get_last_lr()[0]}, path)


if __name__ == "__main__":
    Trainer("snap.pt").train(10, "snap.pt")
'''

_WRITE_BACKS = {
    "name": '        lr = snapshot["LR"]\n        for g in self.optimizer.param_groups:\n            g["lr"] = lr\n',
    "direct": '        for group in self.optimizer.param_groups:\n            group["lr"] = snapshot["LR"]\n',
}


def _tr518_schedule_restarts(tmp_path, sched: str, write_back: str) -> list:
    text = RESUME_LR.replace("SCHED", sched).replace("WRITE_BACK\n", write_back)
    root = write(tmp_path, {"train.py": text})
    return ["LR schedule restarts" in f.message for f in found(root, ("TR518",))]


@pytest.mark.parametrize("sched", ["ExponentialLR(self.optimizer, gamma=0.9)",
                                   "StepLR(self.optimizer, step_size=3)"])
@pytest.mark.parametrize("how", sorted(_WRITE_BACKS))
def test_tr518_lr_written_back_with_a_multiplicative_scheduler_is_no_restart(tmp_path, sched, how):
    assert True not in _tr518_schedule_restarts(tmp_path, sched, _WRITE_BACKS[how])


@pytest.mark.parametrize(("sched", "write_back"), [
    ("ExponentialLR(self.optimizer, gamma=0.9)", ""),  # nothing written back
    ("CosineAnnealingLR(self.optimizer, T_max=10)", _WRITE_BACKS["name"]),  # computed from its own epoch
    ("ExponentialLR(self.optimizer, gamma=0.9)",  # a constant, not the saved rate
     '        for g in self.optimizer.param_groups:\n            g["lr"] = 0.1\n'),
])
def test_tr518_schedule_restarts_without_a_resuming_write_back(tmp_path, sched, write_back):
    assert _tr518_schedule_restarts(tmp_path, sched, write_back) == [True]


# --- TR504: the loop's evaluation is handed only a copy of the trained model
# (`test(copy.deepcopy(model), data)`): its `.eval()` switches the copy, never the model the loop
# trains (a federated-learning attack's per-round test, judged false in blind test 104) -----------

EVALUATION = '''import torch


def test_img(net_g, data):
    net_g.eval()
    with torch.no_grad():
        return sum(net_g(x).sum().item() for x in data)
'''

ATTACK = '''import copy

import torch
from torch import nn

from models.evaluation import test_img


DROPOUT_NET


def test(model, data):
    return test_img(copy.deepcopy(model), data)


def benign_train(model, data):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in data:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()


def attack(data):
    model = Net()
    model_benign = copy.deepcopy(model)
    rounds = 0
    while rounds < 10:
        benign_train(model_benign, data)
        rounds += 1
        score = CALL
    return score
'''


def _tr504(tmp_path, call: str) -> list:
    from residue_helpers import DROPOUT_NET

    root = write(tmp_path, {"requirements.txt": "torch\n", "models/__init__.py": "",
                            "models/evaluation.py": EVALUATION,
                            "models/attack.py": ATTACK.replace("DROPOUT_NET", DROPOUT_NET).replace("CALL", call)})
    return [f.line for f in found(root, ("TR504",))]


@pytest.mark.parametrize("call", ["test(copy.deepcopy(model_benign), data)",
                                  "test_img(copy.deepcopy(model_benign), data=data)"])
def test_tr504_evaluation_of_a_copy_leaves_the_trained_model_alone(tmp_path, call):
    assert _tr504(tmp_path, call) == []


@pytest.mark.parametrize("call", ["test_img(model_benign, data)",
                                  "test_img(model_benign, copy.deepcopy(data))"])
def test_tr504_evaluation_of_the_trained_model_itself_reports(tmp_path, call):
    assert _tr504(tmp_path, call)


# --- TR207: a smoke test's forward pass on made-up input (moved to the device, or bound to a name
# first) whose output is dropped (`_ = model(x)`), shown (`print(f"{out.shape} {out.min()}")`) or
# measured through a part (`out["logits"].shape`): no prediction is made (three setup checks,
# judged noise in blind test 104) ----------------------------------------------------------------

SMOKE = '''import torch
from torch import nn


DROPOUT_NET


def check(loader):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Net().to(device)
    model.load_state_dict(torch.load("net.pt", map_location=device, weights_only=True))
    PROBE


check([torch.randn(2, 4)])
'''

_PROBES = {
    "dropped": 'x = torch.ones(1, 4).to(device)\n    with torch.no_grad():\n        _ = model(x)',
    "shown": 'with torch.no_grad():\n        out = model(torch.randn(2, 4).to(device))\n'
             '    print(f"out: {out.shape}, range=[{out.min():.2f}, {out.max():.2f}]")',
    "part measured": 'x = torch.randn(2, 4)\n    with torch.no_grad():\n        out = model(x)\n'
                     '    print(f"first row: {out[0].shape}")',
}


def _tr207_smoke(tmp_path, probe: str) -> list:
    from residue_helpers import DROPOUT_NET

    root = write(tmp_path, {"setup_check.py": SMOKE.replace("DROPOUT_NET", DROPOUT_NET).replace("PROBE", probe)})
    return [f.line for f in found(root, ("TR207",))]


@pytest.mark.parametrize("probe", ["dropped", "shown", "part measured"])
def test_tr207_smoke_forward_on_made_up_input_is_silent(tmp_path, probe):
    assert _tr207_smoke(tmp_path, _PROBES[probe]) == []


@pytest.mark.parametrize("probe", [
    # real data shown: a prediction looked at
    'x = next(iter(loader)).to(device)\n    with torch.no_grad():\n        out = model(x)\n'
    '    print(f"range=[{out.min():.2f}, {out.max():.2f}]")',
    # made-up input, but the output is kept as a result
    'with torch.no_grad():\n        out = model(torch.randn(2, 4).to(device))\n    torch.save(out, "reference.pt")',
])
def test_tr207_forward_whose_output_is_used_still_reports(tmp_path, probe):
    assert _tr207_smoke(tmp_path, probe)
