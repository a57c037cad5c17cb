"""Residue classes from blind test 109 (twenty-ninth session): each class has positives and
near-misses, written here (no code of the reviewed repositories)."""
from __future__ import annotations

import json

import pytest

from residue_helpers import DROPOUT_NET, found, write
from torchreview.engine.runner import Settings, run_review

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

def _torch_zip(path, folder: str, pickle_bytes: bytes):
    """A torch-zip file (``<folder>/data.pkl``) holding ``pickle_bytes`` (built by hand, never unpickled)."""
    import zipfile
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{folder}/data.pkl", pickle_bytes)
        archive.writestr(f"{folder}/version", "3\n")


def _vocab_cache(path):
    """A torch-zip file whose pickle names ``torchtext.vocab.vocab.Vocab``."""
    _torch_zip(path, "vocab", b"\x80\x02ctorchtext.vocab.vocab\nVocab\nq\x00)\x81q\x01}q\x02X\x03\x00\x00\x00itoq"
                              b"\x03K\x05sb.")


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


# ===================== blind test 110 =====================

# --- TR107: two keys of one service handed to two calls of its library in one file (comet_ml's
# `Experiment(api_key="…")` and `API(rest_api_key="…")`) are one account's credentials: one finding,
# merged with the files that hand over the first key alone (judged a repeat) ---------------------

COMET_BOTH = '''from comet_ml import API, Experiment

experiment = Experiment(api_key="Zq8Lr2Vt6Np4Hs1Kd9Wm3Bx7Fc", project_name="runs")
api = API(rest_api_key="Xy4Pk8Rm2Qs6Tv9Ln3Hd7Wb1Gj")
'''
COMET_ONE = '''from comet_ml import Experiment

experiment = Experiment(api_key="Zq8Lr2Vt6Np4Hs1Kd9Wm3Bx7Fc", project_name="runs")
'''


def test_tr107_keys_of_one_service_in_one_file_are_one_finding(tmp_path):
    root = write(tmp_path, {"plot.py": COMET_BOTH, "main.py": COMET_ONE, "sweep.py": COMET_ONE})
    findings = run_review([str(root)], Settings(rule_codes=("TR107",), jobs=1, min_confidence="low")).findings
    assert len(findings) == 1, [f.message for f in findings]
    parts = [p for f in findings for p in (f.parts or (f,))]
    assert sorted(p.path.rsplit("/", 1)[-1] for p in parts) == ["main.py", "plot.py", "sweep.py"]


def test_tr107_keys_of_two_services_in_two_files_stay_two_findings(tmp_path):
    other = 'from sigopt import Connection\n\nconn = Connection(client_token="Xy4Pk8Rm2Qs6Tv9Ln3Hd7Wb1Gj")\n'
    findings = run_review([str(write(tmp_path, {"plot.py": COMET_ONE, "tune.py": other}))],
                          Settings(rule_codes=("TR107",), jobs=1, min_confidence="low")).findings
    assert len(findings) == 2, [f.message for f in findings]


# --- TR511: a class overriding `parameters()` to return its tensors (`return list([self.C, ...])`)
# hands them to the optimizer built from `net.parameters()` (a kernel-smoothing notebook's RBF
# network, judged false) ---------------------------------------------------------------------------

RBF = '''import numpy as np
import torch


class RBFNet(torch.nn.Module):
    def __init__(self, m, p):
        super().__init__()
        self.C = torch.tensor(0.1 * np.random.randn(m, p).astype(np.float32), requires_grad=True)
        self.beta = torch.tensor(np.random.randn(m).astype(np.float32), requires_grad=True)

    ACCESSOR

    def forward(self, x):
        return (x @ self.C.t()) * self.beta


net = RBFNet(4, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
'''


@pytest.mark.parametrize("accessor", [
    "def parameters(self):\n        return list([self.C, self.beta])",
    "def parameters(self):\n        return tuple((self.C, self.beta))",
    "def parameters(self):\n        yield self.C\n        yield self.beta",
])
def test_tr511_parameters_override_returning_the_tensors_is_silent(tmp_path, accessor):
    assert found(write(tmp_path, {"rbf.py": RBF.replace("ACCESSOR", accessor)}), ("TR511",)) == []


def test_tr511_without_the_override_is_reported(tmp_path):
    text = RBF.replace("ACCESSOR", "def describe(self):\n        return 'rbf'")
    assert sorted(f.line for f in found(write(tmp_path, {"rbf.py": text}), ("TR511",))) == [8, 9]


# --- TR108 on a tool's own pickles: Sphinx's build cache (`.doctrees/environment.pickle`, naming
# Sphinx classes a scan cannot show to be plain: judged false as critical) and a model MLflow
# logged (`artifacts/model/data/model.pth` beside `MLmodel`, read by `mlflow.pytorch.load_model`:
# judged noise) are low confidence in a review of the project; the same files elsewhere keep theirs

def _module_checkpoint(path):
    """A torch-zip checkpoint of a pickled project module."""
    _torch_zip(path, "model", b"\x80\x02csrc.models.ae\nAutoencoder\nq\x00)\x81q\x01}q\x02X\x01\x00\x00\x00kq"
                              b"\x03K\x05sb.")


def _sphinx_cache(path):
    """A pickle that calls a Sphinx path class (STACK_GLOBAL-free protocol 2: GLOBAL then REDUCE)."""
    from residue_helpers import pickle_calling
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle_calling(b"sphinx.util._pathlib", b"_StrPath", b"/home/me/docs"))


def test_tr108_sphinx_doctrees_cache_is_low(tmp_path):
    root = write(tmp_path, {"src/train.py": "import torch\n"})
    _sphinx_cache(root / "docs" / "site" / ".doctrees" / "environment.pickle")
    assert [f.confidence for f in found(root, ("TR108",))] == ["low"]


def test_tr108_the_same_pickle_outside_a_doctrees_folder_keeps_its_confidence(tmp_path):
    root = write(tmp_path, {"src/train.py": "import torch\n"})
    _sphinx_cache(root / "docs" / "site" / "environment.pickle")
    assert [f.confidence for f in found(root, ("TR108",))] == ["high"]


def test_tr108_mlflow_logged_model_is_low(tmp_path):
    root = write(tmp_path, {"src/train.py": "import torch\n",
                            "mlruns/1/abc/artifacts/model/MLmodel": "flavors:\n  pytorch: {}\n"})
    _module_checkpoint(root / "mlruns" / "1" / "abc" / "artifacts" / "model" / "data" / "model.pth")
    assert [f.confidence for f in found(root, ("TR108",))] == ["low"]


def test_tr108_the_same_checkpoint_without_mlmodel_keeps_its_confidence(tmp_path):
    root = write(tmp_path, {"src/train.py": "import torch\n"})
    _module_checkpoint(root / "runs" / "1" / "abc" / "artifacts" / "model" / "data" / "model.pth")
    assert [f.confidence for f in found(root, ("TR108",))] == ["high"]


# --- TR102's save-load link: a load helper beside its save helper (`load_data(path)` and
# `save_data(data, path)` in one utilities module) reads what the helpers' callers write, not the
# state-dict checkpoint another script saves (a mineral classifier, whose message claimed
# `weights_only=True` reads the file: judged false); and a path handed in by every call of the
# loading function (`build_model("outputs/198-checkpoint.ckpt")`) names the file it reads, which
# links it to the project's save of that name (a Streamlit demo, judged noise as a defect) -------

UTILS = '''import torch


def save_data(data, path):
    torch.save(data, path)


def load_data(path):
    return torch.load(path, weights_only=False)
'''
TRAIN_SAVE = '''import torch
from torch import nn

model = nn.Linear(2, 2)
torch.save(model.state_dict(), "outputs/model.pt")
'''


def test_tr102_load_helper_beside_its_save_helper_is_not_linked_to_another_files_save(tmp_path):
    root = write(tmp_path, {"pyproject.toml": "[project]\nname = \"mineral\"\n", "mineral/__init__.py": "",
                            "mineral/utils.py": UTILS, "mineral/train.py": TRAIN_SAVE,
                            "mineral/prepare.py": "from .utils import save_data\nsave_data(object(), 'base_data.pt')\n",
                            "mineral/evaluate.py": "from .utils import load_data\ndata = load_data('base_data.pt')\n"})
    hits = [f for f in found(root, ("TR102",)) if f.path.endswith("utils.py")]
    assert hits and not any("state dicts" in f.message for f in hits), [f.message for f in hits]


DEMO = '''import torch
from torch import nn


def build_model(checkpoint_path):
    net = nn.Linear(2, 2)
    checkpoint = torch.load(checkpoint_path, map_location="cpu")
    net.load_state_dict(checkpoint["model_state_dict"])
    return net


net = build_model("outputs/models/198-checkpoint.ckpt")
'''
TRAINER_SAVE = '''import torch
from torch import nn

model = nn.Linear(2, 2)
for epoch in range(200):
    torch.save({"model_state_dict": model.state_dict(), "epoch": epoch}, f"outputs/models/{epoch}-checkpoint.ckpt")
'''


def test_tr102_path_every_call_passes_links_to_the_projects_save(tmp_path):
    root = write(tmp_path, {"app.py": DEMO, "ddpm.py": TRAINER_SAVE, "requirements.txt": "torch==2.1.0\n"})
    hits = found(root, ("TR102",), detect_torch=True)
    assert [f.kind for f in hits] == ["advice"] and "ddpm.py:6" in hits[0].message, [f.message for f in hits]


def test_tr102_path_the_calls_disagree_on_stays_a_defect(tmp_path):
    text = DEMO + 'other = build_model(input("checkpoint: "))\n'
    root = write(tmp_path, {"app.py": text, "ddpm.py": TRAINER_SAVE, "requirements.txt": "torch==2.1.0\n"})
    assert [f.kind for f in found(root, ("TR102",), detect_torch=True)] == ["defect"]


# --- TR507: a list the loss is appended to (before `loss.backward()`, which frees the saved
# activations) that nothing in the file ever reads keeps only small autograd nodes, for nothing:
# advice (a course lab's `LOSS.append(loss)`, judged noise); a list the file reads stays a defect -

LAB = '''import torch
from torch import nn

model = nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.MSELoss()
loader = [(torch.randn(4, 2), torch.randn(4, 1))]
LOSS = []


def train_model(epochs):
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            LOSS.append(loss)
            loss.backward()
            optimizer.step()


train_model(300)
READ
'''


def test_tr507_list_nothing_reads_is_advice(tmp_path):
    hits = found(write(tmp_path, {"lab.py": LAB.replace("READ", "")}), ("TR507",))
    assert [f.kind for f in hits] == ["advice"], [f.message for f in hits]


@pytest.mark.parametrize("read", ["print(LOSS[-1])", "plot = [float(v) for v in LOSS]"])
def test_tr507_list_the_file_reads_stays_a_defect(tmp_path, read):
    hits = found(write(tmp_path, {"lab.py": LAB.replace("READ", read)}), ("TR507",))
    assert [f.kind for f in hits] == ["defect"], [f.message for f in hits]


# ===================== blind test 111 =====================

# --- TR501: a tensor handed to a function of the file that turns its gradient off
# (`create_sinusoidal_embeddings(..., out=self.pos.weight)` running `out.requires_grad = False`) may
# be updated in place afterwards (a hybrid seq2seq's embedding scaling, judged false) -------------

EMBED = '''import math
import torch
from torch import nn


def fill_sinusoid(n_pos, dim, out):
    SWITCH
    out[:, 0::2] = torch.sin(torch.arange(n_pos * dim // 2).float().view(n_pos, -1))


class Embeddings(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.pos = nn.Embedding(n, d)
        fill_sinusoid(n, d, out=self.pos.weight)
        self.pos.weight *= 1.0 / math.sqrt(d)

    def forward(self, ids):
        return self.pos(ids)
'''


@pytest.mark.parametrize("switch", ["out.requires_grad = False", "out.requires_grad_(False)",
                                    "out.detach_()"])
def test_tr501_in_place_after_a_helper_turned_the_gradient_off_is_silent(tmp_path, switch):
    assert found(write(tmp_path, {"emb.py": EMBED.replace("SWITCH", switch)}), ("TR501",)) == []


def test_tr501_in_place_after_a_helper_that_keeps_the_gradient_is_reported(tmp_path):
    text = EMBED.replace("SWITCH", "print(out.shape)").replace(
        "    out[:, 0::2] = torch.sin(torch.arange(n_pos * dim // 2).float().view(n_pos, -1))\n", "")
    assert [f.line for f in found(write(tmp_path, {"emb.py": text}), ("TR501",))] == [15]


# --- TR401: `Trainer(loss, metric, optimizer, ...)` builds an object of a class of this file: it runs no
# backward or step, so a fold loop that builds one and calls its `train()` (whose batches reset the
# gradients) is no loop without `zero_grad()` (a salt-segmentation solution, judged false) --------

FOLDS = '''import torch
from torch import nn


class Trainer(object):
    def __init__(self, loss, metric, optimizer):
        self.criterion, self.metric, self.optimizer = loss, metric, optimizer

    def train(self, loader, model):
        for x, y in loader:
            loss = self.criterion(model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


def train_folds(folds, loss, metric):
    for fold in folds:
        model = nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        trainer = Trainer(loss, metric, optimizer)
        trainer.train(fold, model)
'''


def test_tr401_constructing_a_local_trainer_class_is_no_step(tmp_path):
    assert found(write(tmp_path, {"training.py": FOLDS}), ("TR401",)) == []


def test_tr401_a_fold_loop_that_trains_itself_without_reset_is_still_reported(tmp_path):
    text = FOLDS.replace("        trainer.train(fold, model)\n",
                         "        for x, y in fold:\n            loss(model(x), y).backward()\n"
                         "            optimizer.step()\n")
    assert len(found(write(tmp_path, {"training.py": text}), ("TR401",))) == 1


# --- TR416: the clip before `unscale_` written in several scripts of one project (a Kaggle
# solution's experiment folders, each loop with its own optimizer's name) is one finding listing the
# places (the second script's finding was judged a repeat) ---------------------------------------

AMP_LOOP = '''import torch
from torch import nn

model = nn.Linear(2, 1)
OPT = torch.optim.AdamW(model.parameters())
scaler = torch.cuda.amp.GradScaler()
for x, y in [(torch.randn(4, 2), torch.randn(4, 1))]:
    with torch.autocast("cuda"):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(OPT)
    scaler.update()
    OPT.zero_grad()
'''


def test_tr416_the_same_clip_in_several_scripts_is_one_finding(tmp_path):
    root = write(tmp_path, {"exp05/run.py": AMP_LOOP.replace("OPT", "optimizer"),
                            "exp21/run_pretrain.py": AMP_LOOP.replace("OPT", "optimizer_gen")})
    findings = run_review([str(root)], Settings(rule_codes=("TR416",), jobs=1, min_confidence="low")).findings
    assert len(findings) == 1 and len(findings[0].related) == 1, [f.message for f in findings]


# --- TR104: a remote-code load of a model publisher's own repository (`deepseek-ai/...`) trusts the
# model's authors: medium (a learning repository's DeepSeek-Coder loads, judged noise); a third
# party's copy stays high -------------------------------------------------------------------------

GEN = '''from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("REPO", trust_remote_code=True)
'''


@pytest.mark.parametrize(("repo", "confidence"), [("deepseek-ai/deepseek-coder-1.3b-base", "medium"),
                                                  ("someone/deepseek-coder-finetune", "high")])
def test_tr104_publisher_repositories(tmp_path, repo, confidence):
    hits = found(write(tmp_path, {"pkg/__init__.py": "", "pkg/gen.py": GEN.replace("REPO", repo),
                                  "pyproject.toml": "[project]\nname = \"pkg\"\n"}), ("TR104",))
    assert [f.confidence for f in hits] == [confidence], [f.message for f in hits]


# ===================== blind test 112 =====================

# --- TR508: a plain list whose layers the same method also puts into a registering container of the
# class (`self.layers.append(nn.Sequential(linear, nn.ReLU()))` beside `self.linears.append(linear)`)
# keeps second references to registered layers (a double-descent study, judged false) ---------------

MLP = '''import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.linears = []
        self.layers = REGISTERING
        for a, b in zip(sizes, sizes[1:]):
            self._add(a, b)

    def _add(self, a, b):
        linear = nn.Linear(a, b)
        self.linears.append(linear)
        ALSO

    def weight_norms(self):
        return [linear.weight.norm() for linear in self.linears]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
'''


@pytest.mark.parametrize("also", ["self.layers.append(nn.Sequential(linear, nn.ReLU()))",
                                  "self.layers.append(linear)"])
def test_tr508_second_references_to_registered_layers_are_silent(tmp_path, also):
    text = MLP.replace("REGISTERING", "nn.ModuleList()").replace("ALSO", also)
    assert found(write(tmp_path, {"mlp.py": text}), ("TR508",)) == []


def test_tr508_when_the_other_container_is_plain_too_it_is_reported(tmp_path):
    text = MLP.replace("REGISTERING", "[]").replace("ALSO", "self.layers.append(nn.Sequential(linear, nn.ReLU()))")
    assert found(write(tmp_path, {"mlp.py": text}), ("TR508",))


# --- TR108 on a committed whole-module checkpoint under a torch < 2.6 pin: a weights-only load of
# another, named file (`torch.load("num_users.pt", weights_only=True)`) says nothing about this one,
# which no load reads (a federated-learning project's topic model, judged noise); a weights-only
# load that names the file keeps the finding ----------------------------------------------------

def _fl_project(tmp_path, load_line):
    root = write(tmp_path, {"requirements.txt": "torch==2.5.1+cu124\n",
                            "data.py": f"import torch\n\n{load_line}\n",
                            "train.py": "import torch\n\nmodel = torch.nn.Linear(2, 2)\n"})
    _module_checkpoint(root / "saves" / "topic.pt")
    return [f.confidence for f in found(root, ("TR108",), detect_torch=True)]


def test_tr108_weights_only_load_of_another_file_leaves_the_pin_in_charge(tmp_path):
    assert _fl_project(tmp_path, 'users = torch.load("num_users.pt", weights_only=True)') == ["low"]


def test_tr108_weights_only_load_of_that_file_keeps_it(tmp_path):
    assert _fl_project(tmp_path, 'model = torch.load("saves/topic.pt", weights_only=True)') == ["high"]
