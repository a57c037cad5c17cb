"""Classes of findings judged noise/false on the sweeps of the third 2026-11-29
session, each as a near-miss that must stay silent (or hidden by default) beside
a positive that must stay."""
from __future__ import annotations

from pathlib import Path

from projects import package as _package
from torchreview.engine.runner import Settings, run_review


def _found(root: Path, codes: tuple[str, ...], **kw) -> list:
    """Every finding of ``codes``, merged findings flattened to their places (each keeps its own
    confidence and kind)."""
    findings = run_review([str(root)], Settings(rule_codes=codes, jobs=1, min_confidence="low", **kw)).findings
    return [p for f in findings for p in (f.parts or (f,))]


VARIABLE_DEVICE = '''import torch


def spectrum(signal, device):
    data = signal.to(device)
    return (data * 2).numpy()
'''

LITERAL_DEVICE = '''import torch


def spectrum(signal):
    data = signal.cuda()
    return torch.sigmoid(data).numpy()


def spectrum_to(signal):
    data = signal.to("cuda:0")
    return data.sum(0).numpy()
'''


def test_numpy_after_a_variable_device_is_medium_a_literal_accelerator_stays_high(tmp_path):
    """svoice, bigvgan, torchdistill, nnU-Net, dinov2: `.numpy()` on a tensor moved with
    `.to(device)` whose device the callers set to the CPU -- judged false or noise on every
    variable-device finding (17); `.cuda()` or `"cuda:0"` in sight stays high."""
    (tmp_path / "variable.py").write_text(VARIABLE_DEVICE)
    (tmp_path / "literal.py").write_text(LITERAL_DEVICE)
    got = sorted((Path(f.path).name, f.line, f.confidence) for f in _found(tmp_path, ("TR502",)))
    assert got == [("literal.py", 6, "high"), ("literal.py", 11, "high"), ("variable.py", 6, "medium")]
    default = run_review([str(tmp_path)], Settings(rule_codes=("TR502",), jobs=1, min_confidence="high")).findings
    # the two high places of one file say the same thing: one finding, the other a related place
    assert [(Path(f.path).name, f.line, [r.line for r in f.related]) for f in default] == [("literal.py", 6, [11])]


CUDA_BRANCHES = '''import torch
from torch import nn

net = nn.Conv2d(3, 2, 1)
net.cuda()


def parse(img):
    with torch.no_grad():
        if torch.cuda.is_available():
            img = img.cuda()
        out = net(img)[0]
        if torch.cuda.is_available():
            return out.cpu().numpy()
        else:
            return out.numpy()


def parse_wrong(img):
    with torch.no_grad():
        out = net(img.cuda())[0]
        if torch.cuda.is_available():
            return out.numpy()
        return out.cpu().numpy()
'''


def test_numpy_in_the_else_of_cuda_is_available_runs_on_the_cpu(tmp_path):
    """GIMP-ML face parsing: `.numpy()` in the `else` of `if torch.cuda.is_available():`
    runs on a machine without CUDA (judged false on held-out 32); the `if` branch is reported."""
    (tmp_path / "parse.py").write_text(CUDA_BRANCHES)
    got = sorted(f.line for f in _found(tmp_path, ("TR502",)))
    assert got == [23]


RACE_MODEL = '''import torch
import torchvision
from torch import nn


class RaceModel(nn.Module):
    def __init__(self, weights):
        super().__init__()
        self.model = torchvision.models.resnet34(weights=None)
        self.model.fc = nn.Linear(512, 3)
        self.model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
        self.model = self.model.eval()  # must be in eval mode to work

    def forward(self, x):
        return self.model(x)


class RaceModelTrainable(nn.Module):
    def __init__(self, weights):
        super().__init__()
        self.model = torchvision.models.resnet34(weights=None)
        self.model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))

    def forward(self, x):
        return self.model(x)
'''

RACE_SCRIPT = '''import torch
from proj.models import RaceModel, RaceModelTrainable


def predict(img):
    model = RaceModel("race.pt")
    with torch.no_grad():
        return torch.softmax(model(img), 1)


def predict_trainable(img):
    model = RaceModelTrainable("race.pt")
    with torch.no_grad():
        return torch.softmax(model(img), 1)
'''


def test_a_wrapper_whose_constructor_switches_its_network_to_eval_is_in_eval_once_built(tmp_path):
    """torchxrayvision's RaceModel: `self.model = self.model.eval()` at the end of the
    constructor leaves every mode-dependent layer in eval mode (judged false on held-out
    31); the same wrapper without that switch stays reported."""
    pkg = _package(tmp_path / "proj", "proj")
    (pkg / "models.py").write_text(RACE_MODEL)
    (tmp_path / "proj" / "predict.py").write_text(RACE_SCRIPT)
    got = sorted(f.line for f in _found(tmp_path / "proj", ("TR207",)))
    assert got == [14]


WRAPPED_MODEL_CALL = '''import numpy as np
import torch
from torch import nn
from signal_tools import FramesMixin


class Filter(FramesMixin, nn.Module):
    def __init__(self, frame):
        super().__init__()
        self.pad = nn.ConstantPad2d((0, 0, frame - 1, 0), 0.0)
        self.idx = torch.triu_indices(frame, frame, 1)

    def forward(self, x, a):
        return self.pad(x) * a


class Learned(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, a):
        return self.proj(x) * a


def ideal(x_np, a_np):
    wf = Filter(3)
    x = torch.from_numpy(x_np)
    a = torch.from_numpy(a_np)
    y = torch.view_as_complex(wf(torch.view_as_real(x), a).squeeze(1))
    return np.abs(y.numpy())


def learned(x_np, a_np):
    net = Learned(2)
    x = torch.from_numpy(x_np)
    a = torch.from_numpy(a_np)
    y = torch.view_as_complex(net(torch.view_as_real(x), a).squeeze(1))
    return np.abs(y.numpy())
'''


def test_numpy_of_a_model_output_inside_torch_calls_asks_whether_the_model_has_weights(tmp_path):
    """DeepFilterNet's ideal Wiener filter: `torch.view_as_complex(wf(...))` of a module whose
    content is partly out of sight and that builds no weight (padding, index tables) is no
    evidence of a graph (judged false on held-out 36): medium;
    the same shape around a module with a `nn.Linear` stays high."""
    (tmp_path / "mf.py").write_text(WRAPPED_MODEL_CALL)
    got = sorted((f.line, f.confidence) for f in _found(tmp_path, ("TR502",)))
    assert got == [(31, "medium"), (39, "high")]


PREDICTOR = '''import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 3, 3, padding=1), nn.BatchNorm2d(3))

    def forward(self, x):
        return self.net(x)


class Predictor:
    def __init__(self, weights):
        self.model = Generator()
        self.model.load_state_dict(torch.load(weights, weights_only=True))
        self.model.train(True)  # GAN inference uses the batch statistics on purpose

    def __call__(self, img):
        with torch.no_grad():
            return self.model(img)


class PlainPredictor:
    def __init__(self, weights):
        self.model = Generator()
        self.model.load_state_dict(torch.load(weights, weights_only=True))

    def __call__(self, img):
        with torch.no_grad():
            return self.model(img)
'''


def test_a_model_switched_to_train_mode_on_purpose_for_inference_is_a_choice(tmp_path):
    """GIMP-ML's DeblurGAN-v2 predictor calls `self.model.train(True)` in its constructor
    ("GAN inference should be in train mode", judged noise on held-out 32); the same
    predictor without the switch stays reported."""
    (tmp_path / "predict.py").write_text(PREDICTOR)
    got = sorted(f.line for f in _found(tmp_path, ("TR207",)))
    assert got == [32]


DILL_SAVE = '''import dill
import torch


def save_checkpoint(model, optimizer, args, path):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "args": args},
               path, pickle_module=dill)
'''

DILL_LOAD = '''import dill
import torch


def load_checkpoint(path):
    return torch.load(path, pickle_module=dill)
'''


def test_a_custom_pickler_the_project_writes_its_checkpoints_with_is_its_format(tmp_path):
    """robustness: `train.py` saves with `pickle_module=dill`, `model_utils.py` loads with it
    (judged noise on held-out 32): medium; a dill load in a project that never saves with
    dill stays high."""
    own = _package(tmp_path / "own", "own")
    (own / "train.py").write_text(DILL_SAVE)
    (own / "model_utils.py").write_text(DILL_LOAD)
    other = _package(tmp_path / "other", "other")
    (other / "model_utils.py").write_text(DILL_LOAD)
    got = {n: [f.confidence for f in _found(tmp_path / n, ("TR102",))] for n in ("own", "other")}
    assert got == {"own": ["medium"], "other": ["high"]}


LIB_LOADS_SAFE = '''import torch


def load_neighbors(path):
    return torch.load(path, weights_only=True)
'''

LIB_OPTS_OUT = '''import torch


def restart(path, simulator):
    simulator.restart(torch.load(path, weights_only=False))


def load_model(path):
    return torch.load(path, map_location="cpu", weights_only=False)


def load_calculator(path):
    return torch.load(path, weights_only=False)
'''

TUTORIAL = '''import torch

checkpoint = torch.load("md_checkpoint.chk", weights_only=False)
print(checkpoint.keys())
'''


def test_a_scripts_opt_out_follows_a_library_that_also_opts_out(tmp_path):
    """schnetpack: the tutorial's `weights_only=False` on an MD checkpoint, while the library
    opts out for its models and MD checkpoints more often than it loads weights-only (judged
    noise on held-out 36): medium; with the library loading weights-only only, the
    tutorial's opt-out is the exception and stays high."""
    for name, modules in (("mixed", (LIB_LOADS_SAFE, LIB_OPTS_OUT)), ("safe", (LIB_LOADS_SAFE,))):
        pkg = _package(tmp_path / name, name)
        for i, text in enumerate(modules):
            (pkg / f"mod{i}.py").write_text(text)
        (tmp_path / name / "tutorial.py").write_text(TUTORIAL)
    got = {n: [f.confidence for f in _found(tmp_path / n, ("TR102",)) if f.path.endswith("tutorial.py")]
           for n in ("mixed", "safe")}
    assert got == {"mixed": ["medium"], "safe": ["high"]}


SAVES_MODULE = '''import torch
from torch import nn

vgg = nn.Sequential(nn.Linear(4, 2))
torch.save(vgg, "data/model.pth")
vgg = torch.load("data/model.pth")
'''


def test_a_chapter_pinned_to_an_old_torch_by_its_own_folder_has_no_weights_only_default(tmp_path):
    """Microsoft's PyTorch fundamentals: the computer-vision chapter pins `torch==1.12.0` in its
    own requirements, the intro chapter pins nothing (TR520 judged noise on the first, true on
    the second, held-out 39)."""
    for chapter in ("vision", "intro"):
        (tmp_path / chapter).mkdir()
        (tmp_path / chapter / "transfer.py").write_text(SAVES_MODULE)
    (tmp_path / "vision" / "requirements.txt").write_text("torchvision==0.13.0\ntorch==1.12.0\n")
    found = run_review([str(tmp_path)], Settings(rule_codes=("TR520",), jobs=1, min_confidence="low",
                                                 detect_torch=True)).findings
    assert sorted(Path(f.path).parent.name for f in found) == ["intro"]


MEMORY_BENCH = '''import torch
import torch.nn.functional as F
from torch import nn


def peak_memory(device):
    model = nn.Linear(512, 10).to(device)
    optimizer = torch.optim.RMSprop(model.parameters())
    data = torch.rand(64, 512, device=device)
    target = torch.randint(10, (64,), device=device)
    torch.cuda.reset_max_memory_cached(device)
    for _ in range(2):
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    return torch.cuda.max_memory_cached(device)


def trained(device, loader):
    model = nn.Linear(512, 10).to(device)
    optimizer = torch.optim.RMSprop(model.parameters())
    torch.cuda.reset_max_memory_cached(device)
    for data, target in loader:
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    return torch.cuda.max_memory_cached(device)
'''


def test_a_peak_memory_probe_around_steps_on_fake_data_is_a_measurement(tmp_path):
    """torchgpipe's memory benchmarks: reset the peak, two steps on `torch.rand` data, read the
    peak (TR401 judged noise twice on held-out 41): medium, like a timing loop; the same probe
    around training on a loader's batches stays high."""
    (tmp_path / "memory.py").write_text(MEMORY_BENCH)
    got = sorted((p.line, p.confidence) for f in _found(tmp_path, ("TR401",)) for p in (f.parts or (f,)))
    assert got == [(12, "medium"), (23, "high")]


HAND_REGISTERED = '''from torch import nn


class Partly(nn.Module):
    def __init__(self, widths):
        super().__init__()
        self.en = [nn.Conv2d(w, w, 3) for w in widths]
        self.skip = [nn.Conv2d(w, w, 1) for w in widths]
        for i, sk in enumerate(self.skip):
            setattr(self, f"skip_{i}", sk)

    def forward(self, x):
        for en in self.en:
            x = en(x)
        return x


class Plain(nn.Module):
    def __init__(self, widths):
        super().__init__()
        self.en = [nn.Conv2d(w, w, 3) for w in widths]

    def forward(self, x):
        for en in self.en:
            x = en(x)
        return x
'''


def test_a_plain_list_in_a_class_that_registers_modules_by_hand_is_medium(tmp_path):
    """Every TR508 finding in a class with a hand-made registration idiom (rlkit, GIMP-ML,
    EPyMARL, a diffusion tutorial: 11 judged false on held-out 30-44) was one the model did
    not follow: medium there; a class with no such idiom stays high."""
    (tmp_path / "nets.py").write_text(HAND_REGISTERED)
    got = sorted((f.line, f.confidence) for f in _found(tmp_path, ("TR508",)))
    assert got == [(7, "medium"), (21, "high")]


CLIP_MODEL = '''from torch import nn


class CLIP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.visual = nn.Linear(dim, dim)

    def forward(self, x):
        return self.visual(x)


def load(name, device):
    model = CLIP(512)
    return model.to(device)
'''

CLIP_METRIC = '''import torch
from torch import nn

from .clip_model import load


class ClipIQA(nn.Module):
    def __init__(self):
        super().__init__()
        self.clip_model = [load("RN50", "cpu")]  # avoid saving clip weights
        self.head = nn.Linear(512, 1)

    def forward(self, x):
        with torch.no_grad():
            feats = self.clip_model[0](x)
        return self.head(feats)
'''


def test_a_one_element_list_hiding_a_loaded_model_is_deliberate(tmp_path):
    """pyiqa: `self.clip_model = [load(backbone, 'cpu')]  # avoid saving clip weights` (TR508
    judged noise three times on held-out 48) keeps a frozen backbone out of `parameters()` and
    `state_dict()` on purpose; a one-layer list written in place stays reported (fixture)."""
    pkg = _package(tmp_path / "iqa", "iqa")
    (pkg / "clip_model.py").write_text(CLIP_MODEL)
    (pkg / "clipiqa.py").write_text(CLIP_METRIC)
    assert [f.line for f in _found(tmp_path / "iqa", ("TR508",))] == []


DETECT_HEAD = '''import torch
from torch import nn


class Detect(nn.Module):
    def __init__(self, nc, ch):
        super().__init__()
        self.stride = torch.zeros(3)
        self.grid = torch.zeros(1)
        self.cv = nn.Conv2d(ch, nc, 1)

    def forward(self, x):
        return self.cv(x) * self.stride.view(-1, 1, 1)[:1] + self.grid
'''

BASE_MODEL = '''from torch import nn

from .head import Detect


class BaseModel(nn.Module):
    def _apply(self, fn):
        self = super()._apply(fn)
        m = self.model[-1]
        if isinstance(m, Detect):
            m.stride = fn(m.stride)
        return self
'''


def test_an_apply_override_of_another_project_file_moves_the_attribute(tmp_path):
    """FastSAM's vendored ultralytics: the Detect head keeps `stride` as a plain tensor and
    `BaseModel._apply` in another file moves it (TR511 judged false on held-out 46); `grid`,
    which no `_apply` moves, stays reported."""
    pkg = _package(tmp_path / "ul", "ul")
    (pkg / "head.py").write_text(DETECT_HEAD)
    (pkg / "tasks.py").write_text(BASE_MODEL)
    got = sorted(f.line for f in _found(tmp_path / "ul", ("TR511",)) for f in (f.parts or (f,)))
    assert got == [9]


PLAIN_BASE = '''from abc import ABC


class BaseModel(ABC):
    def __init__(self, opt):
        self.opt = opt

    def setup(self):
        pass
'''

DISTILLER = '''import torch
from torch import nn

from gc_pkg.base_model import BaseModel


class Distiller(BaseModel):
    def __init__(self, opt):
        super().__init__(opt)
        self.netG = nn.Conv2d(3, 3, 3)
        self.netAs = []
        for _ in range(3):
            self.netAs.append(nn.Conv2d(3, 3, 1))

    def forward(self, x):
        return self.netG(x)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = []
        for _ in range(3):
            self.blocks.append(nn.Conv2d(3, 3, 1))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x
'''


def test_a_wrapper_deriving_from_a_plain_project_class_is_no_module(tmp_path):
    """gan-compression: `class BaseResnetDistiller(BaseModel)` with `class BaseModel(ABC)` in
    another file keeps networks as attributes and defines `forward` (the pix2pix wrapper), but
    is no `nn.Module` (TR508 judged false on held-out 49); a real module class stays reported."""
    pkg = _package(tmp_path / "gc", "gc_pkg")
    (pkg / "base_model.py").write_text(PLAIN_BASE)
    (pkg / "distiller.py").write_text(DISTILLER)
    got = sorted(f.line for f in _found(tmp_path / "gc", ("TR508",)))
    assert got == [22]
