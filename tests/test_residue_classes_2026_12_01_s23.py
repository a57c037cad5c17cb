"""Residue classes of the twenty-third session (2026-12-01): each a class of false or noisy findings
judged on fresh public repositories, with a positive that must stay and near-misses that must not."""
from __future__ import annotations

from residue_helpers import found as _found, pickle_calling as _pickle_calling, write as _write


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


def test_tr403_a_dataset_that_places_its_items_manages_the_others_too(tmp_path):
    # the item left alone beside the moved ones (a ticker name the model maps itself) was judged false too
    assert _stock(tmp_path / "a", "label") == []
    assert _stock(tmp_path / "b", "ticker") == []


def test_tr403_a_dataset_that_moves_nothing_still_counts(tmp_path):
    root = _write(tmp_path, {"data.py": STOCK_DATASET.replace(".to(self.device)", ""),
                             "train.py": STOCK_TRAIN.replace("ITEM", "context")})
    assert [f.line for f in _found(root, ("TR403",)) if f.path.endswith("train.py")] == [12]


# --- TR108: a pickled logger is `logging.getLogger(name)`, Python's own reduction of every Logger
# (138 pygad result pickles of one repository, each reported critical); files running the same
# code-executing global are one alert, a file running another global its own ---------------------------


def test_tr108_a_pickled_logger_needs_trust_but_runs_no_code(tmp_path):
    from torchreview.artifacts import scan_files
    from torchreview.findings import Severity

    path = tmp_path / "result.pkl"
    path.write_bytes(_pickle_calling(b"logging", b"getLogger", b"pygad.pygad"))
    assert [f.severity for f in scan_files([str(path)]).findings] == [Severity.MEDIUM]
    near = tmp_path / "other.pkl"  # another function of the module still runs code
    near.write_bytes(_pickle_calling(b"logging", b"basicConfig", b"x"))
    assert [f.severity for f in scan_files([str(near)]).findings] == [Severity.CRITICAL]


def test_tr108_files_running_the_same_global_are_one_alert(tmp_path):
    files = {f"results/run{i}.pkl": _pickle_calling(b"os", b"system", b"echo hi") for i in range(3)}
    files["results/odd.pkl"] = _pickle_calling(b"subprocess", b"getoutput", b"ls")
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    from torchreview.engine.runner import Settings, run_review

    report = run_review([str(tmp_path)], Settings(rule_codes=("TR108",), jobs=1, min_confidence="low"))
    assert sorted(len(f.related) for f in report.findings) == [0, 2]


# --- a course's hand-written NumPy framework (`lib/network_base.py` with `Module.backward(self, grad)`,
# `optimizer.step()` in `lib/training.py`): no torch anywhere, so no torch rule applies (TR507 "keeps the
# autograd graph" on a NumPy prediction list, judged false three times); a file that imports torch, or
# whose project modules have no hand-written backward, is still torch code ---------------------------------

NUMPY_BASE = '''import numpy as np


class Module:
    def __call__(self, x):
        return self.forward(x)

    def backward(self, grad):
        raise NotImplementedError
'''

NUMPY_TRAIN = '''import numpy as np

from lib.network_base import Module


def train(model, loss_fn, optimizer, batches):
    preds = []
    for x, y in batches:
        optimizer.zero_grad()
        out = model(x)
        preds.append(out)
        loss = loss_fn(out, y)
        model.backward(loss_fn.backward())
        optimizer.step()
    return preds
'''


def test_a_homemade_numpy_framework_is_not_torch_code(tmp_path):
    root = _write(tmp_path / "a", {"lib/__init__.py": "", "lib/network_base.py": NUMPY_BASE,
                                   "lib/training.py": NUMPY_TRAIN})
    assert _found(root, ("TR507",)) == []


def test_torch_code_beside_a_framework_of_its_own_is_still_reviewed(tmp_path):
    torch_train = "import torch\n" + NUMPY_TRAIN
    root = _write(tmp_path / "a", {"lib/__init__.py": "", "lib/network_base.py": NUMPY_BASE,
                                   "lib/training.py": torch_train})
    assert [f.code for f in _found(root, ("TR507",))] == ["TR507"]
    # no hand-written backward in reach: the by-name signal still counts (a helper file of a torch project)
    plain = _write(tmp_path / "b", {"lib/__init__.py": "", "lib/network_base.py": "import numpy as np\n",
                                    "lib/training.py": NUMPY_TRAIN})
    assert [f.code for f in _found(plain, ("TR507",))] == ["TR507"]


# --- TR518: a trainer's `evaluate()` that loads the best weights and prints the epoch they were saved at
# restores no training state (seismic surrogates' `Trainer.evaluate`, judged false); the resume of the same
# trainer that reads the epoch back into its counter still counts ------------------------------------------

TRAINER = '''import torch
from torch import nn


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters())
        self.start_epoch = 0

    def train(self, loader, epochs):
        for epoch in range(self.start_epoch, epochs):
            for x, y in loader:
                self.optimizer.zero_grad()
                loss = nn.functional.mse_loss(self.model(x), y)
                loss.backward()
                self.optimizer.step()
            torch.save({"model_state_dict": self.model.state_dict(),
                        "optimizer_state_dict": self.optimizer.state_dict(), "epoch": epoch}, "best_model.pth")

    def LOADER(self):
        checkpoint = torch.load("best_model.pth")
        self.model.load_state_dict(checkpoint["model_state_dict"])
        USE
'''


def _tr518(tmp_path, loader, use):
    root = _write(tmp_path, {"train.py": TRAINER.replace("LOADER", loader).replace("USE", use)})
    return [f.line for f in _found(root, ("TR518",))]


def test_tr518_an_evaluation_printing_the_saved_epoch_is_no_resume(tmp_path):
    assert _tr518(tmp_path / "a", "evaluate", 'print(f"Loaded best model from epoch {checkpoint[\'epoch\']}")') == []


def test_tr518_a_resume_reading_the_epoch_into_its_counter_still_counts(tmp_path):
    assert _tr518(tmp_path / "a", "resume", 'self.start_epoch = checkpoint["epoch"] + 1') == [22]


# --- TR519: the test loader handed to an evaluation function that never reads it (its loop over the
# loader sits in a string; the metric comes from fixed validation folders: a re-id course project,
# judged false) says nothing about the split chosen on; the same function reading it still counts -------

SELECT = '''import torch
from torch import nn


def test(loader, model):
    BODY


def main(model, train_loader, test_loader, optimizer, epochs):
    best = 0.0
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        score = test(test_loader, model)
        if score > best:
            best = score
            torch.save(model.state_dict(), "best.pth")
'''

READS = '''total = 0.0
    for x, y in loader:
        total += float((model(x) - y).abs().mean())
    return total'''

IGNORES = '''"""
    for x, y in loader:
        total += float((model(x) - y).abs().mean())
    """
    return evaluate_folders("/datasets/val/query", "/datasets/val/gallery", model)'''


def test_tr519_a_test_loader_the_evaluation_never_reads_chooses_nothing(tmp_path):
    root = _write(tmp_path, {"main.py": SELECT.replace("BODY", IGNORES)})
    assert _found(root, ("TR519",)) == []


def test_tr519_the_evaluation_reading_the_test_loader_still_counts(tmp_path):
    root = _write(tmp_path, {"main.py": SELECT.replace("BODY", READS)})
    assert [f.line for f in _found(root, ("TR519",))] == [20]


# --- TR207: a class with a mode switch of its own (`set_train_mode(self, train_mode)` setting every
# module's mode from its argument) runs its inference methods in the mode its callers chose (an RL
# agent alternating inference and training iterations, judged false twice); without the switch the
# inference method is still reported ---------------------------------------------------------------------

AGENT = '''import torch
from torch import nn


class Agent:
    def __init__(self):
        self.policy = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 2))
        self.nets = {"policy": self.policy}

    SWITCH

    @torch.no_grad()
    def choose_action(self, obs):
        return self.policy(obs).argmax(-1)
'''

SWITCH = '''def set_train_mode(self, train_mode=True):
        self.train_mode = train_mode
        for m in self.nets.values():
            m.train(mode=self.train_mode)'''


def test_tr207_a_class_with_its_own_mode_switch_is_not_reported(tmp_path):
    root = _write(tmp_path, {"agent.py": AGENT.replace("SWITCH", SWITCH)})
    assert _found(root, ("TR207",)) == []


def test_tr207_without_the_switch_the_inference_method_is_reported(tmp_path):
    # a method that takes an argument and loops over the modules, but sets no mode from it
    other = SWITCH.replace("m.train(mode=self.train_mode)", "m.requires_grad_(self.train_mode)")
    root = _write(tmp_path, {"agent.py": AGENT.replace("SWITCH", other)})
    assert [f.line for f in _found(root, ("TR207",))] == [17]


# --- TR416: a backward that itself depends on the accumulation factor (`if CFG.accum > 1: loss = loss /
# CFG.accum` / `else: loss.backward()`): whenever it runs the factor is 1 and the step follows it (a Kaggle
# notebook's trainer, judged false); the plain accumulation loop stays reported ---------------------------

ACCUM = '''import torch
from torch import nn


class CFG:
    accum = 1
    max_norm = 1.0


def train(model, loader, optimizer):
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        BACKWARD
        torch.nn.utils.clip_grad_norm_(model.parameters(), CFG.max_norm)
        if (step + 1) % CFG.accum == 0:
            optimizer.step()
            optimizer.zero_grad()
'''


def test_tr416_a_backward_that_depends_on_the_factor_is_not_accumulation(tmp_path):
    branch = ("if CFG.accum > 1:\n            loss = loss / CFG.accum\n        else:\n"
              "            loss.backward()")
    root = _write(tmp_path, {"train.py": ACCUM.replace("BACKWARD", branch)})
    assert _found(root, ("TR416",)) == []


def test_tr416_plain_accumulation_is_still_reported(tmp_path):
    root = _write(tmp_path, {"train.py": ACCUM.replace("BACKWARD", "(loss / CFG.accum).backward()")})
    assert [f.line for f in _found(root, ("TR416",))] == [14]


# --- TR207: an object of a project class on no `nn.Module` (a diffusion sampler wrapping its networks,
# `diffusion_model = CDE(...)`) has no `.eval()`; calling it is sampling (judged false); the same call
# of a project `nn.Module` with dropout is still reported ---------------------------------------------------

SAMPLER = '''import torch
from torch import nn


class Base:
    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)


class CDE(BASE):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 8), nn.Dropout(0.1), nn.Linear(8, 2))

    def forward(self, y, num_samples=10):
        return self.net(y.repeat(num_samples, 1))
'''

EVALUATE = '''import torch
from models import CDE


def evaluate(diffusion_model, y):
    with torch.no_grad():
        return diffusion_model(y, num_samples=100)


diffusion_model = CDE()
print(evaluate(diffusion_model, torch.zeros(1, 2)))
'''


def test_tr207_a_plain_project_object_has_no_eval(tmp_path):
    root = _write(tmp_path, {"models.py": SAMPLER.replace("BASE", "Base"), "run.py": EVALUATE})
    assert [f for f in _found(root, ("TR207",)) if f.path.endswith("run.py")] == []


def test_tr207_a_project_module_with_dropout_is_still_reported(tmp_path):
    root = _write(tmp_path, {"models.py": SAMPLER.replace("BASE", "nn.Module"), "run.py": EVALUATE})
    assert [f.line for f in _found(root, ("TR207",)) if f.path.endswith("run.py")] == [7]


def test_tr108_one_alert_for_one_package_of_code_executing_globals(tmp_path):
    # the same package runs code in each file (os.system / os.popen), other globals differ: one alert
    files = {"results/a.pkl": _pickle_calling(b"os", b"system", b"echo hi"),
             "results/b.pkl": _pickle_calling(b"os", b"popen", b"ls"),
             "results/c.pkl": _pickle_calling(b"subprocess", b"getoutput", b"ls")}
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    from torchreview.engine.runner import Settings, run_review

    report = run_review([str(tmp_path)], Settings(rule_codes=("TR108",), jobs=1, min_confidence="low"))
    assert sorted(len(f.related) for f in report.findings) == [0, 1]
