"""Residue classes of the thirty-third session (findings judged noise or false in blind tests 121 and
later): each positive or near-miss below failed on the code before its fix."""
from __future__ import annotations

import pytest

from residue_helpers import found, write


# --- TR519: a fit's validation slice named `X_test`, bound in an if/else whose other arm is the whole
# array the training part also takes (judged false in blind test 121) ---------------------------------

FIT = '''import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x)

    def loss_on(self, X, Y):
        with torch.no_grad():
            return nn.functional.cross_entropy(self(X), Y).item()

    def fit(self, X, Y, epochs=10, validation_split=0.2):
        optimizer = torch.optim.Adam(self.parameters())
        if validation_split:
            cut = int(len(X) * (1 - validation_split))
            X_train, Y_train = X[:cut], Y[:cut]
            X_test, Y_test = X[cut:], Y[cut:]
        else:
            X_train, Y_train = X.copy(), Y.copy()
            {other}
        best = float("inf")
        for epoch in range(epochs):
            optimizer.zero_grad()
            nn.functional.cross_entropy(self(X_train), Y_train).backward()
            optimizer.step()
            val_loss = self.loss_on(X_test, Y_test)
            if val_loss < best:
                best = val_loss
                torch.save(self.state_dict(), "best.pt")
'''


@pytest.mark.parametrize("other, expected", [
    ("X_test, Y_test = X.copy(), Y.copy()", 0),
    ("X_test, Y_test = X, Y", 0),
    # the other arm brings in a test set of its own: the name is evidence again
    ("X_test = torch.load('x_test.pt')\n            Y_test = torch.load('y_test.pt')", 1),
])
def test_tr519_validation_tail_or_whole_array_is_no_test_split(tmp_path, other, expected):
    root = write(tmp_path, {"pyproject.toml": "", "model.py": FIT.format(other=other)})
    assert len(found(root, ("TR519",))) == expected


# --- TR104: a model id that is a parameter defaulting to a publisher's official model (`def
# __init__(self, model_name="facebook/dinov3-...")`) in a package that ships (judged noise in blind
# test 120) ---------------------------------------------------------------------------------------

DENSE = '''import torch
from transformers import AutoModel


class DenseFeatures(torch.nn.Module):
    def __init__(self, model_name="{default}"):
        super().__init__()
        self.backbone = AutoModel.from_pretrained(model_name, trust_remote_code=True)

    def forward(self, x):
        return self.backbone(pixel_values=x).last_hidden_state
'''


@pytest.mark.parametrize("default, confidence", [
    ("facebook/dinov3-vitl16-pretrain-sat493m", "medium"),
    # a default of someone else's repository: whatever code it holds runs
    ("someuser/dino-custom", "high"),
])
def test_tr104_parameter_defaulting_to_an_official_model(tmp_path, default, confidence):
    root = write(tmp_path, {"pyproject.toml": '[project]\nname = "dense"\nversion = "0.1"\n',
                            "src/dense/__init__.py": "",
                            "src/dense/extract.py": DENSE.format(default=default)})
    assert [f.confidence for f in found(root, ("TR104",))] == [confidence]


# --- TR207: a model's output returned to the one caller, which only prints its shape (a model file's
# `create_and_test_vit`; judged noise in blind test 122) ------------------------------------------------

PROBE = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, classes, rate):
        super().__init__()
        self.drop = nn.Dropout(rate)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        return self.fc(self.drop(x))


def create_and_test_net(classes, rate):
    model = Net(classes, rate){load}
    dummy_input = torch.randn(8, 16)
    output = model(dummy_input)
    return output


output = create_and_test_net(10, 0.1)
print({shown})
'''


@pytest.mark.parametrize("load, shown, expected", [
    ("", "output.shape", 0),
    # trained weights: its outputs are predictions
    ("\n    model.load_state_dict(torch.load('net.pt'))", "output.shape", 1),
    # the caller reads the prediction itself
    ("", "output.argmax(1)", 1),
])
def test_tr207_output_returned_to_a_caller_that_measures_it(tmp_path, load, shown, expected):
    root = write(tmp_path, {"pyproject.toml": "", "model_builder.py": PROBE.format(load=load, shown=shown)})
    assert len(found(root, ("TR207",))) == expected


# --- TR513: the epoch set through `getattr(loader.sampler, "set_epoch", None)` (a trainer that only
# has a distributed sampler under DeepSpeed; judged false in blind test 124) -------------------------

EPOCHS = '''import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler


def main(dataset, model, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
    for epoch in range(epochs):
        {seed}
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
'''


@pytest.mark.parametrize("seed, expected", [
    ("setter = getattr(loader.sampler, 'set_epoch', None)\n        if setter is not None:\n            setter(epoch)", 0),
    ("getattr(loader.sampler, 'set_epoch')(epoch)", 0),
    # another attribute read the same way: the epoch is still never set
    ("getattr(loader.sampler, 'num_replicas', 1)", 1),
])
def test_tr513_set_epoch_through_getattr(tmp_path, seed, expected):
    root = write(tmp_path, {"pyproject.toml": "", "train.py": EPOCHS.format(seed=seed)})
    assert len(found(root, ("TR513",))) == expected


# --- TR207: a model unpacked from a helper's `return model, tokenizer` whose model comes from
# `from_pretrained` (already in eval mode; judged false in blind test 124) -----------------------------

HELPER = '''import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def get_model_and_tokenizer(name, device):
    model = {build}
    tokenizer = AutoTokenizer.from_pretrained(name)
    return model, tokenizer


@torch.no_grad()
def main(name, batches):
    model, tokenizer = get_model_and_tokenizer(name, "cuda")
    for batch in batches:
        print(model(batch["input_ids"]).logits.argmax(-1))
'''


@pytest.mark.parametrize("build, expected", [
    ("AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.float32)", 0),
    ("AutoModelForCausalLM.from_pretrained(name).to(device)", 0),
    # built from a configuration: a fresh model, in training mode
    ("AutoModelForCausalLM.from_config(name)", 1),
])
def test_tr207_helper_returning_a_from_pretrained_model(tmp_path, build, expected):
    root = write(tmp_path, {"pyproject.toml": "", "evaluate.py": HELPER.format(build=build)})
    assert len(found(root, ("TR207",))) == expected


# --- TR519: a checkpoint callback monitoring `test_acc` that the LightningModule of another file logs
# from `test_epoch_end`, which its `validation_epoch_end` delegates to (judged false in blind test 124) -

LIT_MODEL = '''import torch
import pytorch_lightning as pl
from torch import nn


class KWS(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(40, 12)

    def forward(self, x):
        return self.fc(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def test_step(self, batch, batch_idx):
        x, y = batch
        return {{"test_acc": (self(x).argmax(1) == y).float().mean()}}

    def test_epoch_end(self, outputs):
        self.log("test_acc", torch.stack([o["test_acc"] for o in outputs]).mean())
{validation}
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
'''

LIT_TRAIN = '''from pytorch_lightning import Trainer
from pytorch_lightning.callbacks import ModelCheckpoint

from model import KWS
from data import KWSDataModule


def main():
    checkpoint = ModelCheckpoint(monitor="test_acc", mode="max", save_top_k=1)
    trainer = Trainer(max_epochs=10, callbacks=[checkpoint])
    trainer.fit(KWS(), datamodule=KWSDataModule())
'''

DELEGATES = '''
    def validation_step(self, batch, batch_idx):
        return self.test_step(batch, batch_idx)

    def validation_epoch_end(self, outputs):
        return self.test_epoch_end(outputs)
'''


@pytest.mark.parametrize("validation, expected", [
    (DELEGATES, 0),
    # validation logs a key of its own: `test_acc` is only logged by `trainer.test`
    (DELEGATES.replace("return self.test_epoch_end(outputs)", 'self.log("val_acc", 0.0)'), 1),
])
def test_tr519_test_key_logged_by_the_validation_hooks(tmp_path, validation, expected):
    root = write(tmp_path, {"pyproject.toml": "", "model.py": LIT_MODEL.format(validation=validation),
                            "train.py": LIT_TRAIN, "data.py": "class KWSDataModule:\n    pass\n"})
    assert len(found(root, ("TR519",))) == expected


# --- TR519 (and every user of `runs_once`): a best-on-test comparison in `for epoch in range(1, epochs
# + 1)` after a notebook cell's `epochs = 1` (a course's "do not modify" cell; judged false in blind
# test 124) ----------------------------------------------------------------------------------------------

ONCE = '''import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision.datasets import CIFAR10

epochs = 10
model = nn.Linear(10, 2)
optimizer = torch.optim.Adam(model.parameters())
test_loader = DataLoader(CIFAR10("data", train=False))


def train_one(model, optimizer):
    optimizer.zero_grad()
    model(torch.randn(2, 10)).sum().backward()
    optimizer.step()


def evaluate(model, loader):
    return sum(float(model(x).argmax(1).eq(y).sum()) for x, y in loader)


epochs = {epochs}
best_acc = 0.0
for epoch in range({bounds}):
    train_one(model, optimizer)
    test_acc = evaluate(model, test_loader)
    if test_acc > best_acc:
        best_acc = test_acc
        torch.save(model.state_dict(), "best.pth")
'''


@pytest.mark.parametrize("epochs, bounds, expected", [
    (1, "1, epochs + 1", 0),
    (1, "epochs", 0),
    (2, "1, epochs + 1", 1),
    (1, "1, epochs + 2", 1),
])
def test_tr519_a_loop_that_runs_once_chooses_nothing(tmp_path, epochs, bounds, expected):
    root = write(tmp_path, {"pyproject.toml": "", "train.py": ONCE.format(epochs=epochs, bounds=bounds)})
    assert len(found(root, ("TR519",))) == expected


# --- TR511: a 1-D tensor of computed numbers (`torch.tensor([self.max_neighbors - 0.01])`) read only
# element by element (0-dim tensors, which combine with tensors on any device; judged false in blind
# test 124) --------------------------------------------------------------------------------------------

CUTOFFS = '''import torch
from torch import nn


class Graph(nn.Module):
    def __init__(self, max_neighbors, resolutions):
        super().__init__()
        self.max_neighbors = max_neighbors
        self.resolutions = resolutions
        self.cutoffs = torch.tensor({values})
        self.fc = nn.Linear(4, 4)

    def forward(self, x, rank):
        last = -0.1
        for i in range(self.resolutions):
            mask = torch.logical_and(rank.gt(last), rank.le({read}))
            last = self.cutoffs[i]
            x = x.masked_fill(mask[:, None], 0.0)
        return self.fc(x)
'''


@pytest.mark.parametrize("values, read, expected", [
    ("[self.max_neighbors - 0.01]", "self.cutoffs[i]", 0),
    ("[12 - 0.01, max_neighbors - 0.01]", "self.cutoffs[i]", 0),
    # read whole: a CPU tensor beside the GPU's
    ("[self.max_neighbors - 0.01]", "self.cutoffs", 1),
    # a nested list: its elements are rows, not numbers
    ("[[max_neighbors, 1.0], [2.0, 3.0]]", "self.cutoffs[i]", 1),
])
def test_tr511_computed_numbers_read_element_by_element(tmp_path, values, read, expected):
    root = write(tmp_path, {"pyproject.toml": "", "graph.py": CUTOFFS.format(values=values, read=read)})
    assert len(found(root, ("TR511",))) == expected


# --- TR520: a notebook load after a cell that imports torchtext (earlier cells use torch first): the load
# only runs on a torch torchtext supports, 2.3 at most (judged false in blind test 125) -----------------

def _notebook(*cells: str) -> str:
    import json

    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": c} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


NB_SETUP = "import torch\nfrom torch import nn\ndevice = torch.device('cpu')\n"
NB_SAVE = "model = nn.Sequential(nn.Linear(4, 4))\ntorch.save(model, 'chatbot.pt')\n"
NB_TEXT = "import torchtext\nfrom torchtext.vocab import GloVe\n"
NB_LOAD = "model = torch.load('chatbot.pt')\nmodel.eval()\n"


@pytest.mark.parametrize("cells, expected", [
    ((NB_SETUP, NB_SAVE, NB_TEXT, NB_LOAD), 0),
    # the load runs before torchtext is imported: on any torch
    ((NB_SETUP, NB_SAVE, NB_LOAD, NB_TEXT), 1),
])
def test_tr520_load_after_a_torchtext_import(tmp_path, cells, expected):
    root = write(tmp_path, {"pyproject.toml": "", "chatbot.ipynb": _notebook(*cells)})
    assert len(found(root, ("TR520",))) == expected


# --- TR513: a loader helper of another module whose distributed branch returns three values, unpacked
# here into two names (that branch cannot serve this call; judged false in blind test 125) -------------

LOADER_HELPER = '''import torch
from torch.utils.data import DataLoader, DistributedSampler


def make_data_loader(args, dataset):
    if args.dist:
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, batch_size=8, sampler=sampler)
        return loader, 10, sampler
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    return loader, 10
'''

HELPER_TRAIN = '''import torch
from torch import nn

import dataloaders


def main(args, dataset, model, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    {unpack} = dataloaders.make_data_loader(args, dataset)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
'''


@pytest.mark.parametrize("unpack, expected", [
    ("loader, num_classes", 0),
    ("loader, num_classes, sampler", 1),
])
def test_tr513_helper_unpacked_into_another_number_of_names(tmp_path, unpack, expected):
    root = write(tmp_path, {"pyproject.toml": "", "dataloaders.py": LOADER_HELPER,
                            "train.py": HELPER_TRAIN.format(unpack=unpack)})
    assert len(found(root, ("TR513",))) == expected


# --- TR101: a web form's value used only as the key of a table written in the code picks one of the
# server's own checkpoints (judged false in blind test 126) -------------------------------------------

ROUTE = '''import torch
from fastapi import FastAPI, Form

app = FastAPI()
MODEL_PATHS = {{
    "baseline": {{"encoder": "models/baseline/encoder.pth"}},
    "attention": {{"encoder": {entry}}},
}}


def load_model(model_type):
    encoder_path = MODEL_PATHS[model_type]["encoder"]
    return torch.load(encoder_path, weights_only=False)


@app.post("/caption")
def caption(model: str = Form(...)):
    if model in MODEL_PATHS:
        load_model(model)
    return {{"model": model}}
'''


@pytest.mark.parametrize("entry, expected", [
    ('"models/attention/encoder.pth"', 0),
    # an entry of the table is itself read from the environment: still an input
    ('os.environ["ENCODER"]', 1),
])
def test_tr101_form_value_as_the_key_of_a_fixed_table(tmp_path, entry, expected):
    text = ("import os\n" if "os." in entry else "") + ROUTE.format(entry=entry)
    root = write(tmp_path, {"pyproject.toml": "", "app.py": text})
    assert len(found(root, ("TR101",))) == expected


# --- TR517: `if isinstance(model, nn.DataParallel): model = model.module` before the save: the state
# dict is unwrapped whichever way the test went (MASKER's train.py; judged false in blind test 127) ---

UNWRAP_TRAIN = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def main(n_gpu):
    model = Net()
    if n_gpu > 1:
        model = nn.DataParallel(model)
    model(torch.randn(2, 4)).sum().backward()
{unwrap}
    torch.save(model.state_dict(), "net.model")


def evaluate():
    biased = Net()
    biased.load_state_dict(torch.load("net.model"))
    return biased
'''


@pytest.mark.parametrize("unwrap, expected", [
    ("    if isinstance(model, nn.DataParallel):\n        model = model.module", 0),
    ("    if hasattr(model, 'module'):\n        model = model.module", 0),
    # an unwrap under a test of something else: the wrapped branch may remain
    ("    if n_gpu > 4:\n        model = model.module", 1),
])
def test_tr517_unwrap_guarded_by_the_wrap_test(tmp_path, unwrap, expected):
    root = write(tmp_path, {"pyproject.toml": "", "train.py": UNWRAP_TRAIN.format(unwrap=unwrap)})
    assert len(found(root, ("TR517",))) == expected


# --- TR218: an accumulation factor `self.accumulation_steps` that every construction of the trainer
# (in another file) leaves at 1: nothing accumulates as shipped (judged false in blind test 127) ------

TRAINER = '''import torch
from torch.nn.parallel import DistributedDataParallel


class CumulativeTrainer:
    def __init__(self, model, local_rank, accumulation_steps=1):
        self.model = model
        if local_rank is not None:
            self.model = DistributedDataParallel(model, device_ids=[local_rank])
        self.accumulation_steps = accumulation_steps
        self.count = 0

    def train_epoch(self, loader, optimizer):
        for x, y in loader:
            self.count += 1
            loss = torch.nn.functional.mse_loss(self.model(x), y) / self.accumulation_steps
            loss.backward()
            if self.count % self.accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
'''

RUNNER = '''import torch

from trainer import CumulativeTrainer


def main(model, loader):
    optimizer = torch.optim.Adam(model.parameters())
    trainer = CumulativeTrainer(model, {args})
    trainer.train_epoch(loader, optimizer)
'''


@pytest.mark.parametrize("args, confidences", [
    # (session 34: `local_rank` None at every construction leaves the DDP wrap off as well)
    ("None", []),
    ("0, 1", ["low"]),
    # a construction that accumulates: the all-reduce of every micro-step is real
    ("0, accumulation_steps=4", ["high"]),
])
def test_tr218_factor_every_construction_leaves_at_one(tmp_path, args, confidences):
    root = write(tmp_path, {"pyproject.toml": "", "trainer.py": TRAINER, "run.py": RUNNER.format(args=args)})
    assert [f.confidence for f in found(root, ("TR218",))] == confidences


# --- TR518: `load_model` reached only from `predict_for_set`, which runs the shared `step(train, ...)`
# helper with `train=False` (its backward sits under `if train:`): an inference load, not a resume
# (judged false in blind test 127) -------------------------------------------------------------------

STEPPER = '''import torch
from torch import nn


class Model:
    def __init__(self):
        self.model = nn.Linear(8, 2)
        self.optimizer = torch.optim.Adam(self.model.parameters())

    def save_model(self, epoch):
        torch.save({{"epoch": epoch, "model_state_dict": self.model.state_dict(),
                    "optimizer_state_dict": self.optimizer.state_dict()}}, "model_%d" % epoch)

    def load_model(self, path):
        checkpoint = torch.load(path)
        self.model.load_state_dict(checkpoint["model_state_dict"])
        self.optimizer.load_state_dict(checkpoint["optimizer_state_dict"])

    def step(self, train, x, y):
        predictions = self.model(x)
        if train:
            loss = nn.functional.cross_entropy(predictions, y)
            loss.backward()
            return loss.item()
        return predictions

    def train(self, loader, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                self.optimizer.zero_grad()
                self.step(True, x, y)
                self.optimizer.step()
            self.save_model(epoch)

    def predict_for_set(self, loader, from_path=None):
        if from_path is not None:
            self.load_model(from_path)
        self.model.eval()
        with torch.no_grad():
            return [self.step({flag}, x, y).argmax(1) for x, y in loader]
'''


@pytest.mark.parametrize("flag, expected", [
    ("False", 0),
    # the same helper run with training on: the caller trains after loading
    ("True", 1),
])
def test_tr518_load_reached_only_through_a_helper_run_without_training(tmp_path, flag, expected):
    root = write(tmp_path, {"pyproject.toml": "", "model.py": STEPPER.format(flag=flag)})
    assert len(found(root, ("TR518",))) == expected
