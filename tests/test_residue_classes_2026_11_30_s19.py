"""Classes of findings judged false or noise on blind tests, fixed in the nineteenth session
(2026-11-30), each as a near-miss that must change beside a positive that must stay."""
from __future__ import annotations

import pytest
from residue_helpers import found as _found, write as _write
from torchreview.engine.runner import Settings, run_review
from torchreview.catalog import all_rules  # noqa: E402


# --- the model: a tuple literal that rebinds the name it reads ------------------------------------------
# (collie's pipeline engine: `outputs = (outputs[0], *outputs[2:])` sent the question "does this literal
# hold models?" round the same name until Python's recursion limit; TR410 reported "too deeply nested to
# analyse" on a 15-level tree, blind test 67)

SELF_LITERAL = '''import torch


class Engine:
    def recv(self, buffer_id):
        outputs = self.buffers["outputs"][buffer_id]
        if self.partitioned:
            outputs[0].data = self.full(outputs[1])
            outputs = (outputs[0], *outputs[2:])
            self.buffers["outputs"][buffer_id] = outputs
        grads = torch.zeros(3, requires_grad=True)
        grads.data.zero_()
        return grads
'''


def test_a_literal_reading_the_name_it_rebinds_is_analysed(tmp_path):
    _write(tmp_path, {"engine.py": SELF_LITERAL})
    report = run_review([str(tmp_path)], Settings(rule_codes=tuple(r.code for r in all_rules()), jobs=1))
    assert not report.errors, [e.message for e in report.errors]
    assert any(f.code == "TR410" for f in report.findings)  # the rule that failed still reports


# --- every rule: a finding in a branch that stops in an interactive debugger ---------------------------
# (contact_graspnet's `else: print('no conf loss'); from IPython import embed; embed(); ...`: TR412's
# double sigmoid there, judged false in blind test 67 -- the branch is the author's way of looking at a
# state they never expect, not a path training takes)

DEBUG_BRANCH = '''import pdb

import torch
from torch import nn

criterion = nn.BCEWithLogitsLoss()


def loss_of(pred, target, mask):
    if mask.any():
        loss = criterion(pred[mask], target[mask])
    else:
        print("empty mask")
        STOP
        loss = criterion(torch.sigmoid(pred), target)
    return loss


def other_loss(pred, target):
    return criterion(torch.sigmoid(pred), target)
'''


def test_a_finding_in_a_branch_that_stops_in_a_debugger_is_low_confidence(tmp_path):
    for stop in ("from IPython import embed; embed()", "pdb.set_trace()", "breakpoint()"):
        root = _write(tmp_path / stop[:4], {"loss.py": DEBUG_BRANCH.replace("STOP", stop)})
        found = sorted((f.line, f.confidence) for f in _found(root, ("TR412",)))
        assert [c for _, c in found] == ["low", "high"], (stop, found)
        assert "debugging branch" in next(f.message for f in _found(root, ("TR412",)) if f.confidence == "low")
    # the same branch without the debugger is an ordinary fallback: reported
    root = _write(tmp_path / "plain", {"loss.py": DEBUG_BRANCH.replace("STOP", "pass")})
    assert sorted(f.confidence for f in _found(root, ("TR412",))) == ["high", "high"]


# --- TR518: a scheduler step on an attribute nothing binds is no schedule to restore (seqrec's
# `if cfg["scheduler_type"] != "original": self.scheduler.step()`, the construction commented out:
# judged false in blind test 67's focused pass) -----------------------------------------------------

from test_residue_classes_2026_11_30_s18 import MAIN, TRAINER  # noqa: E402


@pytest.mark.parametrize(("base", "build", "reported"), [
    ("", "# self.scheduler = StepLR(self.optimizer, 10)", False),
    ("", "self.scheduler = StepLR(self.optimizer, 10)", True),
    ("", "self.scheduler: StepLR = StepLR(self.optimizer, 10)", True),
    # a base class (of another module, unseen here) may bind it
    ("(BaseTrainer)", "# self.scheduler = StepLR(self.optimizer, 10)", True),
])
def test_tr518_scheduler_attribute_nothing_binds_is_no_schedule(tmp_path, base, build, reported):
    text = TRAINER.replace("class Trainer:", f"class Trainer{base}:").replace("BUILD", build) \
        .replace("CALL", "if self.epochs > 1:\n                self.scheduler.step()")
    if base:
        text = "from base import BaseTrainer\n" + text
    found = _found(_write(tmp_path, {"trainer.py": text, "main.py": MAIN}), ("TR518",))
    assert any("LR schedule restarts" in f.message for f in found) is reported, [f.message for f in found]


# --- TR504: DGL's graph layers are library knowledge too (graphml-tutorials' SAGEConv/GATConv model
# with the default feature and attention dropout of 0: `eval()` changes nothing; judged noise in blind
# test 67) ---------------------------------------------------------------------------------------------

DGL_TRAIN = '''import torch
import torch.nn as nn
from dgl.nn.pytorch import GATConv, SAGEConv


class Model(nn.Module):
    def __init__(self, n, h):
        super().__init__()
        self.emb = nn.Embedding(n, h)
        self.sage = SAGEConv(h, h, "mean"@S@)
        self.gat = GATConv(h, h, 2@G@)
        self.out = nn.Linear(h, 1)

    def forward(self, g, x):
        x = torch.relu(self.sage(g, self.emb(x)))
        return self.out(self.gat(g, x).mean(1))


def main(graphs, epochs):
    model = Model(100, 16)
    opt = torch.optim.Adam(model.parameters())
    model.train()
    for epoch in range(epochs):
        for g, x, y in graphs:
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(g, x), y)
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            print(sum(model(g, x).sum() for g, x, _ in graphs))


if __name__ == "__main__":
    main([], 3)
'''


@pytest.mark.parametrize(("sage", "gat", "reported"), [
    ("", "", False),
    (", feat_drop=0.0", ", attn_drop=0.0", False),
    (", feat_drop=0.2", "", True),
    ("", ", 0.0, 0.3", True),
])
def test_tr504_dgl_layers_without_dropout_are_mode_free(tmp_path, sage, gat, reported):
    root = _write(tmp_path, {"train.py": DGL_TRAIN.replace("@S@", sage).replace("@G@", gat)})
    assert bool(_found(root, ("TR504",))) is reported


# --- TR411/TR412/TR413: a loss fed the wrong activation in a loop that learns from random numbers
# (lyuwenyu's scratch notebook: a `Dataset` of `np.random.randn` images and random labels, one epoch;
# the double softmax is real but nobody relies on what that loop learns: judged noise in blind test 67)

NOISE_TRAIN = '''import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils import data


class Noise(data.Dataset):
    def __init__(self):
        self.imgs = np.random.randn(100, 8).astype(np.float32)
        self.labs = np.random.randint(0, 10, (100,))

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, i):
        return self.imgs[i], self.labs[i]


class Files(data.Dataset):
    def __init__(self, root):
        self.imgs = np.load(root + "/x.npy")
        self.labs = np.load(root + "/y.npy")

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, i):
        return self.imgs[i], self.labs[i]


net = nn.Linear(8, 10)
crit = nn.CrossEntropyLoss()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
loader = data.DataLoader(DATASET, batch_size=10, shuffle=True)
for img, lab in loader:
    opt.zero_grad()
    loss = crit(F.softmax(net(img), dim=1), lab)
    loss.backward()
    opt.step()
'''


@pytest.mark.parametrize(("dataset", "confidence"), [
    ("Noise()", "medium"),
    ("data.TensorDataset(torch.randn(100, 8), torch.randint(0, 10, (100,)))", "medium"),
    ("data.Subset(Noise(), range(50))", "medium"),
    ("Files('data')", "high"),
    ("data.TensorDataset(torch.load('x.pt'), torch.load('y.pt'))", "high"),
])
def test_loss_input_findings_in_a_loop_trained_on_noise_are_medium(tmp_path, dataset, confidence):
    root = _write(tmp_path, {"train.py": NOISE_TRAIN.replace("DATASET", dataset)})
    found = _found(root, ("TR411",))
    assert [f.confidence for f in found] == [confidence]


# --- TR207 (the model-content fact): a configuration read in a constructor builds no submodule
# (image2video-synthesis-using-cINNs: `opt = OmegaConf.load(...)` in the `__init__` that puts each
# submodule in eval mode made the whole wrapper "unknown"; TR207 judged false three times in blind
# test 68) -----------------------------------------------------------------------------------------

WRAPPER = '''import torch
import yaml
from omegaconf import OmegaConf

from nets import Generator


class Model(torch.nn.Module):
    def __init__(self, path):
        super().__init__()
        opt = READ
        self.decoder = Generator(opt.decoder).cuda()
        self.decoder.load_state_dict(torch.load(path + "decoder.pth")["state_dict"])
        EVAL

    def forward(self, x):
        return self.decoder(x)
'''

NETS = '''import torch


class Generator(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.3))

    def forward(self, x):
        return self.body(x)
'''

SAMPLE = '''import torch

from get_model import Model

model = Model("ckpt/")
with torch.no_grad():
    out = model(torch.randn(2, 4).cuda())
'''


@pytest.mark.parametrize(("read", "evaluate", "reported"), [
    ("OmegaConf.load(path + 'config.yaml')", "_ = self.decoder.eval()", False),
    ("yaml.safe_load(open(path + 'config.yaml'))", "self.decoder.eval()", False),
    ("OmegaConf.load(path + 'config.yaml')", "pass", True),
])
def test_tr207_a_config_read_in_the_constructor_is_no_submodule(tmp_path, read, evaluate, reported):
    root = _write(tmp_path, {"get_model.py": WRAPPER.replace("READ", read).replace("EVAL", evaluate),
                             "nets.py": NETS, "sample.py": SAMPLE})
    assert bool(_found(root, ("TR207",))) is reported


# --- TR513: a loader factory whose sampler flag defaults to off, called without it, builds no
# DistributedSampler (ERA4's `get_dataloaders(DATA_DIR, BATCH_SIZE, IMG_SIZE)` with `distributed: bool
# = False`: judged false in blind test 68) --------------------------------------------------------------

from test_residue_classes_2026_11_30_s18 import EPOCHS_OVER_LOADER, FACTORY  # noqa: E402


@pytest.mark.parametrize(("default", "call", "reported"), [
    ("False", "loader_factory(None, 32)", False),
    ("None", "loader_factory(None, batch_size=32)", False),
    ("True", "loader_factory(None, 32)", True),
    ("False", "loader_factory(None, 32, **options)", True),
    ("False", "loader_factory(None, 32, True)", True),
])
def test_tr513_sampler_flag_left_at_a_false_default_builds_no_sampler(tmp_path, default, call, reported):
    factory = FACTORY.replace("batch_size, distributed):", f"batch_size, distributed={default}):")
    train = f"import torch\nfrom data import loader_factory\n\noptions = {{}}\nloader = {call}\n" + EPOCHS_OVER_LOADER
    found = _found(_write(tmp_path, {"data.py": factory, "train.py": train}), ("TR513",))
    assert bool([f for f in found if f.path.endswith("train.py")]) is reported


# --- TR104: `load_dataset(path=str(<a pathlib path>), trust_remote_code=True)` runs the project's own
# loading script (sledge's `Path(os.getenv(ROOT)) / "sledge/.../rvae_latent_dataset.py"`: judged false
# in blind test 68 as a remote-code finding) ---------------------------------------------------------------

LOCAL_SCRIPT = '''import os
from pathlib import Path

from datasets import load_dataset


def build(cache):
    script = SCRIPT
    return load_dataset(path=ARG, data_dir=cache, split="train", trust_remote_code=True)
'''


@pytest.mark.parametrize(("script", "arg", "local"), [
    ('Path(os.getenv("ROOT")) / "data/latents.py"', "str(script)", True),
    ('Path("data") / "latents.py"', "script", True),
    ('"someone/latents"', "script", False),
    ('os.getenv("DATASET")', "script", False),
])
def test_tr104_load_dataset_of_a_pathlib_script_is_local(tmp_path, script, arg, local):
    root = _write(tmp_path, {"build.py": LOCAL_SCRIPT.replace("SCRIPT", script).replace("ARG", arg)})
    found = _found(root, ("TR104",), advice_codes=("TR104",))
    assert len(found) == 1
    assert ("local dataset loading script" in found[0].message) is local, found[0].message
    assert (found[0].kind == "advice") is local


# --- the model: `from utils import *` brings the project module's own functions, as an explicit
# import does (DRL-Repo's PPG agent calls `update_network_(loss, opt)`, which resets the gradients:
# TR401 judged false in blind test 68) -----------------------------------------------------------------

HELPER = '''def update_network_(loss, optimizer):
    RESET
    loss.mean().backward()
    optimizer.step()
'''

AGENT = '''import torch
from torch.optim import Adam
IMPORT


class Agent:
    def __init__(self, actor):
        self.actor = actor
        self.opt_actor = Adam(actor.parameters())

    def learn(self, batches):
        for x, y in batches:
            loss = torch.nn.functional.mse_loss(self.actor(x), y)
            update_network_(loss, self.opt_actor)
'''


@pytest.mark.parametrize(("imports", "reset", "reported"), [
    ("from utils import *", "optimizer.zero_grad()", False),
    ("from utils import update_network_", "optimizer.zero_grad()", False),
    ("from utils import *", "pass", True),
])
def test_star_imported_project_helper_is_followed(tmp_path, imports, reset, reported):
    root = _write(tmp_path, {"utils.py": HELPER.replace("RESET", reset),
                             "agent.py": AGENT.replace("IMPORT", imports)})
    assert bool(_found(root, ("TR401",))) is reported


# --- the project index: a class of the project built on a torch LR scheduler is a scheduler, however
# it is imported (found when star imports began to name project classes as explicit imports do) -------

from test_residue_classes_2026_11_29f import LR_UTILS, RESUME  # noqa: E402


@pytest.mark.parametrize("imports", ["from lr_utils import WarmupLR", "from lr_utils import *",
                                     "import lr_utils\nWarmupLR = lr_utils.WarmupLR"])
def test_project_scheduler_subclass_is_a_scheduler(tmp_path, imports):
    root = _write(tmp_path, {"lr_utils.py": LR_UTILS,
                             "train.py": RESUME.format(position="").replace("from lr_utils import *", imports)})
    found = _found(root, ("TR518",), advice_codes=("TR518",))
    assert any("LR schedule restarts" in f.message for f in found), [f.message for f in found]


# --- the model-content fact: a layer built only under `if <constructor parameter>:` depends on what
# the construction passes (SynthDehazing's cycle-GAN generator builds its Dropout2d only `if has_dropout`
# and is built everywhere with `has_dropout=False`: TR207 judged false three times in blind test 69) ----

FLAGGED_GEN = '''import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, channels=3, has_dropout=True):
        super().__init__()
        layers = [nn.Conv2d(channels, 16, 3), nn.InstanceNorm2d(16), nn.ReLU()]
        if has_dropout:
            layers += [nn.Dropout2d(p=0.1)]
        layers += [nn.Conv2d(16, channels, 3)]
        self.model = nn.Sequential(*layers)

    def forward(self, x):
        return self.model(x)
'''

TRANSFER = '''import torch

from gan import Generator

gen = Generator(ARGS)
gen.load_state_dict(torch.load("gen.pt", weights_only=True))
with torch.no_grad():
    out = gen(torch.randn(1, 3, 32, 32))
'''


@pytest.mark.parametrize(("args", "reported"), [
    ("has_dropout=False", False), ("3, False", False), ("has_dropout=True", True), ("", True),
])
def test_layer_built_under_a_constructor_flag_follows_the_construction(tmp_path, args, reported):
    root = _write(tmp_path, {"gan.py": FLAGGED_GEN, "transfer.py": TRANSFER.replace("ARGS", args)})
    assert bool(_found(root, ("TR207",))) is reported


# --- the context: Django's `app/tests.py` of test cases is a test file (gnn-recommendation's login tests
# post `{'username': 'alice', 'password': '1234'}` to the test client: TR107 judged false twice in blind
# test 70, shown at default settings) ---------------------------------------------------------------------

DJANGO_TESTS = '''from django.contrib.auth.models import User
FRAMEWORK


class LoginViewTests(BASE):
    def test_ok(self):
        User.objects.create_user("alice", "alice@example.com", "Xk9#mQ2v")
        data = {"username": "alice", "password": "Xk9#mQ2v"}
        self.client.post("/login", data)
'''


@pytest.mark.parametrize(("name", "framework", "base", "confidence"), [
    ("rank/tests.py", "from django.test import TestCase", "TestCase", "medium"),
    ("rank/tests.py", "import unittest", "unittest.TestCase", "medium"),
    ("rank/tests.py", "", "object", "high"),  # no test framework: not a test module
    ("rank/views.py", "from django.test import TestCase", "TestCase", "high"),  # the convention is the name
])
def test_django_tests_module_is_a_test_file(tmp_path, name, framework, base, confidence):
    root = _write(tmp_path, {name: DJANGO_TESTS.replace("FRAMEWORK", framework).replace("BASE", base)})
    assert [f.confidence for f in _found(root, ("TR107",))] == [confidence]


# --- TR520 (checkpoint loads): a name that held a checkpoint entry and is then rebound to another value
# reads that value (eP-ALM's `state_dict = checkpoint["model"]` for the resume, later
# `state_dict = accelerator.unwrap_model(model); state_dict = state_dict.state_dict()` for the save:
# the second use is no proof that the entry is a module; TR520 judged false in blind test 70) ------------

REUSED_NAME = '''import torch


def unwrap(m):
    return m


def main(model, optimizer, resume, out):
    if resume:
        checkpoint = torch.load(resume, map_location="cpu")
        state_dict = checkpoint["model"]
        USE
    for epoch in range(3):
        REBIND
        state_dict = state_dict.state_dict()
        torch.save({"model": state_dict, "optimizer": optimizer.state_dict(), "epoch": epoch}, out)


if __name__ == "__main__":
    main(None, None, "ckpt.pth", "ckpt.pth")
'''


@pytest.mark.parametrize(("use", "rebind", "reported"), [
    ("model.load_state_dict(state_dict)", "state_dict = unwrap(model)", False),
    # The entry itself used as a module (`.eval()`), before any rebinding, or rebound only on one
    # branch (the `.state_dict()` after it may still read the entry): a module key -- but the save
    # writes `state_dict.state_dict()`, the binding that always reaches it (session 36: a name's
    # bindings are followed to the one that reaches the save), a state dict a weights-only load
    # reads; what the load then does with it is no unpickling failure
    ("state_dict.eval()", "state_dict = unwrap(model)", False),
    ("model.load_state_dict(state_dict)", "if epoch:\n            state_dict = unwrap(model)", False),
])
def test_tr520_a_rebound_name_no_longer_reads_the_checkpoint_entry(tmp_path, use, rebind, reported):
    root = _write(tmp_path, {"train.py": REUSED_NAME.replace("USE", use).replace("REBIND", rebind)})
    assert bool(_found(root, ("TR520",))) is reported


# --- TR518: a load in a branch that evaluates and returns before the training loop is no resume
# (HashTrans' `if config.EVAL_MODE: ckpt = torch.load(RESUME); ...; validate_only(...); return`:
# judged false in blind test 70's focused pass) --------------------------------------------------------------

EVAL_BRANCH = '''import argparse

import torch
from torch import nn


def validate(model):
    model.eval()
    with torch.no_grad():
        return model(torch.randn(2, 4)).mean()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", default="")
    parser.add_argument("--eval", action="store_true")
    args = parser.parse_args()
    model = nn.Linear(4, 1)
    optimizer = torch.optim.Adam(model.parameters())
    start = 0
    if args.resume:
        if args.eval:
            ckpt = torch.load(args.resume, weights_only=True)
            model.load_state_dict(ckpt["model"])
            print(validate(model))
            END
    for epoch in range(start, 10):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, "c.pt")


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize(("end", "reported"), [
    ("return", False), ("exit()", False),
    ("pass", True),  # falls through into training: a resume that restores only the weights
])
def test_tr518_load_in_a_branch_that_evaluates_and_returns_is_no_resume(tmp_path, end, reported):
    root = _write(tmp_path, {"train.py": EVAL_BRANCH.replace("END", end)})
    assert bool(_found(root, ("TR518",), advice_codes=("TR518",))) is reported


# --- TR414: the optimizer that matters is the one the script's defaults build (double-attention-sv picks
# Adam by default, SGD behind an option: the unscaled accumulation is largely cancelled; judged noise in
# blind test 71) ----------------------------------------------------------------------------------------------

CHOSEN_OPT = '''import argparse

import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--optimizer", default="DEFAULT")
    parser.add_argument("--accumulation", type=int, default=4)
    args = parser.parse_args()
    model = nn.Linear(4, 1)
    if args.optimizer == "adam":
        optimizer = torch.optim.Adam(model.parameters())
    if args.optimizer == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate([(torch.randn(2, 4), torch.randn(2, 1))] * 8):
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        if (step + 1) % args.accumulation == 0:
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize(("default", "kind"), [("adam", "advice"), ("sgd", "likely-defect")])
def test_tr414_adaptive_optimizer_chosen_by_the_defaults(tmp_path, default, kind):
    root = _write(tmp_path, {"train.py": CHOSEN_OPT.replace("DEFAULT", default)})
    found = _found(root, ("TR414",), advice_codes=("TR414",))
    assert [f.kind for f in found] == [kind]


# --- the torch a project pins: a misspelt requirements file and the install steps of its other guides
# (prsnet's `reqriments.txt` with `torch==1.7.1+cu101`; ConvMAE's PRETRAIN.md `conda install
# pytorch==1.8.0`: TR429 on `torch._six` judged noise at default settings in blind tests 69 and 71) -------

SIX = "from torch._six import inf\n\n\ndef clip(x):\n    return min(x, inf)\n"


@pytest.mark.parametrize(("extra", "kind"), [
    ({"reqriments.txt": "timm==0.2.1\ntorch==1.7.1+cu101\n"}, "advice"),
    ({"requirments.txt": "torch==1.8.0\n"}, "advice"),
    ({"PRETRAIN.md": "## Setup\n\n```\nconda install pytorch==1.8.0 torchvision==0.9.0 -c pytorch\n```\n"}, "advice"),
    ({"CHANGELOG.md": "- works again after `pip install torch==1.4.0`\n"}, "defect"),
    ({"PRETRAIN.md": "We trained with PyTorch 1.8 on 8 GPUs.\n"}, "defect"),
    ({}, "defect"),
])
def test_tr429_pin_in_misspelt_requirements_or_install_guides(tmp_path, extra, kind):
    root = _write(tmp_path, {"util/misc.py": SIX, "README.md": "# project\n", **extra})
    found = _found(root, ("TR429",), advice_codes=("TR429",), detect_torch=True)
    assert [f.kind for f in found] == [kind], [f.message for f in found]


# --- TR427: a hook registered, used by its backward and removed in the same pass of the loop
# (AutoencodingTheWorld's `h = mu.register_hook(lambda g: g * perturb_power); loss.backward();
# h.remove()`: judged false in blind test 70, and in BKL's code the session before) ------------------------

HOOK_LOOP = '''import torch


def train(model, batches, optimizer):
    for x in batches:
        optimizer.zero_grad()
        mu = model(x)
        power = mu.detach().abs().mean() + 1
        h = mu.register_hook(lambda grad: grad * power)
        loss = mu.sum()
        loss.backward()
        REMOVE
        optimizer.step()
'''


@pytest.mark.parametrize(("remove", "reported"), [
    ("h.remove()", False),
    # not removed: the hook stays on a tensor this pass computed and no later pass reaches, and
    # this pass's backward fires it (siamese GED's gradient masks, judged false in blind test 92)
    ("pass", False),
])
def test_tr427_hook_removed_in_the_same_pass_is_not_late(tmp_path, remove, reported):
    root = _write(tmp_path, {"train.py": HOOK_LOOP.replace("REMOVE", remove)})
    assert bool(_found(root, ("TR427",))) is reported


# --- TR207: an output read only for its shape is no prediction, whatever the model is fed (a GPT
# fine-tuning notebook's `out = model(xb); print(out.shape)` on a real batch: judged noise in blind test 72)

from residue_helpers import DROPOUT_NET  # noqa: E402

SHAPE_CHECK = """import torch
from torch import nn


""" + DROPOUT_NET + """

model = Net()
batch = torch.load("batch.pt", weights_only=True)
with torch.no_grad():
    out = model(batch)
    READ
"""


@pytest.mark.parametrize(("read", "reported"), [
    ("print(out.shape)", False), ("assert out.size(0) == len(batch)", False), ("print(out.argmax(1))", True),
])
def test_tr207_output_read_only_for_its_shape_is_no_prediction(tmp_path, read, reported):
    root = _write(tmp_path, {"probe.py": SHAPE_CHECK.replace("READ", read)})
    assert bool(_found(root, ("TR207",))) is reported


# --- TR403: in `zip(a, b)` only the items of a torch DataLoader are host batches (gnn-recommendation
# zips a DataLoader of indices with DGL's `NodeDataLoader(..., device=device)`: TR403 judged false
# twice in blind test 70) ----------------------------------------------------------------------------------

ZIPPED = '''import torch
from torch import nn
from torch.utils.data import DataLoader
from dgl.dataloading import NodeDataLoader


def train(graph, idx, sampler, device):
    model = nn.Linear(8, 2).to(device)
    id_loader = DataLoader(idx, batch_size=32)
    loader = NodeDataLoader(graph, idx, sampler, device=device, batch_size=32)
    for (batch, (_, _, blocks)) in zip(id_loader, loader):
        block = blocks[0]
        out = model(USE)
        out.sum().backward()
'''


@pytest.mark.parametrize(("use", "reported"), [("block", False), ("blocks", False), ("batch", True)])
def test_tr403_zip_items_of_a_non_torch_loader_are_not_host_batches(tmp_path, use, reported):
    root = _write(tmp_path, {"train.py": ZIPPED.replace("USE", use)})
    assert bool(_found(root, ("TR403",))) is reported


# --- TR207: eval mode set by hand on the model's layers (a makemore-style notebook's
# `for layer in model.layers: layer.training = False` before its `no_grad` evaluation: judged false in
# blind test 69) -------------------------------------------------------------------------------------------

HAND_EVAL = """import torch
from torch import nn


""" + DROPOUT_NET + """

def evaluate(model, x):
    CLEAR
    with torch.no_grad():
        return model(x).argmax(1)
"""


@pytest.mark.parametrize(("clear", "reported"), [
    ("for layer in model.modules():\n        layer.training = False", False),
    ("model.training = False", False),
    ("for layer in other.modules():\n        layer.training = False", True),
    ("pass", True),
])
def test_tr207_training_flag_cleared_by_hand_is_eval_mode(tmp_path, clear, reported):
    root = _write(tmp_path, {"evaluate.py": HAND_EVAL.replace("CLEAR", clear) +
                             "\n\nother = Net()\nprint(evaluate(Net(), torch.randn(2, 4)))\n"})
    assert bool(_found(root, ("TR207",))) is reported


# --- TR207: a function named for inference that only the file's modules call is a step of their
# forward (tsikup's `kat_inference`, run by `KATCL.forward` while training: judged false in blind test 67)

FORWARD_HELPER = """import torch
from torch import nn


""" + DROPOUT_NET + """

def kat_inference(model, x):
    return model(x)


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.online = Net()

    def forward(self, x):
        return kat_inference(self.online, x)
EXTRA
"""


@pytest.mark.parametrize(("extra", "reported"), [
    ("", False),
    # also called from module level on a model nobody put in eval mode: an inference entry point
    ("\n\nprint(kat_inference(Net(), torch.randn(2, 4)))", True),
])
def test_tr207_inference_named_helper_of_a_modules_forward(tmp_path, extra, reported):
    root = _write(tmp_path, {"kat.py": FORWARD_HELPER.replace("EXTRA", extra)})
    assert bool(_found(root, ("TR207",))) is reported


# --- TR519 (data splits): a name an enclosing `for` binds is that loop's item, not an earlier binding
# (munkai's Kaggle notebook: `test_batch, i = next(gen.gen_test())` in one cell, later `for i, batch in
# enumerate(gen.gen_train()): ... if max_iter < i: break`; judged false in blind test 71) -----------------

LOOP_INDEX = """import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
test_batch, i = next(gen.gen_test())
max_iter = 500
for STEP, batch in enumerate(gen.gen_train()):
    optimizer.zero_grad()
    model(batch).sum().backward()
    optimizer.step()
    CHECK
"""


@pytest.mark.parametrize(("step", "check", "reported"), [
    ("i", "if max_iter < i:\n        break", False),
    ("step", "i = evaluate(model, gen.gen_test())\n    if i > 0.9:\n        break", True),
])
def test_tr519_loop_bound_name_is_the_loops_item(tmp_path, step, check, reported):
    root = _write(tmp_path, {"kaggle.py": LOOP_INDEX.replace("STEP", step).replace("CHECK", check)})
    assert bool(_found(root, ("TR519",), advice_codes=("TR519",))) is reported


# --- discovery: another repository copied into one of the project's packages is vendored code
# (occupancy_flow's `im2mesh/utils/torchdiffeq/` with torchdiffeq's setup.py, README, examples:
# TR519 on its MNIST example judged noise in blind test 72) ------------------------------------------------

from test_residue_classes_2026_11_30_s18 import NO_ZERO_GRAD  # noqa: E402


@pytest.mark.parametrize(("files", "vendored"), [
    ({"pkg/__init__.py": "", "pkg/utils/__init__.py": "", "pkg/utils/ode/setup.py": "import setuptools\n",
      "pkg/utils/ode/README.md": "# ode\n"}, True),
    ({"pkg/__init__.py": "", "pkg/utils/__init__.py": "", "pkg/utils/ode/README.md": "# ode\n"}, False),
    ({"pkg/__init__.py": "", "pkg/utils/ode/setup.py": "import setuptools\n", "pkg/utils/ode/README.md": "# ode\n"},
     False),  # `utils` is no package: a folder of tools with its own install script
])
def test_repository_copied_into_a_package_is_vendored(tmp_path, files, vendored):
    root = _write(tmp_path, {"setup.py": "import setuptools\n", **files,
                             "pkg/utils/ode/examples/train.py": NO_ZERO_GRAD})
    found = _found(root, ("TR401",))
    assert ["a copy of another repository" in f.message for f in found] == [vendored], \
        [(f.confidence, f.message) for f in found]


# --- TR504: an epoch loop that runs once has no second pass to train in eval mode (a W&B quickstart
# notebook with `EPOCHS = 1`: judged noise in blind test 69) ---------------------------------------------------

ONE_EPOCH = """import torch
from torch import nn


""" + DROPOUT_NET + """

EPOCHS = COUNT
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.train()
for epoch in range(EPOCHS):
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        print(model(x).mean())
"""


@pytest.mark.parametrize(("count", "reported"), [("1", False), ("5", True)])
def test_tr504_epoch_loop_that_runs_once(tmp_path, count, reported):
    root = _write(tmp_path, {"quickstart.py": ONE_EPOCH.replace("COUNT", count)})
    assert bool(_found(root, ("TR504",))) is reported
