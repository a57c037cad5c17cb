"""Classes of findings judged noise/false on the fourth development sweep of
2026-11-28 (mae, accelerate, RVC, gpytorch, pytorch-tutorial, x-transformers...),
each as a near-miss that must stay silent beside a positive that must stay."""
from __future__ import annotations

from pathlib import Path

from projects import package as _package
from torchreview.engine.runner import Settings, run_review


GATE = '''import torch
from infer.stft import STFT


class Gate(torch.nn.Module):
    def __init__(self, n_fft, hop=None):
        super().__init__()
        self.n_fft = n_fft
        self.hop = self.n_fft // 4 if hop is None else hop
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, x):
        if x.is_cuda:
            if not hasattr(self, "stft"):
                self.stft = STFT(self.n_fft, self.hop).to(x.device)
            return self.stft(x)
        return x * self.window.sum()
'''

STFT = '''import torch


class STFT(torch.nn.Module):
    def __init__(self, length=1024, hop=512, win=None):
        super().__init__()
        self.length = length
        self.hop = hop
        self.win = win if win else length
        self.register_buffer("basis", torch.eye(self.length))

    def transform(self, x):
        return x @ self.basis, x

    def forward(self, x):
        self.magnitude, self.phase = self.transform(x)
        return self.magnitude
'''

APP = '''import torch
from tools.gate import Gate


class App:
    def start(self, device):
        self.gate = Gate(n_fft=16).to(device)

    def step(self, wav):
        out = self.gate(wav.unsqueeze(0)).squeeze(0)
        return out.cpu().numpy()
'''


def _project(tmp_path: Path, gate: str = GATE) -> Path:
    """A downloaded archive: no `.git`, no setup file; `tools/` is a namespace folder."""
    (tmp_path / "tools" / "gate").mkdir(parents=True)
    (tmp_path / "tools" / "gate" / "__init__.py").write_text("from .gate import Gate\n")
    (tmp_path / "tools" / "gate" / "gate.py").write_text(gate)
    (tmp_path / "infer").mkdir()
    (tmp_path / "infer" / "stft.py").write_text(STFT)
    (tmp_path / "app.py").write_text(APP)
    return tmp_path


def test_a_buffer_only_module_moved_with_to_carries_no_graph(tmp_path):
    """RVC realtime_gui.py: `self.tg = TorchGate(...).to(device)`, a module of buffers only
    (a conditional hop length, a lazily built STFT of another folder, outputs unpacked into
    attributes in its forward): its output on a plain input needs no `.detach()`."""
    root = _project(tmp_path)
    assert run_review([str(root)], Settings(rule_codes=("TR502",), jobs=1)).findings == []


def test_a_module_with_a_layer_still_needs_detach(tmp_path):
    gate = GATE.replace('self.register_buffer("window", torch.hann_window(n_fft))',
                        'self.proj = torch.nn.Linear(n_fft, n_fft)')
    root = _project(tmp_path, gate)
    found = run_review([str(root)], Settings(rule_codes=("TR502",), jobs=1)).findings
    assert [(Path(f.path).name, f.line) for f in found] == [("app.py", 11)]


def test_a_lazily_built_module_with_parameters_still_counts(tmp_path):
    stft = STFT.replace('self.register_buffer("basis", torch.eye(self.length))',
                        'self.basis = torch.nn.Parameter(torch.eye(self.length))')
    root = _project(tmp_path)
    (root / "infer" / "stft.py").write_text(stft)
    found = run_review([str(root)], Settings(rule_codes=("TR502",), jobs=1)).findings
    assert [(Path(f.path).name, f.line) for f in found] == [("app.py", 11)]


LESSON = '''import torch
import torchvision

loader = torch.utils.data.DataLoader(torchvision.datasets.FakeData(), batch_size=4)
ITERATION
resnet = torchvision.models.resnet18()
torch.save(resnet, "model.ckpt")
model = torch.load("model.ckpt")
'''


def test_a_lesson_written_for_python2_iteration_is_not_told_about_torch_2_6(tmp_path):
    """yunjey/pytorch-tutorial: whole-model save/load demonstrated in a lesson that also
    calls `data_iter.next()` (torch 1.12 and earlier): TR520 judged noise, the script stops
    at `.next()` on a current torch before the load; with `next(data_iter)` it stays."""
    old = tmp_path / "old"
    old.mkdir()
    (old / "main.py").write_text(LESSON.replace("ITERATION", "images, labels = iter(loader).next()"))
    new = tmp_path / "new"
    new.mkdir()
    (new / "main.py").write_text(LESSON.replace("ITERATION", "images, labels = next(iter(loader))"))
    settings = Settings(rule_codes=("TR520",), jobs=1)
    assert run_review([str(old)], settings).findings == []
    assert [f.line for f in run_review([str(new)], settings).findings] == [8]


def test_one_finding_for_the_parameters_of_one_module_copied_without_no_grad(tmp_path):
    """accelerate transformer_engine.py: `new.weight.copy_(..)` and `new.bias.copy_(..)` in
    one function are one missing `no_grad()` (two findings, one judged a repeat); a second
    function of the file making the same mistake (the same message) is a further related
    place of that one comment (engine/merge.py)."""
    (tmp_path / "convert.py").write_text('''import torch.nn as nn


def convert(module):
    new = nn.Linear(module.in_features, module.out_features)
    new.weight.copy_(module.weight)
    if module.bias is not None:
        new.bias.copy_(module.bias)
    return new


def convert_norm(module):
    new = nn.LayerNorm(module.normalized_shape)
    new.weight.copy_(module.weight)
    return new


convert(nn.Linear(2, 2))
convert_norm(nn.LayerNorm(2))
''')
    found = run_review([str(tmp_path)], Settings(rule_codes=("TR501",), jobs=1)).findings
    assert [(f.line, [r.line for r in f.related]) for f in found] == [(6, [8, 14])]


def test_a_test_reading_back_its_checkpoint_is_not_held_to_the_library_practice(tmp_path):
    """composer: the library loads weights-only (composer/checkpoint/load.py), its tests read
    back the checkpoints they just wrote with `weights_only=False` (14 high findings judged
    noise); a script of the same project opting out stays high."""
    _package(tmp_path)
    (tmp_path / "pkg" / "load.py").write_text(
        "import torch\n\n\ndef load(path):\n    return torch.load(path, weights_only=True)\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_save.py").write_text(
        "import torch\n\n\ndef test_roundtrip(tmp_path):\n    torch.save({'a': 1}, tmp_path / 'c.pt')\n"
        "    state = torch.load(tmp_path / 'c.pt', weights_only=False)\n    assert state['a'] == 1\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "export.py").write_text(
        "import sys\nimport torch\n\nstate = torch.load(sys.argv[1], weights_only=False)\n")
    shown = run_review([str(tmp_path)], Settings(rule_codes=("TR101", "TR102"), jobs=1,
                                                 min_confidence="high")).findings
    assert [(Path(f.path).name, f.line) for f in shown] == [("export.py", 4)]


SAMPLER_SCRIPT = '''import torch
from torch.utils.data import DataLoader, DistributedSampler


def train(model, dataset, epochs):
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, sampler=sampler, batch_size=8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
'''


def test_set_epoch_in_a_benchmark_is_medium(tmp_path):
    """fairscale benchmarks/oss.py: a throughput benchmark without `set_epoch` (judged noise:
    the order does not change what it measures); the same loop in a training script stays."""
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "oss.py").write_text(SAMPLER_SCRIPT)
    (tmp_path / "train.py").write_text(SAMPLER_SCRIPT)
    found = run_review([str(tmp_path)], Settings(rule_codes=("TR513",), jobs=1)).findings
    assert sorted((Path(f.path).parent.name, f.line, f.confidence) for f in found) == [
        ("benchmarks", 6, "medium"), (tmp_path.name, 6, "high")]


SAMPLING = '''import torch
import somelib
from torch import nn


class MaxPosteriorSampling(nn.Module):
    def __init__(self, model, replacement=True):
        super().__init__()
        self.model = model
        self.replacement = replacement

    def forward(self, X):
        return self.model.posterior(X).rsample()


def step(train_x, train_y, candidates):
    gp = somelib.SingleTaskGP(train_x, train_y)
    sampler = MaxPosteriorSampling(model=gp, replacement=False)
    with torch.no_grad():
        return sampler(candidates)
'''


def test_a_module_of_unknown_content_is_not_shown_by_default(tmp_path):
    """botorch tutorials: a sampling module wrapping a model of a library the tables do not
    know (a GP, no dropout or BatchNorm) called under no_grad (3 TR207 judged false): its
    content is unknown, not "has dropout", so it is never a high finding; with a BatchNorm
    inside, it is."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "tutorial.py").write_text(SAMPLING)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "tutorial.py").write_text(SAMPLING.replace(
        "self.replacement = replacement", "self.replacement = replacement\n        self.norm = nn.BatchNorm1d(4)").replace(
        "return self.model.posterior(X).rsample()", "return self.norm(self.model.posterior(X).rsample())"))
    got = {}
    for sub in ("a", "b"):
        found = run_review([str(tmp_path / sub)], Settings(rule_codes=("TR207",), jobs=1,
                                                           min_confidence="low")).findings
        got[sub] = [(f.line, f.confidence) for f in found]
    assert "high" not in {c for _, c in got["a"]}
    assert got["b"] == [(21, "high")]


LESSON_MODULE = '''import torch
from torch import nn
from torch.nn import functional as F


class FixedHiddenMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.rand_weight = torch.rand((20, 20))
        self.linear = nn.Linear(20, 20)

    def forward(self, X):
        return F.relu(self.linear(X) @ self.rand_weight + 1)


net = FixedHiddenMLP()
net(torch.rand(2, 20))
'''


def test_a_constant_attribute_in_a_script_that_never_moves_a_module_is_medium(tmp_path):
    """d2l model-construction notebook: a constant tensor attribute in a lesson that never
    moves anything to a device (judged noise: it runs where it is built); the same class in a
    script that moves the net to CUDA stays high."""
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "lesson.py").write_text(LESSON_MODULE)
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "lesson.py").write_text(LESSON_MODULE.replace(
        "net = FixedHiddenMLP()", "net = FixedHiddenMLP().cuda()").replace("torch.rand(2, 20))", "torch.rand(2, 20).cuda())"))
    got = {}
    for sub in ("cpu", "gpu"):
        found = run_review([str(tmp_path / sub)], Settings(rule_codes=("TR511",), jobs=1,
                                                           min_confidence="low")).findings
        got[sub] = [(f.line, f.confidence) for f in found]
    assert got == {"cpu": [(9, "medium")], "gpu": [(9, "high")]}


HUBCONF = '''import torch

dependencies = ["torch"]


def backbone_xcit(pretrained=True):
    return torch.hub.load("acme/xcit", "xcit_small")


def backbone_other(pretrained=True):
    return torch.hub.load("someone/xcit", "xcit_small")
'''


def _hub_project(root: Path) -> Path:
    root.mkdir()
    (root / "hubconf.py").write_text(HUBCONF)
    return root


def test_a_hub_repo_of_the_projects_own_owner_is_medium(tmp_path):
    """dino hubconf.py: `torch.hub.load("facebookresearch/xcit", ...)` from facebookresearch's own
    repository (judged noise: it trusts no one new); a repository of another owner stays high.
    The project says who it is in its README's hub examples, or in its `origin` remote."""
    readme = _hub_project(tmp_path / "vision")
    (readme / "README.md").write_text("model = torch.hub.load('acme/vision:main', 'vits16')\n")
    remote = _hub_project(tmp_path / "clone")
    (remote / ".git").mkdir()
    (remote / ".git" / "config").write_text('[core]\n\tbare = false\n[remote "origin"]\n'
                                            '\turl = git@github.com:acme/vision.git\n')
    for root in (readme, remote):
        found = run_review([str(root)], Settings(rule_codes=("TR104",), jobs=1, min_confidence="low")).findings
        assert sorted((f.line, f.confidence) for f in found) == [(7, "medium"), (11, "high")], root


LOADER = '''import os
import torch
from benchlib import data_path


def load_init_states(model, task):
    # COMMENT
    path = os.path.join(data_path("init_states"), task)
    model.load_state_dict(torch.load(path, weights_only=False))
'''


def test_an_explained_opt_out_is_a_documented_decision(tmp_path):
    """torchrl libero.py: `weights_only=False` on another package's own data files, with a
    comment saying why (judged noise); the same load with an unrelated comment stays high."""
    for name, comment in (("explained", "these shipped, trusted pickled arrays are rejected by weights-only loads"),
                          ("unexplained", "build the path of the task's file")):
        root = tmp_path / name
        _package(root)
        (root / "pkg" / "envs.py").write_text(LOADER.replace("COMMENT", comment))
    got = {}
    for name in ("explained", "unexplained"):
        found = run_review([str(tmp_path / name)], Settings(rule_codes=("TR101", "TR102"), jobs=1,
                                                            min_confidence="low")).findings
        got[name] = [(f.code, f.line, f.confidence) for f in found]
    assert got == {"explained": [("TR102", 9, "medium")], "unexplained": [("TR102", 9, "high")]}


GAN = '''import torch
from torch import nn

generator = nn.Sequential(nn.ConvTranspose2d(100, 64, 3), nn.BatchNorm2d(64), nn.ReLU(),
                          nn.ConvTranspose2d(64, 1, 3), nn.Sigmoid())
optim = torch.optim.Adam(generator.parameters(), 2e-4)
for epoch in range(10):
    for x, _ in loader:
        optim.zero_grad()
        fake = generator(torch.randn(x.size(0), 100, 1, 1))
        loss = (fake - x).pow(2).mean()
        loss.backward()
        optim.step()
    with torch.no_grad():
        PREVIEW
'''


def test_a_preview_sample_between_epochs_is_part_of_training(tmp_path):
    """DTU deep-learning course GAN notebook: an 8x8 grid sampled from the generator each epoch
    under no_grad (judged noise: sampling a GAN in train mode mid-training is the norm); a
    validation pass over a loader at the same place stays reported."""
    (tmp_path / "preview").mkdir()
    (tmp_path / "preview" / "gan.py").write_text(GAN.replace("PREVIEW", "grid = generator(torch.randn(64, 100, 1, 1))"))
    (tmp_path / "val").mkdir()
    (tmp_path / "val" / "gan.py").write_text(GAN.replace(
        "PREVIEW", "for x, _ in val_loader:\n            err = (generator(torch.randn(x.size(0), 100, 1, 1)) - x).abs().mean()"))
    settings = Settings(rule_codes=("TR207",), jobs=1, min_confidence="low")
    assert run_review([str(tmp_path / "preview")], settings).findings == []
    assert [f.line for f in run_review([str(tmp_path / "val")], settings).findings] == [16]


def test_a_readme_naming_an_old_exact_torch_sets_the_target(tmp_path):
    """PyTorch-FastCampus (`- Pytorch 0.3.1` in the README) and jukebox (`conda install
    pytorch=1.4 ...`): deprecation and removed-API findings against torch 2.x judged noise on
    code documented for torch 0.3/1.4; a README naming only a floor or a torch of today (2.6 and
    later) sets nothing."""
    from torchreview.config import _readme_pin

    cases = {
        "course": ("# Course\n- Pytorch 0.3.1 (http://pytorch.org/)\n", (0, 3)),
        "conda": ("conda install pytorch=1.1 torchvision=0.3\nconda install pytorch=1.4 torchvision=0.5\n", (1, 4)),
        "floor": ("Requires PyTorch 1.8.1+ (PyTorch >= 1.8 works)\n", None),
        # an exact torch 2.x before 2.6 (where `torch.load` became weights-only) caps the target too
        # (LaBraM's `conda install pytorch==2.0.1`, TR520 judged noise in blind test 31)
        "torch2": ("Tested with PyTorch 2.1 and pip install torch==2.1.0\n", (2, 1)),
        "modern": ("pip install torch==2.7.0\n", None),
    }
    for name, (text, expected) in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "README.md").write_text(text)
        assert _readme_pin(str(folder), {"README.md"}) == expected, name
    code = "import torch\nfrom torch._six import inf\n"
    for name in ("course", "floor"):
        (tmp_path / name / "utils.py").write_text(code)
    settings = Settings(rule_codes=("TR429",), jobs=1, detect_torch=True)  # as the command line does
    assert run_review([str(tmp_path / "course")], settings).findings == []
    assert [f.line for f in run_review([str(tmp_path / "floor")], settings).findings] == [2]


ENGINE = '''import torch


class Engine:
    def save_checkpoint(self, path, module, checkpoint_dict=None):
        checkpoint_dict = checkpoint_dict or {}
        checkpoint_dict["module_state_dict"] = module.state_dict()
        torch.save(SAVED, path)

    def load_checkpoint(self, path, module):
        checkpoint = torch.load(path, weights_only=False)
        module.load_state_dict(checkpoint["module_state_dict"])
        return checkpoint
'''


def test_an_opt_out_matching_the_projects_open_ended_checkpoint_is_medium(tmp_path):
    """opacus privacy_engine.py: `load_checkpoint` opts out of weights-only loading for what
    `save_checkpoint` writes, a dict its callers hand in (judged noise: the opt-out is the
    format); the same pair saving only a state dict keeps the opt-out high."""
    for name, saved in (("open", "checkpoint_dict"), ("plain", "{'module_state_dict': module.state_dict()}")):
        root = tmp_path / name
        _package(root)
        (root / "pkg" / "engine.py").write_text(ENGINE.replace("SAVED", saved))
    got = {}
    for name in ("open", "plain"):
        found = run_review([str(tmp_path / name)], Settings(rule_codes=("TR102",), jobs=1,
                                                            min_confidence="low")).findings
        got[name] = [(f.line, f.confidence) for f in found]
    assert got == {"open": [(11, "medium")], "plain": [(11, "high")]}


BASE_TASK = '''from abc import ABC
from lightning.pytorch import LightningModule


class BaseTask(LightningModule, ABC):
    def __init__(self):
        super().__init__()
'''

MOCO = '''import torch
import timm
from .base import BaseTask


class MoCoTask(BaseTask):
    def __init__(self):
        super().__init__()
        self.backbone = timm.create_model("resnet18")
        self.backbone_momentum = timm.create_model("resnet18")

    def forward_momentum(self, x):
        return self.backbone_momentum(x)

    def training_step(self, batch, batch_idx):
        q = self.backbone(batch)
        with torch.no_grad():
            k = self.forward_momentum(batch)
        return (q - k).sum()
'''


def test_a_class_whose_project_base_is_a_module_is_a_module(tmp_path):
    """torchgeo trainers/moco.py: `MoCoTask(BaseTask)`, BaseTask a LightningModule of base.py; its
    momentum encoder runs under no_grad in `training_step` on purpose (TR207 judged false: the
    class was not seen as a module, whose methods the framework and the caller drive)."""
    _package(tmp_path)
    (tmp_path / "pkg" / "base.py").write_text(BASE_TASK)
    (tmp_path / "pkg" / "moco.py").write_text(MOCO)
    settings = Settings(rule_codes=("TR207",), jobs=1, min_confidence="low")
    assert run_review([str(tmp_path)], settings).findings == []
    (tmp_path / "pkg" / "base.py").write_text("class BaseTask:\n    def __init__(self):\n        pass\n")
    assert [f.line for f in run_review([str(tmp_path)], settings).findings] == [13]


MODEL_FILE = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())

    def forward(self, x):
        return self.body(x)


if __name__ == "__main__":
    net = Net()
    x = torch.rand(1, 3, 32, 32)
    with torch.no_grad():
        for _ in range(3):
            print(net(x).shape)
'''


def test_a_model_files_own_shape_check_is_a_smoke_test(tmp_path):
    """temporal-shift-module online_demo/mobilenet_v2_tsm.py: the model file's `__main__` block
    prints output shapes for random input (TR207 judged noise); a `__main__` block that loads
    weights and predicts stays reported."""
    (tmp_path / "shape").mkdir()
    (tmp_path / "shape" / "net.py").write_text(MODEL_FILE)
    (tmp_path / "predict").mkdir()
    (tmp_path / "predict" / "net.py").write_text(MODEL_FILE.replace(
        "    x = torch.rand(1, 3, 32, 32)\n", "    net.load_state_dict(torch.load('net.pt'))\n    x = torch.rand(1, 3, 32, 32)\n"))
    settings = Settings(rule_codes=("TR207",), jobs=1, min_confidence="low")
    assert run_review([str(tmp_path / "shape")], settings).findings == []
    assert [f.line for f in run_review([str(tmp_path / "predict")], settings).findings] == [20]


def test_a_top_level_examples_package_is_not_shipped(tmp_path):
    """pyro examples/dmm.py: `examples/` has `__init__.py` beside the repository's setup.py, but
    the install does not ship it; an opt-out on the checkpoint the user names there is medium
    (judged noise), the same code in the installed package stays high."""
    from torchreview.engine.advice import installable_module

    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='pkg')\n")
    for folder in ("examples", "pkg"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
        (tmp_path / folder / "dmm.py").write_text("x = 1\n")
    assert not installable_module(str(tmp_path / "examples" / "dmm.py"))
    assert installable_module(str(tmp_path / "pkg" / "dmm.py"))


HF_TRAIN = '''import argparse
import torch
from datasets import load_from_disk, load_dataset
from transformers import Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--test_dir")
args = parser.parse_args()
test_dataset = DATA
val_dataset = load_dataset("emotion", split="validation")
trainer = Trainer(model=None, args=TrainingArguments("out", load_best_model_at_end=True),
                  eval_dataset=test_dataset)
'''


def test_a_trainer_eval_set_named_test_only_is_a_guess(tmp_path):
    """nlp-with-transformers SageMaker script: `eval_dataset=load_from_disk(args.test_dir)`, a
    channel that holds the validation split (TR519 judged false); `split="test"` stays high."""
    for name, data in (("named", "load_from_disk(args.test_dir)"), ("built", 'load_dataset("emotion", split="test")')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text(HF_TRAIN.replace("DATA", data))
    settings = Settings(rule_codes=("TR519",), jobs=1, min_confidence="low")
    got = {n: [(f.line, f.confidence) for f in run_review([str(tmp_path / n)], settings).findings]
           for n in ("named", "built")}
    assert got == {"named": [(12, "medium")], "built": [(12, "high")]}


def test_a_clip_whose_gradients_are_cleared_feeds_no_step():
    """labml Sophia trainer: backward, clip, Hessian update and `zero_grad()` every k steps; the
    step sits on the other branch (TR416 judged false in held-out 6)."""
    fixture = Path(__file__).parent / "fixtures" / "quality" / "TR415_clip_per_optimizer.py"
    found = run_review([str(fixture)], Settings(rule_codes=("TR416",), jobs=1, min_confidence="low")).findings
    assert found == []


NATIVE = '''import importlib.machinery
import os
import sys
import torch


def load_ops():
    lib_dir = os.path.dirname(__file__)
    finder = importlib.machinery.FileFinder(lib_dir)
    spec = finder.find_spec("_C")
    torch.ops.load_library(spec.origin)


def load_user_ops():
    torch.ops.load_library(sys.argv[1])
'''


def test_a_package_loading_its_own_extension_is_medium(tmp_path):
    """xformers _cpp_lib.py: `torch.ops.load_library(ext_specs.origin)`, its own compiled
    extension found next to `__file__` (TR103 judged false); a library path from the command
    line stays high."""
    (tmp_path / "ops.py").write_text(NATIVE)
    found = run_review([str(tmp_path)], Settings(rule_codes=("TR103",), jobs=1, min_confidence="low")).findings
    assert sorted((f.line, f.confidence) for f in found) == [(11, "medium"), (15, "high")]


BENCH_MODULE = '''import torch
from torch import nn


class Sparse24(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.input = torch.randn(n, n, requires_grad=True)

    def forward(self):
        return (self.input @ self.input).sum()
'''


def test_a_benchmark_input_needing_gradients_is_medium(tmp_path):
    """xformers benchmarks/benchmark_sp24.py: an input kept with `requires_grad=True` so the
    backward can be timed (TR511 judged false); the same class in a model file stays high."""
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "bench_sp24.py").write_text(BENCH_MODULE)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "sp24.py").write_text(BENCH_MODULE)
    found = run_review([str(tmp_path)], Settings(rule_codes=("TR511",), jobs=1, min_confidence="low")).findings
    assert sorted((Path(f.path).parent.name, f.confidence) for f in found) == [("benchmarks", "medium"),
                                                                               ("models", "high")]


def test_a_fixed_model_id_in_a_benchmark_package_is_medium(tmp_path):
    """lightning-thunder thunder/benchmarks/__init__.py: `trust_remote_code=True` for a fixed
    first-party model in internal benchmark code (TR104 judged noise): a benchmark is one-off
    code, like a script, whichever package it sits in; a package module stays high."""
    (_package(tmp_path) / "benchmarks").mkdir()
    (tmp_path / "pkg" / "benchmarks" / "__init__.py").write_text("")
    code = ("from transformers import AutoConfig\n\n\ndef config():\n"
            "    return AutoConfig.from_pretrained('org/model-7b', trust_remote_code=True)\n")
    (tmp_path / "pkg" / "benchmarks" / "targets.py").write_text(code)
    (tmp_path / "pkg" / "models.py").write_text(code.replace("org/model-7b", "org/other-7b"))
    found = run_review([str(tmp_path)], Settings(rule_codes=("TR104",), jobs=1, min_confidence="low")).findings
    assert sorted((Path(f.path).name, f.confidence) for f in found) == [("models.py", "high"),
                                                                        ("targets.py", "medium")]


def _notebook(cells, language="python"):
    import json

    return json.dumps({"metadata": {"kernelspec": {"language": language, "name": language}},
                       "nbformat": 4, "nbformat_minor": 4,
                       "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                  "source": c} for c in cells]})


def test_a_notebook_in_another_language_is_not_reviewed(tmp_path):
    """fastai course-v3 nbs/swift: 27 Swift notebooks parsed as Python gave 775 'syntax error'
    lines; a notebook whose kernel is not Python is skipped with one note for all of them."""
    for i in range(5):
        (tmp_path / f"{i:02d}_swift.ipynb").write_text(_notebook(["let x = 1", "print(x)"], "swift"))
    (tmp_path / "py.ipynb").write_text(_notebook(["import torch", "x = torch.load('a.pt')"]))
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR101", "TR102"), jobs=1))
    assert report.errors == []
    assert [n for n in report.notes if "swift" in n] == [
        next(n for n in report.notes if n.startswith("5 notebooks in swift, not Python, not reviewed"))]


def test_torch_from_a_library_star_import_and_redefined_notebook_classes(tmp_path):
    """fastai course-v3 lessons: `from fastai.basics import *` brings `torch`; `p.sub_(...)` under
    `with torch.no_grad():` is fine (TR501 judged false); a plain `class Model():` of one cell is
    not the `class Model(nn.Module)` of another (TR510 judged false)."""
    cells = ["from fastai.basics import *\nimport torch.nn as nn",
             "model = nn.Linear(2, 2)\n\ndef update(x, lr):\n    loss = model(x).sum()\n    loss.backward()\n"
             "    with torch.no_grad():\n        for p in model.parameters():\n            p.sub_(lr * p.grad)\n"
             "            p.grad.zero_()\n    return loss.item()",
             "class Model():\n    def __init__(self, n):\n        self.n = n\n\n    def __call__(self, x):\n"
             "        return x * self.n",
             "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.fc = nn.Linear(2, 2)\n\n    def forward(self, x):\n        return self.fc(x)"]
    (tmp_path / "lesson.ipynb").write_text(_notebook(cells))
    found = run_review([str(tmp_path)], Settings(rule_codes=("TR501", "TR510"), jobs=1, min_confidence="low"))
    assert found.findings == []


HF_LOOP = '''import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoModelForTokenClassification

device = torch.device("cuda")
encoded = load_dataset("nielsr/funsd").map(lambda x: x)
FORMAT
train_dataloader = DataLoader(encoded["train"], batch_size=4, shuffle=True)
model = AutoModelForTokenClassification.from_pretrained("microsoft/layoutlmv2-base-uncased")
model.to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
model.train()
for batch in train_dataloader:
    optimizer.zero_grad()
    outputs = model(**batch)
    outputs.loss.backward()
    optimizer.step()
'''


def test_batches_of_a_dataset_formatted_onto_the_device(tmp_path):
    """NielsRogge Transformers-Tutorials (LayoutLMv2 on FUNSD): `encoded.set_format(type="torch",
    device="cuda")` puts every batch on the GPU (TR403 judged false); formatted for torch only,
    the batches stay on the CPU and the finding stays."""
    for name, fmt in (("device", 'encoded.set_format(type="torch", device="cuda")'),
                      ("cpu", 'encoded.set_format(type="torch")')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text(HF_LOOP.replace("FORMAT", fmt))
    settings = Settings(rule_codes=("TR403",), jobs=1, min_confidence="low")
    assert run_review([str(tmp_path / "device")], settings).findings == []
    assert [f.line for f in run_review([str(tmp_path / "cpu")], settings).findings] == [16]


def test_a_nosec_opt_out_stays_a_documented_decision_against_the_library_practice(tmp_path):
    """lerobot envs/libero.py: `torch.load(path, weights_only=False)  # nosec B614` while the
    library loads weights-only elsewhere (judged noise: acknowledged for a security linter); the
    same opt-out without the comment in a script beside the library is the exception to the
    practice, high; in the library itself it stays medium (held-out 10: ogb, nnU-Net and
    sd-scripts load weights-only where they can and opt out where their format needs it,
    judged noise)."""
    _package(tmp_path)
    (tmp_path / "pkg" / "utils.py").write_text(
        "import torch\n\n\ndef load(path):\n    return torch.load(path, weights_only=True)\n")
    body = "import torch\n\n\ndef init_states(path):\n    return torch.load(path, weights_only=False)COMMENT\n"
    (tmp_path / "pkg" / "libero.py").write_text(body.replace("COMMENT", "  # nosec B614"))
    (tmp_path / "pkg" / "other.py").write_text(body.replace("COMMENT", ""))
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "convert.py").write_text(body.replace("COMMENT", ""))
    found = run_review([str(tmp_path)], Settings(rule_codes=("TR101", "TR102"), jobs=1, min_confidence="low")).findings
    assert sorted((Path(f.path).name, f.confidence) for f in found) == [
        ("convert.py", "high"), ("libero.py", "low"), ("other.py", "medium")]  # `# nosec`: a reviewed line


def test_a_model_repository_of_the_projects_own_hub_organisation_is_medium(tmp_path):
    """lerobot: `trust_remote_code=True` for `lerobot/unitree-g1-mujoco` in the `lerobot` package
    (its maintainers' own Hub organisation: judged noise); another organisation stays high."""
    _package(tmp_path, "lerobot")
    code = ("from transformers import AutoModel\n\n\ndef env():\n"
            "    return AutoModel.from_pretrained('REPO', trust_remote_code=True)\n")
    (tmp_path / "lerobot" / "robot.py").write_text(code.replace("REPO", "lerobot/unitree-g1-mujoco"))
    (tmp_path / "lerobot" / "policy.py").write_text(code.replace("REPO", "someone/policy-7b"))
    found = run_review([str(tmp_path)], Settings(rule_codes=("TR104",), jobs=1, min_confidence="low")).findings
    assert sorted((Path(f.path).name, f.confidence) for f in found) == [("policy.py", "high"), ("robot.py", "medium")]
