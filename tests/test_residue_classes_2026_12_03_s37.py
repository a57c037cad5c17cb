"""Residue classes of the thirty-seventh session (findings judged noise or false in blind tests):
each positive or near-miss below failed on the code before its fix."""
from __future__ import annotations

import pytest

from residue_helpers import found, write


# --- assignment scaffolds: the part of a homework file its instructor wrote (outside the blocks
# that `TODO` ... `END OF YOUR CODE` mark for the student) keeps the best model on the test
# loader; the protocol is the course's, not the student's choice (CS7643 HW2's main.py, judged
# noise in four homework repositories of blind tests 138-140) --------------------------------------

SCAFFOLD = '''import copy

import torch
import torchvision
from torch.utils.data import DataLoader


def train(epoch, loader, model, optimizer, criterion):
    for data, target in loader:
        {train_open}
        optimizer.zero_grad()
        out = model(data)
        loss = criterion(out, target)
        loss.backward()
        optimizer.step()
        {train_close}


def validate(epoch, loader, model, criterion):
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            correct += (model(data).argmax(1) == target).sum().item()
    return correct / len(loader.dataset)


def main(model, optimizer, criterion):
    train_set = torchvision.datasets.CIFAR10("data", train=True, download=True)
    test_set = torchvision.datasets.CIFAR10("data", train=False, download=True)
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=100)
    best = 0.0
    best_model = None
    for epoch in range(10):
        train(epoch, train_loader, model, optimizer, criterion)
        {select_open}
        acc = validate(epoch, test_loader, model, criterion)
        if acc > best:
            best = acc
            best_model = copy.deepcopy(model)
        {select_close}
    torch.save(best_model.state_dict(), "best.pt")
'''

BANNER_OPEN = "# TODO: Complete the body of training loop"
BANNER_CLOSE = "# END OF YOUR CODE"


def _scaffold(train_marks: bool, select_marks: bool, close: str = BANNER_CLOSE) -> str:
    return SCAFFOLD.format(train_open=BANNER_OPEN if train_marks else "",
                           train_close=close if train_marks else "",
                           select_open="# YOUR CODE HERE" if select_marks else "",
                           select_close=close if select_marks else "")


@pytest.mark.parametrize("close", [BANNER_CLOSE, "### END CODE HERE ###", "# END SOLUTION"])
def test_tr519_instructor_code_of_a_scaffold_is_low(tmp_path, close):
    write(tmp_path, {"main.py": _scaffold(True, False, close)})
    assert [h.confidence for h in found(tmp_path, ("TR519",))] == ["low"]


def test_tr519_selection_the_student_wrote_stays(tmp_path):
    # the selection sits inside a student block: the student chose the test split
    write(tmp_path, {"main.py": _scaffold(True, True)})
    assert [h.confidence for h in found(tmp_path, ("TR519",))] == ["medium"]


def test_tr519_plain_todo_comments_are_no_scaffold(tmp_path):
    # a `TODO` with no end marker anywhere is an author's note, not a student block
    text = _scaffold(False, False).replace("    best = 0.0\n", "    # TODO: try a cosine schedule\n    best = 0.0\n")
    write(tmp_path, {"main.py": text})
    assert [h.confidence for h in found(tmp_path, ("TR519",))] == ["medium"]


# --- splits: a Hugging Face dataset rebound to itself in another format (`dataset_test =
# dataset_test.with_format("torch")`, `.map(...)`, `.select(...)`) keeps the split it was loaded
# with; TR519 had read "test" off the name of a `split="val"` evaluation set (a DLCV fine-tune,
# judged false in blind test 142) ------------------------------------------------------------------

HF_TRAINER = '''import torch
from datasets import load_dataset
from transformers import Trainer, TrainingArguments


def main(model, collate):
    dataset = load_dataset("org/data", split="train")
    dataset_test = load_dataset("org/data", split="{split}")
    dataset = dataset.with_format("torch")
    dataset_test = dataset_test.{method}
    args = TrainingArguments(output_dir="out", eval_strategy="epoch", save_strategy="epoch",
                             load_best_model_at_end=True)
    trainer = Trainer(model=model, args=args, train_dataset=dataset, eval_dataset=dataset_test,
                      data_collator=collate)
    trainer.train()
'''


@pytest.mark.parametrize("method", ['with_format("torch")', "map(lambda x: x)", "select(range(100))"])
def test_tr519_reformatted_validation_set_is_validation(tmp_path, method):
    write(tmp_path, {"finetune.py": HF_TRAINER.format(split="val", method=method)})
    assert not found(tmp_path, ("TR519",))


@pytest.mark.parametrize("method", ['with_format("torch")', "shuffle(seed=0)"])
def test_tr519_reformatted_test_set_is_still_test(tmp_path, method):
    write(tmp_path, {"finetune.py": HF_TRAINER.format(split="test", method=method)})
    assert len(found(tmp_path, ("TR519",))) == 1


# --- Vendored copies: a folder named for other projects' code with a word after it
# (`external_libraries/`, `third_party_libs/`, `vendor-packages/`) holds copies like `external/`
# does (a thesis' `code/external_libraries/Face-Adapter/app.py`, the upstream demo: TR102 judged
# noise in blind test 142); `external_validation/` is the project's own code -------------------------

from test_residue_classes_2026_11_30_s18 import NO_ZERO_GRAD  # noqa: E402


@pytest.mark.parametrize(("holder", "confidence"), [
    ("external_libraries", "medium"),
    ("third_party_libs", "medium"),
    ("vendor-packages", "medium"),
    ("external", "medium"),
    ("external_validation", "high"),   # the project's own evaluation on outside data
    ("external_data", "high"),
])
def test_a_folder_named_for_other_projects_code_holds_copies(tmp_path, holder, confidence):
    files = {"repo/README.md": "# thesis\n", "repo/requirements.txt": "torch\n",
             f"repo/{holder}/Tool/README.md": "# Tool\n", f"repo/{holder}/Tool/train.py": NO_ZERO_GRAD}
    assert [f.confidence for f in found(write(tmp_path, files), ("TR401",))] == [confidence]


# --- Torch pins: requirement files kept in a `requirements/` folder (`requirements/base.txt`,
# `requirements/requirements_pytorch.txt`) pin the project's torch like a top-level one; a
# removed private API (`torch._six`) under a pinned torch 1.6 still imports there (a Kaggle
# solution's detection utilities: TR429 judged noise twice in blind test 143) ----------------------

SIX = '''import torch
from torch._six import container_abcs


def flatten(x):
    return list(x) if isinstance(x, container_abcs.Iterable) else [x]
'''


@pytest.mark.parametrize(("files", "severity"), [
    ({"requirements/requirements_pytorch.txt": "numpy\ntorch==1.6.0\n"}, "low"),
    ({"requirements/base.txt": "torch==1.7.1+cu101\n"}, "low"),
    ({"requirements/base.txt": "torch==2.1.0\n"}, "high"),       # removed in 2.0: the import raises
    ({"requirements/notes.md": "torch==1.6.0\n"}, "high"),       # not a requirements file
    ({"docs/requirements.txt": "torch==1.6.0\n"}, "high"),       # another folder's, not the project's
])
def test_requirements_folder_pins_torch(tmp_path, files, severity):
    write(tmp_path, {"README.md": "# solution\n", "src/utils.py": SIX, **files})
    hits = found(tmp_path, ("TR429",), detect_torch=True)
    assert [h.severity.name.lower() for h in hits] == [severity]


# --- TR508: a plain list of layers handed by keyword to a module class stored on `self`
# (`self.decoder = ConvDecoder(..., layers=self.decoder_layers)`, the decoder wrapping them in
# `nn.Sequential`) is held by that module (a melanoma CapsNet, judged false in blind test 143) -----

DECODER = '''import torch
from torch import nn


class ConvDecoder(nn.Module):
    def __init__(self, width, layers=None):
        super().__init__()
        self.layers = [nn.Linear(width, width), nn.ReLU()] if layers is None else layers
        self.decoder = nn.Sequential(*self.layers)

    def forward(self, x):
        return self.decoder(x)
'''

CAPSNET = '''import torch
from torch import nn

from decoder import ConvDecoder


class CapsNet(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.encoder = nn.Linear(width, width)
        self.decoder_layers = [nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)]
        {use}

    def forward(self, x):
        return {forward}
'''


@pytest.mark.parametrize(("use", "forward", "count"), [
    ("self.decoder = ConvDecoder(width, layers=self.decoder_layers)", "self.decoder(self.encoder(x))", 0),
    ("self.decoder = ConvDecoder(width, self.decoder_layers)", "self.decoder(self.encoder(x))", 0),
    # kept only in the plain list and run by hand: not registered
    ("self.scale = 2", "self.decoder_layers[2](self.decoder_layers[0](self.encoder(x)))", 1),
])
def test_tr508_list_handed_by_keyword_to_a_stored_module(tmp_path, use, forward, count):
    write(tmp_path, {"decoder.py": DECODER, "model.py": CAPSNET.format(use=use, forward=forward)})
    assert len([f for f in found(tmp_path, ("TR508",)) if f.path.endswith("model.py")]) == count


# --- TR403: a model whose forward uses its batch input only to index a tensor and moves the rows
# it takes (`u_ = emb[u].to(device)`: a CPU index tensor may index a CUDA tensor) needs no moved
# batch (a graph recommender's training loop, judged false in blind test 143) ----------------------

RECO_MODEL = '''import torch
from torch import nn


class Reco(nn.Module):
    def __init__(self, n, dim):
        super().__init__()
        self.table = nn.Parameter(torch.randn(n, dim))
        self.lookup = nn.Embedding(n, dim)

    def forward(self, u, v, device):
        emb = torch.tanh(self.table)
        {body}
        return (u_ * v_).sum()
'''

RECO_TRAIN = '''import torch
from torch.utils.data import DataLoader, TensorDataset

from reco import Reco

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Reco(100, 8).to(device)
optimizer = torch.optim.Adam(model.parameters())
pairs = TensorDataset(torch.randint(0, 100, (1000,)), torch.randint(0, 100, (1000,)))
for epoch in range(3):
    for u, v in DataLoader(pairs, batch_size=32, shuffle=True):
        optimizer.zero_grad()
        loss = model(u, v, device)
        loss.backward()
        optimizer.step()
'''


@pytest.mark.parametrize(("body", "count"), [
    ("u_ = emb[u].to(device)\n        v_ = emb[v].to(device)", 0),
    # an embedding layer on the GPU given the CPU batch: the finding stands
    ("u_ = self.lookup(u)\n        v_ = self.lookup(v)", 1),
])
def test_tr403_forward_moving_the_rows_its_input_indexes(tmp_path, body, count):
    write(tmp_path, {"reco.py": RECO_MODEL.format(body=body), "train.py": RECO_TRAIN})
    assert len(found(tmp_path, ("TR403",))) == count


# --- TR402 / TR414: accumulation written with the step at the top of the iteration
# (`if (idx + 1) % 8 == 0: optim.step(); optim.zero_grad()`, then forward and backward) is a
# shifted accumulation window, not a step a batch behind; and the optimizer that `train(model,
# optim, data)` steps is the Adam main.py hands it, so the undivided loss is low advice (a DLCV
# homework, both judged false in blind test 144) ---------------------------------------------------

ACC_TRAIN = '''import torch
import torch.nn as nn


def train(model, optim, train_data):
    criterion = nn.NLLLoss()
    optim.zero_grad()
    for idx, (x, y) in enumerate(train_data):
        {guard}
            optim.step()
            optim.zero_grad()
        loss = criterion(torch.log_softmax(model(x), 1), y)
        loss.backward()
'''

ACC_MAIN = '''import torch

from train import train


def main(model, loader):
    optimizer = torch.optim.{opt}(model.parameters(), lr=5e-4)
    for epoch in range(10):
        train(model, optimizer, loader)
'''


@pytest.mark.parametrize(("guard", "count"), [
    ("if (idx + 1) % 8 == 0:", 0),
    ("if not idx % 4:", 0),
    ("if idx > 0:", 1),   # every iteration after the first: a step one batch behind
])
def test_tr402_step_every_kth_iteration_at_the_top(tmp_path, guard, count):
    write(tmp_path, {"train.py": ACC_TRAIN.format(guard=guard), "main.py": ACC_MAIN.format(opt="SGD")})
    assert len(found(tmp_path, ("TR402",))) == count


@pytest.mark.parametrize(("opt", "confidence"), [("Adam", "low"), ("AdamW", "low"), ("SGD", "high")])
def test_tr414_optimizer_handed_in_by_another_file(tmp_path, opt, confidence):
    write(tmp_path, {"train.py": ACC_TRAIN.format(guard="if (idx + 1) % 8 == 0:"),
                     "main.py": ACC_MAIN.format(opt=opt)})
    assert [f.confidence for f in found(tmp_path, ("TR414",))] == [confidence]


# --- Torch pins: a reviewed folder that declares no torch is reviewed against the newest torch its
# notebooks' saved outputs show they ran on (`print(torch.__version__)` -> `1.7.0+cu101`): a course
# archive's whole-module checkpoint, loaded without `weights_only`, never met the 2.6 default
# (TR520 judged noise twice in blind test 144) ----------------------------------------------------

import json  # noqa: E402

from torchreview.cli import main as cli_main  # noqa: E402


def _notebook(source: str, outputs: list[str]) -> str:
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": source.splitlines(True),
            "outputs": [{"output_type": "stream", "name": "stdout", "text": outputs}]}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 4})


ARCHIVE_RNN = '''import torch
from torch import nn


def main():
    model = nn.LSTM(4, 8)
    criterion = nn.CTCLoss()
    torch.save({"model": model.state_dict(), "loss": criterion}, "best_checkpoint")
    checkpoint = torch.load("best_checkpoint")
    model.load_state_dict(checkpoint["model"])
    criterion = checkpoint["loss"]


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize(("source", "outputs", "expected"), [
    ("import numpy as np\nprint(np.__version__)\nimport torch\nprint(torch.__version__)\n",
     ["1.19.5\n", "1.7.0+cu101\n"], (1, 7)),
    ("import torch\ntorch.__version__\n", ["2.1.0\n"], (2, 1)),
    # two versions printed, one shown: no pairing to trust
    ("import numpy, torch\nprint(numpy.__version__)\nprint(torch.__version__)\n", ["1.19.5\n"], None),
    ("import torch\nprint(torch.cuda.is_available())\n", ["True\n"], None),   # no version printed
])
def test_recorded_torch_of_notebook_outputs(tmp_path, source, outputs, expected):
    from torchreview.config import detect_target_torch

    write(tmp_path, {"hw0/setup.ipynb": _notebook(source, outputs)})
    assert detect_target_torch(str(tmp_path)) == expected


@pytest.mark.parametrize(("files", "count"), [
    ({"hw0/setup.ipynb": _notebook("import torch\nprint(torch.__version__)\n", ["1.7.0+cu101\n"])}, 0),
    ({"hw0/setup.ipynb": _notebook("import torch\nprint(torch.__version__)\n", ["2.7.1+cu126\n"])}, 1),
    # a declared requirement outranks what a notebook once printed
    ({"hw0/setup.ipynb": _notebook("import torch\nprint(torch.__version__)\n", ["1.7.0+cu101\n"]),
      "requirements.txt": "torch==2.7.0\n"}, 1),
])
def test_tr520_in_an_archive_whose_notebooks_ran_an_old_torch(tmp_path, capsys, files, count):
    write(tmp_path, {"hw3/RNN.py": ARCHIVE_RNN, **files})
    cli_main(["check", str(tmp_path), "--select", "TR520", "--format", "json", "--no-cache",
              "--min-confidence", "low", "--ignore-track-record"])
    assert len(json.loads(capsys.readouterr().out)["findings"]) == count


# --- splits: a dataset told `mode="test"` that reads a folder an option's default names as the
# validation split (`OfficeHomeDataset(args.test_csv, args.test_data_dir, mode="test")` with
# `--test_data_dir` defaulting to `../hw4_data/office/val`) holds validation data: the mode only
# picks test-time processing (DLCV homework, the TAs' test set hidden: TR519 judged false in
# blind test 145) ------------------------------------------------------------------------------------

MODE_TEST = '''import argparse

import torch
from torch.utils.data import DataLoader, Dataset


class Office(Dataset):
    def __init__(self, csv, root, mode="train"):
        self.rows = open(csv).read().splitlines()
        self.root, self.mode = root, mode

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return torch.load(self.root + "/" + self.rows[i], weights_only=True)


def evaluate(model, loader):
    hits = 0
    with torch.no_grad():
        for images, labels in loader:
            hits += int((model(images).argmax(1) == labels).sum())
    return hits


def main(model, optimizer):
    parser = argparse.ArgumentParser()
    parser.add_argument("--train_csv", default="../hw4_data/office/train.csv")
    parser.add_argument("--train_data_dir", default="../hw4_data/office/train")
    parser.add_argument("--test_csv", default="../hw4_data/office/{held}.csv")
    parser.add_argument("--test_data_dir", default="../hw4_data/office/{held}")
    args = parser.parse_args()
    train_loader = DataLoader(Office(args.train_csv, args.train_data_dir, mode="train"), batch_size=32)
    test_loader = DataLoader(Office(args.test_csv, args.test_data_dir, mode="test"), batch_size=32)
    best = 0
    for epoch in range(20):
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        acc = evaluate(model, test_loader)
        if acc > best:
            best = acc
            torch.save(model.state_dict(), "best.pth")
'''


@pytest.mark.parametrize(("held", "count"), [("val", 0), ("test", 1)])
def test_tr519_mode_test_over_a_validation_folder(tmp_path, held, count):
    write(tmp_path, {"finetune.py": MODE_TEST.format(held=held)})
    assert len(found(tmp_path, ("TR519",))) == count


# --- splits: the words an f-string spells outrank its placeholders' names
# (`build_detection_test_loader(cfg, f"{train_dataset_name}-val-fold-{fold}")`: a validation fold
# of a k-fold split, whatever the builder and the placeholder are called; TR519 judged false in
# blind test 145) ------------------------------------------------------------------------------------

KFOLD = '''import torch
from detectron2.data import build_detection_test_loader, build_detection_train_loader


def run(cfg, trainer, evaluate, train_dataset_name, folds):
    best = 0.0
    for fold in range(folds):
        train_loader = build_detection_train_loader(cfg)
        val_data_loader = build_detection_test_loader(cfg, f"{{train_dataset_name}}-{held}-fold-{{fold}}")
        for epoch in range(10):
            trainer.train_one_epoch(train_loader)
            metrics = evaluate(trainer.model, val_data_loader)
            if metrics["AP50"] > best:
                best = metrics["AP50"]
                torch.save(trainer.model.state_dict(), f"best_fold{{fold}}.pth")
'''


@pytest.mark.parametrize(("held", "count"), [("val", 0), ("test", 1)])
def test_tr519_fstring_spelling_a_validation_fold(tmp_path, held, count):
    write(tmp_path, {"train_kfold.py": KFOLD.format(held=held)})
    assert len(found(tmp_path, ("TR519",))) == count


# --- TR502: the arm of a conditional expression whose other arm is the same code with `.cpu()`
# added (`loss.data.cpu().numpy()[0] if cuda else loss.data.numpy()[0]`) is the CPU path (a GAN
# demo's loss logging, judged false twice in blind test 145) ----------------------------------------

ARMS = '''import torch
from torch import nn

cuda = torch.cuda.is_available()
net = nn.Linear(2, 1)
if cuda:
    net.cuda()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(100):
    x = torch.randn(8, 2)
    if cuda:
        x = x.cuda()
    loss = net(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    shown = {expr}
    print(shown)
'''


@pytest.mark.parametrize(("expr", "count"), [
    ("loss.data.cpu().numpy() if cuda else loss.data.numpy()", 0),
    ("loss.data.numpy() if not cuda else loss.data.cpu().numpy()", 0),
    ("loss.data.numpy() if step % 10 == 0 else None", 1),   # no CPU arm beside it
])
def test_tr502_conditional_expression_with_a_cpu_arm(tmp_path, expr, count):
    write(tmp_path, {"demo.py": ARMS.format(expr=expr)})
    assert len(found(tmp_path, ("TR502",))) == count


# --- module modes: a model built by a conditional expression (`CNN().cuda() if self.with_cuda
# else CNN()`) holds what either arm builds; a Conv/ReLU/Linear model makes `eval()` a no-op
# (TR504 judged noise in blind test 145, a Fashion-MNIST trainer class) -----------------------------

CNN_MODEL = '''import torch.nn as nn


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Linear(8 * 14 * 14, 10){extra})

    def forward(self, image):
        feature = self.conv(image)
        return self.classifier(feature.view(feature.size(0), -1))
'''

CNN_TRAINER = '''import torch
from torch.optim import Adam

from model.models import CNN


class Trainer:
    def __init__(self, loader, val_loader, with_cuda):
        self.loader, self.val_loader, self.with_cuda = loader, val_loader, with_cuda
        self.model = CNN().cuda() if self.with_cuda else CNN()
        self.optimizer = Adam(self.model.parameters())

    def train(self, epochs):
        self.model.train()
        for epoch in range(epochs):
            for x, y in self.loader:
                self.optimizer.zero_grad()
                torch.nn.functional.cross_entropy(self.model(x), y).backward()
                self.optimizer.step()
            self.evaluate()

    def evaluate(self):
        self.model.eval()
        with torch.no_grad():
            for x, y in self.val_loader:
                print((self.model(x).argmax(1) == y).float().mean())
'''


@pytest.mark.parametrize(("extra", "count"), [("", 0), (", nn.Dropout(0.5)", 1)])
def test_tr504_model_built_by_a_conditional_expression(tmp_path, extra, count):
    write(tmp_path, {"model/__init__.py": "", "model/models.py": CNN_MODEL.format(extra=extra),
                     "trainer/trainer.py": CNN_TRAINER})
    assert len(found(tmp_path, ("TR504",))) == count


# --- checkpoint index: a resume that reads keys (`checkpoint["epoch"]`, `["state_dict"]`) is not
# linked, through its function, to a save of the same function whose keys (all known) share none
# with them -- `torch.save(model.module, ...)`, the final export beside `save_checkpoint({...})`
# (an ImageNet trainer's `--resume`, TR520 judged false in blind test 146) ---------------------------

RESUME_EXPORT = '''import argparse
import os
import shutil

import torch
import torchvision.models as models

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="", type=str)
parser.add_argument("--path", default="run", type=str)
parser.add_argument("--epochs", default=90, type=int)


def main():
    args = parser.parse_args()
    model = torch.nn.DataParallel(models.resnet18())
    optimizer = torch.optim.SGD(model.parameters(), 0.1)
    best_acc1 = 0
    start_epoch = 0
    if args.resume:
        if os.path.isfile(args.resume):
            checkpoint = torch.load(args.resume)
            start_epoch = checkpoint['epoch']
            best_acc1 = checkpoint['best_acc1']
            model.load_state_dict(checkpoint['state_dict'])
            optimizer.load_state_dict(checkpoint['optimizer'])
    for epoch in range(start_epoch, args.epochs):
        acc1 = train(model, optimizer)
        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        save_checkpoint({{
            'epoch': epoch + 1,
            'state_dict': model.state_dict(),
            'best_acc1': best_acc1,
            'optimizer': optimizer.state_dict(),
        }}, is_best)
    {export}


def train(model, optimizer):
    optimizer.zero_grad()
    model(torch.randn(2, 3, 224, 224)).sum().backward()
    optimizer.step()
    return 0.5


def save_checkpoint(state, is_best, filename='checkpoint.pth.tar'):
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, 'model_best.pth.tar')


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize(("export", "count"), [
    ("torch.save(model.module, './result_model/' + args.path + '.pth')", 0),
    # the export holds the keys the resume reads, and a whole module under one of them: linked
    ("torch.save({'epoch': 0, 'state_dict': model.state_dict(), 'best_acc1': 0, 'optimizer': optimizer, "
     "'model': model.module}, args.resume or 'last.pth')", 1),
])
def test_tr520_resume_not_linked_to_an_export_it_cannot_read(tmp_path, export, count):
    write(tmp_path, {"requirements.txt": "torch>=2.6\n", "main.py": RESUME_EXPORT.format(export=export)})
    assert len(found(tmp_path, ("TR520",), detect_torch=True)) == count


# --- TR403: a batch tensor handed to a parameter the model's `forward` never reads (a video
# model's `forward(self, x, video_length)` using only `x`) meets no device (judged false in blind
# test 147); the same tensor read by the forward stays reported ------------------------------------

VIDEO_MODEL = '''import torch
from torch import nn


class VideoNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x, video_length):
        return self.fc(x{use})
'''

VIDEO_TRAIN = '''import torch
from torch.utils.data import DataLoader, TensorDataset

from model import VideoNet

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = VideoNet().to(device)
optimizer = torch.optim.Adam(model.parameters())
data = TensorDataset(torch.randn(64, 16), torch.randint(1, 9, (64,)), torch.randint(0, 4, (64,)))
for epoch in range(2):
    for x, video_length, y in DataLoader(data, batch_size=8):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model({call}), y)
        loss.backward()
        optimizer.step()
'''


@pytest.mark.parametrize(("use", "call", "count"), [
    ("", "x, video_length", 0),
    ("", "x, video_length=video_length", 0),
    (" * video_length.float().unsqueeze(1)", "x, video_length", 1),
])
def test_tr403_argument_the_forward_never_reads(tmp_path, use, call, count):
    write(tmp_path, {"model.py": VIDEO_MODEL.format(use=use), "train.py": VIDEO_TRAIN.format(call=call)})
    assert len(found(tmp_path, ("TR403",))) == count
