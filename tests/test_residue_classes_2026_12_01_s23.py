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


# --- TR104: `load_dataset("parquet", data_files=...)` is a builder inside `datasets` and runs no
# script; a canonical dataset name is Hugging Face's own (most now plain files): medium also where the
# code ships (rocketup's `src/scripts/check_class_balance.py`, judged false); a community script in a
# shipped package stays high -----------------------------------------------------------------------------

LOADERS = '''from datasets import load_dataset


def load(files):
    a = load_dataset("parquet", data_files=files, trust_remote_code=True)
    b = load_dataset("csv", data_files=files, trust_remote_code=True)
    c = load_dataset("tweet_eval", "irony", trust_remote_code=True)
    d = load_dataset("someone/odd_corpus", trust_remote_code=True)
    return a, b, c, d
'''


def test_tr104_packaged_builders_are_silent_and_canonical_scripts_medium_where_code_ships(tmp_path):
    root = _write(tmp_path, {"pyproject.toml": "[project]\nname = 'pkg'\n", "pkg/__init__.py": "",
                             "pkg/data.py": LOADERS})
    got = sorted((f.line, f.confidence) for f in _found(root, ("TR104",), advice_codes=("TR104",)))
    assert got == [(7, "medium"), (8, "high")]


# --- TR415/TR416: a clip handed a generator made once before the loop clips nothing after the first
# pass (brats' `params = self.parameters()` then `clip_grad_norm_(params, ...)` per micro-step: TR416's
# "clips partial sums" judged false; the real bug is the spent generator) --------------------------------

SPENT = '''import torch
from torch import nn


def train(model, loader, optimizer, accum):
    PARAMS
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
        torch.nn.utils.clip_grad_norm_(CLIPPED, 1.0)
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
'''


def _clips(tmp_path, params, clipped="params"):
    root = _write(tmp_path, {"train.py": SPENT.replace("PARAMS", params).replace("CLIPPED", clipped)})
    return sorted((f.code, f.line) for f in _found(root, ("TR415", "TR416")))


def test_a_clip_of_a_generator_made_before_the_loop_is_reported_as_spent(tmp_path):
    assert _clips(tmp_path / "a", "params = model.parameters()") == [("TR415", 10)]
    assert _clips(tmp_path / "b", "params = filter(lambda p: p.requires_grad, model.parameters())") == \
        [("TR415", 10)]
    assert _clips(tmp_path / "c", "params = (p for p in model.parameters() if p.requires_grad)") == \
        [("TR415", 10)]


def test_a_list_or_a_fresh_generator_is_not_spent(tmp_path):
    # a list can be walked every step: the accumulation finding of TR416 stays
    assert _clips(tmp_path / "a", "params = list(model.parameters())") == [("TR416", 10)]
    assert _clips(tmp_path / "b", "pass", clipped="model.parameters()") == [("TR416", 10)]
    made_each_pass = SPENT.replace("PARAMS", "pass").replace(
        "        loss.backward()\n", "        loss.backward()\n        params = model.parameters()\n").replace(
        "CLIPPED", "params")
    root = _write(tmp_path / "c", {"train.py": made_each_pass})
    assert sorted(f.code for f in _found(root, ("TR415", "TR416"))) == ["TR416"]


# --- TR107: a key-shaped value that is a phrase of lower-case words with no digit is someone's marker
# (`SECRET_MARKER = "sk-do-not-log-this-value"` in a unit test checking it never reaches a log, judged
# false), not a generated key; a generated key of the same shape stays -----------------------------------

def test_tr107_a_phrase_in_a_key_shape_is_no_key(tmp_path):
    text = ('SECRET_MARKER = "sk-do-not-log-this-value"\n'
            'OTHER = "hf_this_is_not_a_real_token_at_all"\n'
            'REAL = "sk-Zq3vK8pLm2Xw9RtY4bNc7HdF1gJs6AeU"\n')
    root = _write(tmp_path, {"settings.py": text})
    assert [f.line for f in _found(root, ("TR107",))] == [3]


# --- TR403: a Dataset (in another file) whose `__getitem__` moves some of the items it returns to the
# device itself: the batch items at those positions are on the device (a stock-diffusion notebook's
# `return ticker, context.to(self.device), x0.to(self.device)`, judged false); the item it leaves on the
# host still counts -----------------------------------------------------------------------------------

STOCK_DATASET = '''import torch
from torch.utils.data import Dataset


class StockDataset(Dataset):
    def __init__(self, rows, device):
        self.rows, self.device = rows, device

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, idx):
        ticker, context, x0, label = self.rows[idx]
        return ticker, torch.tensor(context).to(self.device), torch.tensor(x0).to(self.device), label
'''

STOCK_TRAIN = '''import torch
from torch import nn
from torch.utils.data import DataLoader
from data import StockDataset

device = torch.device("cuda")
net = nn.Linear(4, 4).to(device)
optimizer = torch.optim.Adam(net.parameters())
train_data = StockDataset([], device)
loader = DataLoader(train_data, batch_size=16, shuffle=True)
for ticker, context, x0, label in loader:
    out = net(ITEM)
    loss = nn.functional.mse_loss(out, x0)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
'''


def _stock(tmp_path, item):
    root = _write(tmp_path, {"data.py": STOCK_DATASET, "train.py": STOCK_TRAIN.replace("ITEM", item)})
    return [f.line for f in _found(root, ("TR403",)) if f.path.endswith("train.py")]


def test_tr403_a_batch_item_the_dataset_moved_itself_is_on_the_device(tmp_path):
    assert _stock(tmp_path / "a", "context") == []
    assert _stock(tmp_path / "b", "x0") == []


def test_tr403_the_item_the_dataset_leaves_on_the_host_still_counts(tmp_path):
    assert _stock(tmp_path / "a", "label") == [12]
