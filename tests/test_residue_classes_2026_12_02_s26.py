"""Residue classes of the twenty-sixth session (2026-12-02): each a class of false or noisy findings
judged on fresh public repositories, with positives that must stay and near-misses that must not."""
from __future__ import annotations

from residue_helpers import found as _found, write as _write


# --- TR518: a scheduler built anew each time the epoch function runs -- a first-epoch warm-up
# (`if epoch == 0: lr_scheduler = warmup_lr_scheduler(...)`, stepped per batch) -- carries nothing
# across epochs that a resume could restore; a scheduler built once and stepped all along still
# does (a Kaggle pathology solution's trainer, judged false) ----------------------------------------

WARMUP = '''import argparse
import torch
from torch import nn


def warmup(optimizer, iters):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: min(1.0, (i + 1) / iters))


def train_epoch(model, optimizer, loader, epoch, sched=None):
BUILD
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        if sched is not None:
            sched.step()


parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
parser.add_argument("--warm", action="store_true")
args = parser.parse_args()
model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())
ONCE
start_epoch = 0
if args.resume:
    ckpt = torch.load(args.resume, weights_only=True)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    start_epoch = ckpt["epoch"] + 1
for epoch in range(start_epoch, 10):
    train_epoch(model, optimizer, [(torch.randn(3, 4), torch.randn(3, 2))], epoch, PASS)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "epoch": epoch}, "last.pt")
'''


def _warmup(tmp_path, build="    pass", once="", passed="None"):
    text = WARMUP.replace("BUILD", build).replace("ONCE", once).replace("PASS", passed)
    root = _write(tmp_path, {"train.py": text})
    return [(f.line, "schedule" in f.message) for f in _found(root, ("TR518",))]


def test_tr518_a_first_epoch_warmup_scheduler_holds_no_state(tmp_path):
    assert _warmup(tmp_path / "a", "    sched = None\n    if epoch == 0:\n        sched = warmup(optimizer, 100)") == []
    assert _warmup(tmp_path / "b", "    if not epoch:\n        sched = warmup(optimizer, 100)") == []
    # built in the function the epoch loop calls, whatever the test: a new one each epoch
    assert _warmup(tmp_path / "c", "    sched = torch.optim.lr_scheduler.StepLR(optimizer, 5)") == []


def test_tr518_a_scheduler_built_once_still_counts(tmp_path):
    line = WARMUP.count("\n", 0, WARMUP.index("ckpt = torch.load")) + 1
    # built once before the epoch loop and handed to the epoch function
    assert _warmup(tmp_path / "a", once="sched = warmup(optimizer, 100)", passed="sched") == [(line, True)]
    # built once under an option, not under a first-epoch test
    assert _warmup(tmp_path / "b", once="sched = None\nif args.warm:\n    sched = warmup(optimizer, 100)",
                   passed="sched") == [(line + 2, True)]


# --- TR518: a restore written out and commented out in the load's function (`# self.start_epoch =
# checkpoint['epoch'] + 1`, `# scheduler.load_state_dict(ckpt['scheduler'])`) is the author's
# choice to start a new stage from the weights, not a forgotten line (the same solution's second
# trainer, judged false); a commented-out print of the key is no such choice ------------------------

RESUME = '''import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
args = parser.parse_args()
model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 5)
start_epoch = 0


def resume(path):
    global start_epoch
    ckpt = torch.load(path, weights_only=True)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    COUNTER
    SCHED


if args.resume:
    resume(args.resume)
for epoch in range(start_epoch, 10):
    for x, y in [(torch.randn(3, 4), torch.randn(3, 2))]:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    scheduler.step()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "epoch": epoch}, "last.pt")
'''
COUNTER_ON = 'start_epoch = ckpt["epoch"] + 1'
SCHED_ON = 'scheduler.load_state_dict(ckpt["scheduler"])'


def _resume(tmp_path, counter, sched):
    root = _write(tmp_path, {"train.py": RESUME.replace("COUNTER", counter).replace("SCHED", sched)})
    return [("schedule" in f.message, "epoch" in f.message) for f in _found(root, ("TR518",))]


def test_tr518_a_commented_out_restore_is_deliberate(tmp_path):
    assert _resume(tmp_path / "a", COUNTER_ON, "# " + SCHED_ON) == []
    assert _resume(tmp_path / "b", "# " + COUNTER_ON, SCHED_ON) == []
    assert _resume(tmp_path / "c", "#" + COUNTER_ON, "#  " + SCHED_ON) == []


def test_tr518_a_restore_left_out_without_a_trace_still_counts(tmp_path):
    assert _resume(tmp_path / "a", COUNTER_ON, "pass") == [(True, False)]
    # a commented-out print of the key is no restore
    assert _resume(tmp_path / "b", COUNTER_ON, '# print(ckpt["scheduler"])') == [(True, False)]
    assert _resume(tmp_path / "c", "pass", SCHED_ON)[0][1] is True
    assert _resume(tmp_path / "d", '# print("epoch", ckpt["epoch"])', SCHED_ON)[0][1] is True
