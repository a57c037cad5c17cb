"""Classes of findings judged false or noise on blind tests, fixed in the eighteenth session
(2026-11-30), each as a near-miss that must change beside a positive that must stay."""
from __future__ import annotations

import json

import pytest
from residue_helpers import found as _found, write as _write


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": cell} for cell in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


# --- TR514: a `require_grad` typo in a script or notebook that computes no gradients at all -----------
# (pytorch-cv's gluon2torch conversion script stores the tensors for `torch.save`; LaneNet's
# encoder notebook only runs forward passes: judged noise twice in blind test 61)

CONVERT = '''import torch
from torch import nn


def convert(weights, out):
    params = {}
    for name, value in weights.items():
        tensor = torch.from_numpy(value)
        tensor.require_grad = True
        params[name] = tensor
    torch.save(params, out)


def freeze(model):
    for p in model.parameters():
        p.require_grad = False
EXTRA

if __name__ == "__main__":
    convert({}, "out.pth")
    freeze(nn.Linear(2, 2))
'''


def _tr514(tmp_path, files: dict[str, str], name: str) -> list[tuple[int, str, str]]:
    root = _write(tmp_path, files)
    return sorted((f.line, f.kind, f.confidence) for f in _found(root, ("TR514",), advice_codes=("TR514",))
                  if f.path.endswith(name))


def test_tr514_typo_in_a_conversion_script_that_computes_no_gradients_is_low_advice(tmp_path):
    got = _tr514(tmp_path, {"gluon2torch.py": CONVERT.replace("EXTRA", "")}, "gluon2torch.py")
    assert got == [(9, "advice", "low"), (16, "advice", "low")]


@pytest.mark.parametrize("extra", [
    # the script trains: the freeze matters
    "\n\ndef fit(model, x):\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    model(x).sum().backward()\n    opt.step()\n",
    # it hands the model to another project module's function, which may train it
    "\n\nfrom engine import run\n\n\ndef go(model):\n    run(model)\n",
])
def test_tr514_typo_in_a_script_that_trains_or_hands_the_model_on_stays_a_defect(tmp_path, extra):
    files = {"gluon2torch.py": CONVERT.replace("EXTRA", extra), "engine.py": "def run(model):\n    pass\n"}
    got = _tr514(tmp_path, files, "gluon2torch.py")
    assert got == [(9, "defect", "high"), (16, "defect", "high")]


def test_tr514_typo_in_a_module_of_definitions_stays_a_defect(tmp_path):
    # no `__main__` guard: a module whose functions the project's training code may call
    text = CONVERT.replace("EXTRA", "").split('\nif __name__')[0]
    assert _tr514(tmp_path, {"convert.py": text}, "convert.py") == [(9, "defect", "high"), (16, "defect", "high")]


def test_tr514_typo_in_a_script_another_file_imports_stays_a_defect(tmp_path):
    files = {"gluon2torch.py": CONVERT.replace("EXTRA", ""),
             "train.py": "from gluon2torch import freeze\n"}
    assert _tr514(tmp_path, files, "gluon2torch.py") == [(9, "defect", "high"), (16, "defect", "high")]


def test_tr514_typo_in_an_exploration_notebook_is_low_advice_and_in_a_training_one_a_defect(tmp_path):
    cells = ["import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2)\n",
             "for param in model.parameters():\n    param.require_grad = False\n",
             "print(model(torch.randn(1, 4)).shape)\n"]
    root = _write(tmp_path, {"explore.ipynb": _notebook(*cells),
                             "train.ipynb": _notebook(*cells, "opt = torch.optim.Adam(model.parameters())\n"
                                                              "model(torch.randn(1, 4)).sum().backward()\n"
                                                              "opt.step()\n")})
    got = {(f.path.rsplit("/", 1)[-1], f.kind, f.confidence)
           for f in _found(root, ("TR514",), advice_codes=("TR514",))}
    assert got == {("explore.ipynb", "advice", "low"), ("train.ipynb", "defect", "high")}


# --- TR513: `DistributedSampler(ds, shuffle=shuffle)` in a loader helper every call of which passes
# `shuffle=False` never shuffles (Uni-Mol's NNDataLoader: judged false in blind test 61) --------------

LOADER_HELPER = '''import torch
from torch.utils.data import DataLoader, DistributedSampler


def make_loader(dataset, batch_size, shuffle=False, distributed=False):
    if distributed:
        sampler = DistributedSampler(dataset, shuffle=shuffle)
    else:
        sampler = None
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)


def fit(model, dataset, optimizer, epochs):
    loader = make_loader(dataset, 32, shuffle=SHUFFLE, distributed=True)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()


if __name__ == "__main__":
    fit(None, None, None, 10)
'''


@pytest.mark.parametrize(("shuffle", "other", "lines"), [
    ("False", "", []),
    ("True", "", [7]),
    # another project file names the helper: its calls there are not followed
    ("False", "from trainer import make_loader\nloader = make_loader(None, 8, shuffle=True, distributed=True)\n", [7]),
])
def test_tr513_sampler_shuffle_from_a_parameter_follows_the_call_sites(tmp_path, shuffle, other, lines):
    files = {"trainer.py": LOADER_HELPER.replace("SHUFFLE", shuffle)}
    if other:
        files["other.py"] = other
    found = _found(_write(tmp_path, files), ("TR513",))
    assert sorted(f.line for f in found if f.path.endswith("trainer.py")) == lines


# --- TR518: a scheduler step in a method nothing calls is no schedule to restore (one-shot siamese's
# `decay_lr()`, its only call and its scheduler commented out: judged false in blind test 61) --------

TRAINER = '''import torch
from torch import optim
from torch.optim.lr_scheduler import StepLR


class Trainer:
    def __init__(self, model, loader, resume, epochs):
        self.model = model
        self.loader = loader
        self.resume = resume
        self.epochs = epochs
        self.start_epoch = 0
        self.optimizer = optim.Adam(self.model.parameters(), lr=3e-4)
        BUILD

    def train(self):
        if self.resume:
            self.load_checkpoint()
        for epoch in range(self.start_epoch, self.epochs):
            CALL
            for x, y in self.loader:
                self.optimizer.zero_grad()
                loss = torch.nn.functional.mse_loss(self.model(x), y)
                loss.backward()
                self.optimizer.step()
            torch.save({"epoch": epoch + 1, "model_state": self.model.state_dict(),
                        "optim_state": self.optimizer.state_dict()}, "ckpt.tar")

    def decay_lr(self):
        self.scheduler.step()

    def load_checkpoint(self):
        ckpt = torch.load("ckpt.tar")
        self.start_epoch = ckpt["epoch"]
        self.model.load_state_dict(ckpt["model_state"])
        self.optimizer.load_state_dict(ckpt["optim_state"])


'''

MAIN = 'from trainer import Trainer\n\nif __name__ == "__main__":\n    Trainer(None, [], True, 10).train()\n'


@pytest.mark.parametrize(("build", "call", "reported"), [
    ("# self.scheduler = StepLR(self.optimizer, 10)", "# self.decay_lr()", False),
    ("self.scheduler = StepLR(self.optimizer, 10)", "self.decay_lr()", True),
])
def test_tr518_scheduler_stepped_only_in_a_method_nothing_calls_is_not_restored_state(tmp_path, build, call,
                                                                                      reported):
    text = TRAINER.replace("BUILD", build).replace("CALL", call)
    found = _found(_write(tmp_path, {"trainer.py": text, "main.py": MAIN}), ("TR518",))
    assert any("LR schedule restarts" in f.message for f in found) is reported


# --- TR513: a loader factory of another module that builds its DistributedSampler only under
# `if distributed:`, called with `False` for it, builds none (Building Damage Assessment's
# xview_train_loader_factory: judged false in blind test 62) ------------------------------------------

FACTORY = '''from torch.utils.data import DataLoader, DistributedSampler


def loader_factory(dataset, batch_size, distributed):
    if distributed:
        sampler = DistributedSampler(dataset)
        return DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True)
'''

# ten epochs over `loader` (the script's own training loop, shared by the TR513 fixtures below)
EPOCHS_OVER_LOADER = '''model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
'''

FACTORY_TRAIN = '''import torch
from data import loader_factory

loader = loader_factory(None, 32, FLAG)
''' + EPOCHS_OVER_LOADER


@pytest.mark.parametrize(("flag", "reported"), [
    ("False", False), ("distributed=False", False), ("None", False),
    ("True", True), ("torch.cuda.device_count() > 1", True),
])
def test_tr513_loader_factory_called_with_its_sampler_flag_off_builds_no_sampler(tmp_path, flag, reported):
    files = {"data.py": FACTORY, "train.py": FACTORY_TRAIN.replace("FLAG", flag)}
    found = _found(_write(tmp_path, files), ("TR513",))
    assert bool([f for f in found if f.path.endswith("train.py")]) is reported


# --- TR518: the adaptive-optimizer wording only when the defaults build an adaptive optimizer
# (HardNet's `elif args.optimizer == 'adam':` with `--optimizer` defaulting to `sgd`: judged noise
# in blind test 62) -----------------------------------------------------------------------------------

CHOOSER = '''import argparse
import torch
from torch import optim

parser = argparse.ArgumentParser()
parser.add_argument("--optimizer", default="DEFAULT")
parser.add_argument("--resume", default="")
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()

model = torch.nn.Linear(4, 1)
if args.optimizer == "sgd":
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
elif args.optimizer == "adam":
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
start = 0
if args.resume:
    ckpt = torch.load(args.resume)
    model.load_state_dict(ckpt["state_dict"])
    start = ckpt["epoch"]
for epoch in range(start, args.epochs):
    for x, y in []:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    torch.save({"state_dict": model.state_dict(), "epoch": epoch + 1,
                "optimizer": optimizer.state_dict()}, "ckpt.pth")
'''


@pytest.mark.parametrize(("default", "adaptive"), [("sgd", False), ("adam", True)])
def test_tr518_adaptive_wording_follows_the_optimizer_the_defaults_build(tmp_path, default, adaptive):
    found = _found(_write(tmp_path, {"train.py": CHOOSER.replace("DEFAULT", default)}), ("TR518",),
                   advice_codes=("TR518",))
    assert len(found) == 1
    assert ("adaptive optimizer" in found[0].message) is adaptive
    assert found[0].kind == ("likely-defect" if adaptive else "advice")


# --- Classes redefined cell after cell: an instance built at module level is of the definition above
# it (cs224u's PyTorch tutorial builds its model from the logits class; a later cell redefines the
# class with a softmax and never builds it: TR411 judged false in blind test 63) ------------------------

LOGITS = "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n" \
         "        self.W = nn.Linear(3, 2)\n\n    def forward(self, x):\n        return self.W(x)\n"
SOFTMAX = "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n" \
          "        self.net = nn.Sequential(nn.Linear(3, 2), nn.Softmax(dim=1))\n\n" \
          "    def forward(self, x):\n        return self.net(x)\n"
TRAIN = "criterion = nn.CrossEntropyLoss()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n" \
        "for step in range(10):\n    optimizer.zero_grad()\n    loss = criterion(model(x), torch.tensor([1]))\n" \
        "    loss.backward()\n    optimizer.step()\n"
BUILD = "model = M()\nx = torch.randn(1, 3)\n"


@pytest.mark.parametrize(("cells", "reported"), [
    ([LOGITS, BUILD, SOFTMAX, TRAIN], False),   # built from the logits class, redefined later
    ([LOGITS, SOFTMAX, BUILD, TRAIN], True),    # built after the softmax redefinition
    ([SOFTMAX, BUILD, LOGITS, TRAIN], True),    # built from the softmax class, redefined later
])
@pytest.mark.parametrize("as_notebook", [True, False])
def test_tr411_instance_of_a_redefined_class_is_of_the_definition_above_it(tmp_path, cells, reported,
                                                                           as_notebook):
    head = "import torch\nfrom torch import nn\n"
    files = {"tutorial.ipynb": _notebook(head, *cells)} if as_notebook else \
        {"tutorial.py": head + "\n\n".join(cells)}
    found = _found(_write(tmp_path, files), ("TR411",))
    assert bool(found) is reported


# --- TR518: a load under `if not os.path.isfile(args.resume):` runs when there is no checkpoint to
# resume: it is the fresh start's pretrained weights, not a resume (an IE534 homework: judged false in
# blind test 63) ----------------------------------------------------------------------------------------

PRETRAINED_OR_RESUME = '''import argparse
import os
import torch
import torchvision
from torch import optim

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
args = parser.parse_args()

net = torchvision.models.resnet18()
if TEST:
    net.load_state_dict(torch.load("../data/model/resnet18-5c106cde.pth"))
optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
for epoch in range(10):
    for x, y in []:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        optimizer.step()
    torch.save({"epoch": epoch, "state_dict": net.state_dict(), "optimizer": optimizer.state_dict()},
               "ckpt.pth")
'''


@pytest.mark.parametrize(("test", "reported"), [
    ("not os.path.isfile(args.resume)", False),
    ("not os.path.exists(args.resume)", False),
    ("os.path.isfile(args.resume)", True),
])
def test_tr518_load_when_the_resume_file_is_missing_is_no_resume(tmp_path, test, reported):
    found = _found(_write(tmp_path, {"main.py": PRETRAINED_OR_RESUME.replace("TEST", test)}), ("TR518",),
                   advice_codes=("TR518",))
    assert bool(found) is reported


# --- Exercises: a file the project labels an exercise (an `exercises/` folder, a `buggy_*` file, an
# exercise file among `skeletons/`) is a learner's starting point whose bugs may be the lesson (planted
# bugs of two courses: judged noise in blind tests 61 and 64): medium confidence, hidden by default ----

NO_ZERO_GRAD = '''import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    x = torch.randn(8, 4)
    loss = ((model(x) - 1) ** 2).mean()
    loss.backward()
    optimizer.step()
'''


@pytest.mark.parametrize(("name", "confidence"), [
    ("chapters/ch06/exercises/loop.py", "medium"),
    ("chapters/ch06/buggy_loop.py", "medium"),
    ("skeletons/day10_exercise.py", "medium"),
    ("chapters/ch06/train.py", "high"),
    ("skeleton/day10.py", "high"),          # pose skeletons in action-recognition code
    ("apps/exercise_counter.py", "high"),   # a workout, not an exercise for a learner
])
def test_findings_in_a_file_labelled_an_exercise_are_medium(tmp_path, name, confidence):
    found = _found(_write(tmp_path, {"pyproject.toml": "[project]\nname = 'course'\n", name: NO_ZERO_GRAD}),
                   ("TR401",))
    assert [f.confidence for f in found] == [confidence]
    assert ("an exercise" in found[0].message) is (confidence == "medium")


# --- Vendored copies: a package with its own install marker kept in a folder of dependencies
# (`dependencies/`, `third_party/`, `external/`, `vendor/` ...) of a repository root is another
# project's code, also in a checkout without `.git` (DSPv2's `dependencies/MinkowskiEngine`
# example: TR426 judged noise in blind test 65) ---------------------------------------------------------


@pytest.mark.parametrize(("holder", "root_files", "confidence"), [
    ("dependencies", {"README.md": "# policy\n", "requirements.txt": "torch\n"}, "medium"),
    ("third_party", {"requirements.txt": "torch\n"}, "medium"),
    ("modules", {"README.md": "# policy\n"}, "high"),       # not a folder of dependencies
    ("dependencies", {}, "high"),                          # no repository around it: a workspace folder
])
def test_a_package_in_a_folder_of_dependencies_is_a_vendored_copy(tmp_path, holder, root_files, confidence):
    files = {f"repo/{holder}/engine/setup.py": "from setuptools import setup\nsetup(name='engine')\n",
             f"repo/{holder}/engine/examples/train.py": NO_ZERO_GRAD}
    files.update({f"repo/{name}": text for name, text in root_files.items()})
    found = _found(_write(tmp_path, files), ("TR401",))
    assert [f.confidence for f in found] == [confidence]


# --- Vendored copies: a published repository copied into a project -- its README and two or more of
# GitHub's community files (CODE_OF_CONDUCT, SECURITY, SUPPORT, CONTRIBUTING), no `.git` of its own,
# below a folder with a README -- is another project's code (microsoft/Swin-Transformer copied into a
# study repository: TR429 judged noise in blind test 66) ------------------------------------------------

COMMUNITY = {"README.md": "# Swin\n", "CODE_OF_CONDUCT.md": "be kind\n", "SECURITY.md": "report\n"}


@pytest.mark.parametrize(("copy_files", "root_files", "git", "confidence"), [
    (COMMUNITY, {"README.md": "# study\n"}, False, "medium"),
    ({"README.md": "# Swin\n", "LICENSE": "MIT\n"}, {"README.md": "# study\n"}, False, "high"),  # one repo file
    (COMMUNITY, {}, False, "high"),            # nothing above it with a README: the project itself
    (COMMUNITY, {"README.md": "# study\n"}, True, "high"),   # a checkout of its own (`.git`)
])
def test_a_published_repository_copied_into_a_project_is_vendored(tmp_path, copy_files, root_files, git,
                                                                  confidence):
    files = {f"study/models/swin/{name}": text for name, text in copy_files.items()}
    files["study/models/swin/train.py"] = NO_ZERO_GRAD
    files.update({f"study/{name}": text for name, text in root_files.items()})
    root = _write(tmp_path, files)
    if git:
        (root / "study" / "models" / "swin" / ".git").mkdir()
    found = _found(root, ("TR401",))
    assert [f.confidence for f in found] == [confidence]


# --- TR513: a dataset whose `__getitem__` never reads its index streams its examples in its own order:
# the sampler's order, hence `set_epoch`, changes nothing (VBx's KaldiArkDataset: judged false in
# blind test 66) ------------------------------------------------------------------------------------

STREAMING = '''import torch
from torch.utils.data import Dataset


class ArkDataset(Dataset):
    def __init__(self, reader, length):
        self.reader = reader
        self.length = length

    def __getitem__(self, idx):
        return BODY

    def __len__(self):
        return self.length
'''

STREAM_TRAIN = '''import torch
from torch.utils.data import DataLoader, DistributedSampler
from data import ArkDataset

dataset = ArkDataset(None, 100)
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=8, sampler=sampler)
''' + EPOCHS_OVER_LOADER


@pytest.mark.parametrize(("body", "reported"), [
    ("next(self.reader)", False),          # the next example of the archive, whatever the index
    ("self.reader[idx]", True),            # reads its index: the order matters
])
def test_tr513_dataset_that_ignores_its_index_needs_no_set_epoch(tmp_path, body, reported):
    files = {"data.py": STREAMING.replace("BODY", body), "train.py": STREAM_TRAIN}
    found = _found(_write(tmp_path, files), ("TR513",))
    assert bool(found) is reported


# --- TR518: a function that loads the resume checkpoint, trains nothing, evaluates itself and hands
# nothing on is an evaluation (EEV's `main_test()`, run from the `__main__` guard with --run_test and
# wrapping its model in an SWA `AveragedModel`: judged false in blind test 65) ----------------------------

TEST_ENTRY = '''import argparse
import os
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
parser.add_argument("--run_test", action="store_true")
args = parser.parse_args()


def main():
    start, model = 0, torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
    # the training entry: resumes weights, optimizer and epoch, not the scheduler
    if args.resume:
        ckpt = torch.load(args.resume)
        start = ckpt["epoch"]
        optimizer.load_state_dict(ckpt["optimizer"])
        model.load_state_dict(ckpt["state_dict"])
    for epoch in range(start, 10):
        for x, y in []:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        scheduler.step()
        torch.save({"epoch": epoch + 1, "state_dict": model.state_dict(),
                    "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, "ckpt.pth")


def main_test():
    model = torch.optim.swa_utils.AveragedModel(torch.nn.Linear(4, 1))
    model = torch.nn.DataParallel(model)
    if args.resume and os.path.isfile(args.resume):
        ckpt = torch.load(args.resume)
        args.start_epoch = ckpt["epoch"]
        model.load_state_dict(ckpt["state_dict"])
        print("loaded the checkpoint of epoch", args.start_epoch)
    model.eval()
    with torch.no_grad():
        print(model(torch.randn(2, 4)))


if __name__ == "__main__":
    if args.run_test:
        main_test()
    else:
        main()
'''


def test_tr518_an_evaluation_entry_that_loads_the_resume_checkpoint_is_no_resume(tmp_path):
    found = _found(_write(tmp_path, {"main.py": TEST_ENTRY}), ("TR518",), advice_codes=("TR518",))
    lines = sorted(f.line for f in found)
    assert lines == [17]  # the training entry's resume (the scheduler is not restored); main_test's load is not
