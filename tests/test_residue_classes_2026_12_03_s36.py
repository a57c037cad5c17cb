"""Residue classes of the thirty-sixth session (findings judged noise or false in blind tests):
each positive or near-miss below failed on the code before its fix."""
from __future__ import annotations

import pytest

from residue_helpers import found, write


# --- checkpoint index: a script that reads a trained model's weights on every run (it cannot
# start without that file) from a path one option names, and writes its own result under other
# options, does not read back its own save; TR520 had linked the two by their shared
# "state_dict" key (a calibration script, judged false in blind test 132) ------------------------

CALIBRATE = '''import argparse
import os

import torch
import torch.nn as nn


def options():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source_ckpt")
    parser.add_argument("--out_dir", default="runs")
    return parser.parse_args()


def store(args, net, scale, name):
    weights = net.state_dict()
    weights["0.weight"] /= scale
    blob = {{"state_dict": weights, "args": args}}
    target = {target}
    torch.save(blob, target)


def main():
    args = options()
    net = nn.Sequential(nn.Linear(4, 2))
    {load}
    net.load_state_dict(weights)
    store(args, net, torch.ones(1), "calibrated.pt")


if __name__ == "__main__":
    main()
'''

OUT = 'os.path.join(args.out_dir, "checkpoints", name)'
PIN = "torch==2.7.0\n"
INPUT = 'weights = torch.load(args.source_ckpt)["state_dict"]'


def test_every_run_input_of_another_option_is_not_the_scripts_own_file(tmp_path):
    write(tmp_path, {"calibrate.py": CALIBRATE.format(target=OUT, load=INPUT), "requirements.txt": PIN})
    assert found(tmp_path, ("TR520",)) == []


def test_module_level_script_reading_its_input_every_run(tmp_path):
    write(tmp_path, {"requirements.txt": PIN, "convert.py": '''import argparse
import os

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--weights")
parser.add_argument("--save_dir")
args = parser.parse_args()
net = nn.Linear(4, 2)
net.load_state_dict(torch.load(args.weights)["model"])
torch.save({"model": net.state_dict(), "args": args}, os.path.join(args.save_dir, "half.pt"))
'''})
    assert found(tmp_path, ("TR520",)) == []


@pytest.mark.parametrize("load", [
    # only when an option is set: the script's own earlier output, handed back
    'weights = torch.load(args.source_ckpt)["state_dict"] if args.source_ckpt else net.state_dict()',
    # two keys: the reader expects this script's layout
    'ckpt = torch.load(args.source_ckpt); weights = ckpt["state_dict"]; print(ckpt["args"])',
])
def test_loads_that_still_read_the_scripts_own_save(tmp_path, load):
    write(tmp_path, {"calibrate.py": CALIBRATE.format(target=OUT, load=load), "requirements.txt": PIN})
    hits = found(tmp_path, ("TR520",))
    assert [f.line for f in hits] == [26]
    assert "`args`" in hits[0].message


def test_every_run_load_of_the_file_the_script_rewrites_in_place(tmp_path):
    write(tmp_path, {"calibrate.py": CALIBRATE.format(target="args.source_ckpt", load=INPUT),
                     "requirements.txt": PIN})
    hits = found(tmp_path, ("TR520",))
    assert [f.line for f in hits] == [26]


# --- TR520: a project's own `parse_args()` that hands back an OmegaConf config is no
# `argparse.Namespace` (jdeschena's `parse_args` returning `OmegaConf.create(...)`, named a
# Namespace in blind test 132) ----------------------------------------------------------------

PARSE = '''import argparse

from omegaconf import OmegaConf


def parse_args(parser: argparse.ArgumentParser):
    args = parser.parse_args()
{convert}    return args
'''

RESUMING = '''import argparse

import torch
import torch.nn as nn

from pkg.utils import parse_args


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume")
    args = parse_args(parser)
    net = nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    if args.resume:
        ckpt = torch.load(args.resume)
        net.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
    for step in range(3):
        loss = net(torch.randn(2, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "args": args}, args.resume)


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("convert, named", [
    ("    args = vars(args)\n    args = OmegaConf.create(args)\n", "DictConfig"),
    ("", "argparse.Namespace"),  # near-miss: the helper hands back the Namespace itself
])
def test_project_parse_args_returning_a_config(tmp_path, convert, named):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/utils.py": PARSE.format(convert=convert),
                     "pkg/train.py": RESUMING, "requirements.txt": PIN})
    hits = found(tmp_path, ("TR520",))
    assert [f.line for f in hits] == [16]
    assert named in hits[0].message
    assert ("Namespace" in hits[0].message) == (named == "argparse.Namespace")


# --- TR417: `autocast(enabled=DEVICE.type == 'cuda:1')` is never on: a device's `type` is the bare
# type name, the index lives in `.index` (mlu1's autoencoder, judged false in blind test 136) -------

AUTOENCODER = '''import torch
import torch.nn as nn
from torch.cuda.amp import autocast

DEVICE = torch.device("cuda:1" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 8).to(DEVICE)
opt = torch.optim.Adam(model.parameters())
loss_fn = nn.MSELoss()
for step in range(10):
    x = torch.randn(4, 8).to(DEVICE)
    opt.zero_grad()
    with autocast(enabled={enabled}):
        loss = loss_fn(model(x), x)
    loss.backward()
    opt.step()
'''


@pytest.mark.parametrize("enabled, reported", [
    ("DEVICE.type == 'cuda:1'", False),
    ("'cuda:0' == DEVICE.type", False),
    ("DEVICE.type == 'cuda'", True),  # near-miss: on whenever the GPU is
    ("str(DEVICE) == 'cuda:1'", True),  # near-miss: the whole device's text does hold the index
])
def test_autocast_enabled_by_an_impossible_device_type(tmp_path, enabled, reported):
    write(tmp_path, {"train.py": AUTOENCODER.format(enabled=enabled)})
    assert [f.line for f in found(tmp_path, ("TR417",))] == ([12] if reported else [])


# --- TR413: an NLL loss of raw scores summed into a total nothing reads (a validation pass that
# reports only accuracy: q-cheng's homework, judged noise in blind test 136) is low confidence ----

VALIDATE = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


def valid(model, loader):
    model.eval()
    total = 0
    right = 0
    with torch.no_grad():
        for data, label in loader:
            out = model(data)
            total += F.nll_loss(out, label)
            right += out.argmax(1).eq(label).sum().item()
    print("accuracy", right){tail}


valid(Net(), [(torch.randn(2, 4), torch.tensor([0, 1]))])
'''


@pytest.mark.parametrize("tail, confidence", [
    ("", "low"),
    ('\n    print("loss", total)', "high"),  # near-miss: the total is reported
    ("\n    return total", "high"),  # near-miss: handed back
    ("\n    probe = lambda: total", "high"),  # near-miss: a nested function reads it
])
def test_nll_of_scores_whose_value_is_dropped(tmp_path, tail, confidence):
    write(tmp_path, {"net.py": VALIDATE.format(tail=tail)})
    hits = found(tmp_path, ("TR413",))
    assert [(f.line, f.confidence) for f in hits] == [(22, confidence)]


# --- TR520: what a checkpoint holds follows a save helper's parameters to this file's calls
# (`save_model(model, opt, args, config, path)` called by `train(args)`, itself called with a
# `SimpleNamespace`: named an `argparse.Namespace` in blind test 136), and NumPy arrays and scalars
# (`np.random.get_state()`) are objects the weights-only unpickler refuses too ------------------

HELPER_SAVE = '''import random

import numpy as np
import torch
import torch.nn as nn
from types import SimpleNamespace


def save_model(model, optimizer, args, config, filepath):
    info = {{
        "model": model.state_dict(),
        "optim": optimizer.state_dict(),
        "args": args,
        "model_config": config,
        "system_rng": random.getstate(),
        "torch_rng": torch.random.get_rng_state(),{extra}
    }}
    torch.save(info, filepath)


def train(args):
    config = {{"hidden": 8}}
    config = {config}
    model = nn.Linear(4, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    for epoch in range(args.epochs):
        loss = model(torch.randn(2, 4)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        save_model(model, optimizer, args, config, args.filepath)


def test(args):
    saved = torch.load(args.filepath)
    model = nn.Linear(4, 2)
    model.load_state_dict(saved["model"])


if __name__ == "__main__":
    run = {run}
    train(run)
    test(run)
'''
RUN = 'SimpleNamespace(filepath="clf.pt", epochs=2)'


def test_save_helper_parameters_followed_to_their_calls(tmp_path):
    write(tmp_path, {"classifier.py": HELPER_SAVE.format(extra="", config="SimpleNamespace(**config)", run=RUN),
                     "requirements.txt": PIN})
    hits = found(tmp_path, ("TR520",))
    assert [f.line for f in hits] == [35]
    assert "`SimpleNamespace` under key `args`" in hits[0].message
    assert "`SimpleNamespace` under key `model_config`" in hits[0].message
    assert "argparse" not in hits[0].message


def test_save_helper_handed_plain_dicts_is_silent(tmp_path):
    # near-miss: every call hands the helper dicts (`vars(...)`, a dict literal reaching the call)
    write(tmp_path, {"classifier.py": HELPER_SAVE.format(extra="", config="dict(config)",
                                                         run='vars(SimpleNamespace(filepath="clf.pt", epochs=2))'
                                                         ).replace("args.epochs", "args['epochs']")
                     .replace("args.filepath", "args['filepath']"),
                     "requirements.txt": PIN})
    assert found(tmp_path, ("TR520",)) == []


@pytest.mark.parametrize("extra, reported", [
    ('\n        "numpy_rng": np.random.get_state(),', True),
    ('\n        "best": np.mean([0.5, 0.7]),', True),
    ('\n        "rng": np.random.default_rng(0).bit_generator.state,', False),  # a dict of ints
])
def test_numpy_values_in_a_checkpoint(tmp_path, extra, reported):
    write(tmp_path, {"classifier.py": HELPER_SAVE.format(extra=extra, config="dict(config)",
                                                         run='vars(SimpleNamespace(filepath="clf.pt", epochs=2))'
                                                         ).replace("args.epochs", "args['epochs']")
                     .replace("args.filepath", "args['filepath']"),
                     "requirements.txt": PIN})
    hits = found(tmp_path, ("TR520",))
    load = next(i for i, text in enumerate((tmp_path / "classifier.py").read_text().splitlines(), 1)
                if "torch.load" in text)
    assert [f.line for f in hits] == ([load] if reported else [])
    if reported:
        assert "a NumPy array or scalar" in hits[0].message


def test_numpy_reconstructors_allowed_by_the_project(tmp_path):
    source = HELPER_SAVE.format(extra='\n        "numpy_rng": np.random.get_state(),', config="dict(config)",
                                run='vars(SimpleNamespace(filepath="clf.pt", epochs=2))'
                                ).replace("args.epochs", "args['epochs']").replace("args.filepath", "args['filepath']")
    source = source.replace("def test(args):\n", "def test(args):\n    torch.serialization.add_safe_globals("
                            "[np.core.multiarray._reconstruct, np.ndarray, np.dtype])\n")
    write(tmp_path, {"classifier.py": source, "requirements.txt": PIN})
    assert found(tmp_path, ("TR520",)) == []


# --- TR520: a load in `except TypeError:` after a load passing `weights_only=` is the old-torch
# fallback (a torch without the keyword, where whole objects load): never reported; and a
# `try` whose only handler catches TypeError does not guard the first load against a refused
# unpickling (the error is an `UnpicklingError`) ------------------------------------------------

FALLBACK = '''import numpy as np
import torch
import torch.nn as nn


def save(net, opt, path):
    torch.save({{"model_state": net.state_dict(), "optimizer_state": opt.state_dict(),
                "numpy_rng_state": np.random.get_state()}}, path)


def restore(net, opt, path):
    try:
        ckpt = torch.load(path, map_location="cpu", {keyword})
    except {caught}:
        ckpt = torch.load(path, map_location="cpu")
    net.load_state_dict(ckpt["model_state"])
    opt.load_state_dict(ckpt["optimizer_state"])


if __name__ == "__main__":
    net = nn.Linear(2, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    restore(net, opt, "last.pt")
    save(net, opt, "last.pt")
'''


@pytest.mark.parametrize("keyword, caught, lines", [
    ("weights_only=False", "TypeError", []),  # the fallback of a trusted full load: silent
    ("weights_only=True", "TypeError", [13]),  # the first load refuses NumPy; TypeError does not catch it
    # the handler catches the refusal, and runs a load that is weights-only by default on the same
    # torch: the fallback fails in its turn
    ("weights_only=True", "Exception", [15]),
    ("weights_only=True", "(TypeError, pickle.UnpicklingError)", [15]),
])
def test_old_torch_fallback_loads(tmp_path, keyword, caught, lines):
    write(tmp_path, {"ckpt.py": FALLBACK.format(keyword=keyword, caught=caught), "requirements.txt": PIN})
    assert [f.line for f in found(tmp_path, ("TR520",))] == lines


# --- TR519: a `test_loader` whose dataset comes from a builder's call fed `test_file`, a path to
# the dev split (`"../data/dev_en.tsv"`), holds validation data whatever its name (chen112p's
# notebook, judged false in blind test 137) ------------------------------------------------------

SELECT = '''import copy

import torch
from torch.utils.data import DataLoader, TensorDataset


def get_data(train_path, eval_path):
    train = TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,)))
    held = TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,)))
    return train, held, 4


def accuracy(model, loader):
    right = 0
    with torch.no_grad():
        for x, y in loader:
            right += (model(x).argmax(1) == y).sum().item()
    return right


train_file = "../data/train_en.tsv"
test_file = "{path}"
train_dataset, test_dataset, width = get_data(train_file, test_file)
train_loader = DataLoader(train_dataset, batch_size=4)
test_loader = DataLoader(test_dataset, batch_size=4)
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())
best, best_model = 0.0, None
for epoch in range(5):
    for x, y in train_loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    acc = accuracy(model, test_loader)
    if acc > best:
        best = acc
        best_model = copy.deepcopy(model)
'''


@pytest.mark.parametrize("path, reported", [
    ("../data/dev_en.tsv", False),
    ("../data/val.csv", False),
    ("../data/test_en.tsv", True),  # near-miss: the path names the test split too
    ("../data/heldout_en.tsv", True),  # near-miss: a word the splits do not read; the name decides
    ("../data/english.tsv", True),  # near-miss: the path names no split; the name decides
])
def test_loader_named_test_over_a_dev_file(tmp_path, path, reported):
    write(tmp_path, {"train.py": SELECT.format(path=path)})
    assert bool(found(tmp_path, ("TR519",))) == reported


# --- checkpoint links: a name a script binds twice -- to its resume's `torch.load` and, in the
# training loop, to the weights it saves (`sd = pi.state_dict(); torch.save(sd, ...)`) -- is saved as
# the binding that reaches the save (a state dict), so the script's own checkpoints are model saves
# and a weak link of its resume no longer rests on a logger nothing imports (ErikEkstedt's Gestures:
# TR518 claimed the optimizer and epoch that logger saves were dropped, judged false in blind test
# 137) --------------------------------------------------------------------------------------------

LOGGER = '''import torch


class Logger:
    def __init__(self, checkpoint_dir):
        self.checkpoint_dir = checkpoint_dir

    def save_checkpoint(self, model, optimizer, epoch):
        state = {"epoch": epoch, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}
        torch.save(state, self.checkpoint_dir + "/checkpoint.pth.tar")
'''

POLICY = '''import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--continue-training", action="store_true")
parser.add_argument("--state-dict-path")
args = parser.parse_args()
pi = nn.Linear(4, 2)
if args.continue_training:
    sd = torch.load(args.state_dict_path)
    pi.load_state_dict(sd)
optimizer = torch.optim.Adam(pi.parameters())
for step in range(100):
    loss = pi(torch.randn(2, 4)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        sd = {saved}
        torch.save(sd, "dict_{{}}.pt".format(step))
'''


@pytest.mark.parametrize("saved, reported", [
    ("pi.state_dict()", False),
    # near-miss: what the loop saves is unknown here; the resume's weak link reaches the logger's
    # checkpoint, which holds the optimizer and the epoch
    ("export(pi)", True),
])
def test_script_saving_a_rebound_state_dict(tmp_path, saved, reported):
    policy = POLICY.format(saved=saved)
    if "export" in saved:
        policy = policy.replace("import torch.nn as nn\n", "import torch.nn as nn\nfrom helpers import export\n")
    write(tmp_path, {"utils/logger.py": LOGGER, "train.py": policy})
    hits = [f for f in found(tmp_path, ("TR518",)) if f.confidence != "low"]
    assert bool(hits) == reported


# --- TR403: a dataset of another module whose constructor fills `self.audio = []` and then moves
# the stacked tensor to the device, split with `random_split` before its loaders: the batches are
# on the device (ysims's audio embeddings, judged false in blind test 137) -------------------------

AUDIO_DATASET = '''import numpy as np
import torch
from torch.utils.data import Dataset


class Clips(Dataset):
    def __init__(self, device, n):
        self.audio = []
        self.labels = []
        for i in range(n):
            self.audio.append(np.zeros(4))
            self.labels.append(i % 2)
        self.audio = torch.from_numpy(np.array(self.audio)).float(){move}
        self.labels = torch.from_numpy(np.array(self.labels)).long(){move}

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.audio[index], self.labels[index]
'''

AUDIO_TRAIN = '''import torch
import torch.nn as nn

from data.clips import Clips

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(4, 2).to(device)
optimiser = torch.optim.Adam(model.parameters())
dataset = Clips(device, 10)
train_set, val_set = torch.utils.data.random_split(dataset, [8, 2])
train_loader = torch.utils.data.DataLoader({wrapped}, batch_size=2, shuffle=True)
for data, labels in train_loader:
    out = model(data)
    loss = nn.functional.cross_entropy(out, labels)
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
'''


@pytest.mark.parametrize("move, wrapped, reported", [
    (".to(device)", "train_set", False),
    (".to(device)", "torch.utils.data.Subset(dataset, range(8))", False),
    ("", "train_set", True),  # near-miss: the constructor leaves the tensors on the host
])
def test_split_of_a_dataset_that_moves_its_tensors(tmp_path, move, wrapped, reported):
    write(tmp_path, {"data/__init__.py": "", "data/clips.py": AUDIO_DATASET.format(move=move),
                     "train.py": AUDIO_TRAIN.format(wrapped=wrapped)})
    assert bool(found(tmp_path, ("TR403",))) == reported


# --- TR519: a periodic test whose `else` arm saves the model as well (every evaluation's weights
# kept, "best" only names one of the files) chooses nothing (an RL trainer's `BestDict...pt` /
# `dict_..._TEST_...pt`, judged false in blind test 137) -------------------------------------------

PERIODIC = '''import torch
import torch.nn as nn

pi = nn.Linear(4, 2)
optimizer = torch.optim.Adam(pi.parameters())
test_targets = torch.randn(16, 4)
best = -1e9
for frame in range(1000):
    loss = pi(torch.randn(8, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if frame % 100 == 0:
        with torch.no_grad():
            test_reward = -pi(test_targets).pow(2).mean().item()
        sd = pi.state_dict()
        if test_reward > best:
            torch.save(sd, "BestDict{{}}_{{}}.pt".format(frame, round(test_reward, 3)))
            best = test_reward
        else:
{other}
'''


@pytest.mark.parametrize("other, reported", [
    ('            torch.save(sd, "dict_{}_TEST_{}.pt".format(frame, round(test_reward, 3)))', False),
    ('            print("no improvement", test_reward)', True),  # near-miss: only the best is kept
])
def test_periodic_test_that_saves_every_evaluation(tmp_path, other, reported):
    write(tmp_path, {"train.py": PERIODIC.format(other=other)})
    assert bool(found(tmp_path, ("TR519",))) == reported


# --- mode content: `model = weight_init(model)`, a helper (here or in another module) that
# initialises weights in place and hands its parameter back, holds the module it was handed: a
# Linear-only network stays mode-free, so an evaluation helper's eval() inside the training loop
# changes nothing (a drainage GNN's trainer, TR504 judged noise in blind test 138) ---------------

INIT_NET = '''import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4){extra}

    def forward(self, x):
        return {use}
'''

INIT_UTILS = '''import torch
import torch.nn as nn


def weight_init(model):
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.kaiming_uniform_(m.weight)
{tail}
'''

INIT_MAIN = '''import torch

from net import Net
from utils import weight_init


def model_test(model, loader):
    model.eval()
    with torch.no_grad():
        return sum(model(x).sum().item() for x in loader)


def model_train(model, loader, optimizer):
    for epoch in range(3):
        for step, x in enumerate(loader):
            if step % 10 == 0:
                model_test(model, loader)
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model


if __name__ == "__main__":
    model = Net()
    model = weight_init(model)
    optimizer = torch.optim.Adam(model.parameters())
    model = model_train(model, [torch.randn(2, 4)], optimizer)
'''


@pytest.mark.parametrize("extra, tail, reported", [
    ("", "    return model", False),
    ("\n        self.drop = nn.Dropout(0.1)", "    return model", True),  # near-miss: dropout in the net
    # near-miss: the helper returns another module built around it (with dropout)
    ("", "    model = nn.Sequential(model, nn.Dropout(0.2))\n    return model", True),
])
def test_weights_initialised_in_place_keep_the_modules_content(tmp_path, extra, tail, reported):
    use = "self.drop(self.fc(x))" if extra else "self.fc(x).relu()"
    write(tmp_path, {"net.py": INIT_NET.format(extra=extra, use=use), "utils.py": INIT_UTILS.format(tail=tail),
                     "main.py": INIT_MAIN})
    assert bool(found(tmp_path, ("TR504",))) == reported


# --- TR207: a loader kept "for backward compatibility" that returns the cached loader's result
# (`def load_model(...): return get_model(...)`), whose every return follows `model.eval()`, hands
# back a model in eval mode (a Streamlit evaluation page, judged false in blind test 139) --------

LOADER_MODULE = '''import os

import torch
import torch.nn as nn


class Grader(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.3), nn.Linear(8, 5))

    def forward(self, x):
        return self.head(x)


def get_model(weights_path):
    model = Grader()
    if not os.path.exists(weights_path):
        {first}
        return model
    model.load_state_dict(torch.load(weights_path, map_location="cpu"))
    model.eval()
    return model


def load_model(weights_path):
    return get_model(weights_path)
'''

PAGE = '''import torch

from model.model import load_model

model = load_model("model/grader.pth")
with torch.no_grad():
    probs = torch.softmax(model(torch.randn(4, 8)), dim=1)
print(probs)
'''


@pytest.mark.parametrize("first, reported", [
    ("model.eval()", False),
    ("pass", True),  # near-miss: the demo path hands back a model in training mode
])
def test_wrapper_of_a_loader_that_returns_eval_mode(tmp_path, first, reported):
    write(tmp_path, {"model/__init__.py": "", "model/model.py": LOADER_MODULE.format(first=first),
                     "pages/evaluate.py": PAGE})
    assert bool(found(tmp_path, ("TR207",))) == reported


# --- splits: a path whose folders name several splits (`../hw2_train_val/val1500/`) is read by its
# last part: the course's validation folder, whatever the dataset is called (`testset`: a YOLO
# homework keeping `best.pth` on it, TR519 judged false in blind test 140) -------------------------

FOLDER_SELECT = '''import torch
from torch.utils.data import DataLoader, Dataset


class Folder(Dataset):
    def __init__(self, root):
        self.root = root

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.randn(4), torch.randn(2)


trainset = Folder(root="../hw2_train_val/train15000/")
testset = Folder(root="{root}")
trainset_loader = DataLoader(trainset, batch_size=4)
testset_loader = DataLoader(testset, batch_size=4)
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
best_test_loss = 1e9
for ep in range(3):
    for x, y in trainset_loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    validation_loss = 0.0
    with torch.no_grad():
        for x, y in testset_loader:
            validation_loss += torch.nn.functional.mse_loss(model(x), y).item()
    if best_test_loss > validation_loss:
        best_test_loss = validation_loss
        torch.save(model.state_dict(), "best.pth")
'''


@pytest.mark.parametrize("root, reported", [
    ("../hw2_train_val/val1500/", False),
    ("../hw2_train_val/test1500/", True),  # near-miss: the last part names the test split
    ("../hw2_train_val/", True),  # near-miss: the path names both; the name decides
])
def test_dataset_folder_named_by_its_last_part(tmp_path, root, reported):
    write(tmp_path, {"train.py": FOLDER_SELECT.format(root=root)})
    assert bool(found(tmp_path, ("TR519",))) == reported


# --- TR518: a "resume" whose every readable file is a best-model checkpoint holding no optimizer,
# scheduler or scaler state starts a run from the best weights (a warm start, documented as such
# in whyme-labs' config; judged false in blind test 140): low confidence ---------------------------

WARM = '''import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume_from", default="")
parser.add_argument("--epochs", type=int, default=10)
config = parser.parse_args()
model = nn.Linear(4, 2)
if config.resume_from:
    ckpt = torch.load(config.resume_from, map_location="cpu", weights_only=False)
    model.load_state_dict(ckpt["model_state_dict"])
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=config.epochs)
best_auc = 0.0
for epoch in range(config.epochs):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    val_auc = float(epoch)
    if val_auc > best_auc:
        best_auc = val_auc
        ckpt = {{"model_state_dict": model.state_dict(), "epoch": epoch + 1{extra}}}
        torch.save(ckpt, "{name}")
'''


@pytest.mark.parametrize("name, extra, confidence", [
    ("best_fold0.pt", "", "low"),
    ("best_fold0.pt", ', "optimizer": optimizer.state_dict()', "medium"),  # near-miss: saved to resume
    ("last.pt", "", "medium"),  # near-miss: not a best-model file
])
def test_resume_from_a_best_weights_file(tmp_path, name, extra, confidence):
    write(tmp_path, {"train.py": WARM.format(name=name, extra=extra)})
    hits = found(tmp_path, ("TR518",))
    assert [f.confidence for f in hits] == [confidence]


# --- TR207: `model.to(device).eval()` switches `model` (a module's `.to()` returns the module
# itself) before `main` hands it to the inference function -- a detector assembled from a backbone
# in another module (a cell-segmentation homework, judged false in blind test 141) ---------------

SEG_MODEL = '''from torchvision.models.detection import MaskRCNN
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone


def build_model(num_classes: int = 5) -> MaskRCNN:
    backbone = resnet_fpn_backbone(backbone_name="resnet50", weights=None, trainable_layers=5)
    model = MaskRCNN(backbone, num_classes=num_classes, min_size=512, max_size=1024)
    return model
'''

SEG_INFER = '''import torch

from src.model import build_model


def run_inference(model, images, device):
    results = []
    with torch.no_grad():
        for img in images:
            results.append(model([img.to(device)])[0])
    return results


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ckpt = torch.load("best.pth", map_location=device, weights_only=True)
    model = build_model()
    model.load_state_dict(ckpt["model_state_dict"])
    {switch}
    return run_inference(model, [torch.rand(3, 64, 64)], device)


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("switch, reported", [
    ("model.to(device).eval()", False),
    ("model.cuda().eval()", False),
    ("model.to(device)", True),  # near-miss: moved, never switched
])
def test_eval_chained_after_a_move(tmp_path, switch, reported):
    write(tmp_path, {"src/__init__.py": "", "src/model.py": SEG_MODEL, "src/infer.py": SEG_INFER.format(switch=switch)})
    assert bool(found(tmp_path, ("TR207",))) == reported
