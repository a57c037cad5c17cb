"""Classes of findings judged false or noise on the sweeps, fixed in the twelfth session
(2026-11-30), each as a near-miss that must change beside a positive that must stay."""
from __future__ import annotations

import ast

from residue_helpers import found as _found, write as _write

from torchreview.engine.context import NOT_KNOWN
from torchreview.engine.inputs import Inputs
from torchreview.engine.flow import Flow
from torchreview.engine.options import Options
from torchreview.engine.semantic import SemanticModel


def _in_file(tmp_path, name: str, text: str, code: str) -> list:
    return _found(_write(tmp_path, {name: text}), (code,))


# --- the options model: what `args.name` holds at the script's defaults -----------------------

OPTIONS = '''import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--gradient-accumulation-steps", type=int, default=1)
parser.add_argument("--amp", action="store_true")
parser.add_argument("--no-shuffle", dest="shuffle", action="store_false")
parser.add_argument("--lr", type=float, default=1e-3 * 2)
parser.add_argument("--size", type=int)
parser.add_argument("data")
parser.add_argument("--workers", default=4)
parser.set_defaults(workers=0)
args = parser.parse_args()
cfg = load_yaml("cfg.yaml")


def train(opt):
    accum = opt.gradient_accumulation_steps
    return accum, opt.amp, opt.shuffle, opt.lr, opt.size, opt.data, opt.workers, cfg.amp


train(args)
'''


def _options(text: str):
    tree = ast.parse(text)
    model = SemanticModel(tree)
    flow = Flow(model)
    return model, Options(model, Inputs(model, flow))


def test_options_defaults_of_each_declaration_form():
    model, options = _options(OPTIONS)
    reads = {}
    for node in ast.walk(model.tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("opt", "cfg"):
            reads[ast.unparse(node)] = node
    assert options.default_of(reads["opt.gradient_accumulation_steps"]) == 1
    assert options.default_of(reads["opt.amp"]) is False
    assert options.default_of(reads["opt.shuffle"]) is True
    assert options.default_of(reads["opt.lr"]) is NOT_KNOWN  # computed default
    assert options.default_of(reads["opt.size"]) is None
    assert options.default_of(reads["opt.data"]) is None
    assert options.default_of(reads["opt.workers"]) == 0  # set_defaults wins
    assert options.default_of(reads["cfg.amp"]) is NOT_KNOWN  # a YAML config, not the command line
    accum = next(n for n in ast.walk(model.tree) if isinstance(n, ast.Name) and n.id == "accum"
                 and isinstance(n.ctx, ast.Load))
    assert ast.unparse(options.option_of(accum)) == "opt.gradient_accumulation_steps"


def test_options_declared_twice_with_different_defaults_are_not_known():
    text = OPTIONS.replace('parser.add_argument("--size", type=int)',
                           'parser.add_argument("--size", type=int)\n'
                           'other = argparse.ArgumentParser()\n'
                           'other.add_argument("--gradient_accumulation_steps", type=int, default=8)')
    model, options = _options(text)
    read = next(n for n in ast.walk(model.tree) if isinstance(n, ast.Attribute)
                and n.attr == "gradient_accumulation_steps")
    assert options.default_of(read) is NOT_KNOWN


# --- TR416 / TR218: an accumulation factor that is a command-line option declared with default 1
# (TripPy's run_dst.py, HF-template fine-tuning: clip on every micro-step, judged noise in
# holdout231 because nothing accumulates unless the user sets it; efficientdet's DDP accumulation
# without no_sync, judged noise in nr57 for the same reason). Medium confidence, the option named;
# a default of 4 (or a literal factor) keeps the finding high ---------------------------------

ACCUM = '''import argparse

import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gradient_accumulation_steps", type=int, default={default})
    args = parser.parse_args()
    model = nn.Linear(4, 2).cuda()
    {wrap}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    for step in range(100):
        with torch.autocast("cuda"):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
        loss = loss / args.gradient_accumulation_steps
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (step + 1) % {factor} == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()


if __name__ == "__main__":
    main()
'''


def _accum(tmp_path, code, default=1, factor="args.gradient_accumulation_steps", wrap=""):
    text = ACCUM.format(default=default, factor=factor, wrap=wrap)
    return [f for f in _in_file(tmp_path, "train.py", text, code) if "micro" in f.message or "partial" in f.message]


def test_tr416_accumulation_option_defaulting_to_one_is_medium(tmp_path):
    found = _accum(tmp_path, "TR416")  # the unscale_ and the clip: parts of one finding
    assert len(found) == 2 and len({f.subject for f in found}) == 1
    assert all(f.confidence == "medium" and "args.gradient_accumulation_steps" in f.message
               and "default 1" in f.message for f in found)


def test_tr416_accumulation_option_defaulting_to_four_stays_high(tmp_path):
    found = _accum(tmp_path, "TR416", default=4)
    assert len(found) == 2 and all(f.confidence == "high" and "default 1" not in f.message for f in found)


def test_tr416_through_a_local_name(tmp_path):
    text = ACCUM.format(default=1, factor="accum", wrap="accum = args.gradient_accumulation_steps")
    found = [f for f in _in_file(tmp_path, "train.py", text, "TR416") if "partial" in f.message]
    assert len(found) == 2 and all(f.confidence == "medium" for f in found)


def test_tr416_literal_factor_stays_high(tmp_path):
    found = _accum(tmp_path, "TR416", factor="4")
    assert len(found) == 2 and all(f.confidence == "high" for f in found)


DDP = "model = torch.nn.parallel.DistributedDataParallel(model)"


def test_tr218_accumulation_option_defaulting_to_one_is_low(tmp_path):
    found = _accum(tmp_path, "TR218", wrap=DDP)
    assert len(found) == 1 and found[0].confidence == "low" and "default 1" in found[0].message


def test_tr218_accumulation_option_defaulting_to_eight_keeps_its_confidence(tmp_path):
    found = _accum(tmp_path, "TR218", default=8, wrap=DDP)
    assert len(found) == 1 and found[0].confidence == "high" and "default 1" not in found[0].message


# --- TR517: the models one checkpoint feeds are one root cause (RRT-MIL's DTFD script loads four
# sub-models from the dictionary one save writes from DataParallel wrappers: five findings, one
# fix on the save side). Two saves, each read back, stay two findings --------------------------

PREFIX = '''import torch
from torch import nn


def train(parallel):
    a, b = nn.Linear(4, 4), nn.Linear(4, 2)
    a = torch.nn.DataParallel(a)
    b = torch.nn.DataParallel(b)
    torch.save({{"a": a.state_dict(), "b": b.state_dict()}}, "best.pth")
{second_save}


def evaluate():
    a, b = nn.Linear(4, 4), nn.Linear(4, 2)
    state = torch.load("best.pth")
    a.load_state_dict(state["a"])
    b.load_state_dict(state["b"], strict=False)
{second_load}
'''


def _merged(root, codes):
    from torchreview.engine.runner import Settings, run_review

    return run_review([str(root)], Settings(rule_codes=codes, jobs=1, min_confidence="low")).findings


def test_tr517_models_of_one_checkpoint_are_one_finding(tmp_path):
    root = _write(tmp_path, {"main.py": PREFIX.format(second_save="", second_load="")})
    found = _merged(root, ("TR517",))
    assert len(found) == 1 and len(found[0].parts or (found[0],)) == 2
    assert "1 more place" in found[0].message


def test_tr517_two_saves_read_back_are_two_places_of_one_comment(tmp_path):
    # two checkpoints, each read back without its `module.` prefix, in one file: one finding of that
    # file listing both (engine/merge.py; a project rule's repeat in one file was judged noise in blind
    # test 81), each place kept; in two files they stay two findings
    text = PREFIX.format(
        second_save='    c = torch.nn.DataParallel(nn.Linear(2, 2))\n    torch.save(c.state_dict(), "head.pth")',
        second_load='    c = nn.Linear(2, 2)\n    c.load_state_dict(torch.load("head.pth"))')
    found = _merged(_write(tmp_path, {"main.py": text}), ("TR517",))
    assert len(found) == 1 and len(found[0].parts) == 3


# --- TR517: a save whose wraps all run under an option the defaults leave off (RRT-MIL's
# `if params.isPar: classifier = DataParallel(classifier)`, `--isPar` default False: judged false in
# holdout243) writes `module.` keys only for runs made with it: medium confidence, the option
# named. With the option on by default, or no option, it stays high --------------------------

OPTIONAL_WRAP = '''import argparse

import torch
from torch import nn


def main(params):
    net = nn.Linear(4, 2)
    if params.init:
        state = torch.load("best.pth")
        net.load_state_dict(state["net"])
    if {test}:
        net = torch.nn.DataParallel(net)
    torch.save({{"net": net.state_dict()}}, "best.pth")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--init", action="store_true")
    parser.add_argument("--parallel", default={default}, type=bool)
    main(parser.parse_args())
'''


def _optional_wrap(tmp_path, test="params.parallel", default="False"):
    text = OPTIONAL_WRAP.format(test=test, default=default)
    return _in_file(tmp_path, "main.py", text, "TR517")


def test_tr517_wrap_under_an_option_off_by_default_is_medium(tmp_path):
    found = _optional_wrap(tmp_path)
    assert len(found) == 1 and found[0].confidence == "medium" and "`params.parallel` set" in found[0].message


def test_tr517_wrap_under_an_option_on_by_default_stays_high(tmp_path):
    found = _optional_wrap(tmp_path, default="True")
    assert len(found) == 1 and found[0].confidence == "high" and "off by default" not in found[0].message


def test_tr517_wrap_under_a_device_count_test_stays_high(tmp_path):
    found = _optional_wrap(tmp_path, test="torch.cuda.device_count() > 1")
    assert len(found) == 1 and found[0].confidence == "high"


# --- TR401: any loop of a benchmark or timing script (DeepAFx-ST's scripts/timing.py times
# gradient steps of several models on random tensors; judged noise in holdout243): medium. The
# same loop in train.py stays high ------------------------------------------------------------

NO_RESET = '''import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for n in range(100):
    x = torch.randn(8, 4)
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
'''


def test_tr401_timing_script_is_medium(tmp_path):
    found = _in_file(tmp_path, "scripts/timing.py", NO_RESET, "TR401")
    assert len(found) == 1 and found[0].confidence == "medium"


def test_tr401_training_script_stays_high(tmp_path):
    found = _in_file(tmp_path, "scripts/train.py", NO_RESET, "TR401")
    assert len(found) == 1 and found[0].confidence == "high"


# --- TR519: a path put together from parts names its split through them (EigenPlaces'
# `TestDataset(f"{args.val_dataset_folder}")` is the validation split in the test sets' format:
# judged false in holdout249). The same builder over the test folder still reports -----------

SELECTION = '''import argparse

import torch
from torch import nn

from datasets.test_dataset import TestDataset
import test

parser = argparse.ArgumentParser()
parser.add_argument("--val_dataset_folder")
parser.add_argument("--test_dataset_folder")
args = parser.parse_args()
model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())
val_ds = TestDataset(f"{FOLDER}")
best_r1 = 0
for epoch in range(10):
    for x, y in [(torch.randn(2, 4), torch.randn(2, 2))]:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    recalls, text = test.test(args, val_ds, model)
    is_best = recalls[0] > best_r1
    best_r1 = max(recalls[0], best_r1)
    if is_best:
        torch.save(model.state_dict(), "best_model.pth")
'''


def _selection(tmp_path, folder: str) -> list:
    return _in_file(tmp_path, "train.py", SELECTION.replace("{FOLDER}", folder), "TR519")


def test_tr519_fstring_of_the_validation_folder_is_validation(tmp_path):
    assert _selection(tmp_path, "{args.val_dataset_folder}") == []


def test_tr519_concatenated_validation_path_is_validation(tmp_path):
    text = SELECTION.replace('f"{FOLDER}"', 'args.root + "/val"')
    assert _in_file(tmp_path, "train.py", text, "TR519") == []


def test_tr519_fstring_of_the_test_folder_reports(tmp_path):
    found = _selection(tmp_path, "{args.test_dataset_folder}")
    assert len(found) == 1 and "test" in found[0].message


# --- TR518: (a) a scheduler built anew in the batch loop from a position the loop computes
# (ESNet's `scheduler = LambdaLR(optimizer, lambda _: poly(args.cur_iter))`: "the LR schedule
# restarts" judged false in nr69) has no state to restore; one built once before the loops still
# does. (b) a start counter the file computes (`self.start_epoch = found_epoch + 1` from the newest
# `net_<N>.pth` a glob finds: the rotation-invariant point-cloud trainers, judged false in nr70) is
# carried on; a start counter taken as the user typed it (`args.start_epoch`) is not ------------

RESUME_LOOP = '''import argparse
import glob

import torch
from torch import nn


def train(args, model, optimizer, start_epoch):
    {once}
    for epoch in range(start_epoch, 100):
        for it in range(50):
            args.cur_iter = epoch * 50 + it
            {per_step}
            loss = model(torch.randn(8, 4)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
        torch.save({{"model": model.state_dict(), "epoch": epoch}}, f"net_{{epoch}}.pth")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--start_epoch", type=int, default=0)
    args = parser.parse_args()
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    start_epoch = {start}
    if args.resume:
        found = sorted(glob.glob("net_*.pth"))[-1]
        model.load_state_dict(torch.load(found)["model"])
        {counter}
    train(args, model, optimizer, start_epoch)


if __name__ == "__main__":
    main()
'''
POLY = "scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: (1 - args.cur_iter / 5000) ** 0.9)"


def _resume_loop(tmp_path, once="", per_step="", start="0", counter="pass") -> list:
    text = RESUME_LOOP.format(once=once, per_step=per_step, start=start, counter=counter)
    return [f for f in _in_file(tmp_path, "train.py", text, "TR518") if f.kind != "advice"]


def test_tr518_scheduler_rebuilt_every_step_has_nothing_to_restore(tmp_path):
    found = _resume_loop(tmp_path, per_step=POLY, counter="start_epoch = int(found[4:-4]) + 1")
    assert found == []


def test_tr518_scheduler_built_once_is_still_listed(tmp_path):
    found = _resume_loop(tmp_path, once=POLY, counter="start_epoch = int(found[4:-4]) + 1")
    assert len(found) == 1 and "schedule" in found[0].message


def test_tr518_start_counter_computed_from_the_file_name_is_carried_on(tmp_path):
    found = _resume_loop(tmp_path, per_step=POLY, counter="start_epoch = int(found[4:-4]) + 1")
    assert not any("counter" in f.message for f in found)


def test_tr518_start_counter_as_the_user_typed_it_restarts(tmp_path):
    found = _resume_loop(tmp_path, per_step=POLY, start="args.start_epoch")
    assert len(found) == 1 and "counter" in found[0].message


# --- TR207: `self.model.cuda().eval()` in `__init__` switches `self.model` (FoundationPose's
# PoseRefinePredictor: judged false in holdout243); `self.model.cuda()` alone does not --------

PREDICTOR = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


class Predictor:
    def __init__(self):
        self.model = Net().cuda()
        self.model.load_state_dict(torch.load("net.pth", weights_only=True))
        {SWITCH}

    def predict(self, x):
        with torch.no_grad():
            return self.model(x)
'''


def test_tr207_moved_then_switched_in_init_is_in_eval(tmp_path):
    text = PREDICTOR.replace("{SWITCH}", "self.model.cuda().eval()")
    assert _in_file(tmp_path, "predict.py", text, "TR207") == []


def test_tr207_moved_only_in_init_reports(tmp_path):
    text = PREDICTOR.replace("{SWITCH}", "self.model.cuda()")
    assert len(_in_file(tmp_path, "predict.py", text, "TR207")) == 1


# --- TR102: a literal path to a file committed in the reviewed tree is as trusted as the code
# (audio2photoreal's demo reads `dataset/PXB184/data_stats.pth`, NumPy statistics shipped with it:
# judged false in holdout249, and weights_only=True would refuse it). The same literal path that
# is not in the tree (a checkpoint the user downloads there) stays reported -------------------

STATS = '''import gradio as gr
import torch

stats = torch.load("dataset/stats/data_stats.pth")
demo = gr.Interface(fn=lambda x: x, inputs="text", outputs="text")
'''


def test_tr102_literal_path_to_a_shipped_file_is_silent(tmp_path):
    (tmp_path / "dataset" / "stats").mkdir(parents=True)
    (tmp_path / "dataset" / "stats" / "data_stats.pth").write_bytes(b"PK\x03\x04")
    (tmp_path / "requirements.txt").write_text("torch==2.0.1\n")
    assert _in_file(tmp_path, "demo.py", STATS, "TR102") == []


def test_tr102_literal_path_not_in_the_tree_reports(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch==2.0.1\n")
    found = _in_file(tmp_path, "demo.py", STATS, "TR102")
    assert len(found) == 1 and found[0].confidence == "high"


# --- TR511: 3dsnet's SMAL body model (judged false twice in holdout246): (a) tensors its
# `__init__` moves by name in a loop (`for name in [...]: setattr(self, name, getattr(self,
# name).to(device))`) are placed; one the list leaves out is not; (b) skinning `weights` read
# from a loaded file (`torch.from_numpy(params["weights"])`) are fixed data, not a layer's
# weight; `torch.from_numpy(np.random.randn(...))` is -------------------------------------------

BODY = '''import pickle

import numpy as np
import torch
from torch.nn import Module


class BodyModel(Module):
    def __init__(self, device=None, path="body.pkl"):
        super().__init__()
        with open(path, "rb") as f:
            params = pickle.load(f)
        self.J_regressor = torch.from_numpy(np.asarray(params["J_regressor"]))
        self.weights = torch.from_numpy({WEIGHTS})
        self.v_template = torch.from_numpy(params["v_template"])
        for name in {NAMES}:
            _tensor = getattr(self, name)
            setattr(self, name, _tensor.to(device))

    def forward(self, betas):
        joints = torch.matmul(self.J_regressor, self.v_template)
        return torch.matmul(self.weights, joints) * betas
'''


def _body(tmp_path, weights='params["weights"]', names='["J_regressor", "weights", "v_template"]'):
    text = BODY.replace("{WEIGHTS}", weights).replace("{NAMES}", names)
    return _in_file(tmp_path, "body.py", text, "TR511")


def test_tr511_tensors_moved_by_name_in_init_are_placed(tmp_path):
    assert _body(tmp_path) == []


def test_tr511_a_tensor_the_loop_leaves_out_reports(tmp_path):
    found = _body(tmp_path, names='["J_regressor", "weights"]')
    assert [f.line for f in found] == [15] and "v_template" in found[0].message


def test_tr511_random_numpy_weights_are_a_layer_weight(tmp_path):
    found = _body(tmp_path, weights="np.random.randn(4, 4)", names='["J_regressor", "v_template"]')
    assert len(found) == 1 and "nn.Parameter" in found[0].message and "self.weights" in found[0].message


def test_tr511_loaded_weights_left_unmoved_are_a_buffer_not_a_parameter(tmp_path):
    found = _body(tmp_path, names='["J_regressor", "v_template"]')
    assert len(found) == 1 and "register_buffer" in found[0].message and "self.weights" in found[0].message


# --- Retired folders: code under `deprecated/`, `legacy/`, `old/`, `archive/` is kept for
# reference (LoRA's vendored `examples/legacy` scripts: four findings judged noise; MultiBench's
# `deprecated/training_structures`): a non-security finding there is medium and names the
# folder; the same code elsewhere, or in an installable package's `legacy` subpackage, stays high

NO_ZERO_GRAD = NO_RESET


def _tr401_at(tmp_path, rel: str, extra: dict | None = None) -> list:
    files = {"requirements.txt": "torch\n", rel: NO_ZERO_GRAD, **(extra or {})}
    return _found(_write(tmp_path, files), ("TR401",))


def test_retired_folder_is_medium_and_named(tmp_path):
    found = _tr401_at(tmp_path, "deprecated/training/ft.py")
    assert len(found) == 1 and found[0].confidence == "medium" and "deprecated/" in found[0].message


def test_live_folder_stays_high(tmp_path):
    found = _tr401_at(tmp_path, "training/ft.py")
    assert len(found) == 1 and found[0].confidence == "high"


def test_legacy_subpackage_of_an_installable_package_stays_high(tmp_path):
    found = _tr401_at(tmp_path, "pkg/legacy/ft.py", {"setup.py": "from setuptools import setup\nsetup()\n",
                                                     "pkg/__init__.py": "", "pkg/legacy/__init__.py": ""})
    assert len(found) == 1 and found[0].confidence == "high"


def test_retired_folder_leaves_security_findings(tmp_path):
    files = {"requirements.txt": "torch==2.0.1\n",
             "old/serve.py": "import flask\nimport torch\n\nmodel = torch.load('m.pt')\n"}
    found = _found(_write(tmp_path, files), ("TR102",))
    assert len(found) == 1 and found[0].confidence == "high"


# --- TR507: one accumulator name in one file is one habit (MultiBench's `totalloss += loss*n` and
# `totalloss += blendloss*n` in two functions of one script: the second judged a repeat in
# holdout250); two accumulators, or the same name in two files, stay apart ---------------------

TOTALS = '''import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train_head(loader):
    totalloss = 0.0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        totalloss += loss * len(x)
    return totalloss


def train_blend(loader):
    {name} = 0.0
    for x, y in loader:
        blendloss = nn.functional.l1_loss(model(x), y)
        optimizer.zero_grad()
        blendloss.backward()
        optimizer.step()
        {name} += blendloss * len(x)
    return {name}
'''


def _totals(tmp_path, name="totalloss", files=None):
    from torchreview.engine.runner import Settings, run_review

    _write(tmp_path, files or {"train.py": TOTALS.format(name=name)})
    return run_review([str(tmp_path)], Settings(rule_codes=("TR507",), jobs=1, min_confidence="low")).findings


def test_tr507_one_accumulator_of_one_file_is_one_finding(tmp_path):
    found = _totals(tmp_path)
    assert len(found) == 1 and "1 more place" in found[0].message


def test_tr507_two_accumulators_of_one_file_are_one_habit(tmp_path):
    # two functions of one script each summing the loss with its graph: one comment, the other a place
    found = _totals(tmp_path, name="blendtotal")
    assert len(found) == 1 and "1 more place" in found[0].message


def test_tr507_the_same_name_in_two_files_is_two_findings_per_file(tmp_path):
    head_only = TOTALS.split("def train_blend")[0].replace(  # another script, not a copy of the first
        "loss * len(x)", "loss.mean() * x.shape[0]").replace("mse_loss", "smooth_l1_loss")
    found = _totals(tmp_path, files={"a.py": TOTALS.format(name="totalloss"), "b.py": head_only})
    assert sorted(f.path.rsplit("/", 1)[-1] for f in found) == ["a.py", "b.py"]


# --- Model content: a dropout layer applied only under `if self.dropout:`, the flag an `__init__`
# parameter, is a condition like a rate (MultiBench's MLP heads, `dropout=False` by default:
# TR207 judged false three times in holdout250). Built with `dropout=True`, it is active -----

FLAGGED = '''import torch
from torch import nn
from torch.nn import functional as F


class MLP(nn.Module):
    def __init__(self, indim, hiddim, outdim, dropout=False, dropoutp=0.1):
        super().__init__()
        self.fc = nn.Linear(indim, hiddim)
        self.fc2 = nn.Linear(hiddim, outdim)
        self.dropout_layer = nn.Dropout(dropoutp)
        self.dropout = dropout

    def forward(self, x):
        output = F.relu(self.fc(x))
        if self.dropout:
            output = self.dropout_layer(output)
        return self.fc2(output)


head = MLP(128, 200, 5{ARGS})


def evaluate(loader):
    with torch.no_grad():
        for x in loader:
            out = head(x)
    return out
'''


def test_tr207_dropout_behind_a_flag_left_off_is_mode_free(tmp_path):
    assert _in_file(tmp_path, "run.py", FLAGGED.replace("{ARGS}", ""), "TR207") == []


def test_tr207_dropout_behind_a_flag_turned_on_reports(tmp_path):
    assert len(_in_file(tmp_path, "run.py", FLAGGED.replace("{ARGS}", ", dropout=True"), "TR207")) == 1


# --- TR416: a clip after `continue`-until-the-boundary, with `zero_grad()` after the step whenever
# the clip runs, sees the whole accumulated gradient; the condition on the step is a NaN guard
# (ReLoRA's torchrun_main.py: judged false in holdout255). The clip before the `continue` still
# clips partial sums -----------------------------------------------------------------------------

RELORA = '''import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters())
accumulation = 4
for step, (x, y) in enumerate([(torch.randn(8, 4), torch.randn(8, 1))] * 100):
    loss = nn.functional.mse_loss(model(x), y)
    nans = torch.isnan(loss).float()
    (loss / accumulation).backward()
{early}
    if step % accumulation != 0:
        continue
{late}
    if nans == 0:
        optimizer.step()
    optimizer.zero_grad()
'''
CLIP = "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"


def test_tr416_clip_after_the_boundary_with_a_nan_guarded_step_is_silent(tmp_path):
    found = _in_file(tmp_path, "train.py", RELORA.format(early="", late=CLIP), "TR416")
    assert found == []


def test_tr416_clip_before_the_boundary_reports(tmp_path):
    found = _in_file(tmp_path, "train.py", RELORA.format(early=CLIP, late=""), "TR416")
    assert len(found) == 1 and "partial gradient sums" in found[0].message


# --- TR511: a `requires_grad=True` tensor built in `forward` from the call's input (an LSTM
# autoencoder's `self.h0 = zeros(n, batch_size, h, requires_grad=True)` with `batch_size =
# x.shape[0]`: judged false twice in holdout253) is per-call state; one built in `__init__`
# from sizes alone is a weight ----------------------------------------------------------------

STATE = '''import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, n_layers=1, hidden=8):
        super().__init__()
        self.n_layers, self.hidden = n_layers, hidden
        self.lstm = nn.LSTM(4, hidden, n_layers, batch_first=True)
{init}

    def forward(self, x):
        batch_size = x.shape[0]
{forward}
        return self.lstm(x, (self.h0, self.h0))[0]
'''
H0 = "self.h0 = torch.zeros(self.n_layers, {batch}, self.hidden, requires_grad=True)"


def test_tr511_state_shaped_by_the_call_input_is_silent(tmp_path):
    text = STATE.format(init="", forward="        " + H0.format(batch="batch_size"))
    assert _in_file(tmp_path, "lstm_ae.py", text, "TR511") == []


def test_tr511_requires_grad_tensor_built_in_init_reports(tmp_path):
    text = STATE.format(init="        " + H0.format(batch="1"), forward="")
    found = _in_file(tmp_path, "lstm_ae.py", text, "TR511")
    assert len(found) == 1 and "nn.Parameter" in found[0].message


# --- TR209: a per-step synchronize in a loop that already waits for the GPU in a helper of the
# file it calls every step (DyTox's `check_loss(loss)`: `if not math.isfinite(loss.item()):
# raise`: judged noise in holdout264) adds little: low advice. Without that helper it stalls --

SYNC = '''import math

import torch
from torch import nn


def check_loss(loss):
    if not math.isfinite(loss.item()):
        raise Exception("Loss is {{}}".format(loss.item()))


model = nn.Linear(4, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in [(torch.randn(8, 4), torch.randn(8, 1))] * 10:
    x, y = x.cuda(), y.cuda()
    loss = nn.functional.mse_loss(model(x), y)
{check}
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    torch.cuda.synchronize()
'''


def _sync(tmp_path, check: str) -> list:
    found = _in_file(tmp_path, "train.py", SYNC.format(check=check), "TR209")
    return [f for f in found if "synchronize" in f.message]


def test_tr209_synchronize_after_a_helper_that_reads_the_loss_is_low(tmp_path):
    found = _sync(tmp_path, "    check_loss(loss)")
    assert len(found) == 1 and found[0].confidence == "low" and "already waits" in found[0].message


def test_tr209_synchronize_without_another_wait_stalls(tmp_path):
    found = _sync(tmp_path, "")
    assert len(found) == 1 and found[0].confidence == "high"


def test_retired_word_leading_a_folder_name_is_retired(tmp_path):
    """`src/old_attempts/` (a critical-exponents repository: TR514 judged noise in holdout258)."""
    found = _tr401_at(tmp_path, "src/old_attempts/ft.py")
    assert len(found) == 1 and found[0].confidence == "medium" and "old_attempts/" in found[0].message


def test_a_word_that_only_contains_a_retired_word_is_live(tmp_path):
    found = _tr401_at(tmp_path, "src/golden_models/ft.py")
    assert len(found) == 1 and found[0].confidence == "high"


# --- TR207: an alias of a module switched to eval just before it (`self.campplus_model.eval();
# self.sv_fn = self.campplus_model`: seed-vc's trainer, judged false in nr75) is in eval mode;
# the alias of one never switched is not ------------------------------------------------------

ALIAS = '''import torch
from torch import nn


class Speaker(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(80, 192), nn.Dropout(0.1))

    def forward(self, x):
        return self.fc(x)


class Trainer:
    def build_sv_model(self):
        self.campplus_model = Speaker()
        self.campplus_model.load_state_dict(torch.load("campplus.bin", weights_only=True))
{switch}
        self.sv_fn = self.campplus_model

    def embed(self, feat):
        with torch.no_grad():
            return self.sv_fn(feat)
'''


def test_tr207_alias_of_a_switched_module_is_in_eval(tmp_path):
    text = ALIAS.format(switch="        self.campplus_model.eval()")
    assert _in_file(tmp_path, "train.py", text, "TR207") == []


def test_tr207_alias_of_an_unswitched_module_reports(tmp_path):
    assert len(_in_file(tmp_path, "train.py", ALIAS.format(switch=""), "TR207")) == 1


# --- TR207: a builder defined in the method that calls it (`def get_default_model(): ...
# model.eval(); ... return model` inside `__init__`: seed-vc's RMVPE, judged false in nr75)
# returns its model in eval mode; the same builder without `eval()` does not ----------------

NESTED = '''import torch
from torch import nn


class E2E(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.2))

    def forward(self, x):
        return self.fc(x)


class Predictor:
    def __init__(self, path, is_half, device):
        def get_default_model():
            model = E2E()
            model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
            model.eval()
            if is_half:
                model = model.half()
            else:
                model = model.float()
            return model

        self.model = get_default_model()
        self.model = self.model.to(device)

    def run(self, mel):
        with torch.no_grad():
            return self.model(mel)
'''


def test_tr207_nested_builder_that_evaluates_its_model(tmp_path):
    assert _in_file(tmp_path, "rmvpe.py", NESTED, "TR207") == []


def test_tr207_nested_builder_without_eval_reports(tmp_path):
    text = NESTED.replace("            model.eval()\n", "")
    assert len(_in_file(tmp_path, "rmvpe.py", text, "TR207")) == 1


# --- TR513: a sampler built only in a branch the command-line defaults leave off (the copied HF
# example scripts: `RandomSampler(ds) if args.local_rank == -1 else DistributedSampler(ds)`,
# `--local_rank` defaulting to -1: judged noise twice in blind test 27) is medium and names the
# test; with `--local_rank` defaulting to 0 (launched distributed) it stays high ----------------

HF_SCRIPT = '''import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler


def train(args, dataset, model):
    sampler = RandomSampler(dataset) if args.local_rank == -1 else DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler, batch_size=8)
    optimizer = torch.optim.AdamW(model.parameters())
    for epoch in range(3):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default={default})
    args = parser.parse_args()
    train(args, [(torch.randn(4), torch.randn(1))] * 32, nn.Linear(4, 1))


if __name__ == "__main__":
    main()
'''


def test_tr513_sampler_in_a_branch_the_defaults_leave_off_is_medium(tmp_path):
    found = _in_file(tmp_path, "run_glue.py", HF_SCRIPT.format(default=-1), "TR513")
    assert len(found) == 1 and found[0].confidence == "medium" and "args.local_rank == -1" in found[0].message


def test_tr513_sampler_in_a_branch_the_defaults_take_stays_high(tmp_path):
    found = _in_file(tmp_path, "run_glue.py", HF_SCRIPT.format(default=0), "TR513")
    assert len(found) == 1 and found[0].confidence == "high" and "defaults leave" not in found[0].message


# --- TR218: every DDP wrap in a branch the defaults leave off (`if args.local_rank != -1: model =
# DDP(model)` with `--local_rank` defaulting to -1: an HF example's accumulation, judged noise in
# nr75's focused pass) is medium; launched distributed by default (0) it keeps its confidence ---

DDP_BRANCH = '''import argparse

import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default={default})
    parser.add_argument("--accumulation", type=int, default=4)
    args = parser.parse_args()
    model = nn.Linear(4, 1).cuda()
    if args.local_rank != -1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters())
    for step in range(100):
        loss = model(torch.randn(8, 4).cuda()).pow(2).mean() / args.accumulation
        loss.backward()
        if (step + 1) % args.accumulation == 0:
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    main()
'''


def test_tr218_ddp_wrap_off_at_defaults_is_low(tmp_path):
    found = _in_file(tmp_path, "run.py", DDP_BRANCH.format(default=-1), "TR218")
    assert len(found) == 1 and found[0].confidence == "low" and "args.local_rank != -1" in found[0].message


def test_tr218_ddp_wrap_on_at_defaults_keeps_its_confidence(tmp_path):
    found = _in_file(tmp_path, "run.py", DDP_BRANCH.format(default=0), "TR218")
    assert len(found) == 1 and found[0].confidence == "high"


def test_options_fold_tests_and_find_the_ruling_one():
    text = '''import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--amp", action="store_true")
args = parser.parse_args()
sampler = "random" if args.local_rank == -1 else make_distributed()
if not args.amp:
    plain()
else:
    scaled()
if args.local_rank > 0:
    worker()
if args.unknown:
    other()
'''
    model, options = _options(text)
    calls = {ast.unparse(n.func): n for n in ast.walk(model.tree) if isinstance(n, ast.Call)}
    tests = sorted((n.test for n in ast.walk(model.tree) if isinstance(n, (ast.If, ast.IfExp))),
                   key=lambda t: t.lineno)
    assert [options.test_at_defaults(t) for t in tests] == [True, True, False, None]
    assert ast.unparse(options.ruling_test(calls["make_distributed"])) == "args.local_rank == -1"
    assert options.ruling_test(calls["plain"]) is None
    assert ast.unparse(options.ruling_test(calls["scaled"])) == "not args.amp"
    assert ast.unparse(options.ruling_test(calls["worker"])) == "args.local_rank > 0"
    assert options.ruling_test(calls["other"]) is None


# --- TR401: a for loop over one update's minibatches that steps only on its last pass, after a
# `zero_grad()` before it (SheepRL's A2C: `is_accumulating = i < len(sampler) - 1` ... `if not
# is_accumulating: optimizer.step()`: judged false in holdout251) makes one step per call from
# cleared gradients; the same loop stepping on every pass without a reset still reports ------

ONE_UPDATE = '''import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def update(batches):
    optimizer.zero_grad(set_to_none=True)
    for i, (x, y) in enumerate(batches):
        is_accumulating = {test}
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        if not is_accumulating:
            optimizer.step()
'''


def test_tr401_one_step_on_the_last_pass_after_a_reset_is_silent(tmp_path):
    text = ONE_UPDATE.format(test="i < len(batches) - 1")
    assert _in_file(tmp_path, "a2c.py", text, "TR401") == []


def test_tr401_direct_last_pass_test_is_silent(tmp_path):
    text = ONE_UPDATE.replace("if not is_accumulating:", "if i == len(batches) - 1:").format(test="None")
    assert _in_file(tmp_path, "a2c.py", text, "TR401") == []


def test_tr401_a_step_on_every_pass_without_reset_reports(tmp_path):
    text = ONE_UPDATE.format(test="False")
    assert len(_in_file(tmp_path, "a2c.py", text, "TR401")) == 1


# --- TR207: a torchaudio pipeline bundle's `get_model()` returns its model in eval mode (xumx-sliCQ's
# cadenza enhancer, `HDEMUCS_HIGH_MUSDB.get_model()`: judged false in holdout261), also through a
# name the bundle is bound to (`bundle = torchaudio.pipelines.X; bundle.get_model()`); a model the
# same function builds fresh stays reported --------------------------------------------------------

BUNDLE = '''import torch
import torchaudio
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.3))

    def forward(self, x):
        return self.net(x)


def separate(wav):
    bundle = torchaudio.pipelines.HDEMUCS_HIGH_MUSDB
    model = {BUILD}
    with torch.no_grad():
        return model(wav)
'''


def test_tr207_torchaudio_bundle_model_is_in_eval(tmp_path):
    for build in ("bundle.get_model()", "torchaudio.pipelines.HDEMUCS_HIGH_MUSDB.get_model()"):
        assert _in_file(tmp_path, "enhance.py", BUNDLE.replace("{BUILD}", build), "TR207") == [], build


def test_tr207_a_model_built_fresh_beside_the_bundle_reports(tmp_path):
    assert len(_in_file(tmp_path, "enhance.py", BUNDLE.replace("{BUILD}", "Head()"), "TR207")) == 1
