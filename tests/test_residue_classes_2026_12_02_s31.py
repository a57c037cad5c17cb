"""Residue classes of the thirty-first session (new-rule findings judged noise or false in earlier
blind tests): each positive or near-miss below failed on the code before its fix."""
from __future__ import annotations

import pytest

from residue_helpers import found, write


# --- TR218: a micro-batch loop `for _ in range(cfg.train.grad_accum_steps)` whose count every shipped
# configuration leaves at 1 runs once: nothing accumulates at the defaults (judged noise: "grad_accum_steps
# is 1 in configs/default.yaml"); a shipped configuration that raises it keeps the finding ---------------

INNER = '''import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train(cfg, model, loader, optimizer):
    model = DDP(model)
    for epoch in range(cfg.train.epochs):
        for batch in loader:
            for _ in range(cfg.train.grad_accum_steps):
                loss = nn.functional.mse_loss(model(batch), batch) / cfg.train.grad_accum_steps
                loss.backward()
            optimizer.step()
            optimizer.zero_grad()
'''


@pytest.mark.parametrize("accum, confidence", [("1", "low"), ("4", "high")])
def test_tr218_micro_batch_loop_once_at_the_defaults_is_low(tmp_path, accum, confidence):
    root = write(tmp_path, {"pyproject.toml": "", "src/train.py": INNER,
                            "configs/default.yaml": f"train:\n  epochs: 10\n  grad_accum_steps: {accum}\n"})
    assert [(f.line, f.confidence) for f in found(root, ("TR218",))] == [(12, confidence)]


# the configuration comes through the project's own helpers: `cfg = load_config(args.config)` with
# `--config` defaulting to a shipped YAML file, then `cfg = merge_cli_overrides(cfg, args.override)`,
# and the count is `int(cfg["train"].get("grad_accum_steps", 1))` (judged noise: the shipped default is 1)

HELPERS = '''import yaml


def load_config(path):
    with open(path) as fh:
        return yaml.safe_load(fh)


def merge_cli_overrides(cfg, overrides):
    for item in overrides or ():
        key, value = item.split("=")
        cfg[key] = value
    return cfg
'''

MAIN = '''import argparse

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from utils import load_config, merge_cli_overrides


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=str, default="configs/default.yaml")
    parser.add_argument("--override", nargs="*")
    args = parser.parse_args()
    cfg = load_config(args.config)
    cfg = merge_cli_overrides(cfg, args.override)
    model = DDP(nn.Linear(4, 4))
    optimizer = torch.optim.AdamW(model.parameters())
    grad_accum = int(cfg["train"].get("grad_accum_steps", 1))
    loader = iter([torch.randn(2, 4)] * 100)
    step = 0
    while step < cfg["train"]["max_iters"]:
        optimizer.zero_grad()
        for _ in range(grad_accum):
            x = next(loader)
            loss = model(x).pow(2).mean() / grad_accum
            loss.backward()
        optimizer.step()
        step += 1


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("accum, confidence", [("1", "low"), ("8", "high")])
def test_tr218_count_from_a_project_loaded_config_at_one_is_low(tmp_path, accum, confidence):
    root = write(tmp_path, {"src/utils.py": HELPERS, "src/train.py": MAIN,
                            "configs/default.yaml": f"train:\n  max_iters: 10\n  grad_accum_steps: {accum}\n"})
    assert [(f.line, f.confidence) for f in found(root, ("TR218",))] == [(27, confidence)]


# --- TR518: weights put in with `strict=False` by a load nothing names a resume (`--loadmodel`, "load the
# weights from a specific checkpoint") start a new stage from them: a stereo network's KITTI fine-tune
# from its SceneFlow checkpoint restarts its epochs on purpose (judged false) -> low; the same load with
# strict keys, or one named a resume, keeps its confidence -----------------------------------------------

LOADMODEL = '''import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--OPTION", help="load the weights from a specific checkpoint")
args = parser.parse_args()
model = nn.Linear(4, 4)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
if args.OPTION is not None:
    state_dict = torch.load(args.OPTION)
    model.load_state_dict(state_dict["state_dict"]STRICT)
    if "optimizer" in state_dict:
        optimizer.load_state_dict(state_dict["optimizer"])
for epoch in range(1, args.epochs + 1):
    for x in [torch.randn(2, 4)]:
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
    torch.save({"epoch": epoch, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict()},
               f"checkpoint_{epoch}.tar")
'''


@pytest.mark.parametrize("option, strict, low", [("loadmodel", ", strict=False", True),
                                                 ("loadmodel", "", False),
                                                 ("resume", ", strict=False", False)])
def test_tr518_non_strict_weights_of_a_load_not_named_resume_are_low(tmp_path, option, strict, low):
    root = write(tmp_path, {"train.py": LOADMODEL.replace("OPTION", option).replace("STRICT", strict)})
    found_ = [f for f in found(root, ("TR518",)) if "counter" in f.message]
    assert [f.line for f in found_] == [13]
    assert (found_[0].confidence == "low") is low


# --- TR519: a Hugging Face run that ends before its first evaluation (`max_steps=3`, `eval_steps=120`)
# chooses nothing by its `eval_dataset` (a smoke run of a fine-tuning notebook, judged false) ----------

HF = '''import torch
from datasets import load_dataset
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

ds = load_dataset("some/corpus")
test_dataset = ds["test"]
max_steps = MAX
args = TrainingArguments(output_dir="out", max_steps=max_steps, eval_steps=120, save_steps=120,
                         evaluation_strategy="steps", load_best_model_at_end=True)
trainer = Trainer(model=AutoModelForCausalLM.from_pretrained("gpt2"), args=args,
                  train_dataset=ds["train"], eval_dataset=test_dataset)
trainer.train()
'''


@pytest.mark.parametrize("steps, lines", [("3", []), ("1000", [11])])
def test_tr519_trainer_that_stops_before_its_first_evaluation_chooses_nothing(tmp_path, steps, lines):
    root = write(tmp_path, {"finetune.py": HF.replace("MAX", steps)})
    assert [f.line for f in found(root, ("TR519",))] == lines


# --- loops: `if (batch_idx + 1) % 1 == 0: optimizer.step()` steps after every backward -- a schedule of
# period one is no accumulation (TR218 on a grasp-detection DDP script, judged false); period 2 accumulates

PERIOD = '''import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train(loader):
    net = DDP(nn.Linear(4, 4))
    optimizer = torch.optim.Adam(net.parameters())
    for batch_idx, x in enumerate(loader):
        loss = net(x).pow(2).mean()
        loss.backward()
        if (batch_idx + 1) % PERIOD == 0:
            optimizer.step()
            optimizer.zero_grad()
'''


@pytest.mark.parametrize("period, lines", [("1", []), ("2", [11])])
def test_loops_a_modulo_schedule_of_period_one_is_every_step(tmp_path, period, lines):
    root = write(tmp_path, {"train.py": PERIOD.replace("PERIOD", period)})
    assert [f.line for f in found(root, ("TR218",))] == lines


# --- checkpoints: a model name rebound to a fresh, unwrapped model earlier in the block that holds the load
# (a per-fold `model = Classifier(...)` in the inference loop, after the training loop's `model = DDP(model)`)
# is unwrapped at the load (TR517 judged false); a load before any rebinding still sees the wrap ----------

FOLDS = '''import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main(n_folds, main_process):
    for fold in range(n_folds):
        model = nn.Linear(4, 4)
        model = DDP(model)
        torch.save({"model_state": model.module.state_dict()}, f"best_fold{fold}.pth")
    if main_process:
        for fold in range(n_folds):
            REBIND
            checkpoint = torch.load(f"best_fold{fold}.pth")
            model.load_state_dict(checkpoint["model_state"])
'''


@pytest.mark.parametrize("rebind, lines", [("model = nn.Linear(4, 4)", []), ("pass", [15])])
def test_checkpoints_a_rebinding_before_the_load_in_its_block_unwraps(tmp_path, rebind, lines):
    root = write(tmp_path, {"infer.py": FOLDS.replace("REBIND", rebind)})
    assert [f.line for f in found(root, ("TR517",))] == lines


# --- devices: a `torch.device` never equals a string, so `if device == 'cuda': net = DataParallel(net)`
# never wraps (torch 2.13: `torch.device('cuda') == 'cuda'` is False) and the checkpoint has no `module.`
# keys (TR517 on a course notebook, judged false); a device held as a string does wrap ---------------------

DEVICE_TEST = '''import torch
from torch import nn

device = DEVICE
net = nn.Linear(4, 4).to(device)
if device == "cuda":
    net = torch.nn.DataParallel(net)
torch.save(net.state_dict(), "ckpt.pth")
fresh = nn.Linear(4, 4)
fresh.load_state_dict(torch.load("ckpt.pth"))
'''


@pytest.mark.parametrize("device, lines", [('torch.device("cuda" if torch.cuda.is_available() else "cpu")', []),
                                           ('"cuda" if torch.cuda.is_available() else "cpu"', [10])])
def test_devices_a_torch_device_never_equals_a_string(tmp_path, device, lines):
    root = write(tmp_path, {"train.py": DEVICE_TEST.replace("DEVICE", device)})
    assert [f.line for f in found(root, ("TR517",))] == lines


# --- autograd: a value bound on the CPU path (the `else` of `if torch.cuda.is_available():`) is on the CPU
# whatever it was computed from: `.numpy()` after `x = loss.data.clone().cpu()` / `else: x = loss.data` cannot
# raise (TR502 on a GradNorm script, judged false); without the CPU-only branch it may --------------------

NUMPY = '''import torch
from torch import nn

model = nn.Linear(4, 2).cuda()
x = torch.randn(3, 4).cuda()
loss = model(x).sum(0)
keep_copy = len(x) > 2
if TEST:
    initial = loss.data.clone().cpu()
else:
    initial = loss.data
initial = initial.numpy()
'''


@pytest.mark.parametrize("test, lines", [("torch.cuda.is_available()", []), ("keep_copy", [12])])
def test_autograd_a_value_bound_on_the_cpu_path_is_on_the_cpu(tmp_path, test, lines):
    root = write(tmp_path, {"gradnorm.py": NUMPY.replace("TEST", test)})
    assert [f.line for f in found(root, ("TR502",))] == lines


# --- TR511: a tensor attribute whose methods only pick elements with a host-built index and turn them into
# numbers at once (`self.ratios[torch.randperm(3)].tolist()`) meets no tensor of another device (a SparK
# encoder's mask-ratio table, judged false); one that enters a computation still counts -----------------

RATIOS = '''import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, low, high):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.ratios = torch.tensor([low, high, (low + high) / 2])

    def forward(self, x):
        USE
        return self.proj(x) * r1
'''


@pytest.mark.parametrize("use, lines", [("r1, r2, r3 = self.ratios[torch.randperm(3)].tolist()", []),
                                        ("r1 = self.ratios[torch.randperm(3)] * x.mean()", [9])])
def test_tr511_elements_picked_by_a_host_index_into_numbers(tmp_path, use, lines):
    root = write(tmp_path, {"model.py": RATIOS.replace("USE", use)})
    assert [f.line for f in found(root, ("TR511",))] == lines


# --- TR514: `tok.require_grad = True` right before `nn.Parameter(tok)`: the Parameter requires grad anyway,
# so the intended True holds (a video BERT's class token, judged noise) -> low advice; a tensor used as it
# is keeps the defect --------------------------------------------------------------------------------------

TOKEN = '''import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        tok = torch.zeros(1, 1, dim)
        tok.require_grad = True
        self.tok = USE

    def forward(self, x):
        return x + self.tok
'''


@pytest.mark.parametrize("use, confidence", [("nn.Parameter(tok)", "low"), ("tok", "high")])
def test_tr514_typo_before_a_parameter_wrap_is_low(tmp_path, use, confidence):
    root = write(tmp_path, {"model.py": TOKEN.replace("USE", use)})
    assert [(f.line, f.confidence) for f in found(root, ("TR514",))] == [(9, confidence)]


# --- scopes: a name a function declares `global` is bound in the module (`global accelerator` in `main()`,
# `accelerator = Accelerator(...)`), where another function's read of it looks: TR416 on a clip inside
# `accumulate()` with an `Accelerator()` that accumulates over one step (judged false) is silent; one built
# with `gradient_accumulation_steps=4` keeps it --------------------------------------------------------------

GLOBAL = '''import torch
from accelerate import Accelerator
from torch import nn


def train_epoch(loader):
    for x in loader:
        with accelerator.accumulate(model):
            loss = model(x).pow(2).mean()
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()


def main():
    global accelerator, model, optimizer
    accelerator = Accelerator(ARGS)
    model = nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters())
    model, optimizer = accelerator.prepare(model, optimizer)
    train_epoch([torch.randn(2, 4)])


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("args, lines", [('mixed_precision="bf16"', []), ("gradient_accumulation_steps=4", [11])])
def test_scopes_a_global_declaration_binds_in_the_module(tmp_path, args, lines):
    root = write(tmp_path, {"train.py": GLOBAL.replace("ARGS", args)})
    assert [f.line for f in found(root, ("TR416",))] == lines


# --- options: a configuration a project function returns from a YAML load (`def get_config(path): ...
# return yaml.safe_load(f)` in utils.py, `config = get_config(os.path.join(CONFIGS, name))`) reads what the
# shipped files set: every config at `gradient_accumulation_steps: 1` makes TR416's partial-sum clip medium
# (judged false on a Kaggle solution with 84 such configs); one config at 4 keeps it high ----------------------

GET_CONFIG = '''import yaml


def get_config(path):
    with open(path, "r") as file:
        config = yaml.safe_load(file)
    return config
'''

TRAIN_CFG = '''import os
import sys

import torch
from torch import nn

from utils import get_config

config = get_config(os.path.join("configs", sys.argv[1]))


def train(model, loader, optimizer, scaler):
    for step, (x, y) in enumerate(loader):
        with torch.autocast("cuda"):
            loss = nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (step + 1) % config["training"]["gradient_accumulation_steps"] == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
'''


@pytest.mark.parametrize("other, confidence", [("1", "medium"), ("4", "high")])
def test_options_a_project_function_returning_a_yaml_load_is_a_configuration(tmp_path, other, confidence):
    root = write(tmp_path, {"src/utils.py": GET_CONFIG, "src/train.py": TRAIN_CFG,
                            "configs/a.yaml": "training:\n  gradient_accumulation_steps: 1\n",
                            "configs/b.yaml": f"training:\n  gradient_accumulation_steps: {other}\n"})
    assert {f.confidence for f in found(root, ("TR416",))} == {confidence}


# --- checkpoints: a counter a resume helper stores on the `args` it is handed (`args.start_epoch =
# checkpoint["epoch"]`, utils.py) is read by the training script that handed `args` in (`range(
# args.start_epoch, args.epochs)`): restored (TR518 judged false); a script that never reads it restarts ----

RESUME_HELPER = '''import os

import torch


def load_resume(args, model, optimizer=None):
    if os.path.isfile(args.resume):
        checkpoint = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(checkpoint["state_dict"])
        if optimizer is not None and "optimizer" in checkpoint:
            optimizer.load_state_dict(checkpoint["optimizer"])
            args.start_epoch = checkpoint["epoch"]
'''

RESUME_TRAIN = '''import argparse

import torch
from torch import nn

from utils import load_resume

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
OPTION
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()
model = nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters())
load_resume(args, model, optimizer)
for epoch in range(START, args.epochs):
    for x in [torch.randn(2, 4)]:
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
    torch.save({"state_dict": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch + 1},
               "checkpoint.pth")
'''


@pytest.mark.parametrize("start, option, lines", [
    ("args.start_epoch", 'parser.add_argument("--start_epoch", type=int, default=0)', []), ("0", "", [8])])
def test_checkpoints_a_counter_stored_on_handed_in_args_is_read_by_the_caller(tmp_path, start, option, lines):
    root = write(tmp_path, {"utils.py": RESUME_HELPER,
                            "train.py": RESUME_TRAIN.replace("START", start).replace("OPTION", option)})
    assert [f.line for f in found(root, ("TR518",)) if "counter" in f.message] == lines


# --- checkpoints: a script's top-level load after every training loop of the file has run (`train(...)` at
# the top level above it) reads the checkpoint back to test it (a CT-segmentation script, judged false as a
# resume); a load above the training call is a resume ---------------------------------------------------------

TRAIN_THEN_TEST = '''import torch
from torch import nn

resume_path = "trails/models/resnet_10.pth.tar"
model = nn.Linear(4, 4)
optimizer = torch.optim.Adam(model.parameters())
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.99)


def train(model, optimizer, scheduler, epochs):
    for epoch in range(epochs):
        for x in [torch.randn(2, 4)]:
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()
        scheduler.step()
        torch.save({"epoch": epoch, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict()},
                   resume_path)


BEFORE
train(model, optimizer, scheduler, 10)
AFTER
'''

LOAD_BACK = '''checkpoint = torch.load(resume_path)
model.load_state_dict(checkpoint["state_dict"])
with torch.no_grad():
    print(model(torch.randn(2, 4)))'''


@pytest.mark.parametrize("before, after, found_", [("", LOAD_BACK, False), (LOAD_BACK, "", True)])
def test_checkpoints_a_top_level_load_after_all_training_is_no_resume(tmp_path, before, after, found_):
    root = write(tmp_path, {"train_test.py": TRAIN_THEN_TEST.replace("BEFORE", before).replace("AFTER", after)})
    assert bool(found(root, ("TR518",))) is found_


# --- TR520: a load whose whole result goes into a model's `load_state_dict` reads one state dict, so it is
# not the file a whole-module save writes (a notebook's `ResNet.load_state_dict(torch.load("alpha/model.pt"))`
# linked by base name to another notebook's `torch.save(model, "model.pt")`, judged false) ----------------

SAVE_WHOLE = '''import torch
from torch import nn

model = nn.Linear(4, 4)
torch.save(model, "model.pt")
'''

LOAD_OTHER = '''import torch
from torch import nn

LOAD
'''


@pytest.mark.parametrize("load, lines", [
    ('net = nn.Linear(4, 4)\nnet.load_state_dict(torch.load("alpha/model.pt"))', []),
    ('net = torch.load("model.pt")\nnet.eval()', [4])])
def test_tr520_a_load_into_load_state_dict_reads_a_state_dict(tmp_path, load, lines):
    root = write(tmp_path, {"export.py": SAVE_WHOLE, "score.py": LOAD_OTHER.replace("LOAD", load)})
    assert [f.line for f in found(root, ("TR520",)) if f.path.endswith("score.py")] == lines


# --- checkpoints: a load of `baseline/{fig}_{load}_model.pth` is not the save of `models/{fig}_{epoch}_model.pth`
# (two folders spelled out), also when one name `path` holds both -- the load's binding reaches it, the epoch
# loop's later binding is the save's (TR517 judged false); the same folder is one checkpoint --------------------

FOLDERS = '''import os

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train(fig, load, epochs):
    path = "LOADDIR/" + fig + "_" + str(load) + "_model.pth"
    net = nn.Linear(4, 4)
    if os.path.isfile(path):
        net.load_state_dict(torch.load(path))
    net = DDP(net)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x in [torch.randn(2, 4)]:
            optimizer.zero_grad()
            net(x).sum().backward()
            optimizer.step()
        path = "models/" + fig + "_" + str(epoch) + "_model.pth"
        torch.save(net.state_dict(), path)
'''


@pytest.mark.parametrize("folder, lines", [("baseline", []), ("models", [12])])
def test_checkpoints_two_spelled_folders_are_two_files(tmp_path, folder, lines):
    root = write(tmp_path, {"train.py": FOLDERS.replace("LOADDIR", folder)})
    assert [f.line for f in found(root, ("TR517",))] == lines


# --- options: `args = get_arguments()` (a project function of configs/train_config.py) holds the options that
# module declares, and `default=ITER_SIZE` is the literal its module constant holds: a micro-batch loop over
# `range(args.iter_size)` with `ITER_SIZE = 1` runs once (TR218 judged noise) -> low; 2 keeps it -------------

ARG_CONFIG = '''import argparse

ITER_SIZE = SIZE


def get_arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iter-size", type=int, default=ITER_SIZE)
    parser.add_argument("--num-steps", type=int, default=100)
    return parser.parse_args()
'''

ARG_TRAIN = '''import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from configs.train_config import get_arguments


def main():
    args = get_arguments()
    model = DDP(nn.Linear(4, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.num_steps):
        optimizer.zero_grad()
        for sub_i in range(args.iter_size):
            loss = model(torch.randn(2, 4)).pow(2).mean() / args.iter_size
            loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("size, confidence", [("1", "low"), ("2", "high")])
def test_options_a_project_function_s_parsed_arguments_and_constant_defaults(tmp_path, size, confidence):
    root = write(tmp_path, {"configs/__init__.py": "", "configs/train_config.py": ARG_CONFIG.replace("SIZE", size),
                            "train.py": ARG_TRAIN})
    assert [(f.line, f.confidence) for f in found(root, ("TR218",))] == [(16, confidence)]


# --- TR518: a resume that restores no counter, from a checkpoint that holds none, where every epoch loop starts
# at a literal (`for ep in range(self.epochs)`), starts the run over from the weights (homework solvers judged
# noise) -> low; an epoch loop that starts from an option (`range(args.start_epoch, ...)`) keeps it; so does a
# non-strict load that reads its counter back (`args["start_epoch"] = checkpoint["epoch"]`) ---------------------

SOLVER = '''import argparse
import os

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
parser.add_argument("--start_epoch", type=int, default=0)
args = parser.parse_args()
model = nn.Linear(4, 4)
optimizer = torch.optim.Adam(model.parameters())
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
if os.path.isfile(args.resume):
    state = torch.load(args.resume)
    model.load_state_dict(state["state_dict"])
    optimizer.load_state_dict(state["optimizer"])
for ep in range(START, 30):
    for x in [torch.randn(2, 4)]:
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
    scheduler.step()
    torch.save({"state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}, "model.ckpt")
'''


@pytest.mark.parametrize("start, confidence", [("0", "low"), ("args.start_epoch", "medium")])
def test_tr518_a_resume_with_no_counter_and_a_literal_start_is_a_warm_start(tmp_path, start, confidence):
    root = write(tmp_path, {"solver.py": SOLVER.replace("START", start)})
    assert [(f.line, f.confidence) for f in found(root, ("TR518",))] == [(15, confidence)]


def test_tr518_a_non_strict_load_reading_its_counter_back_is_a_resume(tmp_path):
    text = LOADMODEL.replace("OPTION", "pre").replace("STRICT", ", strict=False").replace(
        '    if "optimizer" in state_dict:\n        optimizer.load_state_dict(state_dict["optimizer"])\n',
        '    start_epoch = state_dict["epoch"]\n').replace("range(1, args.epochs + 1)", "range(start_epoch, args.epochs + 1)")
    text = text.replace("model = nn.Linear(4, 4)\n", "model = nn.Linear(4, 4)\nstart_epoch = 1\n")
    root = write(tmp_path, {"train.py": text})
    assert [f.confidence for f in found(root, ("TR518",))] == ["medium"]


# --- TR403: a training function's loader parameter that every call hands a loader prepared by Accelerate in the
# caller (`trainloader, ... = accelerator.prepare(trainloader, ...)` in `main`, then `train(trainloader, ...)`)
# yields batches on the device (judged false); a call handing the unprepared loader keeps the finding ---------

PREPARED = '''import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader


def main():
    accelerator = Accelerator()
    trainloader = DataLoader([(torch.randn(4), 0)] * 8, batch_size=2)
    encoder = nn.Linear(4, 4)
    encoder.to(accelerator.device)
    optimizer = torch.optim.Adam(encoder.parameters())
    PREPARE
    train(trainloader, encoder, optimizer, accelerator)


def train(trainloader, encoder, optimizer, accelerator):
    for batch_imgs, _ in trainloader:
        out = encoder(batch_imgs)
        accelerator.backward(out.sum())
        optimizer.step()
        optimizer.zero_grad()
'''


@pytest.mark.parametrize("prepare, lines", [
    ("trainloader, encoder, optimizer = accelerator.prepare(trainloader, encoder, optimizer)", []),
    ("encoder, optimizer = accelerator.prepare(encoder, optimizer)", [19])])
def test_tr403_a_loader_parameter_every_call_hands_prepared(tmp_path, prepare, lines):
    root = write(tmp_path, {"train.py": PREPARED.replace("PREPARE", prepare)})
    assert [f.line for f in found(root, ("TR403",))] == lines
