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
    "measured on the spot": 'with torch.no_grad():\n        dummy = torch.randn(2, 4).to(device)\n'
                            '        print(f"output shape: {model(dummy).shape}")',
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


# --- TR520 (and every save link): a save in a helper nothing calls -- its only call commented out --
# writes no file, so no load reads what it holds (dense-matching's `save_checkpoint` with `args`
# in it, linked to a test script's load: judged false in blind test 104) ----------------------

BUILDER = '''import torch


def save_checkpoint(args, epoch, model, optimizer, path):
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch, "args": args}
    torch.save(state, path)
'''

TRAIN_CALLING = '''import argparse

import torch
from torch import nn

from tools.builder import save_checkpoint


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="ckpt.pth")
    args = parser.parse_args()
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        SAVE


if __name__ == "__main__":
    main()
'''

TEST_LOADING = '''import torch
from torch import nn


def main(path="ckpt.pth"):
    model = nn.Linear(4, 1)
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["model"])
    print(checkpoint["epoch"], checkpoint["args"])


if __name__ == "__main__":
    main()
'''


def _tr520_links(tmp_path, save: str) -> list:
    root = write(tmp_path, {"requirements.txt": "torch==2.6.0\n", "tools/__init__.py": "",
                            "tools/builder.py": BUILDER, "train.py": TRAIN_CALLING.replace("SAVE", save),
                            "test.py": TEST_LOADING})
    return [f.path.rsplit("/", 1)[-1] for f in found(root, ("TR520",), detect_torch=True)]


def test_tr520_save_in_a_helper_whose_only_call_is_commented_out_writes_nothing(tmp_path):
    assert _tr520_links(tmp_path, "# save_checkpoint(args, epoch, model, optimizer, args.out)") == []


@pytest.mark.parametrize("save", [
    "save_checkpoint(args, epoch, model, optimizer, args.out)",  # called
    "pass  # save_checkpoint is never named here, and no call of it is commented out",
])
def test_tr520_save_in_a_helper_not_switched_off_links_the_load(tmp_path, save):
    assert _tr520_links(tmp_path, save) == ["test.py"]


# --- TR510: a mixin whose subclasses, in another file, initialise it by hand after another base
# (`nn.Linear.__init__(self, ...)`, then `LoRAMixin.__init__(self, ...)`): the module is set up
# before the mixin's `__init__` runs (a low-rank training repo's LoRA wrappers, judged false twice
# in blind test 105) --------------------------------------------------------------------------

MIXIN = '''import torch
from torch import nn


class LoRAMixin(nn.Module):
    def __init__(self, rank=4):
        self.rank = rank
        self.lora_a = nn.Parameter(torch.zeros(rank, self.in_features))
'''

SUBCLASS = '''from torch import nn

from lowrank.mixin import LoRAMixin


class LoRALinear(LoRAMixin, nn.Linear):
    def __init__(self, n_in, n_out, rank=4):
        INIT
'''


@pytest.mark.parametrize(("init", "reports"), [
    ("nn.Linear.__init__(self, n_in, n_out)\n        LoRAMixin.__init__(self, rank=rank)", False),
    ("LoRAMixin.__init__(self, rank=rank)", True),  # by hand, but first: nothing set the module up
    ("super().__init__(n_in, n_out)", True),  # no hand-made mixin set-up: the mixin's own init is what runs
])
def test_tr510_mixin_initialised_by_subclasses_in_another_file(tmp_path, init, reports):
    root = write(tmp_path, {"setup.py": "", "lowrank/__init__.py": "", "lowrank/mixin.py": MIXIN,
                            "lowrank/linear.py": SUBCLASS.replace("INIT", init)})
    assert bool([f for f in found(root, ("TR510",)) if f.path.endswith("mixin.py")]) is reports


# --- TR411: a validation loss only returned from a Lightning epoch-end hook (Lightning drops the
# value; nothing logs or reads it): low confidence (a BirdCLEF notebook, judged noise) ---------

LIGHTNING_HOOK = '''import lightning as L
import torch
from torch import nn


class Clf(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 3)
        self.loss_fn = nn.CrossEntropyLoss()
        self.outputs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.loss_fn(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.outputs.append((self.net(x), y))

    def HOOK(self):
        probs = nn.Softmax(dim=1)(torch.cat([o for o, _ in self.outputs]))
        target = torch.cat([t for _, t in self.outputs])
        val_loss = self.loss_fn(probs, target)
        USE

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())


L.Trainer(max_epochs=1).fit(Clf())
'''


@pytest.mark.parametrize(("hook", "use", "confidence"), [
    ("on_validation_epoch_end", 'return {"val_loss": val_loss}', "low"),  # dropped by Lightning
    ("on_validation_epoch_end", 'self.last_val_loss = val_loss\n        return {"val_loss": val_loss}',  # kept
     "high"),
    ("validation_summary", 'return {"val_loss": val_loss}', "high"),  # a helper's return: read by its caller
])
def test_tr411_loss_returned_from_a_lightning_epoch_end_hook(tmp_path, hook, use, confidence):
    root = write(tmp_path, {"model.py": LIGHTNING_HOOK.replace("HOOK", hook).replace("USE", use)})
    assert [f.confidence for f in found(root, ("TR411",))] == [confidence]


# --- torch pins: a README listing its environment in prose (`python 3.6.8, torch 1.3.0,
# torchvision 0.4.1`) pins that torch (study notes saving whole modules: TR520 judged noise in
# blind test 106, the README documenting torch 1.3) ----------------------------------------

@pytest.mark.parametrize(("readme", "pin"), [
    ("+ torch 环境使用 python 3.6.8, torch 1.3.0, torchvision 0.4.1, torchtext 0.4.0\n", (1, 3)),
    ("Environment: CUDA 10.1; torch 1.4.0 (with torchvision 0.5)\n", (1, 4)),
    ("We use torch 2.0 features such as compile.\n", None),  # prose about a version, no list
    ("Needs python 3.8, torch 1.8 or later.\n", None),  # a floor
])
def test_readme_environment_list_pins_the_torch(tmp_path, readme, pin):
    from torchreview.config import nearest_torch_pin

    write(tmp_path, {"README.md": readme, "notes/save.py": "import torch\n"})
    assert nearest_torch_pin(str(tmp_path / "notes" / "save.py"), memo=False)[1] == pin


# --- module content: members kept in a plain list on `self` are no submodules (`eval()` on the
# wrapper never reaches them): an ensemble wrapper whose constructor puts each member in eval mode
# is in no train mode to forget (a Kaggle submission's fold ensemble, TR207 judged false twice) --

ENSEMBLE = '''import torch
from torch import nn


DROPOUT_NET


class Ensemble(nn.Module):
    def __init__(self, paths):
        super().__init__()
        MEMBERS
        REGISTER

    def forward(self, x):
        with torch.no_grad():
            return torch.stack([m(x) for m in self.models]).mean(0)


def predict(paths, batches):
    models = Ensemble(paths)
    out = []
    with torch.no_grad():
        for x in batches:
            out.append(models(x))
    return out


print(predict(["a.pt", "b.pt"], [torch.randn(2, 4)]))
'''


def _tr207_ensemble(tmp_path, members: str, register: str = "") -> list:
    from residue_helpers import DROPOUT_NET

    text = ENSEMBLE.replace("DROPOUT_NET", DROPOUT_NET).replace("MEMBERS", members).replace("REGISTER", register)
    return [f.line for f in found(write(tmp_path, {"submit.py": text}), ("TR207",))]


def test_tr207_ensemble_of_members_in_a_plain_list_is_silent(tmp_path):
    members = "self.models = [Net() for _ in paths]\n        [m.eval() for m in self.models]"
    assert _tr207_ensemble(tmp_path, members) == []


@pytest.mark.parametrize(("members", "register"), [
    ("self.models = nn.ModuleList([Net() for _ in paths])", ""),  # registered: train mode by default
    ("self.models = [Net() for _ in paths]", "self.models = nn.ModuleList(self.models)"),  # registered later
])
def test_tr207_ensemble_of_registered_members_reports(tmp_path, members, register):
    assert _tr207_ensemble(tmp_path, members, register)


# --- TR403: a Dataset whose constructor moves its whole tensors to the device and whose
# `__getitem__` returns slices of them (`return self.images[idx], self.targets[idx]`) yields
# device batches in a main-process loader (an edge-of-stability experiment's CIFAR subset) ----

STORED_DATASET = '''import torch
import torch.nn.functional as F
from torch.utils.data import Dataset


class TensorSubset(Dataset):
    def __init__(self, images, targets, device="cpu", one_hot=False):
        self.images = torch.stack(images)MOVE
        self.targets = torch.tensor(targets)MOVE
        if one_hot:
            self.targets = F.one_hot(self.targets, num_classes=10).float()

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        return self.images[idx], self.targets[idx]
'''

STORED_TRAIN = '''import torch
from torch import nn
from torch.utils.data import DataLoader

from data import TensorSubset


def main(device):
    model = nn.Linear(3, 10).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    dataset = TensorSubset([torch.randn(3)] * 4, [1, 2, 3, 4], device=device, one_hot=True)
    loader = DataLoader(dataset, batch_size=2)
    for inputs, targets in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(inputs), targets).backward()
        optimizer.step()


if __name__ == "__main__":
    main("cuda")
'''


@pytest.mark.parametrize(("move", "reported"), [(".to(device)", False), ("", True)])
def test_tr403_dataset_of_tensors_stored_on_the_device(tmp_path, move, reported):
    root = write(tmp_path, {"data.py": STORED_DATASET.replace("MOVE", move), "train.py": STORED_TRAIN})
    assert bool([f for f in found(root, ("TR403",)) if f.path.endswith("train.py")]) is reported


# --- torch target: a module that imports torchtext at its top level runs on torch 2.3 at most
# (torchtext's last release), where a whole-module checkpoint still loads (a transformer script
# building its vocabulary with torchtext: TR520 judged false in blind test 107) ------------

TORCHTEXT_SCRIPT = '''import torch
from torch import nn
IMPORT


def main():
    model = nn.Linear(4, 2)
    torch.save(model, "model.pt")
    model = torch.load("model.pt")
    print(model(torch.randn(1, 4)))


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize(("imports", "reported"), [
    ("from torchtext.vocab import build_vocab_from_iterator", False),
    ("import torchtext", False),
    ("", True),  # no torchtext: today's torch
    ("\n\ndef vocab():\n    import torchtext\n    return torchtext", True),  # imported only if a function runs
])
def test_tr520_module_importing_torchtext_targets_torch_2_3(tmp_path, imports, reported):
    root = write(tmp_path, {"translate.py": TORCHTEXT_SCRIPT.replace("IMPORT", imports)})
    assert bool(found(root, ("TR520",), detect_torch=True)) is reported


@pytest.mark.parametrize(("load", "reported"), [
    ("", False),  # a freshly built model's output shape, measured on the spot: a shape check
    ('model.load_state_dict(torch.load("net.pt", weights_only=True))', True),  # trained weights: a prediction
])
def test_tr207_output_shape_measured_on_the_spot(tmp_path, load, reported):
    from residue_helpers import DROPOUT_NET

    text = SMOKE.replace("DROPOUT_NET", DROPOUT_NET).replace(
        '    model.load_state_dict(torch.load("net.pt", map_location=device, weights_only=True))\n', "").replace(
        "PROBE", load + "\n    with torch.no_grad():\n        dummy = torch.randn(2, 4).to(device)\n"
                 '        print(f"output shape: {model(dummy).shape}")')
    assert bool(found(write(tmp_path, {"shape_check.py": text}), ("TR207",))) is reported


# --- another project's sources in a folder of dependencies (`external/Gram/` with Gram's own
# README and requirements, no install marker) are a vendored copy: medium, hidden by default
# (a GradScaler helper of a vendored EEG model, TR416 judged noise in blind test 108) --------

@pytest.mark.parametrize(("files", "confidence"), [
    ({"external/Lib/README_Lib_original.md": "# Lib\n", "external/Lib/requirements_lib.txt": "torch\n"}, "medium"),
    ({"external/Lib/LICENSE": "MIT\n"}, "medium"),
    ({}, "high"),  # no files of its own: the project's code kept under that name
])
def test_other_projects_sources_in_a_dependency_folder(tmp_path, files, confidence):
    root = write(tmp_path / "repo", {"README.md": "# repo\n", "requirements.txt": "torch\n",
                                     "external/Lib/train.py": DOUBLE_SOFTMAX, **files})
    assert [f.confidence for f in found(root, ("TR411",))] == [confidence]


# --- TR401: a loop that names the reset without calling it (`optimizer.zero_grad` alone on its
# line) has one problem, the statement that does nothing -- not also a forgotten reset (a course's
# training loops, judged noise twice in blind test 108 as a repeat) ----------------------------

BARE_RESET = '''import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in [torch.randn(2, 4)] * 3:
    RESET
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
'''


@pytest.mark.parametrize(("reset", "codes"), [
    ("optimizer.zero_grad", ["TR514"]),  # one problem: the reset is named, not called
    ("pass", ["TR401"]),  # no reset written at all
    ("optimizer.step", ["TR401", "TR514"]),  # another method named, not the reset
])
def test_tr401_with_a_reset_named_but_not_called(tmp_path, reset, codes):
    root = write(tmp_path, {"train.py": BARE_RESET.replace("RESET", reset)})
    assert sorted(f.code for f in found(root, ("TR401", "TR514"))) == codes


# --- TR508: a table of backbones checked by name before the chosen one is registered
# (`if name not in self.resnet_dict: raise ...; return self.resnet_dict[name]` into `self.backbone`:
# the SimCLR pattern, judged false in blind test 108) -------------------------------------

TABLE = '''import torch
import torchvision.models as models
from torch import nn


class Encoder(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.table = {"resnet18": models.resnet18(pretrained=False), "resnet50": models.resnet50(pretrained=False)}
        self.backbone = self._pick(name)

    def _pick(self, name):
        CHECK
        return self.table[name]

    def forward(self, x):
        return self.backbone(x)
'''


@pytest.mark.parametrize(("check", "reported"), [
    ('if name not in self.table:\n            raise ValueError(name)', False),
    ('print(sorted(self.table.keys()))', False),
    ('print(len(self.table))', True),  # another read of the table itself: not only a lookup
])
def test_tr508_table_checked_by_name_then_registered(tmp_path, check, reported):
    root = write(tmp_path, {"encoder.py": TABLE.replace("CHECK", check)})
    assert bool(found(root, ("TR508",))) is reported


# --- TR510: a misspelt base init (`super().__int__()`, `super()._init_()`) is named in the message
# (the judge of blind test 105: "the actual bug is the typo") ------------------------------------

TYPO_INIT = '''import torch
from torch import nn


class CBL(nn.Module):
    def __init__(self, c_in, c_out):
        CALL
        self.conv = nn.Conv2d(c_in, c_out, 3)

    def forward(self, x):
        return self.conv(x)


print(CBL(3, 8)(torch.randn(1, 3, 8, 8)).shape)
'''


@pytest.mark.parametrize(("call", "named"), [
    ("super().__int__()", "super().__int__"),
    ("super()._init_()", "super()._init_"),
    ("nn.Module.__inti__(self)", "nn.Module.__inti__"),
    ("self.init_weights()", None),  # another method: no misspelling, the missing call is reported
    ("super().__call__()", None),
])
def test_tr510_names_a_misspelt_base_init(tmp_path, call, named):
    found_ = found(write(tmp_path, {"blocks.py": TYPO_INIT.replace("CALL", call)}), ("TR510",))
    assert len(found_) == 1
    assert (f"`{named}()`, a misspelling" in found_[0].message) if named else "misspelling" not in found_[0].message
