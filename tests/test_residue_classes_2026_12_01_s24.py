"""Residue classes of the twenty-fourth session (2026-12-01): each a class of false or noisy findings
judged on fresh public repositories, with a positive that must stay and near-misses that must not."""
from __future__ import annotations

from residue_helpers import found as _found, pickle_calling as _pickle_calling, write as _write


# --- TR520: a script that converts old checkpoints reads one file and writes another from what it
# read (gallev-caption's load_and_resave_models: `BEST_x` in, `NEW_x` out with each pickled module's
# `.state_dict()`); the save shares the load's keys but is not the writer of the file read, and
# `loaded["encoder"].state_dict()` is a state dict, not the module the loading code handles ----------

CONVERT = '''import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--model", type=str)
args = parser.parse_args()
name = "best.pth.tar"
src = "/data/{}/{}".format(args.model, name)
saved = torch.load(src, map_location="cpu")
SAVE
'''


def _convert(tmp_path, save):
    root = _write(tmp_path, {"convert.py": CONVERT.replace("SAVE", save)})
    return [(f.line, f.confidence) for f in _found(root, ("TR520",))]


def test_tr520_a_conversion_writing_another_file_from_what_it_read_is_not_the_file_read(tmp_path):
    # the module pickled into the new file: the old file read here was written elsewhere
    moved = ('enc = nn.Linear(2, 2)\ntorch.save({"epoch": saved["epoch"], "encoder": enc, '
             '"decoder": saved["decoder"]}, "/data/{}/NEW_{}".format(args.model, name))')
    assert _convert(tmp_path / "a", moved) == []
    # each module's state dict written out: a state dict is no module, whatever the key
    states = ('dst = "/data/{}/NEW_{}".format(args.model, name)\n'
              'torch.save({"epoch": saved["epoch"], "encoder": saved["encoder"].state_dict(), '
              '"decoder": saved["decoder"].state_dict()}, dst)')
    assert _convert(tmp_path / "b", states) == []


def test_tr520_a_rewrite_in_place_and_a_fresh_save_still_link(tmp_path):
    # the same path rewritten with a module in it: the next run's load reads this save
    in_place = 'torch.save({"epoch": saved["epoch"] + 1, "encoder": nn.Linear(2, 2)}, src)'
    assert _convert(tmp_path / "a", in_place) == [(10, "high")]
    # a save that copies nothing from the load, with the keys the load reads: the writer
    fresh = ('print(saved["epoch"], saved["encoder"])\n'
             'torch.save({"epoch": 3, "encoder": nn.Linear(2, 2)}, "/data/{}/{}".format(args.model, name))')
    assert _convert(tmp_path / "b", fresh) == [(10, "high")]


# --- target torch: a sub-project that asks for torch with no version (a FastAPI service's own
# pyproject listing `"torch",`, built by its own Dockerfile) installs the newest torch, whatever
# the repository root pins for its scripts (hyper07's api/ beside a root `torch==2.3.1`, judged
# false: a bare `torch.load` is weights-only there) -------------------------------------------------

def test_a_sub_project_asking_for_torch_without_a_version_targets_the_newest(tmp_path):
    from torchreview.config import nearest_torch_pin

    load = "import sys\nimport torch\nstate = torch.load(sys.argv[1])\n"
    files = {"pyproject.toml": '[project]\nname = "gen"\ndependencies = [\n    "torch==2.3.1",  # CUDA 12.1\n]\n',
             "main.py": load,
             "api/pyproject.toml": '[project]\nname = "api"\ndependencies = [\n    "fastapi",\n    "torch",\n'
                                   '    "torchvision",\n]\n',
             "api/routers/models.py": load,
             # a sub-project naming only torchvision, no torch: nothing declared, the root decides
             "cli/requirements.txt": "torchvision\nnumpy\n",
             "cli/run.py": load}
    root = _write(tmp_path, files)
    assert nearest_torch_pin(str(root / "api/routers/models.py"), memo=False) == (True, None)
    assert nearest_torch_pin(str(root / "main.py"), memo=False) == (True, (2, 3))
    assert nearest_torch_pin(str(root / "cli/run.py"), memo=False) == (True, (2, 3))
    kinds = {f.path.split(str(root) + "/")[-1]: f.kind
             for f in _found(root, ("TR102",), advice_codes=("TR102",), detect_torch=True)}
    assert kinds == {"main.py": "defect", "cli/run.py": "defect", "api/routers/models.py": "advice"}


# --- project roots: an MLflow model folder (`MLmodel` beside the `requirements.txt` and
# `conda.yaml` of the environment it was logged from) is a saved model, not a project; each run's
# copy of one pickled model is the same alert of one project (graphexplainapp: sixteen run folders,
# one finding each, judged one root cause) ---------------------------------------------------------


def _runs(tmp_path, marker):
    (tmp_path / "requirements.txt").write_text("torch\nmlflow\n")
    (tmp_path / "app.py").write_text("import mlflow\nmodel = mlflow.pytorch.load_model('artifacts/model')\n")
    for run in ("1f3a", "2b7c", "3d9e"):
        folder = tmp_path / "experiments" / run / "artifacts" / "model"
        (folder / "data").mkdir(parents=True)
        (folder / "requirements.txt").write_text("torch==2.3.1\ncloudpickle==3.0.0\n")
        if marker:
            (folder / "MLmodel").write_text("flavors:\n  pytorch:\n    model_data: data\n")
        (folder / "data" / "model.pth").write_bytes(_pickle_calling(b"os", b"system", b"true"))
    from torchreview.engine.runner import Settings, run_review

    report = run_review([str(tmp_path)], Settings(rule_codes=("TR108",), jobs=1, min_confidence="low"))
    return sorted(len(f.related) for f in report.findings)


def test_tr108_run_copies_of_an_mlflow_model_are_one_alert(tmp_path):
    assert _runs(tmp_path, marker=True) == [2]


def test_tr108_folders_that_are_projects_of_their_own_keep_their_own_alert(tmp_path):
    # the same layout without MLflow's marker: three sub-projects, each with its own requirements
    assert _runs(tmp_path, marker=False) == [0, 0, 0]


# --- TR416: an Accelerator whose accumulation factor is a project configuration class's attribute
# that is 1 and nothing sets (reza-dl-homework: `class Config: gradient_accumulation_steps = 1`,
# `train(config, ...)` in a script that parses other options; judged false): every micro-step syncs
# at the defaults, so the clip inside `accumulate()` is partial only once someone raises it ---------

CONFIG_PY = '''from dataclasses import dataclass


@dataclass
class Config:
    num_epochs = 5
    gradient_accumulation_steps = STEPS
    mixed_precision = "fp16"


config = Config()
'''

ACC_TRAIN = '''import argparse

import accelerate
import torch

from config import *


def train(config, model, optimizer, loader):
    accelerator = accelerate.Accelerator(mixed_precision=config.mixed_precision,
                                         gradient_accumulation_steps=config.gradient_accumulation_steps)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(config.num_epochs):
        for x, y in loader:
            with accelerator.accumulate(model):
                loss = torch.nn.functional.mse_loss(model(x), y)
                accelerator.backward(loss)
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=32)
    args = parser.parse_args()
    config.train_batch_size = args.batch_size
    model = torch.nn.Linear(4, 1)
    train(config, model, torch.optim.AdamW(model.parameters()), [])
'''


def _clip(tmp_path, steps):
    root = _write(tmp_path, {"config.py": CONFIG_PY.replace("STEPS", steps), "train.py": ACC_TRAIN})
    return [(f.line, f.confidence) for f in _found(root, ("TR416",))]


def test_tr416_accumulation_factor_one_in_a_config_class_is_medium(tmp_path):
    assert _clip(tmp_path, "1") == [(18, "medium")]


def test_tr416_accumulation_factor_above_one_in_a_config_class_stays_high(tmp_path):
    assert _clip(tmp_path, "4") == [(18, "high")]


# --- TR102: `pickle_module=None` spelt out is torch's default, not a custom unpickler (toster3d's
# fallback load, judged false); a real custom pickler is still reported --------------------------

def test_tr102_pickle_module_none_is_the_default(tmp_path):
    code = ("import sys\nimport dill\nimport torch\n"
            "state = torch.load(sys.argv[1], map_location='cpu', pickle_module=PICKLER)\n")
    none = _write(tmp_path / "a", {"requirements.txt": "torch>=2.6\n", "load.py": code.replace("PICKLER", "None")})
    assert [f for f in _found(none, ("TR102",)) if "pickle_module" in f.message] == []
    dill = _write(tmp_path / "b", {"requirements.txt": "torch>=2.6\n", "load.py": code.replace("PICKLER", "dill")})
    assert [f.line for f in _found(dill, ("TR102",)) if "pickle_module" in f.message] == [4]


# --- TR507: a meta-learning objective summed over the task loop and backpropagated once the loop
# ends keeps each task's graph on purpose (damsl's MAML, judged false); a sum nothing backpropagates
# still keeps every step's graph for nothing ------------------------------------------------------

MAML = '''import torch
from torch import nn


def meta_train(model, tasks, optimizer, meta_optimizer, epochs):
    loss_func = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        meta_loss = 0
        for (x_tr, y_tr), (x_te, y_te) in tasks:
            loss = loss_func(model(x_tr), y_tr)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            query_loss = loss_func(model(x_te), y_te)
            meta_loss += query_loss
        AFTER
'''


def test_tr507_meta_objective_backpropagated_after_the_task_loop_is_silent(tmp_path):
    after = "meta_optimizer.zero_grad()\n        meta_loss.backward()\n        meta_optimizer.step()"
    root = _write(tmp_path, {"maml.py": MAML.replace("AFTER", after)})
    assert [f for f in _found(root, ("TR507",)) if "meta_loss" in f.message] == []


def test_tr507_a_sum_only_printed_after_the_loop_is_still_reported(tmp_path):
    root = _write(tmp_path, {"maml.py": MAML.replace("AFTER", "print(epoch, meta_loss)")})
    assert [f.line for f in _found(root, ("TR507",)) if "meta_loss" in f.message] == [15]


# --- TR427: a gradient hook on a tensor computed in this pass, with the backward after it in the
# same pass, fires while the values it reads are this pass's (siamese GED's masks, judged false);
# a hook registered on a tensor made before the loop outlives the pass and is still reported ------

HOOK = '''import torch


def train(model, loader, optimizer, criterion):
    BEFORE
    for x, y, sizes in loader:
        optimizer.zero_grad()
        out = model(x)
        mask = torch.arange(out.size(1)).unsqueeze(0) >= sizes.unsqueeze(-1)
        HOLDER.register_hook(lambda grad: grad.masked_fill_(mask, 0))
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
'''


def test_tr427_hook_on_this_pass_tensor_fired_by_this_pass_backward_is_silent(tmp_path):
    root = _write(tmp_path, {"train.py": HOOK.replace("BEFORE", "pass").replace("HOLDER", "out")})
    assert _found(root, ("TR427",)) == []


def test_tr427_hook_on_a_tensor_made_before_the_loop_is_reported(tmp_path):
    before = "emb = model.embedding.weight"
    root = _write(tmp_path, {"train.py": HOOK.replace("BEFORE", before).replace("HOLDER", "emb")})
    assert [f.line for f in _found(root, ("TR427",))] == [10]


# --- TR511: a 0-dim tensor built from an option the constructor compares with a number (`assert
# args.std_init > 0`, `torch.log(torch.tensor(args.std_init))`) mixes with tensors on any device
# (cf-dense's fixed likelihood scale, judged false); a vector built from a list still needs moving -

SCALE = '''import torch
from torch import nn


class Likelihood(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.conv = nn.Conv2d(8, 3, 3, padding=1)
        assert args.std_init > 0
        self.logscale = VALUE

    def forward(self, h):
        return self.conv(h) * self.logscale
'''


def test_tr511_zero_dim_tensor_of_a_numeric_option_is_silent(tmp_path):
    value = "torch.log(torch.tensor(args.std_init)).float()"
    root = _write(tmp_path, {"lik.py": SCALE.replace("VALUE", value)})
    assert _found(root, ("TR511",)) == []


def test_tr511_vector_built_from_a_list_is_still_reported(tmp_path):
    value = "torch.tensor([args.std_init, args.std_init, args.std_init]).view(1, 3, 1, 1)"
    root = _write(tmp_path, {"lik.py": SCALE.replace("VALUE", value)})
    assert [f.line for f in _found(root, ("TR511",))] == [10]


# --- TR509: `.forward()` on a module compiled in place only under a run setting (`if
# self.cfg.compile: self.module.compile()`, every config passing `compile=False`: doko-rl, judged
# noise) skips the compiled path only when that setting is on: medium, naming the test; a module
# compiled unconditionally stays high -------------------------------------------------------------

AGENT = '''import torch
from torch import nn


class Agent:
    def __init__(self, module: nn.Module, cfg):
        self.module = module
        self.cfg = cfg
        COMPILE

    def act(self, x):
        with torch.no_grad():
            value, policy = self.module.forward(torch.as_tensor(x))
        return value, policy
'''


def _forward(tmp_path, compile_line):
    root = _write(tmp_path, {"agent.py": AGENT.replace("COMPILE", compile_line)})
    return [(f.line, f.confidence) for f in _found(root, ("TR509",))]


def test_tr509_compile_under_a_setting_is_medium(tmp_path):
    assert _forward(tmp_path, "if self.cfg.compile:\n            self.module.compile()") == [(14, "medium")]


def test_tr509_unconditional_compile_stays_high(tmp_path):
    assert _forward(tmp_path, "self.module.compile()") == [(13, "high")]


# --- TR401: a model called for its loss whose own `forward` starts with `self.zero_grad()`
# (tlm-seq2seq's pointer network, imported with `*` from its module; judged false) resets the
# gradients every pass; the same model without that reset is still reported ------------------------

NET = '''import torch
from torch import nn


class PointerNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.dec = nn.Linear(4, 1)

    def forward(self, x, y):
        RESET
        return nn.functional.mse_loss(self.dec(self.enc(x)), y)
'''

LOSS_LOOP = '''import torch
from net import *


def train(batches):
    model = PointerNet()
    enc_optim = torch.optim.Adam(model.enc.parameters())
    dec_optim = torch.optim.Adam(model.dec.parameters())
    for x, y in batches:
        loss = model(x, y)
        loss.backward()
        enc_optim.step()
        dec_optim.step()
'''


def test_tr401_model_whose_forward_resets_gradients_is_silent(tmp_path):
    root = _write(tmp_path, {"net.py": NET.replace("RESET", "self.zero_grad()"), "train.py": LOSS_LOOP})
    assert _found(root, ("TR401",)) == []


def test_tr401_model_without_the_reset_is_reported(tmp_path):
    root = _write(tmp_path, {"net.py": NET.replace("RESET", "pass"), "train.py": LOSS_LOOP})
    assert [f.line for f in _found(root, ("TR401",))] == [9]


# --- reachability: a dependency folder (`third_party/`) of a checkout with no project marker (a
# downloaded archive) belongs to the reviewed folder's project, and a run-time import confined to one package (`import_module("models.VIT." + name)`) reaches
# that package only: an unimported vendored module elsewhere never runs (smlm's copy of DECODE with
# `torch._six`, judged noise) -------------------------------------------------------------------------

RUN = '''import importlib
import sys

import torch

from utility.helpers import load

# vit = importlib.import_module("models." + sys.argv[2])  (an old way, kept in a comment)
vit = importlib.import_module("models.VIT." + sys.argv[1])
net = vit.Net()
print(load(net, torch.zeros(2)))
'''
SIX = "import torch\nfrom torch._six import string_classes\n\n\ndef is_name(x):\n    return isinstance(x, string_classes)\n"


def _six_confidence(tmp_path, extra_import=""):
    files = {"run.py": RUN.replace("from utility.helpers import load", "from utility.helpers import load" + extra_import),
             "utility/__init__.py": "", "utility/helpers.py": "def load(net, x):\n    return net(x)\n",
             "models/__init__.py": "", "models/VIT/__init__.py": "", "models/VIT/vit_small.py": SIX,
             "third_party/decode/__init__.py": "", "third_party/decode/utils/__init__.py": "",
             "third_party/decode/utils/customs.py": SIX}
    root = _write(tmp_path, files)
    return {f.path.split(str(root) + "/")[-1]: f.confidence for f in _found(root, ("TR429",))}


def test_unimported_vendored_module_of_an_unmarked_checkout_is_low(tmp_path):
    assert _six_confidence(tmp_path) == {"models/VIT/vit_small.py": "high", "third_party/decode/utils/customs.py": "low"}


def test_the_same_module_imported_by_the_entry_script_stays_high(tmp_path):
    found = _six_confidence(tmp_path, "\nfrom third_party.decode.utils import customs")
    assert found == {"models/VIT/vit_small.py": "high", "third_party/decode/utils/customs.py": "high"}


# --- TR504: an object put in eval mode that the loop binds afresh on every pass (a new model per
# ablation setting, an adapted copy made by the evaluation helper: dspike's few-shot studies, judged
# false) is not the one the next pass trains; the same model trained on every pass still is --------

ABLATION = '''import copy

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, width), nn.Dropout(0.3), nn.Linear(width, 2))

    def forward(self, x):
        return self.body(x)


def evaluate(model, x):
    HELPER
    with torch.no_grad():
        return scored(x).argmax(1)


def study(widths, x, y):
    model = Net(16)
    for width in widths:
        BUILD
        optimizer = torch.optim.Adam(model.parameters())
        for epoch in range(10):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(width, evaluate(model, x))
'''


def _toggles(tmp_path, build, helper):
    code = ABLATION.replace("BUILD", build).replace("HELPER", helper)
    root = _write(tmp_path, {"study.py": code})
    return [f.line for f in _found(root, ("TR504",))]


def test_tr504_fresh_model_each_pass_or_fresh_copy_in_the_helper_is_silent(tmp_path):
    assert _toggles(tmp_path / "a", "model = Net(width).to('cpu')", "model.eval()\n    scored = model") == []
    assert _toggles(tmp_path / "b", "pass", "scored = copy.deepcopy(model)\n    scored.eval()") == []


def test_tr504_the_same_model_trained_every_pass_is_reported(tmp_path):
    assert _toggles(tmp_path, "model = model.to('cpu')", "model.eval()\n    scored = model") == [33]


# --- TR502: the indices of `max(outputs, 1)` with `max` imported from torch (`from torch import
# max`: aerial-cls's trainers, judged false) carry no graph; `max(outputs)` without a dimension is
# the largest value itself, which does ----------------------------------------------------------

PREDS = '''import torch
from torch import max
from torch import nn

model = nn.Linear(4, 3)


def evaluate(loader):
    for x, y in loader:
        outputs = model(x)
        preds = EXPR
        print(preds.numpy())
'''


def test_tr502_indices_of_an_imported_torch_max_are_silent(tmp_path):
    root = _write(tmp_path, {"ev.py": PREDS.replace("EXPR", "max(outputs, 1)[1]")})
    assert _found(root, ("TR502",)) == []


def test_tr502_value_of_an_imported_torch_max_is_still_reported(tmp_path):
    root = _write(tmp_path, {"ev.py": PREDS.replace("EXPR", "max(outputs, 1)[0]")})
    assert [f.line for f in _found(root, ("TR502",))] == [12]


# --- TR518: a trainer's snapshot load called only in the branch of the run that does not train
# (`if args.only_testing: trainer.load_snapshot(...); trainer.testing()` ... `else:
# trainer.train(n)`: ganpolice, judged false) is no resume; the same load before `train()` is ----------

TRAINER = '''import argparse

import torch
from torch import nn


class Trainer:
    def __init__(self, model, optimizer, path):
        self.model, self.optimizer, self.path = model, optimizer, path
        self.epochs_run = 0

    def save_snapshot(self, epoch):
        torch.save({"MODEL_STATE": self.model.state_dict(), "OPTIMIZER": self.optimizer.state_dict(),
                    "EPOCHS_RUN": epoch}, self.path)

    def load_snapshot(self, path):
        snapshot = torch.load(path, map_location="cpu")
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]

    def train(self, epochs):
        for epoch in range(self.epochs_run, epochs):
            loss = self.model(torch.randn(4, 2)).sum()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.save_snapshot(epoch)

    def testing(self):
        self.model.eval()
        with torch.no_grad():
            return self.model(torch.randn(4, 2))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only_testing", action="store_true")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    model = nn.Linear(2, 1)
    trainer = Trainer(model, torch.optim.Adam(model.parameters()), "snapshot.pt")
    BRANCHES


if __name__ == "__main__":
    main()
'''


def _resumes(tmp_path, branches):
    root = _write(tmp_path, {"train.py": TRAINER.replace("BRANCHES", branches)})
    return [f.line for f in _found(root, ("TR518",))]


def test_tr518_load_only_in_the_branch_that_does_not_train_is_silent(tmp_path):
    branches = ("if args.only_testing:\n        trainer.load_snapshot(trainer.path)\n        trainer.testing()\n"
                "    else:\n        trainer.train(10)")
    assert _resumes(tmp_path, branches) == []


def test_tr518_load_before_training_is_still_a_resume(tmp_path):
    branches = "if args.resume:\n        trainer.load_snapshot(trainer.path)\n    trainer.train(10)"
    assert _resumes(tmp_path, branches) == [17]


# --- TR108: a path pickled by Python 3.13 names its class in `pathlib._local`, which Python 3.11's
# pathlib does not have (fingnn's `config.data_dir` in a checkpoint, judged false as code execution):
# a path class rebuilding a path needs trust (medium), it runs no code ------------------------------

def test_tr108_python_313_path_class_is_a_class(tmp_path):
    from torchreview.artifacts import scan_files
    from torchreview.findings import Severity

    path = tmp_path / "best.dat"
    path.write_bytes(_pickle_calling(b"pathlib._local", b"WindowsPath", b"C:\\data"))
    assert [f.severity for f in scan_files([str(path)]).findings] == [Severity.MEDIUM]
    other = tmp_path / "other.dat"
    other.write_bytes(_pickle_calling(b"pathlib._local", b"system", b"true"))
    assert [f.severity for f in scan_files([str(other)]).findings] == [Severity.CRITICAL]


# --- TR403: a loader rebound to a project wrapper that moves each batch itself
# (`train_dl = WrappedDataLoader(train_dl, to_device, device)`, the class in the project's dataset
# module: renal-vessel-seg, judged false) yields what the wrapper makes; the plain loader (or one
# passed through `itertools.cycle`) still yields CPU batches ----------------------------------------

WRAPPER = '''class WrappedDataLoader:
    def __init__(self, dl, func, dev):
        self.dl, self.func, self.dev = dl, func, dev

    def __len__(self):
        return len(self.dl)

    def __iter__(self):
        for b in self.dl:
            yield self.func(*b, self.dev)


def to_device(x, y, dev):
    return x.to(dev), y.to(dev)
'''

WRAPPED_LOOP = '''import itertools

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from data import WrappedDataLoader, to_device

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
train_dl = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=4)
REBIND
model = nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x_batch, y_batch in train_dl:
    loss = nn.functional.mse_loss(model(x_batch), y_batch)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
'''


def _wrapped(tmp_path, rebind):
    root = _write(tmp_path, {"data.py": WRAPPER, "train.py": WRAPPED_LOOP.replace("REBIND", rebind)})
    return [f.line for f in _found(root, ("TR403",))]


def test_tr403_loader_rebound_to_a_moving_wrapper_is_silent(tmp_path):
    assert _wrapped(tmp_path, "train_dl = WrappedDataLoader(train_dl, to_device, device)") == []


def test_tr403_plain_or_cycled_loader_is_still_reported(tmp_path):
    assert _wrapped(tmp_path / "a", "pass") == [15]
    assert _wrapped(tmp_path / "b", "train_dl = itertools.cycle(train_dl)") == [15]
