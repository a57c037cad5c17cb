"""Residue classes of the thirty-fourth session (findings judged noise or false in blind tests 128 and
later, and classes noted but not fixed the session before): each positive or near-miss below failed on
the code before its fix."""
from __future__ import annotations

import pytest

from residue_helpers import found, write
from test_residue_classes_2026_12_03_s33 import TRAINER as S33_TRAINER


# --- TR519: a sampler named `test_sampler` walking the training data handed beside it (CNEEP's
# `validate(opt, model, train_video, test_sampler)`, judged false in blind test 128) ---------------

SAMPLED = '''import torch
from torch import nn

model = nn.Linear(4, 1)
optim = torch.optim.Adam(model.parameters())
train_video = torch.randn(500, 4)
test_video = torch.randn(500, 4)
train_sampler = iter(range(500))
test_sampler = iter(range(500))


def train(model, optim, video, sampler):
    for i in sampler:
        optim.zero_grad()
        loss = model(video[i]).pow(2).mean()
        loss.backward()
        optim.step()
    return loss.item()


def validate(model, video, sampler):
    total = 0.0
    with torch.no_grad():
        for i in sampler:
            total += model(video[i]).pow(2).mean().item()
    return total


best_valid_loss = float("inf")
for epoch in range(10):
    train(model, optim, train_video, train_sampler)
    valid_loss = validate(model, {data}, {walker})
    if valid_loss < best_valid_loss:
        best_valid_loss = valid_loss
        torch.save(model.state_dict(), "best.pt")
'''


@pytest.mark.parametrize("data, walker, expected", [
    ("train_video", "test_sampler", 0),
    ("train_video", "test_idx", 0),
    # the test video itself: selection on the test split
    ("test_video", "test_sampler", 1),
    ("test_video", "train_sampler", 1),
])
def test_tr519_sampler_over_training_data_is_no_test_split(tmp_path, data, walker, expected):
    root = write(tmp_path, {"pyproject.toml": "", "train.py": SAMPLED.format(data=data, walker=walker)})
    assert len(found(root, ("TR519",))) == expected


# --- TR519: a generic trainer whose test-set selection needs `self.test_dataset`, left None by every
# construction in the project (a vendored minGPT-style trainer, judged false in blind test 126) ------

TRAINER = '''import torch
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, train_dataset, test_dataset, ckpt_path=None):
        self.model = model
        self.train_dataset = train_dataset
        self.test_dataset = test_dataset
        self.ckpt_path = ckpt_path
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    def train(self, epochs=3):
        def run_epoch(split):
            is_train = split == "train"
            data = self.train_dataset if is_train else self.test_dataset
            losses = []
            for x, y in DataLoader(data, batch_size=64, shuffle=is_train):
                with torch.set_grad_enabled(is_train):
                    loss = torch.nn.functional.cross_entropy(self.model(x), y)
                    losses.append(loss.item())
                if is_train:
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
            return sum(losses) / len(losses)

        best_loss = float("inf")
        for epoch in range(epochs):
            run_epoch("train")
            {selection}
'''

SELECTIONS = {
    "or": ('if self.test_dataset is not None:\n                test_loss = run_epoch("test")\n'
           '            good = self.test_dataset is None or test_loss < best_loss\n'
           '            if good:\n                best_loss = test_loss\n'
           '                torch.save(self.model.state_dict(), self.ckpt_path)'),
    "if": ('if self.test_dataset is not None:\n                test_loss = run_epoch("test")\n'
           '                if test_loss < best_loss:\n                    best_loss = test_loss\n'
           '                    torch.save(self.model.state_dict(), self.ckpt_path)'),
}


@pytest.mark.parametrize("style", sorted(SELECTIONS))
@pytest.mark.parametrize("test_arg, expected", [
    ("None, 'best.pt'", 0),
    ("test_dataset=None, ckpt_path='best.pt'", 0),
    # a construction hands a test set: the selection runs on it
    ("test_set, 'best.pt'", 1),
])
def test_tr519_selection_needing_a_test_set_no_construction_gives(tmp_path, style, test_arg, expected):
    root = write(tmp_path, {
        "pyproject.toml": "",
        "mingpt/__init__.py": "",
        "mingpt/trainer.py": TRAINER.format(selection=SELECTIONS[style]),
        "play.py": ("import torch\nfrom mingpt.trainer import Trainer\n\n"
                    "train_set = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))\n"
                    "test_set = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))\n"
                    "model = torch.nn.Linear(8, 2)\n"
                    f"Trainer(model, train_set, {test_arg}).train()\n"),
    })
    assert len(found(root, ("TR519",))) == expected


# --- TR218: the DDP wrap sits under `if local_rank is not None:` (a parameter of `__init__`, or the
# attribute it sets) and every construction of the trainer passes None: no DDP in this project (the
# wrap's half of a finding judged false in blind test 127) ----------------------------------------

# the thirty-third session's trainer, its `__init__` taking the factor without a default and testing
# the rank as the parametrisation says
DDP_TRAINER = S33_TRAINER.replace("local_rank, accumulation_steps=1):", "local_rank, accumulation_steps):").replace(
    "        if local_rank is not None:\n", "        self.local_rank = local_rank\n        if {test}:\n")

DDP_RUNNER = '''import torch

from trainer import CumulativeTrainer


def main(model, loader, rank):
    optimizer = torch.optim.Adam(model.parameters())
    trainer = CumulativeTrainer(model, {rank})
    trainer.train_epoch(loader, optimizer)
'''


@pytest.mark.parametrize("test", ["local_rank is not None", "self.local_rank is not None"])
@pytest.mark.parametrize("rank, expected", [
    ("None, 4", 0),
    ("local_rank=None, accumulation_steps=4", 0),
    # a construction that hands a rank: the wrap runs and every micro-step all-reduces
    ("rank, 4", 1),
])
def test_tr218_ddp_wrap_no_construction_reaches(tmp_path, test, rank, expected):
    root = write(tmp_path, {"pyproject.toml": "", "trainer.py": DDP_TRAINER.format(test=test),
                            "run.py": DDP_RUNNER.format(rank=rank)})
    assert len(found(root, ("TR218",))) == expected


# --- TR517: a `DataParallel` wrap under `if torch.cuda.device_count() > 1:` in a script that makes one
# GPU visible at its top (`os.environ["CUDA_VISIBLE_DEVICES"] = "0"`): the wrap never runs, the saved
# keys carry no prefix (judged false in blind test 129) ------------------------------------------

PINNED = '''import os

import torch
from torch import nn

{pin}
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train():
    model = nn.Linear(8, 2)
    {count}
        model = nn.DataParallel(model)
    model.to(device)
    torch.save(model.state_dict(), "best.bin")


def predict():
    model = nn.Linear(8, 2)
    model.load_state_dict(torch.load("best.bin"))
    return model
'''


@pytest.mark.parametrize("pin, count, expected", [
    ('os.environ["CUDA_VISIBLE_DEVICES"] = "0"', "if torch.cuda.device_count() > 1:", 0),
    ('os.environ["CUDA_VISIBLE_DEVICES"] = "3"', "n_gpu = torch.cuda.device_count()\n    if n_gpu >= 2:", 0),
    # two GPUs visible, or none pinned: the wrap may run and the keys carry `module.`
    ('os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"', "if torch.cuda.device_count() > 1:", 1),
    ("", "if torch.cuda.device_count() > 1:", 1),
])
def test_tr517_wrap_needing_two_gpus_where_one_is_visible(tmp_path, pin, count, expected):
    root = write(tmp_path, {"pyproject.toml": "", "train.py": PINNED.format(pin=pin, count=count)})
    assert len(found(root, ("TR517",))) == expected


# --- TR401: a demo loop whose every backward is on a bare `.sum()` of a model fed random numbers (a
# tensor-parallel walk-through's ten steps, judged noise twice in blind test 129): medium, hidden ----

DEMO = '''import torch
from torch import nn

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64))
optimizer = torch.optim.AdamW(model.parameters(), lr=0.25)
target = torch.zeros(32, 64)
for i in range(10):
    torch.manual_seed(i)
    x = {inputs}
    output = model(x)
    {backward}
    optimizer.step()
'''


@pytest.mark.parametrize("inputs, backward, confidence", [
    ("torch.rand(32, 64)", "output.sum().backward()", "medium"),
    ("torch.randn(32, 64)", "loss = output.mean()\n    loss.backward()", "medium"),
    # a real objective, or real inputs: the missing reset is the bug
    ("torch.rand(32, 64)", "nn.functional.mse_loss(output, target).backward()", "high"),
    ("torch.load('batch.pt')", "output.sum().backward()", "high"),
])
def test_tr401_objective_free_demo_on_random_inputs(tmp_path, inputs, backward, confidence):
    root = write(tmp_path, {"pyproject.toml": "", "demo.py": DEMO.format(inputs=inputs, backward=backward)})
    assert [f.confidence for f in found(root, ("TR401",))] == [confidence]


def test_tr401_objective_free_demo_through_a_parallelising_wrapper(tmp_path):
    # the network is what a wrapper function returns (no model kind): still a callable fed noise
    source = ('import torch\nfrom torch import nn\n'
              'from torch.distributed.tensor.parallel import parallelize_module\n\n\n'
              'def main(mesh):\n'
              '    tp_model = parallelize_module(module=nn.Linear(8, 8), device_mesh=mesh, parallelize_plan={})\n'
              '    optimizer = torch.optim.AdamW(tp_model.parameters(), lr=0.25)\n'
              '    for i in range(10):\n'
              '        output = tp_model(torch.rand(32, 8))\n'
              '        output.sum().backward()\n'
              '        optimizer.step()\n')
    root = write(tmp_path, {"pyproject.toml": "", "tp_toy.py": source})
    assert [f.confidence for f in found(root, ("TR401",))] == ["medium"]


# --- TR416 (and every rule asking `one_by_default`): an accumulation factor a notebook's first cell
# sets to the literal 1 -- the optimizer steps after every backward, nothing accumulates until the user
# edits it (judged false in blind test 129): medium, naming the setting ---------------------------

ACCUM_NB = '''import torch
from torch import nn

accumulation_steps = {factor}
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1)))
for idx, (x, y) in enumerate(loader):
    loss = nn.functional.mse_loss(model(x), y) / accumulation_steps
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if idx % accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
'''


@pytest.mark.parametrize("factor, confidence", [("1", "medium"), ("4", "high")])
def test_tr416_factor_a_literal_one(tmp_path, factor, confidence):
    root = write(tmp_path, {"pyproject.toml": "", "train.py": ACCUM_NB.format(factor=factor)})
    assert [f.confidence for f in found(root, ("TR416",))] == [confidence]


# --- target torch: a bare floor in requirements.txt (`torch>=1.7.0`) says nothing of the installed
# torch; the README's exact install command decides (LIC adapters' `conda install pytorch==1.11.0`,
# TR520 judged noise in blind test 129) ----------------------------------------------------------

@pytest.mark.parametrize("requirement, readme, expected", [
    ("torch>=1.7.0\n", "conda install pytorch==1.11.0 torchvision==0.12.0 -c pytorch\n", (True, (1, 11))),
    ("torch\n", "pip install torch==1.8.1\n", (True, (1, 8))),
    # a README naming no exact torch, or a bounded requirement: the requirement decides
    ("torch>=1.7.0\n", "Install PyTorch 1.7 or later.\n", (True, None)),
    ("torch==2.7.0\n", "conda install pytorch==1.11.0 -c pytorch\n", (True, (2, 7))),
])
def test_readme_pin_decides_after_a_bare_floor(tmp_path, requirement, readme, expected):
    from torchreview.config import nearest_torch_pin

    (tmp_path / "requirements.txt").write_text(requirement)
    (tmp_path / "README.md").write_text(readme)
    (tmp_path / "train.py").write_text("import torch\n")
    assert nearest_torch_pin(str(tmp_path / "train.py"), memo=False) == expected


NESTED_DEMO = '''import torch
from torch import nn


def main(device):
    model = nn.Sequential(nn.Embedding(100, 16), nn.Linear(16, 16)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def training_step(x, step_num=None):
        loss = model(x).sum()
        loss.backward()
        return loss

    for i in range(10):
        x = {inputs}.to(device)
        training_step(x, step_num=i)
        optimizer.step()
'''


@pytest.mark.parametrize("inputs, confidence", [
    ("torch.randint(100, (2, 128))", "medium"),
    # real token ids: the missing reset is the bug
    ("torch.load('tokens.pt')[i]", "high"),
])
def test_tr401_objective_free_demo_in_a_nested_step(tmp_path, inputs, confidence):
    root = write(tmp_path, {"pyproject.toml": "", "train.py": NESTED_DEMO.format(inputs=inputs)})
    assert [f.confidence for f in found(root, ("TR401",))] == [confidence]


# --- TR508: a plain list of dropout layers loses no parameter -- the message says what it does lose,
# the eval() switch (its "parameters() miss them" was judged wrong in blind test 129) ------------

DROPOUTS = '''import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 2)
        self.drops = {container}

    def forward(self, x):
        return sum(self.fc(d(x)) for d in self.drops) / len(self.drops)
'''


@pytest.mark.parametrize("container, eval_only", [
    ("[nn.Dropout(0.1 * (i + 1)) for i in range(5)]", True),
    ("[nn.Dropout(0.1), nn.Dropout2d(0.2)]", True),
    # a layer with weights in the list: parameters are lost too
    ("[nn.Dropout(0.1), nn.Linear(16, 16)]", False),
])
def test_tr508_dropout_only_container_message(tmp_path, container, eval_only):
    root = write(tmp_path, {"pyproject.toml": "", "model.py": DROPOUTS.format(container=container)})
    findings = found(root, ("TR508",))
    assert len(findings) == 1
    assert ("`model.eval()` does not reach them" in findings[0].message) is eval_only
    assert ("`parameters()`" in findings[0].message) is not eval_only


# --- TR414: the adaptive optimizer is built by a name a star import brings (`AdamW(...)` after `from
# transformers import *`) and handed to the training function: Adam cancels the k-times larger
# gradients, so the unscaled loss is low advice (judged noise in blind test 129) ----------------

STAR_ADAM = '''import torch
from transformers import *


def train(model, optimizer, loader, accumulation_steps):
    for idx, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if idx % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def main(model, loader):
    optimizer = {builder}(model.parameters(), lr=1e-5)
    train(model, optimizer, loader, 4)
'''


@pytest.mark.parametrize("builder, kind", [("AdamW", "advice"), ("SGD", "likely-defect")])
def test_tr414_star_imported_adaptive_optimizer(tmp_path, builder, kind):
    root = write(tmp_path, {"pyproject.toml": "", "train.py": STAR_ADAM.format(builder=builder)})
    findings = found(root, ("TR414",))
    assert [f.kind for f in findings] == [kind]
