"""Residue classes from blind test 109 (twenty-ninth session): each class has positives and
near-misses, written here (no code of the reviewed repositories)."""
from __future__ import annotations

import json

import pytest

from residue_helpers import DROPOUT_NET, found, write

# --- TR511: a subclass assigning a tensor to a name its base class registered as a buffer goes
# through `nn.Module.__setattr__` into that buffer, which moves with the module (a noisy-label loss
# library's inverse transition matrix, judged false in blind test 109) ----------------------------

BASE = '''import torch
from torch import nn


class Base(nn.Module):
    def __init__(self, n):
        super().__init__()
        matrix = torch.eye(n)
        REGISTER

    def forward(self, x):
        raise NotImplementedError


class Inverse(Base):
    def __init__(self, n):
        super().__init__(n)
        self.matrix = torch.inverse(torch.eye(n) * 2)

    def forward(self, x):
        return x @ self.matrix
'''


def test_tr511_reassigning_a_buffer_a_base_class_registered_is_silent(tmp_path):
    root = write(tmp_path, {"losses.py": BASE.replace("REGISTER", 'self.register_buffer("matrix", matrix)')})
    assert found(root, ("TR511",)) == []


def test_tr511_buffer_registered_two_bases_up_is_silent(tmp_path):
    text = BASE.replace("REGISTER", 'self.register_buffer("matrix", matrix)').replace(
        "class Inverse(Base):", "class Middle(Base):\n    pass\n\n\nclass Inverse(Middle):")
    assert found(write(tmp_path, {"losses.py": text}), ("TR511",)) == []


@pytest.mark.parametrize("register", [
    "self.other = matrix",  # the base keeps a plain tensor of another name
    'self.register_buffer("weights", matrix)',  # registers another name
])
def test_tr511_subclass_tensor_the_base_never_registered_is_reported(tmp_path, register):
    root = write(tmp_path, {"losses.py": BASE.replace("REGISTER", register)})
    assert [f.line for f in found(root, ("TR511",)) if "matrix" in f.message] == [18]


# --- TR207: a script or notebook that redefines a class builds each instance from the definition
# above it: a mode-free first `Net` (convolutions and ReLU only) evaluated without `eval()` is no
# bug even though a later cell's `Net` has dropout (a course notebook, judged false) -------------

FIRST_FREE = '''class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(torch.relu(x))
'''

WITH_DROPOUT = DROPOUT_NET  # a later cell's `Net` with dropout

SCRIPT = '''import torch
from torch import nn


FIRST


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x in [torch.randn(2, 4)]:
    opt.zero_grad()
    net(x).sum().backward()
    opt.step()

with torch.no_grad():
    out = net(torch.randn(2, 4))


SECOND


network = Net()
'''


def test_tr207_instance_of_the_earlier_mode_free_definition_is_silent(tmp_path):
    root = write(tmp_path, {"course.py": SCRIPT.replace("FIRST", FIRST_FREE).replace("SECOND", WITH_DROPOUT)})
    assert found(root, ("TR207",)) == []


def test_tr207_instance_of_the_earlier_dropout_definition_is_reported(tmp_path):
    root = write(tmp_path, {"course.py": SCRIPT.replace("FIRST", WITH_DROPOUT).replace("SECOND", FIRST_FREE)})
    assert [f.line for f in found(root, ("TR207",))] == [24]


# --- torch pins: an install script's `conda install pytorch==1.8.0` (conda's name, `==` or `=`) pins
# the torch, as `pip install torch==X` does (a graph explainer's install.sh: TR108 on its PyG cache
# judged noise in blind test 109) ----------------------------------------------------------------

@pytest.mark.parametrize(("line", "pin"), [
    ("conda install -y pytorch==1.8.0 -c pytorch", (1, 8)),
    ("conda install pytorch=1.7.1 torchvision cudatoolkit=10.2 -c pytorch", (1, 7)),
    ("mamba install -c pytorch pytorch==1.12.1", (1, 12)),
    ("pip install torch==1.9.0 torchvision==0.10.0", (1, 9)),
])
def test_install_script_conda_pins(tmp_path, line, pin):
    from torchreview.config import nearest_torch_pin

    write(tmp_path, {"install.sh": f"#!/bin/bash\nconda create -y -n env python=3.8\n{line}\n",
                     "train.py": "import torch\n"})
    assert nearest_torch_pin(str(tmp_path / "train.py"), memo=False) == (True, pin)


@pytest.mark.parametrize("line", [
    "pip install --no-index torch-scatter -f https://pytorch-geometric.com/whl/torch-1.6.0+cu102.html",
    "conda install pytorch-geometric -c pyg",
    "conda install pytorch torchvision -c pytorch",  # unpinned
])
def test_install_script_lines_that_pin_nothing(tmp_path, line):
    from torchreview.config import nearest_torch_pin

    write(tmp_path, {"install.sh": f"#!/bin/bash\n{line}\n", "train.py": "import torch\n"})
    assert nearest_torch_pin(str(tmp_path / "train.py"), memo=False) == (False, None)


# --- TR108 on a file the project's notebooks load after importing torchtext in their first cells:
# torchtext's last release runs on torch 2.3 at most, where `torch.load` unpickles in full, so the
# weights-only refusal of the project's own vocabulary cache is low confidence (a transformer
# tutorial's `vocab.pt`, judged noise); a notebook using torch before its torchtext import keeps it -

def _vocab_cache(path):
    """A torch-zip file whose pickle names ``torchtext.vocab.vocab.Vocab`` (built by hand, never unpickled)."""
    import zipfile
    pickle_bytes = b"\x80\x02ctorchtext.vocab.vocab\nVocab\nq\x00)\x81q\x01}q\x02X\x03\x00\x00\x00itoq\x03K\x05sb."
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("vocab/data.pkl", pickle_bytes)
        archive.writestr("vocab/version", "3\n")


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": c} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


LOAD_CELL = ('import os\nif os.path.exists("vocab.pt"):\n    vocab = torch.load("vocab.pt")\n'
             'else:\n    vocab = build_vocab_from_iterator([["a"]])\n    torch.save(vocab, "vocab.pt")\n')


def _vocab_project(tmp_path, first_cell):
    root = write(tmp_path, {"notebooks/train.ipynb": _notebook(first_cell, LOAD_CELL)})
    _vocab_cache(root / "output" / "vocab.pt")
    return [f.confidence for f in found(root, ("TR108",))]


def test_tr108_vocab_cache_of_torchtext_notebooks_is_low(tmp_path):
    first = "import torch\nimport torchtext\nfrom torchtext.vocab import build_vocab_from_iterator\n"
    assert _vocab_project(tmp_path, first) == ["low"]


@pytest.mark.parametrize("first", [
    # torch code runs before torchtext is imported: that cell runs on any torch
    "import torch\nprint(torch.__version__)\nimport torchtext\nfrom torchtext.vocab import build_vocab_from_iterator\n",
    # no torchtext at all
    "import torch\n\ndef build_vocab_from_iterator(x):\n    return x\n",
])
def test_tr108_vocab_cache_without_torchtext_first_keeps_its_confidence(tmp_path, first):
    assert _vocab_project(tmp_path, first) == ["high"]


# --- TR207's call path: a same-file evaluation function that switches its model parameter
# (`def evaluate(loader, encoder): encoder.eval()`) leaves the caller's model in eval mode, so a
# later `log_images(batch, encoder)` after it runs in eval mode, and the finding names the call
# site that really follows `.train()` (a font-disentanglement trainer, where the message named the
# call after `evaluate()`) -------------------------------------------------------------------------

TRAINER = '''import torch
from torch import nn


DROPOUT_NET


@torch.no_grad()
def evaluate(loader, net):
    net.eval()
    return sum(float(net(x).sum()) for x in loader)


@torch.no_grad()
def log_images(batch, net, device):
    pred = net(batch.to(device))
    return pred


def train(loader, device):
    net = Net().to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(3):
        net.train()
        for x in loader:
            opt.zero_grad()
            net(x.to(device)).sum().backward()
            opt.step()
        TRAIN_CALL
        val = evaluate(loader, net)
        log_images(x, net, device)
'''


def test_tr207_names_the_call_site_in_train_mode_not_the_one_after_evaluate(tmp_path):
    text = TRAINER.replace("DROPOUT_NET", DROPOUT_NET).replace("TRAIN_CALL", "log_images(x, net, device)")
    line = text.splitlines().index("        log_images(x, net, device)") + 1
    hits = found(write(tmp_path, {"train.py": text}), ("TR207",))
    assert len(hits) == 1 and f"train.py:{line} " in hits[0].message, [h.message for h in hits]


def test_tr207_logging_only_after_a_same_file_evaluate_is_silent(tmp_path):
    text = TRAINER.replace("DROPOUT_NET", DROPOUT_NET).replace("TRAIN_CALL", "pass")
    assert found(write(tmp_path, {"train.py": text}), ("TR207",)) == []
