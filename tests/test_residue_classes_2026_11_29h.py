"""Classes of findings judged false or noise on the sweeps of the eighth 2026-11-29
session, each as a near-miss that must stay silent beside a positive that must stay."""
from __future__ import annotations

from residue_helpers import found as _found, write as _write


# --- TR501: a layer's weight replaced by a parameter built with `requires_grad=False`,
# then filled by slice assignment (a frozen quantizer; mgh, judged false) ------------------

QUANTIZER = '''import torch
from torch import nn


class Quantizer(nn.Module):
    def __init__(self, nq):
        super().__init__()
        self.quantizer = q = nn.Conv1d(1, 2 * nq, kernel_size=1, bias=True)
        q.weight = nn.Parameter(q.weight.detach(), requires_grad=False)
        q.weight[:nq] = -1.0
        q.bias[:nq] = 1.0

    def forward(self, x):
        return self.quantizer(x)
'''


def test_tr501_leaf_replaced_by_frozen_parameter_is_silent(tmp_path):
    found = _found(_write(tmp_path, {"quant.py": QUANTIZER}), ("TR501",))
    # the weight was replaced by a frozen parameter; the bias was not: still reported
    assert [(f.code, f.line) for f in found] == [("TR501", 11)]


# --- TR518: a scheduler built after the optimizer state is restored, given `last_epoch=`
# the resumed position (cnnimageretrieval, context-cluster) or stepped with the epoch
# (erfnet): the restored param groups keep the first run's `initial_lr`, the schedule
# continues (judged false: "takes the decayed LR as its base" was wrong) ----------------

LATE = '''import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
args = parser.parse_args()
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
start_epoch = 0
if args.resume:
    ckpt = torch.load(args.resume, weights_only=True)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    start_epoch = ckpt["epoch"] + 1
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9, last_epoch=POSITION)
for epoch in range(start_epoch, 10):
    optimizer.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    scheduler.step()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, "ck.pt")
'''


def test_tr518_late_scheduler_given_its_position_is_silent(tmp_path):
    positioned = _write(tmp_path / "a", {"train.py": LATE.replace("POSITION", "start_epoch - 1")})
    assert _found(positioned, ("TR518",)) == []
    restarts = _write(tmp_path / "b", {"train.py": LATE.replace(", last_epoch=POSITION", "")})
    assert [f.code for f in _found(restarts, ("TR518",))] == ["TR518"]


# --- TR519: the data comes from a helper whose name says the split it builds
# (`env.build_valid_dataloader(True)` held in `test_data_shuffled`; EmpatheticDialogues,
# judged false): how the data is built outranks what the variable is called ---------------

SELECT = '''import torch
from torch import nn


class Env:
    def build_valid_dataloader(self, shuffle):
        return [(torch.randn(2, 4), torch.randint(0, 2, (2,)))]

    def build_test_dataloader(self, shuffle):
        return [(torch.randn(2, 4), torch.randint(0, 2, (2,)))]


def score(model, loader):
    model.eval()
    with torch.no_grad():
        return sum(float((model(x).argmax(-1) == y).float().mean()) for x, y in loader)


def main():
    env = Env()
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    test_data_shuffled = env.BUILDER(True)
    best = 0.0
    for epoch in range(5):
        model.train()
        for x, y in [(torch.randn(2, 4), torch.randint(0, 2, (2,)))]:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        acc = score(model, test_data_shuffled)
        if acc > best:
            best = acc
            torch.save(model.state_dict(), "best.pt")


main()
'''


def test_tr519_split_named_by_the_building_helper(tmp_path):
    valid = _write(tmp_path / "a", {"train.py": SELECT.replace("BUILDER", "build_valid_dataloader")})
    assert _found(valid, ("TR519",)) == []
    test = _write(tmp_path / "b", {"train.py": SELECT.replace("BUILDER", "build_test_dataloader")})
    assert [f.code for f in _found(test, ("TR519",))] == ["TR519"]


# --- TR520: the checkpoint's options object is known by its name alone (`'opt': opt`, a
# parameter; APISR's and HMNet's are dicts from the project's own config parser, judged
# false): medium; built by `parse_args()` in the saving file: high -----------------------

RESUME = '''import argparse
import os

import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())


def save(opt, step):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "opt": opt, "step": step},
               "saved/last.pth")


def resume():
    if os.path.exists("saved/last.pth"):
        ckpt = torch.load("saved/last.pth")
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        return ckpt["step"]
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    options = ARGS
    start = resume()
    for step in range(start, 10):
        save(options, step)
'''


def test_tr520_options_known_by_name_only_are_medium(tmp_path):
    named = _write(tmp_path / "a", {"train.py": RESUME.replace("ARGS", "{'lr': 0.1}")})
    assert [f.confidence for f in _found(named, ("TR520",))] == ["medium"]
    parsed = _write(tmp_path / "b", {"train.py": RESUME.replace("ARGS", "parser.parse_args()").replace(
        '"opt": opt', '"opt": parser.parse_args()')})
    assert [f.confidence for f in _found(parsed, ("TR520",))] == ["high"]


# --- TR508: a plain list of layers whose elements are copied into a local list that is
# then registered (`nn.Sequential(*unique_list)`; PINA's FeedForward, judged false twice) ---

FEED = '''import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = []
        for i in range(len(sizes) - 1):
            self.layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        unique_list = []
        for layer in self.layers[:-1]:
            unique_list.append(layer)
            unique_list.append(nn.Tanh())
        unique_list.append(self.layers[-1])
        self.model = nn.Sequential(*REGISTERED)

    def forward(self, x):
        return self.model(x)
'''


def test_tr508_elements_registered_through_a_local_list(tmp_path):
    wrapped = _write(tmp_path / "a", {"ff.py": FEED.replace("REGISTERED", "unique_list")})
    assert _found(wrapped, ("TR508",)) == []
    other = _write(tmp_path / "b", {"ff.py": FEED.replace("REGISTERED", "[nn.Identity()]")})
    assert [f.code for f in _found(other, ("TR508",))] == ["TR508"]


# --- TR402: the gradient set by hand before the step (`zeta.grad = torch.autograd.grad(
# reg_loss, zeta)[0]`; GraphGallery's adversarial inner loops, judged false twice) ----------

INNER = '''import torch
from torch import nn


def train(model, loader, optimizer, inner_epochs=5):
    zeta = torch.zeros(4, requires_grad=True)
    zeta_opt = torch.optim.Adam([zeta], lr=0.01)
    for x, y in loader:
        for _ in range(inner_epochs):
            zeta_opt.zero_grad()
            reg_loss = -model(x + zeta).sum()
            SET
            zeta_opt.step()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x + zeta.detach()), y)
        loss.backward()
        optimizer.step()


net = nn.Linear(4, 2)
train(net, [(torch.randn(3, 4), torch.randint(0, 2, (3,)))], torch.optim.SGD(net.parameters(), lr=0.1))
'''


def test_tr402_gradient_set_by_hand_is_silent(tmp_path):
    by_hand = _write(tmp_path / "a",
                     {"adv.py": INNER.replace("SET", "zeta.grad = torch.autograd.grad(reg_loss, zeta)[0]")})
    assert _found(by_hand, ("TR402", "TR401")) == []
    # the gradient computed but never given to `zeta`: the step applies cleared gradients
    forgotten = _write(tmp_path / "b",
                       {"adv.py": INNER.replace("SET", "grads = torch.autograd.grad(reg_loss, zeta)[0]")})
    assert [f.code for f in _found(forgotten, ("TR402",))] == ["TR402"]


# --- TR412: one layer of an `nn.Sequential` ending in a sigmoid, called by index
# (`self.token[0](x)`: the Linear alone, raw logits; glue-factory's LightGlue confidence
# head) is no sigmoid output; `self.token(x)` and `self.token[-1](...)` are ------------------

TOKEN = '''import torch
from torch import nn


class TokenConfidence(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.token = nn.Sequential(nn.Linear(dim, 1), nn.Sigmoid())
        self.loss_fn = nn.BCEWithLogitsLoss(reduction="none")

    def loss(self, desc, correct):
        logit = CALL.squeeze(-1)
        return self.loss_fn(logit, correct.float()).mean()
'''


def test_tr412_one_layer_of_a_sequential_by_index(tmp_path):
    layer = _write(tmp_path / "a", {"conf.py": TOKEN.replace("CALL", "self.token[0](desc.detach())")})
    assert _found(layer, ("TR412",)) == []
    whole = _write(tmp_path / "b", {"conf.py": TOKEN.replace("CALL", "self.token(desc.detach())")})
    assert [f.code for f in _found(whole, ("TR412",))] == ["TR412"]


# --- TR402: one optimizer over a whole GAN; `model.generator.zero_grad()` between the
# discriminator's backward and the step clears only the generator's part, on purpose
# (TranAD, judged false twice); `model.zero_grad()` there clears everything -------------

GAN = '''import torch
from torch import nn


class GAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = nn.Linear(4, 4)
        self.discriminator = nn.Linear(4, 1)

    def forward(self, x):
        fake = self.generator(x)
        return self.discriminator(x), self.discriminator(fake)


def train(model, data):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    bce = nn.BCEWithLogitsLoss()
    for d in data:
        model.discriminator.zero_grad()
        real, fake = model(d)
        dl = bce(real, torch.ones_like(real)) + bce(fake, torch.zeros_like(fake))
        dl.backward()
        ZERO.zero_grad()
        optimizer.step()


train(GAN(), [torch.randn(2, 4)])
'''


def test_tr402_zero_grad_of_one_part_of_the_model(tmp_path):
    part = _write(tmp_path / "a", {"gan.py": GAN.replace("ZERO", "model.generator")})
    assert _found(part, ("TR402",)) == []
    whole = _write(tmp_path / "b", {"gan.py": GAN.replace("ZERO", "model")})
    assert [f.code for f in _found(whole, ("TR402",))] == ["TR402"]


# --- TR511: `nn.Parameter(torch.randn(n, d)).to("cpu")`: the data is on the CPU already,
# `.to` returns the Parameter itself (TFB's Pathformer, judged false); `.to("cuda:0")` copies --

MEMORY = '''import torch
from torch import nn


class Memory(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.memory = nn.Parameter(torch.randn(n, d), requires_grad=True).to(TARGET)

    def forward(self, x):
        return x @ self.memory
'''


def test_tr511_parameter_moved_to_the_cpu_it_is_on(tmp_path):
    cpu = _write(tmp_path / "a", {"mem.py": MEMORY.replace("TARGET", '"cpu"')})
    assert _found(cpu, ("TR511",)) == []
    gpu = _write(tmp_path / "b", {"mem.py": MEMORY.replace("TARGET", '"cuda:0"')})
    assert [f.code for f in _found(gpu, ("TR511",))] == ["TR511"]


# --- TR514: `Rs = Ts[:, :3, :3]; Rs.require_grad = False`: a slice of another tensor either
# has no grad already or is a non-leaf (where the spelled-right line raises): no missed switch
# (Deep Global Registration, judged noise twice); a parameter's typo stays a defect ----------

SLICE = '''import torch
from torch import nn


def split(Ts):
    Rs = Ts[:, :3, :3]
    Rs.require_grad = False
    return Rs


def freeze(model):
    for p in model.parameters():
        p.require_grad = False


split(torch.eye(4).repeat(2, 1, 1))
freeze(nn.Linear(2, 2))
'''


def test_tr514_slice_typo_is_advice_and_parameter_typo_a_defect(tmp_path):
    found = _found(_write(tmp_path, {"t.py": SLICE}), ("TR514",))
    assert sorted((f.line, f.kind) for f in found) == [(7, "advice"), (13, "defect")]


# --- TR513: the DistributedSampler goes to a DataLoader that also gets `shuffle=True`,
# which raises when it is built: no epoch ever runs with it (seq2seq-EVC, judged false) ------

DDP = '''import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def train(distributed, epochs=10):
    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    sampler = DistributedSampler(data) if distributed else None
    loader = DataLoader(data, batch_size=8, sampler=sampler, SHUFFLE)
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()


train(dist.is_available() and dist.is_initialized())
'''


def test_tr513_sampler_in_a_loader_that_cannot_be_built(tmp_path):
    raises = _write(tmp_path / "a", {"t.py": DDP.replace("SHUFFLE", "shuffle=True")})
    assert _found(raises, ("TR513",)) == []
    fine = _write(tmp_path / "b", {"t.py": DDP.replace("SHUFFLE", "shuffle=(sampler is None)")})
    assert [f.code for f in _found(fine, ("TR513",))] == ["TR513"]


# --- TR418: `last_epoch = -1` set once and never changed, passed as `last_epoch=last_epoch`
# (Ultra-Light-Face, judged false); `last_epoch = checkpoint["epoch"]` on a fresh optimizer raises --

LAST = '''import torch
from torch import nn


def main(resume=None):
    model = nn.Linear(4, 2)
    last_epoch = -1
    if resume:
        model.load_state_dict(torch.load(resume, weights_only=True))
        RESUMED
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, last_epoch=last_epoch)
    for epoch in range(last_epoch + 1, 10):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        scheduler.step()
'''


def test_tr418_last_epoch_that_stays_minus_one(tmp_path):
    constant = _write(tmp_path / "a", {"t.py": LAST.replace("RESUMED", "pass")})
    assert _found(constant, ("TR418",)) == []
    resumed = _write(tmp_path / "b", {"t.py": LAST.replace("RESUMED", "last_epoch = 5")})
    assert [f.code for f in _found(resumed, ("TR418",))] == ["TR418"]
