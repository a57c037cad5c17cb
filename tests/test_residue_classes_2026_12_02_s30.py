"""Residue classes of the thirtieth session (blind test 113, targeted sets nr222-nr224): each
positive or near-miss below failed on the code before its fix."""
from __future__ import annotations

import pytest

from residue_helpers import found, write
from torchreview.engine.runner import Settings, run_review


# --- TR108: a data pickle in a folder other than the one a `torch.load` path pattern names
# (`torch.load('./models/' + name + '.pkl')` beside joblib pickles in `bench_mark_models/`, which
# only `joblib.load` reads: judged false) is one no `torch.load` of the project reads -> low; a
# pickle in the named folder stays a file the load reads -----------------------------------------

PREDICT = '''import torch


def load(model_name):
    check_point = torch.load('./models/' + model_name + ".pkl")
    return check_point["model"]
'''


def _svr_pickle(path):
    """A protocol-2 pickle instantiating an sklearn class (GLOBAL, EMPTY_TUPLE, NEWOBJ, BUILD):
    outside the weights-only allow-list, running no code; bytes only, never unpickled."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x80\x02csklearn.svm._classes\nSVR\nq\x00)\x81q\x01}q\x02X\x01\x00\x00\x00Cq\x03K\x01sb.")


def _confidences(tmp_path, folder):
    root = write(tmp_path, {"model.py": PREDICT})
    _svr_pickle(root / folder / "AAPL_svm.pkl")
    return [f.confidence for f in found(root, ("TR108",))]


def test_tr108_pickle_outside_the_folder_a_load_names_is_low(tmp_path):
    assert _confidences(tmp_path, "bench_mark_models") == ["low"]


@pytest.mark.parametrize("folder", ["models", "runs/models"])
def test_tr108_pickle_in_the_folder_a_load_names_keeps_its_confidence(tmp_path, folder):
    assert _confidences(tmp_path, folder) != ["low"]


# --- loops: a step under `if <flag>:` where the flag is a parameter every call of its function
# leaves falsy (`evaluate(loader, model, is_training=False)`, always called without it, in a
# notebook or an entry script) never runs: the evaluation loop is no training loop (TR401 on a
# stock-prediction notebook's `evaluate`, judged false); a call that passes True keeps it ---------

EVALUATE = '''import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.MSELoss()
loader = [(torch.randn(2, 4), torch.randn(2, 1))]


def evaluate(val_loader, model, is_training=False):
    total = 0.0
    model.eval()
    for x, y in val_loader:
        loss = criterion(model(x), y)
        if is_training:
            loss.backward()
            optimizer.step()
        total += loss.item()
    return total

'''


def _notebook(*cells: str) -> str:
    import json
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": c} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize("call", ["evaluate(loader, model)", "evaluate(val_loader=loader, model=model, is_training=False)"])
def test_tr401_step_under_a_flag_every_call_leaves_off_is_silent(tmp_path, call):
    notebook = write(tmp_path / "nb", {"eval.ipynb": _notebook(EVALUATE, f"score = {call}\n")})
    script = write(tmp_path / "py", {"eval.py": EVALUATE + f"\nif __name__ == '__main__':\n    score = {call}\n"})
    assert found(notebook, ("TR401",)) == []
    assert found(script, ("TR401",)) == []


@pytest.mark.parametrize("calls", ["evaluate(loader, model, is_training=True)",
                                   "evaluate(loader, model)\nevaluate(loader, model, True)"])
def test_tr401_step_under_a_flag_some_call_sets_is_reported(tmp_path, calls):
    notebook = write(tmp_path, {"eval.ipynb": _notebook(EVALUATE, calls + "\n")})
    assert [f.code for f in found(notebook, ("TR401",))] == ["TR401"]


def test_tr401_flag_of_a_module_other_files_call_is_not_known_off(tmp_path):
    # another project file names `evaluate`: its calls there may pass the flag
    root = write(tmp_path, {"lib.py": EVALUATE + "\nscore = evaluate(loader, model)\n",
                            "train.py": "from lib import evaluate, loader, model\nevaluate(loader, model, flag)\n"})
    assert [f.code for f in found(root, ("TR401",))] == ["TR401"]


# --- TR519: a loop function's parameter named `test_loader`, in a module of its own, that the
# project's entry script hands its validation half (`training_loop(model, dataloader_train,
# dataloader_eval, ...)`): the split is what the callers pass, judged in their file, not the
# parameter's name (an emotion classifier, judged false); callers passing the test split keep it --

LOOP = '''import torch


def evaluate(model, loader, criterion):
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += criterion(model(x), y).item()
    return total


def training_loop(model, train_loader, test_loader, optimizer, criterion, best_val_loss):
    for epoch in range(10):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()
        val_loss = evaluate(model, test_loader, criterion)
        if val_loss < best_val_loss:
            best_val_loss = val_loss
            torch.save(model.state_dict(), "best.pth")
    return model
'''

DATA = '''import torch
from torch.utils.data import DataLoader, random_split


def get_dataloader(dataset, ratio_small=2):
    small = len(dataset) // ratio_small
    large_part, small_part = random_split(dataset, [len(dataset) - small, small])
    return DataLoader(large_part), DataLoader(small_part)
'''

MAIN = '''import torch
from torch import nn
from data import get_dataloader
from loop import training_loop, evaluate

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
dataloader_train, _ = get_dataloader(train_set, ratio_small=5)
{loaders}
model = training_loop(model, dataloader_train, {passed}, optimizer, criterion, float("inf"))
print("test", evaluate(model, dataloader_test, criterion))
'''


def _tr519(tmp_path, loaders, passed):
    root = write(tmp_path, {"loop.py": LOOP, "data.py": DATA,
                            "main.py": MAIN.format(loaders=loaders, passed=passed)})
    return [f.code for f in found(root, ("TR519",))]


def test_tr519_parameter_named_test_given_the_validation_half_elsewhere_is_silent(tmp_path):
    assert _tr519(tmp_path, "dataloader_eval, dataloader_test = get_dataloader(test_set)", "dataloader_eval") == []


@pytest.mark.parametrize("loaders, passed", [
    ("dataloader_eval, dataloader_test = get_dataloader(test_set)", "dataloader_test"),
    ("from torchvision.datasets import CIFAR10\ndataloader_test = torch.utils.data.DataLoader("
     "CIFAR10('data', train=False))", "dataloader_test"),
])
def test_tr519_parameter_given_the_test_split_elsewhere_is_reported(tmp_path, loaders, passed):
    assert _tr519(tmp_path, loaders, passed) == ["TR519"]


# --- TR207: a detector's validation loss, `loss_dict = model(images, targets)` read as a dict of
# losses under `no_grad` in a `validate(loader, model)` the script hands a freshly built model:
# torchvision's detectors return losses only in train mode, so the call is in train mode on purpose
# (a Faster R-CNN trainer, judged false); a prediction (`outputs = model(images)`) or a loss read
# from an output object (`model(x, labels=y).loss`) stays reported ----------------------------------

DETECTOR = '''import torch
import torchvision


def validate(loader, model):
    losses = []
    for images, targets in loader:
        with torch.no_grad():
            {call}
        losses.append({read})
    return losses


model = torchvision.models.detection.fasterrcnn_resnet50_fpn(weights=None)
model.roi_heads.dropout = torch.nn.Dropout(0.2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for images, targets in train_loader:
    loss = sum(model(images, targets).values())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
validate(valid_loader, model)
'''


def _tr207(tmp_path, call, read):
    root = write(tmp_path, {"train.py": DETECTOR.format(call=call, read=read)})
    return [f.code for f in found(root, ("TR207",))]


@pytest.mark.parametrize("call, read", [
    ("loss_dict = model(images, targets)", "sum(loss for loss in loss_dict.values()).item()"),
    ("loss_dict = model(images, targets=targets)", "sum(v.item() for _, v in loss_dict.items())"),
])
def test_tr207_detector_loss_dict_in_train_mode_is_silent(tmp_path, call, read):
    assert _tr207(tmp_path, call, read) == []


@pytest.mark.parametrize("call, read", [
    ("outputs = model(images)", "outputs"),
    ("out = model(images, labels=targets)", "out.loss.item()"),
    ("out = model(images, targets)", "out"),
])
def test_tr207_predictions_or_output_losses_stay_reported(tmp_path, call, read):
    assert _tr207(tmp_path, call, read) == ["TR207"]


# --- TR502: the `else` of an `if cuda:` whose branch first moves its inputs (`img = img.cuda();
# conv2d = conv2d.cuda()`) and then converts with `.cpu()`: the `else` is the CPU path, its
# `.numpy()` needs no `.cpu()` (a tiling helper of a Kaggle solution, judged false); an `else`
# that differs in more than the moves stays reported ---------------------------------------------

TILES = '''import torch


def calc_sums(img, tile, cuda=False):
    img = torch.Tensor(img).unsqueeze(0)
    conv2d = torch.nn.Conv2d(3, 1, kernel_size=tile, stride=tile, bias=False)
    if cuda:
        img = img.cuda()
        conv2d = conv2d.cuda()
        sums = conv2d(img).squeeze().cpu().detach().numpy()
    else:
        {else_branch}
    return sums
'''


def test_tr502_else_of_a_branch_that_moves_its_inputs_to_cuda_is_the_cpu_path(tmp_path):
    root = write(tmp_path, {"tiles.py": TILES.format(else_branch="sums = conv2d(img).squeeze().detach().numpy()")})
    assert [f for f in found(root, ("TR502",)) if "CUDA" in f.message] == []


def test_tr502_else_that_differs_in_more_than_the_moves_stays_reported(tmp_path):
    root = write(tmp_path, {"tiles.py": TILES.format(else_branch="sums = conv2d(img.cuda()).squeeze().detach().numpy()")})
    assert [f.code for f in found(root, ("TR502",)) if "CUDA" in f.message] == ["TR502"]


# --- checkpoint links: a save that spells the load's file name exactly outranks one whose pattern
# only admits it (`'best_model.pth'` saved from the DDP model beside a final
# `f'{data}_{fusion}.pth'` saved from `model.module`): reloading the best file into the DDP model,
# or the final file into a plain model, is no prefix mismatch (TR517, judged false twice); loading
# the DDP model's file into a plain model is one ------------------------------------------------

DDP_TRAIN = '''import os
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args, save_path, final_model_path, loader):
    model = DDP(nn.Linear(4, 2).cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        torch.save({"epoch": epoch, "model_state_dict": model.state_dict()},
                   os.path.join(save_path, "best_model.pth"))
    model.load_state_dict(torch.load(os.path.join(save_path, "best_model.pth"))["model_state_dict"])
    torch.save({"model_state_dict": model.module.state_dict()},
               os.path.join(final_model_path, f"{args.data}_{args.fusion}.pth"))
'''

TEST = '''import os
import torch
from torch import nn


def main(args):
    model = nn.Linear(4, 2)
    model.load_state_dict(torch.load(os.path.join(args.ckpt_dir, NAME))["model_state_dict"])
    return model
'''


def _tr517(tmp_path, name):
    root = write(tmp_path, {"train_ddp.py": DDP_TRAIN, "test.py": TEST.replace("NAME", name)})
    return sorted((f.path.rsplit("/", 1)[-1], f.line) for f in found(root, ("TR517",)))


def test_tr517_exact_file_names_link_the_right_saves(tmp_path):
    assert _tr517(tmp_path, 'f"{args.data}_{args.fusion}.pth"') == []


def test_tr517_plain_model_loading_the_ddp_models_file_is_reported(tmp_path):
    assert _tr517(tmp_path, '"best_model.pth"') == [("test.py", 8)]


# --- TR519: a metric named `test_stats` that one branch unpacks from an evaluation of the
# validation loader and the other reads back from a results file (BEiT-3's fine-tuning loop):
# the branches' values decide, not the name (judged false); a branch over the test loader keeps it

SELECT = '''import torch
from torch.utils.data import DataLoader
from torchvision.datasets import CIFAR10


def evaluate(loader, model):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return {"acc": correct}, "acc"


def main(args, model, read_results):
    data_loader_val = DataLoader(CIFAR10("data", train=True))
    data_loader_test = DataLoader(CIFAR10("data", train=False))
    max_accuracy = 0.0
    for epoch in range(10):
        if args.task != "captioning":
            test_stats, task_key = evaluate(LOADER, model)
        else:
            task_key = "CIDEr"
            test_stats = read_results(args.result_file)
        if max_accuracy < test_stats[task_key]:
            max_accuracy = test_stats[task_key]
            torch.save(model.state_dict(), "best.pth")
'''


def test_tr519_metric_named_test_from_the_validation_loader_in_one_branch_is_silent(tmp_path):
    root = write(tmp_path, {"finetune.py": SELECT.replace("LOADER", "data_loader_val")})
    assert found(root, ("TR519",)) == []


def test_tr519_metric_named_test_from_the_test_loader_is_reported(tmp_path):
    root = write(tmp_path, {"finetune.py": SELECT.replace("LOADER", "data_loader_test")})
    assert [f.code for f in found(root, ("TR519",))] == ["TR519"]


# --- TR108: two models one script saved whole (`__main__.CNN1DModel` with convolutions,
# `__main__.FCModel` with linear layers) are one root cause, keyed by their own classes' module,
# not by the torch layers each holds (judged a repeat); a checkpoint pickling another package's
# class stays its own finding -------------------------------------------------------------------

def _whole_model(path, cls: bytes, layer: bytes):
    """A torch-zip checkpoint pickling ``__main__.<cls>`` holding a ``torch.nn`` layer (bytes only)."""
    import zipfile
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (b"\x80\x02c" + b"__main__\n" + cls + b"\nq\x00)\x81q\x01}q\x02X\x01\x00\x00\x00lq\x03c" + layer +
            b"\nq\x04)\x81q\x05}q\x06bsb.")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{path.stem}/data.pkl", data)
        archive.writestr(f"{path.stem}/version", "3\n")


def test_tr108_models_of_one_script_saved_whole_are_one_finding(tmp_path):
    root = write(tmp_path, {"train.py": "import torch\n"})
    _whole_model(root / "models" / "CNN1DModel.pth", b"CNN1DModel", b"torch.nn.modules.conv\nConv1d")
    _whole_model(root / "models" / "FCModel.pth", b"FCModel", b"torch.nn.modules.linear\nLinear")
    findings = run_review([str(root)], Settings(rule_codes=("TR108",), jobs=1, min_confidence="low")).findings
    assert len(findings) == 1 and len(findings[0].parts or (findings[0],)) == 2


def test_tr108_another_packages_class_stays_its_own_finding(tmp_path):
    root = write(tmp_path, {"train.py": "import torch\n"})
    _whole_model(root / "models" / "CNN1DModel.pth", b"CNN1DModel", b"torch.nn.modules.conv\nConv1d")
    _svr_pickle(root / "models" / "svm.pkl")
    findings = run_review([str(root)], Settings(rule_codes=("TR108",), jobs=1, min_confidence="low")).findings
    assert len(findings) == 2


# --- TR416: `zero_grad()` under one `if train_mode:` and the `unscale_` under a second `if
# train_mode:` of the same pass run together: nothing accumulates, a step skipped on non-finite
# gradients only drops that batch (a BirdCLEF trainer, judged false); a `zero_grad()` on an
# accumulation schedule keeps the finding ----------------------------------------------------------

GUARDED = '''import torch


def run_epoch(model, loader, optimizer, scaler, criterion, train_mode=True, accum=4):
    for batch_idx, (x, y) in enumerate(loader):
        if train_mode:
            ZERO_LINE
        with torch.autocast("cuda"):
            loss = criterion(model(x), y)
        if train_mode:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            finite = all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
            if finite:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
            scaler.update()
'''


def test_tr416_zero_grad_and_unscale_under_the_same_flag_twice_is_silent(tmp_path):
    root = write(tmp_path, {"train.py": GUARDED.replace("ZERO_LINE", "optimizer.zero_grad(set_to_none=True)")})
    assert found(root, ("TR416",)) == []


def test_tr416_zero_grad_on_an_accumulation_schedule_is_reported(tmp_path):
    root = write(tmp_path, {"train.py": GUARDED.replace(
        "ZERO_LINE", "if batch_idx % accum == 0:\n                optimizer.zero_grad(set_to_none=True)")})
    assert [f.code for f in found(root, ("TR416",))] == ["TR416"]


# --- options: `Config.num_workers` of a class of the module used as a settings namespace (`class
# Config: num_workers = 0` in a Kaggle notebook) holds the literal its body assigns once, when the
# file stores that attribute nowhere: the loaders run without workers (TR426, judged false); a
# class attribute the file sets again, or a value that is not 0, keeps the finding ---------------

WORKERS = '''import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Config:
    seed = 42
    num_workers = WORKERS


class Noisy(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, i):
        return torch.tensor(np.random.random() + i)


torch.manual_seed(Config.seed)
np.random.seed(Config.seed)
AFTER
loader = DataLoader(Noisy(), batch_size=4, shuffle=True, num_workers=Config.num_workers)
'''


def _tr426(tmp_path, workers, after=""):
    root = write(tmp_path, {"requirements.txt": "torch==1.8.0\n",
                            "train.py": WORKERS.replace("WORKERS", workers).replace("AFTER", after)})
    return [f.code for f in found(root, ("TR426",))]


def test_tr426_workers_from_a_settings_class_holding_0_is_silent(tmp_path):
    assert _tr426(tmp_path, "0") == []


@pytest.mark.parametrize("workers, after", [("4", ""), ("0", "Config.num_workers = 4")])
def test_tr426_workers_from_a_settings_class_otherwise_is_reported(tmp_path, workers, after):
    assert _tr426(tmp_path, workers, after) == ["TR426"]


# --- TR107: one leaked key pasted into the scripts of two sub-projects (each folder with its own
# requirements) is one secret: one finding listing both places (a Kaggle solution's W&B key in
# `1D_Model/` and `datasaurus/`, judged a repeat); two different keys stay two findings -----------

def _wandb(key: str) -> str:
    return f'import torch\nimport wandb\n\nwandb.login(key="{key}")\n'


KEY_A = "1b08" + "c3d9e7f2a4b6c8d0e1f3a5b7c9d2e4f6a8b0"
KEY_B = "9f7e" + "d5c3b1a0f2e4d6c8b0a9f1e3d5c7b9a2f4e6"


@pytest.mark.parametrize("second, count", [(KEY_A, 1), (KEY_B, 2)])
def test_tr107_one_key_in_two_sub_projects_is_one_finding(tmp_path, second, count):
    root = write(tmp_path, {"one/requirements.txt": "torch\n", "one/train.py": _wandb(KEY_A),
                            "two/requirements.txt": "torch\n", "two/train.py": _wandb(second)})
    findings = run_review([str(root)], Settings(rule_codes=("TR107",), jobs=1, min_confidence="low")).findings
    assert len(findings) == count


# --- TR511: a KV cache kept as a plain tensor in a file that builds its model while CUDA tensors
# are the default (`torch.set_default_tensor_type(torch.cuda.BFloat16Tensor)`, llm.c's Llama 3):
# the tensor is born on the GPU (judged false); the same file without that default is reported ---

CACHE = '''import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.proj = nn.Linear(n, n)
        self.cache_k = torch.zeros((4, 16, n))

    def forward(self, x, start):
        self.cache_k[:, start] = self.proj(x)
        return self.cache_k[:, : start + 1].sum(1)


def build(n):
    DEFAULT
    model = Attention(n)
    return model
'''


@pytest.mark.parametrize("default, codes", [
    ("torch.set_default_tensor_type(torch.cuda.BFloat16Tensor)", []),
    ('torch.set_default_device("cuda")', []),
    ("torch.set_default_dtype(torch.float32)", ["TR511"]),
])
def test_tr511_plain_tensor_built_with_cuda_default(tmp_path, default, codes):
    root = write(tmp_path, {"model.py": CACHE.replace("DEFAULT", default)})
    assert [f.code for f in found(root, ("TR511",)) if "does not move it" in f.message] == codes


# --- splits: `train_loader, test_loader = get_loader(args)` of a project module whose
# `get_loader` returns `train_loader, val_loader`, the second built over `split="val"` (its
# test-stage branch returns one loader, `DataLoader(...) if valset is not None else None`): the
# name `test_loader` is the validation split there (TR519 on a chest X-ray trainer, judged false);
# a helper whose second loader is built over `split="test"` keeps the finding ---------------------

LOADERS = '''from torch.utils.data import DataLoader
from .my_dataset import XRAY


def get_loader(args):
    if args.stage == "test":
        testset = XRAY(args.root, split="test")
        return DataLoader(testset)
    trainset = XRAY(args.root, split="train")
    valset = XRAY(args.root, split="SECOND")
    train_loader = DataLoader(trainset, shuffle=True)
    val_loader = DataLoader(valset) if valset is not None else None
    return train_loader, val_loader
'''

TRAINER = '''import torch
from utils.data_utils import get_loader


def valid(model, loader):
    with torch.no_grad():
        return sum(model(x).mean().item() for x, _ in loader)


def train(args, model, optimizer):
    train_loader, test_loader = get_loader(args)
    best = 0.0
    for epoch in range(10):
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        score = valid(model, test_loader)
        if best < score:
            best = score
            torch.save(model.state_dict(), "best.pth")
'''


@pytest.mark.parametrize("second, codes", [("val", []), ("test", ["TR519"])])
def test_tr519_second_loader_of_another_modules_helper(tmp_path, second, codes):
    root = write(tmp_path, {"utils/__init__.py": "", "utils/my_dataset.py": "class XRAY:\\n    pass\\n",
                            "utils/data_utils.py": LOADERS.replace("SECOND", second), "train.py": TRAINER})
    assert [f.code for f in found(root, ("TR519",))] == codes


# --- TR518: a script's top-level resume reading the optimizer's own file right after the model's,
# from a path derived from it (`torch.load(ckpt.replace('model_', 'optimizer_'))`), is one resume
# that restores the optimizer (a context-compression trainer, judged false); with no optimizer
# load it stays reported --------------------------------------------------------------------------

RESUME = '''import sys
import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
resume_checkpoint = sys.argv[1] if len(sys.argv) > 1 else None
start_step = 0
if resume_checkpoint is not None:
    checkpoint = torch.load(resume_checkpoint)
    model.load_state_dict(checkpoint["model"])
    start_step = checkpoint["step"]
    del checkpoint
    OPTIMIZER
for step in range(start_step, 100):
    optimizer.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    torch.save({"model": model.state_dict(), "step": step}, f"model_{step}.pt")
    torch.save({"optimizer": optimizer.state_dict()}, f"optimizer_{step}.pt")
'''


@pytest.mark.parametrize("optimizer, codes", [
    ("optimizer_checkpoint = torch.load(resume_checkpoint.replace('model_', 'optimizer_'))\n"
     "    optimizer.load_state_dict(optimizer_checkpoint['optimizer'])", []),
    ("pass", ["TR518"]),
])
def test_tr518_optimizer_file_read_right_after_the_model(tmp_path, optimizer, codes):
    root = write(tmp_path, {"train.py": RESUME.replace("OPTIMIZER", optimizer)})
    assert [f.code for f in found(root, ("TR518",)) if "optimizer" in f.message] == codes


# --- TR416's message: the `unscale_` of the GradScaler branch does not run on the plain branch's
# path, so the plain branch's clip under accumulation is not told a second `unscale_` raises
# (a cassava trainer, true but with a wrong aside) -----------------------------------------------

BRANCHES = '''import torch


def train(model, loader, optimizer, scaler, config):
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        if config.amp:
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
        else:
            if step % config.accum == 0:
                optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if step % config.accum == config.accum - 1:
                optimizer.step()
'''


def test_tr416_plain_branch_clip_is_not_told_about_the_amp_branchs_unscale(tmp_path):
    findings = found(write(tmp_path, {"train.py": BRANCHES}), ("TR416",))
    assert [f.line for f in findings] == [18]
    assert "unscale_" not in findings[0].message
