"""Residue classes of the twenty-third session (2026-12-01): each a class of false or noisy findings
judged on fresh public repositories, with a positive that must stay and near-misses that must not."""
from __future__ import annotations

from residue_helpers import found as _found, write as _write


# --- TR209: a GradScaler's step reads its found-inf flags on the host every step, so an explicit
# synchronize beside it adds no wait of its own (Whisper trainer, judged noise); without the scaler
# the synchronize stays the likely defect it is -------------------------------------------------------

SYNC_STEP = '''import torch
from torch import nn

device = torch.device("cuda")


def train(model, loader, optimizer):
    SCALER
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        with torch.autocast("cuda"):
            loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        STEP
        torch.cuda.synchronize()
'''


def _sync(tmp_path, scaler, step):
    root = _write(tmp_path, {"train.py": SYNC_STEP.replace("SCALER", scaler).replace("STEP", step)})
    return [(f.line, f.kind, f.confidence) for f in _found(root, ("TR209",), advice_codes=("TR209",))
            if "synchronize" in f.message]


def test_tr209_synchronize_beside_a_grad_scaler_step_is_low(tmp_path):
    scaled = "scaler.scale(loss).backward()\n        scaler.step(optimizer)\n        scaler.update()"
    assert _sync(tmp_path / "a", "scaler = torch.cuda.amp.GradScaler()", scaled) == [(17, "advice", "low")]
    assert _sync(tmp_path / "b", "scaler = torch.amp.GradScaler('cuda')", scaled) == [(17, "advice", "low")]


def test_tr209_synchronize_without_a_scaler_stays_a_likely_defect(tmp_path):
    plain = "loss.backward()\n        optimizer.step()"
    assert _sync(tmp_path / "a", "scaler = None", plain) == [(16, "likely-defect", "high")]
    # a `.step()` of something that is not a scaler (the optimizer, a scheduler) waits for nothing
    sched = "loss.backward()\n        optimizer.step()\n        scheduler.step()"
    assert _sync(tmp_path / "b", "scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)", sched) == \
        [(17, "likely-defect", "high")]
