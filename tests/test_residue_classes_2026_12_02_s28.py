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
