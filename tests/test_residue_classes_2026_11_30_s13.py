"""Classes of findings judged false or noise on blind test 29, fixed in the thirteenth session
(2026-11-30), each as a near-miss that must change beside a positive that must stay."""
from __future__ import annotations

import json

from residue_helpers import found as _found, write as _write
from residue_helpers import DROPOUT_NET

from torchreview.engine.runner import Settings, run_review


def _in_file(tmp_path, name: str, text: str, code: str) -> list:
    return _found(_write(tmp_path, {name: text}), (code,))


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                  "source": c.splitlines(keepends=True)} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


# --- TR511: a class that moves its tensors itself, tensors built on the GPU -------------------

LAYER = '''import torch
import torch.nn as nn


class Solver(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.L = torch.eye(n)
        self.h = torch.zeros(n)
        self.fc = nn.Linear(n, n)
{extra}
    def forward(self, x):
        return self.fc(x) @ self.L + self.h


def main():
    model = Solver(3).cuda()
    print(model(torch.ones(3, 3).cuda()))
'''

OVERRIDE = '''
    def cuda(self):
        for t in [self.L, self.h]:
            t.data = t.data.cuda()
        return super().cuda()
'''


def test_tr511_silent_when_the_class_overrides_cuda_to_move_them(tmp_path):
    assert not _in_file(tmp_path, "m.py", LAYER.format(extra=OVERRIDE), "TR511")


def test_tr511_an_override_that_moves_other_attributes_does_not_cover_these(tmp_path):
    other = OVERRIDE.replace("[self.L, self.h]", "[self.fc.weight]")
    found = _in_file(tmp_path, "m.py", LAYER.format(extra=other), "TR511")
    assert {f.line for f in found} == {8, 9}


def test_tr511_without_override_still_reports(tmp_path):
    found = _in_file(tmp_path, "m.py", LAYER.format(extra=""), "TR511")
    assert {f.line for f in found} == {8, 9}


GPU_BUILT = '''import torch
import torch.nn as nn
from torch.autograd import Variable


class Sparse(nn.Module):
    def __init__(self, n):
        super().__init__()
        nx = n * n
        dTensor = torch.cuda.DoubleTensor
        self.Gv = Variable(dTensor(nx).fill_(-1.0))
        self.Qv = Variable(torch.cuda.FloatTensor(nx).fill_(1.0))
        self.Cv = Variable(torch.DoubleTensor(nx).fill_(1.0))

    def forward(self, x):
        return x.expand(2, self.Gv.size(0)) * self.Gv + self.Qv + self.Cv


def main():
    model = Sparse(3).cuda()
    print(model(torch.ones(3).cuda()))
'''


def test_tr511_tensors_built_by_cuda_tensor_types_are_on_the_gpu(tmp_path):
    found = _in_file(tmp_path, "m.py", GPU_BUILT, "TR511")
    # the CUDA types (directly and through a local alias) place their tensors; the CPU type does not
    assert [f.line for f in found] == [13]


# --- TR508: one constructor keeping two layer lists in plain lists is one finding -------------

ONE_LIST = '''class {name}(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.convs = [nn.Conv2d(1, n, k) for k in (3, 4, 5)]

    def forward(self, x):
        for c in self.convs:
            x = c(x)
        return x
'''

TWO_LISTS = '''import torch
import torch.nn as nn


class DeepCNN(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.convs1 = [nn.Conv2d(1, n, k) for k in (3, 4, 5)]
        self.convs2 = [nn.Conv2d(n, n, k) for k in (3, 4, 5)]

    def forward(self, x):
        for c in self.convs1 + self.convs2:
            x = c(x)
        return x


''' + ONE_LIST.format(name="Other") + '''

def main():
    print(DeepCNN(3)(torch.ones(1, 1, 9, 9)), Other(3)(torch.ones(1, 1, 9, 9)))
'''


def test_tr508_folds_one_files_lists(tmp_path):
    # one constructor's two lists, then another class of the same file doing the same: one habit,
    # one comment listing the places
    root = _write(tmp_path, {"m.py": TWO_LISTS})
    findings = run_review([str(root)], Settings(rule_codes=("TR508",), jobs=1, min_confidence="low")).findings
    assert sorted(f.line for f in findings) == [8]
    folded = findings[0]
    assert [p.line for p in folded.parts] == [8, 9, 20]
    assert "same in 2 more places" in folded.message


# --- an unimported module that only seeds the generators at import still does nothing --------

SEEDED = '''import random

import torch
import torch.nn as nn
from utils import seed_num

torch.manual_seed(seed_num)
random.seed(seed_num)


''' + ONE_LIST.format(name="CNN")

PROJECT = {
    "main.py": "from models.model_cnn import CNN\nfrom utils import seed_num\n\nprint(CNN(seed_num))\n",
    "utils.py": "seed_num = 3\n",
    "models/__init__.py": "",
    "models/model_cnn.py": SEEDED,
}


def test_unimported_module_with_only_seeding_calls_is_low(tmp_path):
    files = dict(PROJECT, **{"models/model.py": SEEDED})
    found = _found(_write(tmp_path, files), ("TR508",))
    by_file = {f.path.rsplit("/", 1)[-1]: f for f in found}
    assert by_file["model.py"].confidence == "low"
    assert "nothing in the project imports this module" in by_file["model.py"].message
    assert by_file["model_cnn.py"].confidence == "high"  # the module main.py imports


def test_unimported_module_that_runs_something_else_keeps_its_confidence(tmp_path):
    runs = SEEDED + "\nprint(CNN(3)(torch.ones(1, 1, 9, 9)))\n"
    files = dict(PROJECT, **{"models/model.py": runs})
    found = _found(_write(tmp_path, files), ("TR508",))
    assert {f.path.rsplit("/", 1)[-1]: f.confidence for f in found}["model.py"] == "high"


# --- a notebook's class that no cell uses again --------------------------------------------

STUB = '''import torch
from torch import nn


class Used(nn.Module):
    def __init__(self):
        super(Used)


class Stub(nn.Module):
    def __init__(self, size=128):
        super(Stub)
'''


def test_notebook_stub_no_cell_uses_is_low_and_a_used_one_stays(tmp_path):
    text = _notebook(STUB, "net = Used()\nif not \"N\" in locals():\n    N = 0\n")
    found = {f.message.split("`")[1]: f for f in _in_file(tmp_path, "nb.ipynb", text, "TR510")}
    assert found["Stub.__init__"].confidence == "low"
    assert "nothing in the notebook uses `Stub`" in found["Stub.__init__"].message
    assert found["Used.__init__"].confidence == "high"


def test_notebook_that_looks_names_up_by_computed_string_is_not_judged(tmp_path):
    text = _notebook(STUB, "net = Used()\ncls = globals()[name]\n")
    found = {f.message.split("`")[1]: f for f in _in_file(tmp_path, "nb.ipynb", text, "TR510")}
    assert found["Stub.__init__"].confidence == "high"


def test_notebook_literal_lookup_of_the_stubs_own_name_is_a_use(tmp_path):
    text = _notebook(STUB, "net = Used()\nother = globals()[\"Stub\"]\n")
    found = {f.message.split("`")[1]: f for f in _in_file(tmp_path, "nb.ipynb", text, "TR510")}
    assert found["Stub.__init__"].confidence == "high"


# --- TR511: a notebook's from-scratch layer whose instances never leave the CPU --------------

SCRATCH_CELL = '''import torch
from torch import nn


class BasicRNN(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.mask = torch.triu(torch.ones(n_out, n_out))
        self.b = torch.zeros(1, n_out)

    def forward(self, x):
        return torch.tanh(x @ self.mask + self.b)
'''


def _rnn_findings(tmp_path, *cells):
    found = _in_file(tmp_path, "nb.ipynb", _notebook(SCRATCH_CELL, *cells), "TR511")
    return {f.message.split("`")[1]: f.confidence for f in found}


def test_tr511_notebook_instances_only_run_on_the_cpu_are_medium(tmp_path):
    # the same name later holds another model that does go to the GPU
    got = _rnn_findings(tmp_path, "model = BasicRNN(3, 5)\ny = model(torch.ones(4, 5))\n",
                        "device = torch.device('cuda')\nmodel = nn.RNNCell(3, 5).to(device)\n")
    assert got == {"self.mask": "medium", "self.b": "medium"}


def test_tr511_notebook_instance_moved_to_the_gpu_stays_high(tmp_path):
    got = _rnn_findings(tmp_path, "device = torch.device('cuda')\nmodel = BasicRNN(3, 5)\nmodel.to(device)\n"
                                  "y = model(torch.ones(4, 5).to(device))\n")
    assert got == {"self.mask": "high", "self.b": "high"}


def test_tr511_notebook_instance_trained_keeps_the_weight_finding_high(tmp_path):
    got = _rnn_findings(tmp_path, "model = BasicRNN(3, 5)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                                  "y = model(torch.ones(4, 5))\ndevice = 'cuda'\n")
    assert got["self.b"] == "high"


def test_tr511_notebook_instance_handed_to_a_function_is_not_followed(tmp_path):
    got = _rnn_findings(tmp_path, "model = BasicRNN(3, 5)\nrun(model)\ndevice = 'cuda'\n")
    assert got == {"self.mask": "high", "self.b": "high"}


# --- TR430: NumPy functions of bounds and counts carry no gradient ---------------------------

COUNTS = '''from typing import Dict

import numpy as np
import torch
from torch import nn


class Select(nn.Module):
    def forward(self, x: Dict[str, torch.Tensor]):
        total = x["total_samples"]
        samples = np.arange(0, total, 2)
        grid = np.linspace(0, total, 5)
        scale = np.sqrt(x["rays"])
        return x["rays"][:, samples] * torch.from_numpy(grid) * torch.from_numpy(scale)
'''


def test_tr430_bounds_and_counts_are_silent_and_data_still_reports(tmp_path):
    found = _in_file(tmp_path, "m.py", COUNTS, "TR430")
    assert [f.line for f in found] == [13]


HOST_INDICES = '''import numpy as np
import torch
from torch import nn


class GCN(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, features, index):
        out = self.fc(features)
        rest = np.setdiff1d(torch.arange(features.shape[0]), [0, 1])
        moved = np.setdiff1d(torch.arange(features.shape[0], device=features.device), [0, 1])
        return out[rest], out[moved], np.asarray(self.fc(features))
'''


def test_tr430_host_index_tensors_are_silent_placed_or_data_ones_report(tmp_path):
    found = _in_file(tmp_path, "m.py", HOST_INDICES, "TR430")
    assert [f.line for f in found] == [14, 15]


# --- code nothing uses: an import left behind, a class naming itself in super() --------------

PROJECTOR = '''import torch
from torch import nn


class AutoLayer(nn.Module):
    def __init__(self, dims):
        super(AutoLayer, self).__init__()
        self.encoders = [nn.Linear(d, d) for d in dims]

    def forward(self, x):
        for e in self.encoders:
            x = e(x)
        return x


class Used(nn.Module):
    def __init__(self, dims):
        super(Used, self).__init__()
        self.encoders = [nn.Linear(d, d) for d in dims]

    def forward(self, x):
        for e in self.encoders:
            x = e(x)
        return x
'''


def _projector_confidences(tmp_path, init_tool: str, extra: dict | None = None) -> dict:
    files = {"tools/__init__.py": "", "tools/projector.py": PROJECTOR, "tools/init_tool.py": init_tool,
             "train.py": "from tools.init_tool import build\n\nbuild()\n", **(extra or {})}
    found = _found(_write(tmp_path, files), ("TR508",))
    return {f.line: f.confidence for f in found}


def test_class_whose_only_import_is_left_unused_is_low(tmp_path):
    init_tool = ("from tools.projector import AutoLayer, Used\n\n\ndef build():\n"
                 "    #model = AutoLayer([3, 3])\n    return Used([3, 3])\n")
    assert _projector_confidences(tmp_path, init_tool) == {8: "low", 19: "high"}


def test_class_imported_under_another_name_and_used_stays(tmp_path):
    init_tool = ("from tools.projector import AutoLayer as Auto, Used\n\n\ndef build():\n"
                 "    return Auto([3, 3]), Used([3, 3])\n")
    assert _projector_confidences(tmp_path, init_tool) == {8: "high", 19: "high"}


def test_class_reexported_by_a_package_init_stays(tmp_path):
    init_tool = "from tools.projector import Used\n\n\ndef build():\n    return Used([3, 3])\n"
    extra = {"tools/__init__.py": "from tools.projector import AutoLayer\n"}
    assert _projector_confidences(tmp_path, init_tool, extra) == {8: "high", 19: "high"}


# --- a method of a plain nn.Module subclass that nothing names never runs --------------------

CELL = '''import torch
from torch import nn


class Cell({base}):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)
        self.n = n

    def initial_state(self, trainable=False):
        if trainable:
            self.h0 = torch.zeros(self.n, requires_grad=True)
        return torch.zeros(self.n)

    def forward(self, x):
        return self.fc(x)
'''


def _cell_confidence(tmp_path, train: str, base: str = "nn.Module") -> str:
    text = CELL.format(base=base)
    if base != "nn.Module":
        text = "import lightning as L\n" + text
    found = _found(_write(tmp_path, {"cell.py": text, "train.py": train}), ("TR511",))
    return next(f.confidence for f in found)


def test_method_nothing_names_is_low(tmp_path):
    train = "from cell import Cell\n\ninitial_state = None\nprint(Cell(3)(initial_state))\n"
    assert _cell_confidence(tmp_path, train) == "low"


def test_method_called_through_an_attribute_elsewhere_stays(tmp_path):
    train = "from cell import Cell\n\nc = Cell(3)\nprint(c(c.initial_state(True)))\n"
    assert _cell_confidence(tmp_path, train) == "high"


def test_method_of_a_framework_subclass_is_not_judged(tmp_path):
    train = "from cell import Cell\n\nprint(Cell(3))\n"
    assert _cell_confidence(tmp_path, train, base="L.LightningModule") == "high"


# --- TR517: a load in a branch that tests whether the model is wrapped ----------------------

SOLVER = '''import torch
from torch import nn


class Solver:
    def __init__(self):
        self.net = nn.DataParallel(nn.Linear(2, 2))
        self.other = nn.DataParallel(nn.Linear(2, 2))

    def save(self, path):
        torch.save(self.net.module.state_dict(), path + "/model.pkl")

    def load(self, path):
        state = torch.load(path + "/model.pkl")
        {load}
'''


def test_tr517_silent_when_the_load_tests_the_wrap_itself(tmp_path):
    guarded = ("self.net.load_state_dict(state) if hasattr(self.net, 'module') == False "
               "else self.net.module.load_state_dict(state)")
    assert not _in_file(tmp_path, "solver.py", SOLVER.format(load=guarded), "TR517")


def test_tr517_a_test_of_another_model_does_not_cover_this_load(tmp_path):
    other = ("self.net.load_state_dict(state) if hasattr(self.other, 'module') == False "
             "else self.other.module.load_state_dict(state)")
    assert [f.line for f in _in_file(tmp_path, "solver.py", SOLVER.format(load=other), "TR517")] == [15]


def test_tr517_unguarded_load_into_the_wrapped_model_reports(tmp_path):
    found = _in_file(tmp_path, "solver.py", SOLVER.format(load="self.net.load_state_dict(state)"), "TR517")
    assert [f.line for f in found] == [15]


# --- TR519: a test-named split rebound to the validation part under a flag -----------------

SESSREC = """import pickle

import numpy as np
import torch


def split_validation(train_set, valid_portion):
    n = int(len(train_set) * (1 - valid_portion))
    return train_set[:n], train_set[n:]


class Args:
    validation = True
    valid_portion = 0.1


def train_test(model, optimizer, train_data, test_data):
    model.train()
    for x, y in train_data:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    model.eval()
    hit = []
    for x, y in test_data:
        hit.append((model(x).argmax(1) == y).float().mean().item())
    return np.mean(hit)


args = Args()
train_data = pickle.load(open("train.txt", "rb"))
test_data = pickle.load(open("test.txt", "rb"))
if args.validation:
    train_data, valid_data = split_validation(train_data, args.valid_portion)
    test_data = valid_data
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
best = 0
for epoch in range(10):
    hit = train_test(model, optimizer, train_data, test_data)
    if hit > best:
        best = hit
        torch.save(model.state_dict(), "best.pt")
"""


def test_tr519_test_name_rebound_to_validation_is_not_the_test_split(tmp_path):
    assert not _in_file(tmp_path, "train.py", SESSREC, "TR519")


def test_tr519_test_data_never_rebound_still_reports(tmp_path):
    text = SESSREC.replace("    test_data = valid_data\n", "    print(len(valid_data))\n")
    assert [f.line for f in _in_file(tmp_path, "train.py", text, "TR519")] == [42]


def test_tr519_rebound_to_another_test_name_still_reports(tmp_path):
    text = SESSREC.replace("    test_data = valid_data\n", "    test_data = test_data_full\n")
    text = text.replace("args = Args()\n", "args = Args()\ntest_data_full = pickle.load(open(\"test_full.txt\", \"rb\"))\n")
    assert [f.line for f in _in_file(tmp_path, "train.py", text, "TR519")] == [43]


# --- TR518: a tester that restores the weights it evaluates resumes nothing -----------------

TRAINER = '''import torch
from torch import nn


def train(model, loader, path, resume=None):
    optimizer = torch.optim.Adam(model.parameters())
    start = 0
    if resume:
        ckpt = torch.load(resume)
        model.load_state_dict(ckpt["state_dict"])
        optimizer.load_state_dict(ckpt["optimizer"])
        start = ckpt["epoch"] + 1
    for epoch in range(start, 10):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        torch.save({"state_dict": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)
'''

TESTER = '''import torch


class Tester:
    def __init__(self, model, checkpoint):
        self.G = model
        self.restore_model(checkpoint)

    def restore_model(self, resume_checkpoint):
        checkpoint = torch.load(resume_checkpoint)
        self.G.load_state_dict(checkpoint["state_dict"])

    def test(self, loader):
        self.G = self.G.eval()
        with torch.no_grad():
            return [self.G(x) for x in loader]
'''


def test_tr518_a_tester_restoring_weights_it_evaluates_is_silent(tmp_path):
    root = _write(tmp_path, {"trainer.py": TRAINER, "tester.py": TESTER})
    assert not _found(root, ("TR518",))


def test_tr518_the_same_restore_in_a_file_that_trains_reports(tmp_path):
    trains = TESTER + '''

    def finetune(self, loader):
        optimizer = torch.optim.SGD(self.G.parameters(), lr=0.1)
        self.G.train()
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(self.G(x), y).backward()
            optimizer.step()
'''
    root = _write(tmp_path, {"trainer.py": TRAINER, "tester.py": trains})
    assert [(f.path.rsplit("/", 1)[-1], f.line) for f in _found(root, ("TR518",))] == [("tester.py", 10)]


# --- TR207: a pipeline built by its own classmethod from a loader that returns eval mode -----


PIPELINE = '''import torch
from torch import nn
from transformers import AutoModel


''' + DROPOUT_NET + '''

class Pipeline:
    def __init__(self, model):
        self.model = model

    def predict(self, x):
        with torch.no_grad():
            return self.model(x)

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        model = {built}
        return cls(model=model)
'''


def test_tr207_classmethod_construction_from_an_eval_loader_is_silent(tmp_path):
    text = PIPELINE.format(built="AutoModel.from_pretrained(*args, **kwargs)")
    assert not _in_file(tmp_path, "pipe.py", text, "TR207")


def test_tr207_classmethod_construction_of_a_fresh_model_reports(tmp_path):
    found = _in_file(tmp_path, "pipe.py", PIPELINE.format(built="Net()"), "TR207")
    assert [f.line for f in found] == [22]


# --- TR511: a slice of the table copied into a tensor the forward builds ---------------------

SINUSOID = '''import torch
from torch import nn


class Sinusoid(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.d = d
        self.emb = torch.zeros(n, d)
        self.table = torch.ones(n, d)

    def forward(self, src):
        b, s = src.size()
        out = torch.zeros(b, s, self.d)
        for i in range(b):
            out[i, :s, :] = self.emb[2: s + 2]
        return out.to(src.device) + self.table[:s]
'''


def test_tr511_a_slice_copied_by_indexed_assignment_is_silent_arithmetic_reports(tmp_path):
    found = _in_file(tmp_path, "emb.py", SINUSOID, "TR511")
    assert [f.line for f in found] == [10]


# --- blind test 33: host-side sinc filters, a prose password, a README's pytorch-1.2.0 -------

SINC = '''import numpy as np
import torch
from torch import nn


class SincConv(nn.Module):
    def __init__(self, k, sr):
        super().__init__()
        self.sr = sr
        self.hsupp = torch.arange(-(k - 1) / 2, (k - 1) / 2 + 1)
        self.window = torch.linspace(0, 1, k)
        self.band = torch.zeros(4, k)
        self.conv = nn.Conv1d(1, 4, k)

    def forward(self, x):
        for i in range(4):
            self.band[i, :] = torch.Tensor(np.sinc(2 * i * self.hsupp / self.sr))
        return torch.cat([self.conv(x).flatten(), self.window]) + self.band.to(x.device).sum()
'''


def test_tr511_attribute_only_handed_to_numpy_is_silent_others_report(tmp_path):
    found = _in_file(tmp_path, "sinc.py", SINC, "TR511")
    assert sorted(f.line for f in found) == [11]


def test_tr430_numpy_on_a_host_constant_attribute_is_silent(tmp_path):
    assert not _in_file(tmp_path, "sinc.py", SINC, "TR430")
    data = SINC.replace("np.sinc(2 * i * self.hsupp / self.sr)", "np.sinc(self.conv.weight[i, 0])")
    assert [f.line for f in _in_file(tmp_path / "data", "sinc.py", data, "TR430")] == [17]


PASSWORD = '''params = {{
    "User": "{user}",
    "Password": "{password}",
}}
'''


def test_tr107_a_prompt_in_a_password_field_is_no_secret(tmp_path):
    prompt = PASSWORD.format(user="填入你的用户名", password="填入你的密码。请注意，密码会明文保存")
    sentence = PASSWORD.format(user="admin", password="Enter your password here")
    real = PASSWORD.format(user="admin", password="Xk9#mQ2vLp7!")
    assert not _in_file(tmp_path / "a", "settings.py", prompt, "TR107")
    assert not _in_file(tmp_path / "b", "settings.py", sentence, "TR107")
    assert [f.line for f in _in_file(tmp_path / "c", "settings.py", real, "TR107")] == [3]


def test_readme_naming_pytorch_with_a_hyphen_sets_the_target(tmp_path):
    from torchreview.config import _readme_pin

    (tmp_path / "README.md").write_text("A docker image containing pytorch-1.2.0 with CUDA 10.1.\n"
                                        "Needs pytorch-lightning and pytorch-cuda=11.8.\n")
    assert _readme_pin(str(tmp_path), {"README.md"}) == (1, 2)
    (tmp_path / "README.md").write_text("Needs pytorch-lightning and pytorch-cuda=11.8.\n")
    assert _readme_pin(str(tmp_path), {"README.md"}) is None


def test_reachability_an_unused_import_importlib_is_no_dynamic_import(tmp_path):
    from torchreview.engine.reachability import reached_modules

    files = {"main.py": "from lib.startup import seed\n\nseed()\n",
             "lib/__init__.py": "", "lib/startup.py": "import importlib\n\n\ndef seed():\n    pass\n",
             "lib/vendored.py": "from torch._six import inf\n"}
    root = _write(tmp_path, files)
    reached = reached_modules(str(root))
    assert reached is not None and str(root / "lib" / "vendored.py") not in reached
    (root / "lib" / "startup.py").write_text("import importlib\n\n\ndef seed(name):\n"
                                             "    return importlib.import_module(name)\n")
    assert reached_modules(str(root)) is None


# --- blind test 34: an ensemble list switched to eval by index; a Python 2 branch ----------

ENSEMBLE = """import torch
from torch import nn


""" + DROPOUT_NET + """

def main(loader):
    model2 = Net()
    model2.load_state_dict(torch.load("m.pth"))
    models = [model2]
    for i in range(len(models)):
        models[i] = models[i].cuda()
        models[i].eval()
    with torch.no_grad():
        for x in loader:
            print(model2(x.cuda()))


if __name__ == "__main__":
    main([])
"""


def test_tr207_models_switched_through_their_list_are_in_eval(tmp_path):
    assert not _in_file(tmp_path, "run.py", ENSEMBLE, "TR207")


def test_tr207_models_switched_to_train_through_their_list_still_report(tmp_path):
    text = ENSEMBLE.replace("        models[i].eval()\n", "        models[i].train()\n")
    assert [f.line for f in _in_file(tmp_path, "run.py", text, "TR207")] == [24]


PY2 = """import sys

from torchvision import transforms

if sys.version_info > (3, 0):
    test_transform = transforms.Compose([transforms.Resize(224), transforms.ToTensor()])
else:
    test_transform = transforms.Compose([transforms.Scale(224), transforms.ToTensor()])
if sys.version_info[0] == 2:
    other = transforms.Scale(224)
if sys.version_info >= (3, 8):
    newer = transforms.Scale(224)
"""


def test_findings_in_a_branch_only_python_2_takes_are_dropped(tmp_path):
    found = _in_file(tmp_path, "evaluate.py", PY2, "TR425")
    assert sorted(p.line for p in found) == [12]  # a minor-version test is no Python 2 branch


AMP_CLIP = '''import torch
from torch import nn


def train(model, loader, opt):
    scaler = torch.cuda.amp.GradScaler()
    for x, y in loader:
        opt.zero_grad()
        with torch.autocast("cuda"):
            loss = nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
{order}
        scaler.update()


model = nn.Linear(2, 2).cuda()
train(model, [], torch.optim.SGD(model.parameters(), lr=0.1))
'''


def test_tr416_clip_after_the_scalers_step_is_not_a_scaled_clip(tmp_path):
    after = ("        scaler.step(opt)\n"
             "        nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)")
    before = ("        nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)\n"
              "        scaler.step(opt)")
    assert not _in_file(tmp_path, "train.py", AMP_CLIP.format(order=after), "TR416")
    (tmp_path / "train.py").write_text(AMP_CLIP.format(order=before))
    assert [f.line for f in _found(tmp_path, ("TR416",))] == [12]


# --- TR517: `model = model.train()` returns the same wrapped module ------------------------

REBOUND = '''import torch
from torch import nn


def main(path, loader, step):
    model = nn.DataParallel(nn.Linear(2, 2)).to("cuda")
    optimizer = torch.optim.Adam(model.parameters())
    checkpoint = torch.load(path + "/checkpoint_%d.pth.tar" % step)
    model.load_state_dict(checkpoint["model"])
    {rebind}
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        torch.save({{"model": model.state_dict()}}, path + "/checkpoint_%d.pth.tar" % step)
'''


def test_tr517_a_rebinding_through_train_keeps_the_wrap(tmp_path):
    assert not _in_file(tmp_path, "train.py", REBOUND.format(rebind="model = model.train()"), "TR517")


def test_tr517_a_fresh_model_rebound_before_the_save_still_reports(tmp_path):
    found = _in_file(tmp_path, "train.py", REBOUND.format(rebind="model = nn.Linear(2, 2)"), "TR517")
    assert [f.line for f in found] == [9]


# --- TR426: one worker replays the same draws each epoch; it does not share them ------------

RNG_DATASET = '''import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Points(Dataset):
    def __init__(self, n):
        self.n = n
        self.rng = np.random.RandomState(0)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.from_numpy(self.rng.rand(3))


torch.manual_seed(0)
loader = DataLoader(Points(100), batch_size=4, shuffle=True, {workers})
'''


def _rng_findings(tmp_path, workers):
    return [(f.confidence, "replays" in f.message)
            for f in _in_file(tmp_path, "data.py", RNG_DATASET.format(workers=workers), "TR426")
            if "self.rng" in f.message]


def test_tr426_one_worker_is_the_epoch_replay_at_medium(tmp_path):
    assert _rng_findings(tmp_path, "num_workers=1") == [("medium", True)]


def test_tr426_several_workers_share_the_draws_at_high(tmp_path):
    assert _rng_findings(tmp_path, "num_workers=2") == [("high", False)]


def test_tr426_one_persistent_worker_is_not_the_replay_message(tmp_path):
    assert _rng_findings(tmp_path, "num_workers=1, persistent_workers=True") == [("high", False)]


# --- TR104: `super().from_pretrained(..., trust_remote_code=True)` in a concrete subclass ------

SCORED = '''from transformers import AutoModel, LlamaPreTrainedModel


class RewardModel(LlamaPreTrainedModel):
    @classmethod
    def from_pretrained(cls, name, *args, **kwargs):
        return super().from_pretrained(name, trust_remote_code=True)


def load_encoder():
    return AutoModel.from_pretrained("some-org/custom-encoder", trust_remote_code=True)
'''


def test_tr104_super_from_pretrained_in_a_concrete_subclass_is_silent(tmp_path):
    assert [f.line for f in _in_file(tmp_path, "qrm.py", SCORED, "TR104")] == [11]
