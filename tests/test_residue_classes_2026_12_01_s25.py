"""Residue classes of the twenty-fifth session (2026-12-01): each a class of false or noisy findings
judged on fresh public repositories, with a positive that must stay and near-misses that must not."""
from __future__ import annotations

from residue_helpers import found as _found, write as _write


# --- TR519: a Hugging Face `DatasetDict` whose "test" entry the script builds itself out of the part
# a `train_test_split` of its own training annotations held out (records parsed from it in a loop,
# their files listed, a `Dataset.from_dict` of those; the dict then `.map()`-ped): a validation
# split under a test name (a speech hackathon's wav2vec2 fine-tuning, judged false) ----------------

HF = '''import json
import torch
from sklearn.model_selection import train_test_split
from datasets import Dataset, DatasetDict, load_dataset
from transformers import Trainer, TrainingArguments

with open("train.jsonl") as fh:
    lines = list(fh)
SPLIT
test_id, test_text = [], []
for line in test_list:
    rec = json.loads(line)
    test_id.append(rec["id"])
    test_text.append(rec["sentence"])
test_file = [f"audio/{i}.wav" for i in test_id]
train_ds = Dataset.from_dict({"file": [json.loads(l)["id"] for l in train_list]})
test_dataset = TEST
data = DatasetDict({"train": train_ds, "test": test_dataset})
data = data.map(lambda b: b, num_proc=1)
args = TrainingArguments(output_dir="out", load_best_model_at_end=True, metric_for_best_model="wer",
                         eval_strategy="steps", save_strategy="steps")
trainer = Trainer(model=None, args=args, train_dataset=data["train"], eval_dataset=data["test"])
trainer.train()
'''
HELD_OUT = "train_list, test_list = train_test_split(lines, test_size=0.15, random_state=0)"
OWN_FILE = 'train_list = lines\ntest_list = list(open("test.jsonl"))'
FROM_RECORDS = 'Dataset.from_dict({"file": test_file, "text": test_text})'


def _hf(tmp_path, split, test):
    root = _write(tmp_path, {"train.py": HF.replace("SPLIT", split).replace("TEST", test)})
    return [f.line for f in _found(root, ("TR519",))]


def test_tr519_a_dataset_dict_test_entry_built_from_a_held_out_part_is_validation(tmp_path):
    assert _hf(tmp_path / "a", HELD_OUT, FROM_RECORDS) == []
    # the held-out list handed straight in
    assert _hf(tmp_path / "b", HELD_OUT, 'Dataset.from_dict({"line": test_list})') == []


def test_tr519_a_dataset_dict_test_entry_from_test_data_still_counts(tmp_path):
    # the test records read from their own file: the test split
    line = HF.count("\n", 0, HF.index("trainer = Trainer")) + 2  # OWN_FILE is one line longer
    assert _hf(tmp_path / "a", OWN_FILE, FROM_RECORDS) == [line]
    # the entry built as the test split on the way, whatever was held out before
    assert _hf(tmp_path / "b", HELD_OUT, 'load_dataset("csv", data_files="x.csv", split="test")') == [line - 1]


LOOP = '''import torch
from torch import nn
from torch.utils.data import DataLoader, random_split


def evaluate(model, loader):
    return sum(float(nn.functional.mse_loss(model(x), y)) for x, y in loader)


def main(model, full, test_set, optimizer):
    train_set, val_set = random_split(full, [0.8, 0.2])
    test_loader = DataLoader(test_set, batch_size=len(val_set))
    best = 1e9
    for epoch in range(10):
        for x, y in DataLoader(train_set):
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        loss = evaluate(model, test_loader)
        if loss < best:
            best = loss
            torch.save(model.state_dict(), "best.pth")
'''


def test_tr519_a_held_out_part_read_only_for_its_size_builds_no_data(tmp_path):
    # `batch_size=len(val_set)`: the test loader holds the test data handed in
    root = _write(tmp_path, {"main.py": LOOP})
    assert [f.line for f in _found(root, ("TR519",))] == [20]
    # the test loader built over the held-out part: a validation split under a test name
    root = _write(tmp_path / "b", {"main.py": LOOP.replace("DataLoader(test_set, batch_size=len(val_set))",
                                                           "DataLoader(val_set, batch_size=32)")})
    assert _found(root, ("TR519",)) == []


# --- TR518: a trainer's resume method nothing calls, beside a sibling trainer class (another file)
# whose own method of the same name the entry script calls on an instance it builds
# (`trainer = TrainerCNN(...); trainer.load_checkpoint(p)` never reaches `TrainerViT.load_checkpoint`,
# image captioning, judged noise in nr199); a docstring spelling the method is no call ------------

TRAINER = '''import torch
from torch import nn


class TrainerA:
    def __init__(self):
        self.model = nn.Linear(4, 2)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, 10)

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                self.optimizer.zero_grad()
                nn.functional.mse_loss(self.model(x), y).backward()
                self.optimizer.step()
            self.scheduler.step()
            torch.save({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                        "scheduler": self.scheduler.state_dict()}, "last.pt")

    def load_checkpoint(self, path):
        ckpt = torch.load(path)
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
'''

MAIN = '''"""Entry point (mirrors TrainerA.load_checkpoint for the B models)."""
import sys
from train_a import TrainerA
from train_b import TrainerB


def run_fresh(loader):
    TrainerA().fit(loader, 5)
    TrainerB().fit(loader, 5)


def run_b(loader, path):
    trainer = BUILD
    trainer.load_checkpoint(path)
    trainer.fit(loader, 5)


if __name__ == "__main__":
    run_fresh([])
    run_b([], sys.argv[1])
'''


def _siblings(tmp_path, build):
    root = _write(tmp_path, {"train_a.py": TRAINER, "train_b.py": TRAINER.replace("TrainerA", "TrainerB"),
                             "main.py": MAIN.replace("BUILD", build)})
    return sorted((f.path.rsplit("/", 1)[-1], f.line, f.confidence) for f in _found(root, ("TR518",)))


def test_tr518_a_sibling_trainers_method_called_on_its_own_instance_is_no_call(tmp_path):
    assert _siblings(tmp_path, "TrainerB()") == [("train_a.py", 22, "low"), ("train_b.py", 22, "medium")]


def test_tr518_the_method_called_on_an_instance_of_its_class_or_an_unknown_one_still_runs(tmp_path):
    assert _siblings(tmp_path / "a", "TrainerA()") == [("train_a.py", 22, "medium"), ("train_b.py", 22, "low")]
    # built by a factory: which class, the review cannot tell
    assert _siblings(tmp_path / "b", "make_trainer()") == [("train_a.py", 22, "medium"), ("train_b.py", 22, "medium")]


# --- a file in Python 3.12's f-string syntax (quotes reused inside: `f"{d["a"]}"`) is fine code; on an
# older Python the one-line error says so and what to do, and a plain syntax error gets no such hint -----

def test_newer_f_string_syntax_is_named_as_such(tmp_path):
    import sys

    from torchreview.engine.runner import Settings, run_review

    _write(tmp_path, {"a.py": 'import torch\nd = {"a": 1}\nprint(f"{d["a"]}")\n', "b.py": "import torch\nx = (\n"})
    errors = {e.path.rsplit("/", 1)[-1]: e.message for e in
              run_review([str(tmp_path)], Settings(rule_codes=("TR101",), jobs=1)).errors}
    assert "Python 3.12" not in errors["b.py"]
    if sys.version_info >= (3, 12):
        assert "a.py" not in errors
    else:
        assert errors["a.py"].startswith("syntax error at line 3: f-string")
        assert "run torchreview with Python 3.12 or newer" in errors["a.py"]


# --- TR502: a helper of another file that computes its result under `with torch.no_grad():` and returns
# it from after the block (`emb = head(vit(x))` inside, `return emb` outside) hands back no graph
# (a DINO student's embedding, converted with `.cpu().numpy()` by the script: judged false in blind
# test 95); the same helper with grad on still counts ---------------------------------------------

HELPER = '''import torch


def get_embedding(x, vit, head, device):
    x = x.unsqueeze(0).to(device)
    GUARD
        out = vit(x)
        emb = head(out)
    return emb
'''

SCRIPT = '''import torch
from torch import nn
from inference import get_embedding

vit = nn.Linear(4, 4)
head = nn.Linear(4, 2)
opt = torch.optim.SGD([*vit.parameters(), *head.parameters()], lr=0.1)
for _ in range(3):
    opt.zero_grad()
    head(vit(torch.randn(8, 4))).sum().backward()
    opt.step()
embedding = get_embedding(torch.randn(4), vit, head, "cpu")
print(embedding[0, :5].cpu().numpy())
'''


def test_tr502_a_helper_returning_what_it_computed_under_no_grad_hands_back_no_graph(tmp_path):
    root = _write(tmp_path, {"inference.py": HELPER.replace("GUARD", "with torch.no_grad():"), "main.py": SCRIPT})
    assert _found(root, ("TR502",)) == []


def test_tr502_the_helper_with_grad_on_still_hands_back_a_graph(tmp_path):
    root = _write(tmp_path, {"inference.py": HELPER.replace("GUARD", "if x.dim() > 0:"), "main.py": SCRIPT})
    assert [(f.path.rsplit("/", 1)[-1], f.line) for f in _found(root, ("TR502",))] == [("main.py", 13)]


# --- names: a module body (a notebook's cells) that imports one name twice as different things reads,
# at the top level, the import above the use (a Kaggle notebook's cell re-importing `autocast` from
# `torch.amp` over the first cell's `torch.cuda.amp` one, then `autocast("cuda")`: TR419 judged false
# in blind test 96); inside a function, the last import; a fallback import in `except ImportError`
# still does not replace the import it backs up --------------------------------------------------

AUTOCAST = '''import torch
from FIRST import autocast

model = torch.nn.Linear(2, 2)

from SECOND import autocast

with autocast("cuda"):
    out = model(torch.randn(2, 2))
'''


def _autocast(tmp_path, first, second):
    root = _write(tmp_path, {"a.py": AUTOCAST.replace("FIRST", first).replace("SECOND", second)})
    return [f.line for f in _found(root, ("TR419",))]


def test_a_name_imported_again_reads_the_import_above_the_use(tmp_path):
    assert _autocast(tmp_path / "a", "torch.cuda.amp", "torch.amp") == []
    assert _autocast(tmp_path / "b", "torch.amp", "torch.cuda.amp") == [8]


def test_a_function_reads_the_last_import_and_a_fallback_replaces_nothing(tmp_path):
    late = ('import torch\nfrom torch.amp import autocast\n\n\ndef run(model, x):\n    with autocast("cuda"):\n'
            '        return model(x)\n\n\nfrom torch.cuda.amp import autocast\n')
    assert [f.line for f in _found(_write(tmp_path / "a", {"a.py": late}), ("TR419",))] == [6]
    fallback = ('import torch\ntry:\n    from torch.amp import autocast\nexcept ImportError:\n'
                '    from torch.cuda.amp import autocast\n\nwith autocast("cuda"):\n    pass\n')
    assert _found(_write(tmp_path / "b", {"a.py": fallback}), ("TR419",)) == []


# --- values: an assignment in the branch of an `if` that never runs -- its test a name every assignment
# of which is one literal (`mse_loss = False` set once in the `__main__` block, then `if mse_loss: pred =
# torch.sigmoid(pred)` in the training function) -- does not reach the reads after it (a U-Net's
# BCEWithLogitsLoss on raw logits, TR412 judged false in blind test 96); the same flag set to True, or
# taken from the command line, may run the branch -------------------------------------------------

FLAGGED = '''import argparse
import torch
from torch import nn


def train(model, loader, optimizer):
    criterion = nn.BCEWithLogitsLoss()
    for x, y in loader:
        optimizer.zero_grad()
        pred, _ = model(x)
        if mse_loss: pred = torch.sigmoid(pred)
        loss = criterion(pred, y)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    mse_loss = FLAG
    net = nn.Conv2d(3, 1, 1)
    train(net, [], torch.optim.SGD(net.parameters(), lr=0.1))
'''


def _flagged(tmp_path, flag):
    root = _write(tmp_path, {"a.py": FLAGGED.replace("FLAG", flag)})
    return [f.line for f in _found(root, ("TR412",))]


def test_an_assignment_in_a_branch_that_never_runs_reaches_nothing(tmp_path):
    assert _flagged(tmp_path / "a", "False") == []
    assert _flagged(tmp_path / "b", "0") == []


def test_a_branch_that_may_run_still_reaches(tmp_path):
    assert _flagged(tmp_path / "a", "True") == [12]
    assert _flagged(tmp_path / "b", "argparse.ArgumentParser().parse_args().mse") == [12]


# --- TR518: a trainer's `train()` that reloads its best checkpoint -- weights, optimizer and scheduler --
# after the epoch loop, for the test step that follows, resumes nothing (a forecasting survey's
# Exp.train, judged false in blind test 96); the same load before the loop is a resume ------------

RELOAD = '''import torch
from torch import nn


class Exp:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.Adam(self.model.parameters())
        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, 5)

    def train(self, loader, epochs):
        BEFORE
        for e in range(epochs):
            for x, y in loader:
                self.optimizer.zero_grad()
                nn.functional.mse_loss(self.model(x), y).backward()
                self.optimizer.step()
            torch.save({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                        "lr_scheduler": self.scheduler.state_dict(), "epoch": e}, "best.pt")
            self.scheduler.step()
        AFTER

    def test(self, loader):
        self.model.eval()
        return [self.model(x) for x, _ in loader]


if __name__ == "__main__":
    exp = Exp()
    exp.train([], 10)
    exp.test([])
'''

LOAD = ('checkpoint = torch.load("best.pt")\n        self.model.load_state_dict(checkpoint["model"])\n'
        '        self.optimizer.load_state_dict(checkpoint["optimizer"])\n'
        '        self.scheduler.load_state_dict(checkpoint["lr_scheduler"])')


def test_tr518_reloading_the_best_checkpoint_after_the_training_loop_resumes_nothing(tmp_path):
    root = _write(tmp_path, {"exp.py": RELOAD.replace("BEFORE", "pass").replace("AFTER", LOAD)})
    assert _found(root, ("TR518",)) == []


def test_tr518_the_same_load_before_the_training_loop_is_a_resume(tmp_path):
    root = _write(tmp_path, {"exp.py": RELOAD.replace("BEFORE", LOAD).replace("AFTER", "pass")})
    assert [f.line for f in _found(root, ("TR518",))] == [12]


# --- TR519: the tail `x[k:]` of an array whose head `x[:k]` (same bound) trains is a part held out of the
# training data, whatever its loader is called (a point-cloud completion script's `test_loader` over
# the last fifth of `part_tr.npy`, judged false in nr203); a test array's tail is still the test split --

SLICED = '''import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

x = torch.from_numpy(np.load("SOURCE"))
y = torch.from_numpy(np.load("labels.npy"))
n = len(x)
train_loader = DataLoader(TensorDataset(HEAD, y[:int(n * 0.8)]), batch_size=32)
test_loader = DataLoader(TensorDataset(x[int(n * 0.8):], y[int(n * 0.8):]), batch_size=32)
model = nn.Linear(3, 1)
optimizer = torch.optim.Adam(model.parameters())
best = 1e9
for epoch in range(10):
    for xb, yb in train_loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(xb), yb).backward()
        optimizer.step()
    test_loss = 0.0
    for xb, yb in test_loader:
        test_loss += float(nn.functional.mse_loss(model(xb), yb))
    if test_loss < best:
        best = test_loss
        torch.save(model.state_dict(), "best.pt")
'''


def _sliced(tmp_path, source, head):
    root = _write(tmp_path, {"train.py": SLICED.replace("SOURCE", source).replace("HEAD", head)})
    return [f.line for f in _found(root, ("TR519",))]


def test_tr519_the_tail_of_a_training_array_cut_in_two_is_held_out(tmp_path):
    assert _sliced(tmp_path, "part_tr.npy", "x[:int(n * 0.8)]") == []


def test_tr519_a_tail_with_no_matching_head_or_of_test_data_is_still_the_test_split(tmp_path):
    # the head is cut at another bound: no one array cut in two
    assert _sliced(tmp_path / "a", "part_tr.npy", "x[:int(n * 0.5)]") == [22]
    # the array cut in two is the test data itself
    assert _sliced(tmp_path / "b", "part_test.npy", "x[:int(n * 0.8)]") == [22]


# --- TR519: a loader another module's function returns, built from the part a split of its own
# training table held out (`train_test_split(df)`, or `next(GroupShuffleSplit(...).split(df,
# groups=...))`), is validation data whatever the caller names it (a sign-language model's
# `train_loader, test_loader, n = get_data_loaders(...)` from train.csv, judged false in nr203); a
# loader over the table's own test file is still the test split --------------------------------

DATA = '''import pandas as pd
from sklearn.model_selection import GroupShuffleSplit, train_test_split
from torch.utils.data import DataLoader


def get_data_loaders(data_dir, batch_size=32):
    df = pd.read_csv(data_dir + "/train.csv")
    SPLIT
    train_loader = DataLoader(train_df.values, batch_size=batch_size, shuffle=True)
    test_loader = DataLoader(test_df.values, batch_size=batch_size)
    return train_loader, test_loader, len(df)
'''

TRAIN = '''import torch
from torch import nn
from data import get_data_loaders

model = nn.Linear(3, 1)
optimizer = torch.optim.Adam(model.parameters())
train_loader, test_loader, n = get_data_loaders("data")
best = 0.0
for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    test_acc = 0
    for x, y in test_loader:
        test_acc += int((model(x).round() == y).sum())
    if test_acc > best:
        best = test_acc
        torch.save(model.state_dict(), "best.pt")
'''


def _loaders(tmp_path, split):
    root = _write(tmp_path, {"data.py": DATA.replace("SPLIT", split), "train.py": TRAIN})
    return [(f.path.rsplit("/", 1)[-1], f.line) for f in _found(root, ("TR519",))]


def test_tr519_another_modules_loader_over_a_held_out_part_is_validation(tmp_path):
    assert _loaders(tmp_path / "a", "train_df, test_df = train_test_split(df, test_size=0.1)") == []
    groups = ('gss = GroupShuffleSplit(n_splits=1, test_size=0.1)\n'
              '    train_idx, test_idx = next(gss.split(df, groups=df["signer"]))\n'
              '    train_df, test_df = df.iloc[train_idx], df.iloc[test_idx]')
    assert _loaders(tmp_path / "b", groups) == []


def test_tr519_another_modules_loader_over_the_test_file_is_still_the_test_split(tmp_path):
    own = 'train_df, test_df = df, pd.read_csv(data_dir + "/test.csv")'
    assert _loaders(tmp_path, own) == [("train.py", 17)]


# --- TR519: a Lightning checkpoint callback monitoring a key spelled `test/...` sees only what the fit
# loop logs; when every `trainer.fit(...)` hands a validation loader that is not the test split, the
# key names a validation metric (STEGO's "test/cluster/mIoU" logged from validation_epoch_end over
# the val split, judged false in blind test 96); fit handed the test loader still counts ----------

LIGHTNING = '''import torch
from torch.utils.data import DataLoader
from torchvision.datasets import CIFAR10
from pytorch_lightning import Trainer
from pytorch_lightning.callbacks import ModelCheckpoint

train_loader = DataLoader(CIFAR10("data", train=True), batch_size=32)
VAL
model = make_model()
trainer = Trainer(max_epochs=5, callbacks=[ModelCheckpoint(monitor="test/cluster/mIoU", mode="max")])
trainer.fit(model, train_loader, LOADER)
'''


def _lightning(tmp_path, val, loader):
    root = _write(tmp_path, {"train.py": LIGHTNING.replace("VAL", val).replace("LOADER", loader)})
    return [f.line for f in _found(root, ("TR519",))]


def test_tr519_a_test_named_key_of_a_fit_validating_on_validation_data_is_a_validation_metric(tmp_path):
    val = 'val_loader = DataLoader(MyData("data", image_set="val"), batch_size=32)'
    assert _lightning(tmp_path, val, "val_loader") == []


def test_tr519_a_test_named_key_of_a_fit_validating_on_the_test_split_still_counts(tmp_path):
    test = 'test_loader = DataLoader(CIFAR10("data", train=False), batch_size=32)'
    assert _lightning(tmp_path / "a", test, "test_loader") == [10]
    # a datamodule's loaders are not seen: the key's name is all there is
    assert _lightning(tmp_path / "b", "dm = MyDataModule()", "datamodule=dm") == [10]


# --- TR107: "my" before a credential word (`pwd='mypassword'` beside `user='myuser'` in a storage helper's
# connection string) is a stand-in written for the reader, not a secret (judged false in blind test 98);
# a password that is a real value still counts ----------------------------------------------------

def test_tr107_my_password_is_a_stand_in(tmp_path):
    code = 'import torch\n\n\ndef connect(db):\n    return db.connect(user="myuser", pwd="PWD")\n'
    root = _write(tmp_path / "a", {"store.py": code.replace("PWD", "mypassword")})
    assert _found(root, ("TR107",)) == []
    root = _write(tmp_path / "b", {"store.py": code.replace("PWD", "Kq7#vX2p!Lm9")})
    assert [f.line for f in _found(root, ("TR107",))] == [5]
