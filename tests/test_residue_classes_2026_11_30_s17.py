"""Classes of findings judged false or noise on blind tests, fixed in the seventeenth session
(2026-11-30), each as a near-miss that must change beside a positive that must stay."""
from __future__ import annotations

from residue_helpers import found as _found, write as _write


# --- TR518: a load only evaluation reaches restores the weights it tests, not a run to continue --------
# (DCNv4's `eval()` entry loads the resume path through a helper while the training path resumes
# elsewhere: judged false in blind test 53; a trainer's evaluation method alike)

_SAVE = '''
def save(model, optimizer, epoch, path):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)
'''

_HELPER = '''
def load_model_checkpoint(args, model):
    if args.resume:
        checkpoint = torch.load(args.resume)["model"]
        model.load_state_dict(checkpoint)
    return model
'''

_TRAIN = '''
def train_epoch(model, optimizer, loader):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
'''


def _module(body: str) -> str:
    return "import torch\nimport torch.nn.functional as F\n" + _SAVE + _HELPER + _TRAIN + body


EVAL_ENTRY = _module('''
def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum(float((model(x).argmax(1) == y).float().mean()) for x, y in loader)


def eval_only(args):
    model = build(args)
    model = load_model_checkpoint(args, model)
    evaluate(model, loader_of(args))


def train(args):
    model = build(args)
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(args.epochs):
        train_epoch(model, optimizer, loader_of(args))
        save(model, optimizer, epoch, "ckpt.pth")


def main(args):
    if args.eval:
        eval_only(args)
    else:
        train(args)
''')

# the same helper called by the function that trains: a resume that restores the weights only
TRAIN_RESUME = _module('''
def train(args):
    model = build(args)
    model = load_model_checkpoint(args, model)
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(args.epochs):
        train_epoch(model, optimizer, loader_of(args))
        save(model, optimizer, epoch, "ckpt.pth")
''')

# called from a set-up function that evaluates nothing, which the training entry calls
SETUP_RESUME = _module('''
def setup(args):
    model = build(args)
    return load_model_checkpoint(args, model)


def run(args):
    model = setup(args)
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(args.epochs):
        train_epoch(model, optimizer, loader_of(args))
        save(model, optimizer, epoch, "ckpt.pth")
''')

TRAINER_CLASS = '''import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, args):
        self.model, self.args = model, args
        self.optimizer = torch.optim.Adam(model.parameters())
        if args.resume_init:
            self.load_ckpt(args.resume)

    def load_ckpt(self, path):
        ckpt = torch.load(path)
        self.model.load_state_dict(ckpt["model"])
        return ckpt["epoch"]

    def evaluation(self, loader):
        if self.args.eval:
            self.load_ckpt("best_model.pth")
        self.model.eval()
        with torch.no_grad():
            return [self.model(x) for x, _ in loader]

    def fit(self, loader):
        for epoch in range(self.args.epochs):
            for x, y in loader:
                self.optimizer.zero_grad()
                F.cross_entropy(self.model(x), y).backward()
                self.optimizer.step()
            torch.save({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                        "epoch": epoch}, "last.pth")
'''


def _tr518(tmp_path, text: str) -> list[int]:
    return sorted(f.line for f in _found(_write(tmp_path, {"train.py": text}), ("TR518",)))


def test_tr518_load_only_evaluation_reaches_is_quiet(tmp_path):
    assert _tr518(tmp_path, EVAL_ENTRY) == []


def test_tr518_same_helper_called_by_training_is_reported(tmp_path):
    assert _tr518(tmp_path, TRAIN_RESUME) != []


def test_tr518_helper_reached_through_a_set_up_function_is_reported(tmp_path):
    assert _tr518(tmp_path, SETUP_RESUME) != []


def test_tr518_method_called_by_the_constructor_too_is_reported(tmp_path):
    # `__init__` also calls it: a chain that meets no evaluation
    assert _tr518(tmp_path, TRAINER_CLASS) != []


def test_tr518_method_only_evaluation_calls_is_quiet(tmp_path):
    only_eval = TRAINER_CLASS.replace("        if args.resume_init:\n            self.load_ckpt(args.resume)\n", "")
    assert only_eval != TRAINER_CLASS
    assert _tr518(tmp_path, only_eval) == []


# --- TR519: a benchmark whose protocol has no validation split (Market-1501, ModelNet40) ----------
# (upstream Cluster-Contrast, DeepGCN and CurveNet scripts vendored into other repositories keep the
# best-on-test checkpoint as every published code base of those benchmarks does: judged noise)

SELECT_ON_TEST = '''import torch
from torch.utils.data import DataLoader


def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum(float((model(x).argmax(1) == y).float().mean()) for x, y in loader)


def main(args):
    train_loader = DataLoader(DATASET(args.root, partition="train"), batch_size=32)
    test_loader = DataLoader(DATASET(args.root, partition="test"), batch_size=32)
    best_acc = 0.0
    for epoch in range(args.epochs):
        train_one_epoch(model, train_loader)
        acc = evaluate(model, test_loader)
        if acc > best_acc:
            best_acc = acc
            torch.save(model.state_dict(), "best.pth")
'''


def _tr519(tmp_path, text: str) -> list[str]:
    return [f.confidence for f in _found(_write(tmp_path, {"train.py": text}), ("TR519",))]


def test_tr519_benchmark_without_validation_split_is_low(tmp_path):
    assert _tr519(tmp_path, SELECT_ON_TEST.replace("DATASET", "ModelNet40")) == ["low"]


def test_tr519_reid_dataset_option_is_low(tmp_path):
    text = SELECT_ON_TEST.replace("DATASET", "ReidSet") + \
        "\nparser.add_argument('-d', '--dataset', type=str, default='market1501')\n"
    assert _tr519(tmp_path, text) == ["low"]


def test_tr519_other_benchmark_stays_medium(tmp_path):
    assert _tr519(tmp_path, SELECT_ON_TEST.replace("DATASET", "CIFAR10")) == ["medium"]


def test_tr519_benchmark_with_validation_data_stays_high(tmp_path):
    text = SELECT_ON_TEST.replace("DATASET", "ModelNet40").replace(
        '    best_acc = 0.0\n',
        '    val_loader = DataLoader(DATASET(args.root, partition="val"), batch_size=32)\n    best_acc = 0.0\n'
        .replace("DATASET", "ModelNet40"))
    assert _tr519(tmp_path, text) == ["high"]


# --- TR514: a no-op freeze of a model set up for inference (FastSpeech2's get_model(train=False),
# copied into ZMM-TTS twice: judged noise in blind test 56); a teacher frozen that way before
# training stays a defect

GET_MODEL = '''import torch
from model import TTS


def get_model(args, device, train=False):
    model = TTS(args).to(device)
    if args.restore_step:
        model.load_state_dict(torch.load(args.ckpt, map_location=device)["model"])
    if train:
        optimizer = torch.optim.Adam(model.parameters())
        model.train()
        return model, optimizer
    model.eval()
    model.requires_grad_ = False
    return model
'''

TEACHER = '''import torch
import torch.nn.functional as F
from model import Net


def distill(student, loader, args):
    teacher = Net()
    teacher.load_state_dict(torch.load(args.teacher))
    teacher.eval()
    teacher.requires_grad_ = False
    optimizer = torch.optim.Adam(student.parameters())
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.kl_div(student(x).log_softmax(1), teacher(x).softmax(1))
        loss.backward()
        optimizer.step()
'''


def _tr514(tmp_path, text: str) -> list[tuple[str, str]]:
    return [(f.kind, f.confidence) for f in _found(_write(tmp_path, {"utils.py": text}), ("TR514",))]


def test_tr514_noop_freeze_of_an_inference_model_is_low_advice(tmp_path):
    assert _tr514(tmp_path, GET_MODEL) == [("advice", "low")]


def test_tr514_noop_freeze_of_a_teacher_before_training_stays_a_defect(tmp_path):
    assert _tr514(tmp_path, TEACHER) == [("defect", "high")]


def test_tr514_noop_freeze_without_eval_stays_a_defect(tmp_path):
    assert _tr514(tmp_path, GET_MODEL.replace("    model.eval()\n", "")) == [("defect", "high")]


# --- TR508: modules that train themselves (each builds its own optimizer over its own parameters:
# RecEraser's shard models, judged false in blind test 56) are kept out of the parent on purpose

SHARDS = '''import torch
import torch.nn as nn
import torch.optim as optim


class Basic(nn.Module):
    def fit(self, loader):
        self.opt = optim.Adam(self.parameters(), lr=1e-3)
        for x, y in loader:
            self.opt.zero_grad()
            nn.functional.mse_loss(self(x), y).backward()
            self.opt.step()


class Shard(Basic):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


class Ensemble(Basic):
    def __init__(self, n):
        super().__init__()
        self.sub_models = []
        for _ in range(n):
            sub = Shard()
            self.sub_models.append(sub)
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        return self.head(sum(m(x).detach() for m in self.sub_models))
'''


def _tr508(tmp_path, text: str) -> list[int]:
    return [f.line for f in _found(_write(tmp_path, {"models.py": text}), ("TR508",))]


def test_tr508_models_that_train_themselves_are_quiet(tmp_path):
    assert _tr508(tmp_path, SHARDS) == []


def test_tr508_models_without_their_own_optimizer_stay_reported(tmp_path):
    assert _tr508(tmp_path, SHARDS.replace("sub = Shard()", "sub = Plain()")) != []


def test_tr508_literal_list_of_self_training_models_is_quiet(tmp_path):
    text = SHARDS.replace("        self.sub_models = []\n        for _ in range(n):\n            sub = Shard()\n"
                          "            self.sub_models.append(sub)\n", "        self.sub_models = [Shard(), Shard()]\n")
    assert "[Shard(), Shard()]" in text
    assert _tr508(tmp_path, text) == []
    assert _tr508(tmp_path, text.replace("[Shard(), Shard()]", "[Shard(), Plain()]")) != []


# --- TR511: `nn.Parameter(data).to(device)` where the data is computed only from what the caller
# hands in: its device is the caller's (Graph-WaveNet's SVD of an adjacency the training script
# already moved: judged false in blind test 56) -- medium; data from a factory stays high

GWN = '''import torch
import torch.nn as nn


class GWNet(nn.Module):
    def __init__(self, device, num_nodes, aptinit=None):
        super().__init__()
        if aptinit is None:
            self.nodevec1 = nn.Parameter(torch.randn(num_nodes, 10), requires_grad=True).to(device)
        else:
            m, p, n = torch.svd(aptinit)
            initemb1 = torch.mm(m[:, :10], torch.diag(p[:10] ** 0.5))
            self.nodevec1 = nn.Parameter(initemb1, requires_grad=True).to(device)

    def forward(self, x):
        return x @ self.nodevec1
'''


def test_tr511_parameter_from_caller_data_is_medium_factory_data_stays_high(tmp_path):
    found = sorted((f.line, f.confidence) for f in _found(_write(tmp_path, {"model.py": GWN}), ("TR511",)))
    assert found == [(9, "high"), (13, "medium")]


# --- splits: a file literal outranks a variable's name, and the evaluated loader outranks a phase
# label (NCNet's `test_csv = "val_pairs.csv"`, `Dataset(dataset_csv_file=test_csv)`, per-epoch
# `test_loss[epoch - 1] = process_epoch("test", ..., dataloader_test)`: judged false in blind test 56)

NCNET = '''import numpy as np
import torch
from torch.utils.data import DataLoader
from data import PairDataset

train_csv = "train_pairs.csv"
test_csv = "CSV_NAME"
dataset = PairDataset(csv_path=args.csv_path, dataset_csv_file=train_csv)
dataloader = DataLoader(dataset, batch_size=16, shuffle=True)
dataset_test = PairDataset(csv_path=args.csv_path, dataset_csv_file=test_csv)
dataloader_test = DataLoader(dataset_test, batch_size=16)


def process_epoch(mode, epoch, model, optimizer, loader):
    total = 0.0
    for batch in loader:
        loss = model(batch)
        if mode == "train":
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item()
    return total / len(loader)


train_loss = np.zeros(args.num_epochs)
test_loss = np.zeros(args.num_epochs)
best_test_loss = float("inf")
for epoch in range(1, args.num_epochs + 1):
    train_loss[epoch - 1] = process_epoch("train", epoch, model, optimizer, dataloader)
    test_loss[epoch - 1] = process_epoch("test", epoch, model, optimizer, dataloader_test)
    if test_loss[epoch - 1] < best_test_loss:
        best_test_loss = test_loss[epoch - 1]
        torch.save(model.state_dict(), "best.pth.tar")
'''


def _tr519_lines(tmp_path, text: str) -> list[int]:
    return [f.line for f in _found(_write(tmp_path, {"train.py": text}), ("TR519",))]


def test_tr519_validation_file_behind_a_test_name_is_quiet(tmp_path):
    assert _tr519_lines(tmp_path, NCNET.replace("CSV_NAME", "val_pairs.csv")) == []


def test_tr519_test_file_behind_a_test_name_is_reported(tmp_path):
    assert _tr519_lines(tmp_path, NCNET.replace("CSV_NAME", "test_pairs.csv")) != []


# --- TR510: a constructor that stores plain values only (NVIDIA's FLIP metric in R2L) and a class
# read only for its class methods (HyenaDNA's `from_pretrained` helper class) cannot crash by
# themselves: medium (judged noise in blind test 56); assigning a layer stays high

FLIP = '''import torch


class FLIP(torch.nn.Module):
    def __init__(self):
        self.qc = 0.7
        self.qf = 0.5

    def forward(self, reference, test):
        return (reference - test).abs().mean() * self.qc


metric = FLIP()
score = metric.forward(a, b)
'''

HELPER_CLASS = '''import torch.nn as nn


class PreTrained(nn.Module):
    def __init__(self, config):
        pass

    def forward(self, x):
        return self.model(x)

    @classmethod
    def from_pretrained(cls, path):
        return build_other_model(path)


model = PreTrained.from_pretrained("weights")
'''


def _tr510(tmp_path, files: dict) -> list[str]:
    return [f.confidence for f in _found(_write(tmp_path, files), ("TR510",))]


def test_tr510_plain_values_only_is_medium(tmp_path):
    assert _tr510(tmp_path, {"flip.py": FLIP}) == ["medium"]


def test_tr510_a_layer_assigned_stays_high(tmp_path):
    assert _tr510(tmp_path, {"flip.py": FLIP.replace("self.qf = 0.5", "self.fc = torch.nn.Linear(2, 2)")}) == ["high"]


def test_tr510_class_read_only_for_its_class_methods_is_medium(tmp_path):
    assert _tr510(tmp_path, {"hf.py": HELPER_CLASS}) == ["medium"]


def test_tr510_class_also_constructed_stays_high(tmp_path):
    assert _tr510(tmp_path, {"hf.py": HELPER_CLASS + "net = PreTrained(None)\n"}) == ["high"]


def test_tr510_class_named_by_another_file_stays_high(tmp_path):
    assert _tr510(tmp_path, {"hf.py": HELPER_CLASS, "run.py": "from hf import PreTrained\nnet = PreTrained(cfg)\n"}) \
        == ["high"]


# --- TR514: `= False` typo on a tensor accumulated from detached / no-grad values (MIR's replay
# latents: `z_max = None`, then `torch.cat([z_max, z_new.clone()])` of `(z + g).detach()`; judged
# noise in blind test 57) changes nothing: low advice; on a tensor that tracks gradients it stays

MIR = '''import torch


def retrieve(gen, x, n_mem, iters):
    z_max = None
    for i in range(n_mem):
        with torch.no_grad():
            z_new = gen.sample(x)
        for j in range(iters):
            z_new.requires_grad = True
            gain = gen.score(z_new)
            z_g = torch.autograd.grad(gain, z_new)[0]
            z_new = (z_new + z_g).detach()
        if z_max is None:
            z_max = z_new.clone()
        else:
            z_max = torch.cat([z_max, z_new.clone()])
    z_max.require_grad = False
    return gen.decode(z_max)
'''


def test_tr514_typo_on_detached_accumulation_is_low_advice(tmp_path):
    assert _tr514(tmp_path, MIR) == [("advice", "low")]


def test_tr514_typo_on_a_tracked_accumulation_stays_a_defect(tmp_path):
    text = MIR.replace("z_new = (z_new + z_g).detach()", "z_new = z_new + z_g")
    assert _tr514(tmp_path, text) == [("defect", "high")]


# --- TR514: `p.require_grad = False` over the parameters of a model just put in eval mode, in a
# class that trains nothing (PIXOR's inference Detector, judged noise in blind test 57); the same
# freeze of a teacher in a trainer class that trains stays a defect

DETECTOR = '''import torch
from model import PIXOR


class Detector:
    def __init__(self, ckpt):
        self.net = PIXOR()
        self.net.load_state_dict(torch.load(ckpt))
        self.net.eval()
        for p in self.net.parameters():
            p.require_grad = False

    def __call__(self, x):
        with torch.no_grad():
            return self.net(x)
'''

TEACHER_TRAINER = DETECTOR.replace("class Detector:", "class Distiller:") + '''
    def fit(self, student, loader):
        optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
        for x, y in loader:
            optimizer.zero_grad()
            loss = ((student(x) - self.net(x)) ** 2).mean()
            loss.backward()
            optimizer.step()
'''


def test_tr514_parameter_loop_typo_in_an_inference_class_is_low_advice(tmp_path):
    assert _tr514(tmp_path, DETECTOR) == [("advice", "low")]


def test_tr514_parameter_loop_typo_in_a_training_class_stays_a_defect(tmp_path):
    assert _tr514(tmp_path, TEACHER_TRAINER) == [("defect", "high")]


# --- dead code through a wrapping decorator: a `@torch.jit.script` function whose only call is
# commented out (OpenChemFold's bpp_loss, TR411 judged noise in blind test 57) is never called;
# a registering decorator keeps it live

LOSSES = '''import torch
import torch.nn.functional as F


DECORATOR
def bpp_loss(preds, targets):
    probs = F.softmax(preds, dim=-1)
    return F.cross_entropy(probs, targets)


def plddt_loss(preds, targets):
    return F.mse_loss(preds, targets)
'''

USER = '''from losses import plddt_loss, bpp_loss


def train_step(model, batch):
    loss = plddt_loss(model(batch["x"]), batch["y"])
    # loss_bpp = bpp_loss(model.bpp, batch["bpp"])
    return loss
'''


def _tr411(tmp_path, decorator: str) -> list[str]:
    files = {"losses.py": LOSSES.replace("DECORATOR", decorator), "train.py": USER}
    return [f.confidence for f in _found(_write(tmp_path, files), ("TR411",))]


def test_jit_scripted_function_nothing_calls_is_low(tmp_path):
    assert _tr411(tmp_path, "@torch.jit.script") == ["low"]


def test_registered_function_stays_high(tmp_path):
    # (the registry imported: a decorator reading a name nothing binds stops the module at import)
    assert _tr411(tmp_path, "from registry import LOSSES\n\n\n@LOSSES.register") == ["high"]


# --- TR411 in a model file's self-test on random input (DeepLab-v3+'s Xception `__main__` block,
# judged noise in blind test 57): low advice; the same loss in a `__main__` that steps an optimizer
# stays a defect

XCEPTION = '''import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(x)


if __name__ == "__main__":
    net = Net()
    criterion = nn.CrossEntropyLoss()
    inten = torch.tensor(np.random.randn(16, 8).astype(np.float32))
    label = torch.randint(0, 10, (16,))
    for i in range(10):
        scores = F.softmax(net(inten), 1)
        loss = criterion(scores, label)
        loss.backward()
        print(i)
'''


def test_tr411_in_a_self_test_is_low_advice(tmp_path):
    found = _found(_write(tmp_path, {"xception.py": XCEPTION}), ("TR411",))
    assert [(f.kind, f.confidence) for f in found] == [("advice", "low")]


def test_tr411_in_a_main_that_steps_an_optimizer_stays(tmp_path):
    text = XCEPTION.replace("    for i in range(10):", "    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
                            "    for i in range(10):").replace("        loss.backward()\n",
                                                          "        loss.backward()\n        opt.step()\n")
    found = _found(_write(tmp_path, {"xception.py": text}), ("TR411",))
    assert [(f.kind, f.confidence) for f in found] == [("defect", "high")]


# --- call paths: an option named like a function (`--load_model`, `args.load_model`) is no call of
# it (CognitiveDistillation's MAE helpers `misc.load_model`, nothing calls them: TR520 judged false
# in blind test 57); `misc.load_model(...)` is

MISC = '''import argparse
import torch


def save_model(args, epoch, model, optimizer):
    to_save = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch, "args": args}
    torch.save(to_save, args.output_dir + "/checkpoint-%s.pth" % epoch)


def load_model(args, model, optimizer):
    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        args.start_epoch = checkpoint["epoch"] + 1
'''

TRAIN_OPTION = '''import argparse
import misc

parser = argparse.ArgumentParser()
parser.add_argument("--load_model", action="store_true")
args = parser.parse_args()
world = misc.__name__
if args.load_model:
    print("loading")
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
'''


def _never_runs_load(tmp_path, train_text: str) -> str | None:
    import ast

    from torchreview.engine.context import FileContext
    from torchreview.engine.source import SourceFile

    root = _write(tmp_path, {"misc.py": MISC, "train.py": train_text})
    path = str(root / "misc.py")
    ctx = FileContext(SourceFile(path=path, text=MISC), ast.parse(MISC), target_torch=None, has_torch=True,
                      real_path=path)
    line = next(i for i, text in enumerate(MISC.splitlines(), 1) if "torch.load(" in text)
    return ctx.call_paths.never_runs(line)


def test_option_named_like_a_function_is_no_call(tmp_path):
    assert _never_runs_load(tmp_path, TRAIN_OPTION) == "nothing in the project calls `load_model`"


def test_module_attribute_call_is_a_call(tmp_path):
    assert _never_runs_load(tmp_path, TRAIN_OPTION + "misc.load_model(args, model, optimizer)\n") is None


# --- TR517: a load whose file is an option or config value nothing shows (EpipolarPose's demo reads
# `config.MODEL.RESUME`, a released checkpoint: judged false in blind test 57) is tied to the
# project's saves only as a guess: low; a load of the file the project writes stays

TRAIN_SAVE = '''import torch
import torch.nn as nn
from net import Net

model = nn.DataParallel(Net()).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
torch.save(model.module.state_dict(), "output/final_state.pth.tar")
'''

DEMO_LOAD = '''import torch
from net import Net
from config import config

model = torch.nn.DataParallel(Net()).cuda()
checkpoint = torch.load(PATH)
model.load_state_dict(checkpoint)
model.eval()
'''


def _tr517(tmp_path, path_expr: str) -> list[str]:
    files = {"train.py": TRAIN_SAVE, "demo.py": DEMO_LOAD.replace("PATH", path_expr)}
    return [f.confidence for f in _found(_write(tmp_path, files), ("TR517",)) if f.path.endswith("demo.py")]


def test_tr517_load_of_a_configured_path_is_low(tmp_path):
    assert _tr517(tmp_path, "config.MODEL.RESUME") == ["low"]


def test_tr517_load_of_the_file_the_project_writes_stays(tmp_path):
    assert _tr517(tmp_path, '"output/final_state.pth.tar"') not in ([], ["low"])


# --- the torch a conda environment can install: its pinned CUDA toolkit caps it like its Python
# (storm's `python=3.7`, `cudatoolkit=11.1`, unpinned `pytorch`: torch 1.10 at most, where
# `torch.solve` still works; TR423 judged noise in blind test 57)

ENV = """name: storm_kit
channels:
  - pytorch
  - conda-forge
dependencies:
  - python=3.8
  - cudatoolkit=TOOLKIT
  - pytorch
  - numpy
"""

SOLVE = '''import torch


def forward_dynamics(inertia, f):
    return torch.solve(f.unsqueeze(2), inertia)[0].squeeze(2)


print(forward_dynamics(torch.eye(3)[None], torch.ones(1, 3)))
'''


def _tr423(tmp_path, toolkit: str) -> list[tuple[int, str]]:
    files = {"environment.yml": ENV.replace("TOOLKIT", toolkit), "dyn.py": SOLVE}
    return [(f.line, f.kind) for f in _found(_write(tmp_path, files), ("TR423",), detect_torch=True)]


def test_cudatoolkit_11_1_caps_torch_below_the_removal(tmp_path):
    assert _tr423(tmp_path, "11.1") == [(5, "advice")]  # deprecated there, not removed


def test_a_toolkit_the_table_does_not_know_caps_nothing(tmp_path):
    assert _tr423(tmp_path, "11.8") == [(5, "defect")]  # Python 3.8: up to torch 2.4


def test_cudatoolkit_without_the_pytorch_channel_caps_nothing(tmp_path):
    files = {"environment.yml": ENV.replace("TOOLKIT", "11.1").replace("  - pytorch\n  - conda-forge\n",
                                                                       "  - conda-forge\n"), "dyn.py": SOLVE}
    assert [(f.line, f.kind) for f in _found(_write(tmp_path, files), ("TR423",), detect_torch=True)] == \
        [(5, "defect")]


# --- TR429: one private module, one finding per file (`from torch._six import container_abcs` at the
# top and `T._six.string_classes` below: neuralnet-pytorch, judged a repeat in blind test 58)

SIX = '''import torch as T
from torch._six import container_abcs


def to_list(x):
    if isinstance(x, T._six.string_classes):
        return [x]
    return list(x) if isinstance(x, container_abcs.Iterable) else [x]
'''


def test_tr429_use_of_a_module_whose_import_is_reported_is_folded(tmp_path):
    assert [f.line for f in _found(_write(tmp_path, {"abstract.py": SIX}), ("TR429",))] == [2]


def test_tr429_use_without_the_import_is_reported(tmp_path):
    text = SIX.replace("from torch._six import container_abcs\n", "import collections.abc as container_abcs\n")
    assert [f.line for f in _found(_write(tmp_path, {"abstract.py": text}), ("TR429",))] == [6]


# --- TR507: a loss bound anew inside a `with` block each iteration does not accumulate (DER's
# `with autocast(): loss = criterion(...)`, then `loss += alpha * mse(...)`: judged false in blind
# test 58); a running total set before the loop still does

DER = '''import torch
import torch.nn.functional as F


def train(model, loader, optimizer, alpha, use_amp):
    scaler = torch.cuda.amp.GradScaler()
    total = 0
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", enabled=use_amp):
            output = model(x)
            loss = F.cross_entropy(output, y)
        loss += alpha * F.mse_loss(output, y.float())
        scaler.scale(loss.sum() / loss.size(0)).backward()
        scaler.step(optimizer)
        total += loss
    return total
'''


def test_tr507_loss_bound_in_a_with_block_each_step_is_no_accumulator(tmp_path):
    found = _found(_write(tmp_path, {"der.py": DER}), ("TR507",))
    assert [f.line for f in found] == [16]  # `total += loss` only


# --- TR511: a tensor a factory builds with a `**tensor_args` splat is placed where the caller says
# (storm's cost terms, `torch.eye(3, 3, **tensor_args)`: judged false in blind test 58); one built
# with no device stays

POSE_COST = '''import torch
import torch.nn as nn


class PoseCost(nn.Module):
    def __init__(self, weight, tensor_args={"device": "cpu", "dtype": torch.float32}):
        super().__init__()
        self.tensor_args = tensor_args
        self.weight = weight
        self.I = torch.eye(3, 3, **tensor_args)

    def forward(self, rot):
        return self.weight * ((rot - self.I) ** 2).sum()
'''


def test_tr511_factory_with_a_splat_is_placed(tmp_path):
    assert _found(_write(tmp_path, {"pose_cost.py": POSE_COST}), ("TR511",)) == []


def test_tr511_factory_without_a_device_stays(tmp_path):
    text = POSE_COST.replace("torch.eye(3, 3, **tensor_args)", "torch.eye(3, 3)")
    assert [f.line for f in _found(_write(tmp_path, {"pose_cost.py": text}), ("TR511",))] == [10]


# --- a copy of a widely used library's package in the project's tree (CKDN's `timm/`, SwinBERT's
# `src/timm/`: TR429/TR520 in upstream code, judged noise) is vendored code: medium; the library's
# own repository (an install marker beside its package) is its own code

SIX_USE = '''import torch


def is_str(x):
    return isinstance(x, torch._six.string_classes)
'''


def _tr429_confidence(tmp_path, files: dict) -> list[str]:
    return [f.confidence for f in _found(_write(tmp_path, files), ("TR429",))]


def test_vendored_library_package_is_medium(tmp_path):
    files = {"train.py": "import timm\n", "timm/__init__.py": "", "timm/data/transforms.py": SIX_USE,
             "README.md": "uses a copy of timm\n"}
    assert _tr429_confidence(tmp_path, files) == ["medium"]


def test_the_librarys_own_repository_stays_high(tmp_path):
    files = {"pyproject.toml": "[project]\nname = 'timm'\n", "timm/__init__.py": "", "timm/data/transforms.py": SIX_USE}
    assert _tr429_confidence(tmp_path, files) == ["high"]


def test_a_checkout_of_the_library_itself_stays_high(tmp_path):
    # `timm/` beside other checkouts, with no project code beside it: the library, not a copy
    files = {"timm/timm/__init__.py": "", "timm/timm/data/transforms.py": SIX_USE, "other/x.txt": ""}
    assert _tr429_confidence(tmp_path, files) == ["high"]


def test_a_folder_of_another_name_stays_high(tmp_path):
    files = {"train.py": "import mylib\n", "mylib/__init__.py": "", "mylib/data/transforms.py": SIX_USE}
    assert _tr429_confidence(tmp_path, files) == ["high"]


# --- TR518: a scheduler of the project's own handed the epoch loop's counter computes the rate from
# the epoch alone (bestfitting's `Adam3`, `scheduler.step(model, epoch, args.epochs)`: judged false in
# blind test 59); a torch scheduler stepped without the epoch still restarts

RESUME_SCHED = '''import argparse
import torch
import torch.nn.functional as F
from model import Net
from layers.scheduler import Adam3

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
parser.add_argument("--epochs", type=int, default=40)
parser.add_argument("--scheduler", default="Adam3")
args = parser.parse_args()

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
SCHEDULER_LINE
start_epoch = 0
if args.resume:
    checkpoint = torch.load(args.resume)
    start_epoch = checkpoint["epoch"]
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])
for epoch in range(start_epoch, args.epochs):
    STEP_LINE
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    torch.save({"epoch": epoch + 1, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict()},
               "checkpoint.pth")
'''


def _tr518_sched(tmp_path, scheduler: str, step: str) -> list[str]:
    text = RESUME_SCHED.replace("SCHEDULER_LINE", scheduler).replace("STEP_LINE", step)
    return [f.message for f in _found(_write(tmp_path, {"train.py": text}), ("TR518",))]


def test_tr518_own_scheduler_handed_the_epoch_is_no_restart(tmp_path):
    found = _tr518_sched(tmp_path, "scheduler = eval(args.scheduler)()", "scheduler.step(model, epoch, args.epochs)")
    assert not any("schedule restarts" in m for m in found)


def test_tr518_torch_scheduler_stepped_without_the_epoch_restarts(tmp_path):
    found = _tr518_sched(tmp_path, "scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)", "scheduler.step()")
    assert any("schedule restarts" in m for m in found)


# --- TR401: an optimizer built inside the loop over tensors the loop makes anew each pass
# (pix2pix-zero's guidance step, judged false in blind test 59) accumulates nothing; one rebuilt
# each pass over a model's parameters still does

GUIDANCE = '''import torch


def guide(unet, latents, timesteps, lr):
    for t in timesteps:
        x_in = latents.detach().clone()
        x_in.requires_grad = True
        opt = torch.optim.SGD([x_in], lr=lr)
        loss = unet(x_in, t).pow(2).sum()
        loss.backward()
        opt.step()
        latents = x_in.detach()
    return latents
'''


def test_tr401_fresh_leaves_each_pass_is_quiet(tmp_path):
    assert _found(_write(tmp_path, {"edit.py": GUIDANCE}), ("TR401",)) == []


def test_tr401_optimizer_rebuilt_over_model_parameters_is_reported(tmp_path):
    text = GUIDANCE.replace("opt = torch.optim.SGD([x_in], lr=lr)", "opt = torch.optim.SGD(unet.parameters(), lr=lr)")
    assert _found(_write(tmp_path, {"edit.py": text}), ("TR401",)) != []


# --- TR511: a `to()` override that moves the attribute on the module the parent's move returns
# (pytorch-animeGAN's ColorLoss: `new_self = super().to(device)`; judged false in blind test 59)

COLOR_LOSS = '''import torch
import torch.nn as nn


class ColorLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.L1Loss()
        self._kernel = torch.tensor([[0.299, 0.587, 0.114], [-0.147, -0.289, 0.436], [0.615, -0.515, -0.100]]).float()

    OVERRIDE

    def forward(self, a, b):
        return self.l1(a @ self._kernel, b @ self._kernel)
'''

MOVE = '''def to(self, device):
        new_self = super().to(device)
        new_self._kernel = new_self._kernel.to(device)
        return new_self'''


def test_tr511_to_override_moving_the_attribute_on_the_moved_module_is_quiet(tmp_path):
    assert _found(_write(tmp_path, {"losses.py": COLOR_LOSS.replace("OVERRIDE", MOVE)}), ("TR511",)) == []


def test_tr511_to_override_moving_something_else_is_reported(tmp_path):
    other = MOVE.replace("new_self._kernel = new_self._kernel.to(device)", "new_self.scale = 1.0")
    assert _found(_write(tmp_path, {"losses.py": COLOR_LOSS.replace("OVERRIDE", other)}), ("TR511",)) != []


# --- a finding of medium confidence in a vendored copy drops one step too: low (TR520 in CKDN's
# copy of timm, judged noise in blind test 59)

UNUSED_LAYER = '''import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
'''


def _tr516(tmp_path, files: dict) -> list[str]:
    return [f.confidence for f in _found(_write(tmp_path, files), ("TR516",))]


def test_medium_finding_in_a_vendored_copy_is_low(tmp_path):
    files = {"train.py": "import timm\nfrom timm.models.block import Block\nBlock()\n", "timm/__init__.py": "",
             "timm/models/block.py": UNUSED_LAYER}
    assert _tr516(tmp_path, files) == ["low"]


def test_medium_finding_in_the_project_stays_medium(tmp_path):
    files = {"train.py": "from mylib.block import Block\nBlock()\n", "mylib/__init__.py": "",
             "mylib/block.py": UNUSED_LAYER}
    assert _tr516(tmp_path, files) == ["medium"]


# --- TR107: a credential-named variable holding a data file's name (torch-points3d's notebook:
# `token = 'pointnet2_charlesmsg_debug_ShapeNetDataset.pickle'`, judged false in blind test 60)

def _tr107(tmp_path, value: str) -> list[int]:
    text = f"import pickle\n\ntoken = '{value}'\nwith open(token, 'rb') as f:\n    data = pickle.load(f)\n"
    return [f.line for f in _found(_write(tmp_path, {"notebook_cell.py": text}), ("TR107",))]


def test_tr107_a_file_name_in_a_token_variable_is_quiet(tmp_path):
    assert _tr107(tmp_path, "pointnet2_charlesmsg_debug_ShapeNetDataset.pickle") == []


def test_tr107_a_token_shaped_value_is_reported(tmp_path):
    assert _tr107(tmp_path, "hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z") == [3]


# --- TR416: one accumulation loop, one finding -- also when a helper its function calls holds the
# unscale and the function the clip (torch-points3d, the second judged a repeat in blind test 60)

ACCUM = '''import torch


class Trainer:
    def _do_unscale_loss(self):
        self.scaler.unscale_(self.optimizer)

    def optimize(self, loader, accum):
        for i, (x, y) in enumerate(loader):
            with torch.autocast("cuda"):
                loss = self.model(x, y)
            self.scaler.scale(loss).backward()
            self._do_unscale_loss()
            torch.nn.utils.clip_grad_value_(self.model.parameters(), 1.0)
            if (i + 1) % accum == 0:
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad()
'''


def test_tr416_unscale_in_a_helper_and_clip_in_the_loop_are_one_finding(tmp_path):
    from torchreview.engine.runner import Settings, run_review

    root = _write(tmp_path, {"trainer.py": ACCUM})
    findings = run_review([str(root)], Settings(rule_codes=("TR416",), jobs=1, min_confidence="low")).findings
    assert len(findings) == 1 and "1 more place" in findings[0].message


# --- TR101: a web input checked against a fixed collection before it names the file (AnyLoc's
# Gradio demo: `assert dm in DOMAINS`, then `os.path.join(vc_dir, dm, "c_centers.pt")`: judged false
# in blind test 60) picks one of the project's own files; unchecked, it stays

GRADIO = '''import os
import gradio as gr
import torch

DOMAINS = ["aerial", "indoor", "urban"]
vc_dir = "./cache/vocabulary"


def get_clusters(domain):
    dm = str(domain).lower()
    CHECK
    path = os.path.join(vc_dir, dm, "c_centers.pt")
    return torch.load(path)


with gr.Blocks() as demo:
    domain = gr.Radio(DOMAINS)
    out = gr.Textbox()
    gr.Button("load").click(get_clusters, domain, out)
'''


def _tr101(tmp_path, check: str) -> list[int]:
    text = GRADIO.replace("CHECK", check)
    return [f.line for f in _found(_write(tmp_path, {"demo.py": text}), ("TR101",))]


def test_tr101_input_checked_against_a_fixed_list_is_quiet(tmp_path):
    assert _tr101(tmp_path, 'assert dm in DOMAINS, "Invalid domain"') == []


def test_tr101_input_rebound_after_the_check_is_reported(tmp_path):
    assert _tr101(tmp_path, 'assert dm in DOMAINS\n    dm = str(domain)') != []
