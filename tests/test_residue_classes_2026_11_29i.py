"""Classes of findings judged false or noise on the sweeps, fixed in the ninth 2026-11-29
session, each as a near-miss that must stay silent beside a positive that must stay."""
from __future__ import annotations

from residue_helpers import found as _found, write as _write


# --- TR430: NumPy on values the author converted off the graph in the call itself, whose
# result only steers the code (a NaN test, the kept channels of a pruning mask; banmo,
# rethinking-pruning, judged false or noise); a result computed with or returned stays ------

ON_PURPOSE = '''import numpy as np
import torch
from torch import nn


class Reg(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.indexes = nn.Parameter(torch.ones(4))

    def forward(self, x):
        x = self.fc(x)
        if np.isnan(x.min().detach().cpu()):
            raise ValueError("nan")
        keep = np.squeeze(np.argwhere(self.indexes.data.cpu().numpy()))
        state = np.array([self.fc(x).cpu().numpy().squeeze(), x.detach().cpu().numpy()])
        return x[:, keep], state


class Leaky(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        y = torch.from_numpy(np.tanh(h.detach().cpu().numpy()))
        z = np.exp(h.detach().numpy())
        return y + torch.as_tensor(z) + torch.from_numpy(np.exp(self.fc(x)))
'''


def test_tr430_conversion_on_purpose_that_only_steers_is_silent(tmp_path):
    found = _found(_write(tmp_path, {"reg.py": ON_PURPOSE}), ("TR430",))
    # 14 (an `if` test) and 16 (an index, through the name `keep`) steer; 17 is returned,
    # 28-30 are computed with
    assert sorted(f.line for f in found) == [17, 28, 29, 30]


# --- TR418: the scheduler is built with `last_epoch=` in a function the optimizer is
# handed to, after that function restored the optimizer's state (thinkmatch, judged
# false: the restored param groups hold `initial_lr`) -------------------------------------

HANDED = '''import torch
from torch import nn, optim


def train(model, optimizer, start_epoch, num_epochs, restore):
    if restore:
        optimizer.load_state_dict(torch.load("optim.pt"))
    scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[10], last_epoch=start_epoch - 1)
    for epoch in range(start_epoch, num_epochs):
        scheduler.step()


def main():
    model = nn.Linear(4, 2)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    train(model, optimizer, 5, 20, True)
'''

FRESH = HANDED.replace('''    if restore:
        optimizer.load_state_dict(torch.load("optim.pt"))
''', "")


def test_tr418_scheduler_after_a_restore_in_the_receiving_function_is_silent(tmp_path):
    assert _found(_write(tmp_path / "a", {"train.py": HANDED}), ("TR418",)) == []
    found = _found(_write(tmp_path / "b", {"train.py": FRESH}), ("TR418",))
    assert [(f.code, f.line) for f in found] == [("TR418", 6)]


# --- TR416: `GradScaler(enabled=amp)` in a training function every caller of which passes
# `amp=False`, in a module another file imports, beside a sibling script with its own
# function of the same name (LVM-Med, judged false: the scaler is disabled) ---------------

SEG = '''import torch
from torch import nn


def train_net(net, loader, amp: bool = True):
    optimizer = torch.optim.Adam(net.parameters())
    grad_scaler = torch.cuda.amp.GradScaler(enabled=amp)
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(net(x), y)
        grad_scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        grad_scaler.step(optimizer)
        grad_scaler.update()


def train_2d(loader):
    net = nn.Linear(4, 4)
    train_net(net=net, loader=loader, amp=AMP)
'''


def _seg_project(root, amp):
    return _write(root, {
        "seg2d/train2d.py": SEG.replace("AMP", amp),
        "seg3d/train3d.py": SEG.replace("train_2d", "train_3d").replace("AMP", "True"),
        "main.py": "from seg2d.train2d import train_2d\nfrom seg3d.train3d import train_3d\n\n"
                   "train_2d([])\ntrain_3d([])\n",
    })


def test_tr416_scaler_disabled_by_every_caller_of_an_imported_module_is_silent(tmp_path):
    quiet = _found(_seg_project(tmp_path / "a", "False"), ("TR416",))
    assert [f.path.split("/")[-1] for f in quiet] == ["train3d.py"]
    loud = _found(_seg_project(tmp_path / "b", "True"), ("TR416",))
    assert sorted(f.path.split("/")[-1] for f in loud) == ["train2d.py", "train3d.py"]


# --- TR107: a test fixture's stand-in key, a counting run no generator emits
# (h2ogpt's `sk_test_1234567890abcdef`, judged false) -------------------------------------

FIXTURE_KEY = '''import os

import pytest


@pytest.fixture
def env():
    os.environ["OPENAI_API_KEY"] = "sk_test_1234567890abcdef"
    os.environ["NEWS_API_KEY"] = "q8Vd3kZr7Lw2Xn5Tb9Hc4Jm6"
    yield
'''


def test_tr107_counting_run_is_a_placeholder(tmp_path):
    found = _found(_write(tmp_path, {"test_env.py": FIXTURE_KEY}), ("TR107",))
    assert [f.line for f in found] == [9]


# --- TR518: a resume that fast-forwards the scheduler with a loop of bare steps instead of
# restoring its state (TDN's main script, judged false) ----------------------------------

REPLAY = '''import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
args = parser.parse_args()
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=1000)
loader = [(torch.randn(2, 4), torch.randn(2, 2))] * 10
start_epoch = 0
if args.resume:
    checkpoint = torch.load(args.resume)
    start_epoch = checkpoint["epoch"]
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    for _ in range(len(loader) * start_epoch):
        scheduler.step()
for epoch in range(start_epoch, 100):
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        scheduler.step()
    torch.save({"epoch": epoch + 1, "state_dict": model.state_dict(),
                "optimizer": optimizer.state_dict()}, "ckpt.pth")
'''


def test_tr518_scheduler_fast_forwarded_by_a_step_loop_is_restored(tmp_path):
    assert _found(_write(tmp_path / "a", {"train.py": REPLAY}), ("TR518",)) == []
    bare = REPLAY.replace("    for _ in range(len(loader) * start_epoch):\n        scheduler.step()\n", "")
    found = _found(_write(tmp_path / "b", {"train.py": bare}), ("TR518",))
    assert [f.code for f in found] == ["TR518"]


# --- TR511: a constant placed with `device=` inside the expression that builds it
# (`torch.sqrt(torch.tensor([d], device=device))`, nmt-cordercorder, judged false) ---------

SCALE = '''import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, d, device):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.scale = torch.sqrt(torch.tensor([d], dtype=torch.float, device=device))
        self.shift = torch.sqrt(torch.tensor([d, d], dtype=torch.float))

    def forward(self, x):
        return self.fc(x) / self.scale + self.shift
'''


def test_tr511_placed_inside_the_expression_is_silent(tmp_path):
    found = _found(_write(tmp_path, {"attn.py": SCALE}), ("TR511",))
    assert [f.line for f in found] == [10]


# --- TR107: a token-named string with characters no key has (a tokenizer's BPE string in a
# test, tuned-lens, judged false) ---------------------------------------------------------

BPE = '''def test_format():
    token = "Line1\u010aLine2\u0120Line3Line4"
    api_token = "Zq8Rk2Lm9Xv4Tb7Hc3Nw5Pd"
    assert token and api_token
'''


def test_tr107_non_ascii_token_string_is_not_a_credential(tmp_path):
    found = _found(_write(tmp_path, {"test_fmt.py": BPE}), ("TR107",))
    assert [f.line for f in found] == [3]


# --- TR207: `.eval()` on the network inside a wrapper before calling the wrapper
# (a Lightning module's `torch_nn_module`, earthformer, judged false) ----------------------

WRAPPED = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.BatchNorm1d(4))

    def forward(self, x):
        return self.body(x)


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.torch_nn_module = Net()

    def forward(self, x):
        return self.torch_nn_module(x)


def predict(xs):
    wrapper = Wrapper()
    wrapper.torch_nn_module.eval()
    with torch.no_grad():
        return [wrapper(x) for x in xs]


def predict_plain(xs):
    other = Wrapper()
    with torch.no_grad():
        return [other(x) for x in xs]
'''


def test_tr207_eval_on_the_wrapped_network_is_a_switch(tmp_path):
    found = _found(_write(tmp_path, {"predict.py": WRAPPED}), ("TR207",))
    assert [f.line for f in found] == [33]


# --- TR511: a requires_grad tensor the file hands to an optimizer of its own (per-episode
# weights of neural-snowball, judged false) ------------------------------------------------

EPISODE = '''import torch
from torch import nn, optim


class Snowball(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.encoder = nn.Linear(dim, dim)
        self.new_W = torch.zeros(dim, 1, requires_grad=True)
        self.new_bias = torch.zeros(1, requires_grad=True)
        self.latent = torch.randn(1, dim, requires_grad=True)
        self.vars = [self.latent] + []
        self.gate = torch.ones(dim, requires_grad=True)

    def adapt(self, x, y):
        opt = optim.Adam([self.new_W, self.new_bias], lr=0.1)
        inner = optim.SGD(self.vars, lr=0.1)
        loss = ((self.encoder(x) @ self.new_W + self.new_bias - y) ** 2).mean()
        loss.backward()
        opt.step()
        inner.step()

    def forward(self, x):
        return self.encoder(x + self.latent) * self.gate
'''


def test_tr511_tensor_given_to_its_own_optimizer_is_silent(tmp_path):
    found = _found(_write(tmp_path, {"snowball.py": EPISODE}), ("TR511",))
    assert [f.line for f in found] == [13]


# --- TR401: an evaluation loop calls a helper that steps only `if optimizer is not None`,
# without an optimizer (MultiSlam-DiffPose's evaluate, judged false) ----------------------

HELPER = '''import torch
from torch import nn


def forward_pass(batch, model, optimizer=None, scheduler=None):
    loss = nn.functional.mse_loss(model(batch[0]), batch[1])
    if optimizer is not None:
        loss.backward()
        optimizer.step()
    return loss.item()


def evaluate(model, loader):
    losses = []
    for batch in loader:
        losses.append(forward_pass(batch, model))
    return losses


def train(model, loader, optimizer):
    for batch in loader:
        forward_pass(batch, model, optimizer)
'''


def test_tr401_helper_left_without_its_optimizer_does_not_train(tmp_path):
    found = _found(_write(tmp_path, {"train.py": HELPER}), ("TR401",))
    assert [f.line for f in found] == [21]


# --- TR518: the best checkpoint loaded after every training loop has ended, to test it
# (text-to-sound's VGGish trainers, judged false: no training follows the load) -----------

TRAINING = '''import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loader = [(torch.randn(2, 4), torch.randn(2, 2))] * 4
best = float("inf")
for epoch in range(10):
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    if loss.item() < best:
        best = loss.item()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, "best.pt")
'''
LOAD = '''ckpt = torch.load("best.pt")
model.load_state_dict(ckpt["model"])
'''
# the best checkpoint read back after training, to test it
BEST = TRAINING + LOAD + '''print(f"trained for {ckpt['epoch']} epochs")
for x, y in loader:
    optimizer.zero_grad()
    with torch.no_grad():
        print(nn.functional.mse_loss(model(x), y).item())
'''
# the same checkpoint read before training to continue from its epoch
RESUMED = TRAINING.replace("for epoch in range(10):", LOAD + 'for epoch in range(ckpt["epoch"], 10):')


def test_tr518_best_model_loaded_after_training_is_not_a_resume(tmp_path):
    assert _found(_write(tmp_path / "a", {"train.py": BEST}), ("TR518",)) == []
    found = _found(_write(tmp_path / "b", {"train.py": RESUMED}), ("TR518",))
    assert [f.code for f in found] == ["TR518"]


# --- TR430: a name rebound to an element of an explicit conversion (`x = t.cpu().numpy()[0]`)
# is a NumPy array (spc's segmentation head, judged false) ---------------------------------

INDEXED = '''import numpy as np
import torch
from torch import nn


class Seg(nn.Module):
    def __init__(self):
        super().__init__()
        self.cls = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        x = self.cls(x)
        x = torch.argmax(x, dim=1).data.cpu().numpy()[0]
        result = np.zeros_like(x, dtype=np.int32)
        y = self.cls(torch.zeros(1, 3, 2, 2))[0]
        return result, np.zeros_like(y)
'''


def test_tr430_name_bound_to_an_indexed_conversion_is_an_array(tmp_path):
    found = _found(_write(tmp_path, {"seg.py": INDEXED}), ("TR430",))
    assert [f.line for f in found] == [16]


# --- TR511: a requires_grad dummy handed only to activation checkpointing (and to the same
# function on the branch without it): GLIP's VLFuse, judged false --------------------------

DUMMY = '''import torch
import torch.utils.checkpoint as checkpoint
from torch import nn


class Fuse(nn.Module):
    def __init__(self, use_checkpoint):
        super().__init__()
        self.attn = nn.Linear(4, 4)
        self.use_checkpoint = use_checkpoint
        self.dummy_tensor = torch.ones(1, dtype=torch.float32, requires_grad=True)
        self.gate = torch.ones(4, requires_grad=True)

    def forward(self, x):
        if self.use_checkpoint:
            y = checkpoint.checkpoint(self.attn, x, self.dummy_tensor)
        else:
            y = self.attn(x, self.dummy_tensor)
        return y * self.gate
'''


def test_tr511_checkpoint_dummy_is_no_weight(tmp_path):
    found = _found(_write(tmp_path, {"fuse.py": DUMMY}), ("TR511",))
    assert [f.line for f in found] == [12]
