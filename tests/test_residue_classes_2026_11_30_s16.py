"""Classes of findings judged false or noise on blind tests, fixed in the sixteenth session
(2026-11-30), each as a near-miss that must change beside a positive that must stay."""
from __future__ import annotations

import ast

from residue_helpers import found as _found, write as _write

from torchreview.engine.shipped_configs import OPAQUE, read_yaml, shipped_value
from torchreview.engine.options import NOT_KNOWN


# --- the YAML configs a project ships: what a configuration read holds at the defaults -------------
# (MemoTR's `config["ACCUMULATION_STEPS"]`, 1 in every shipped YAML: TR218 judged noise; RealNet's
# `autocast(enabled=config.trainer.use_fp16)`, False in every YAML: TR417 judged noise)

YAML_TEXT = """# training
ACCUMULATION_STEPS: 1   # micro-steps
LR: 2.0e-4
NAME: "mot17"
USE_DAB: False
LIST:
- a
- b
AFTER_LIST: 3
DATASET:
  TEST_SET: 'list/val.lst'
  AUG:
    FLIP: yes
    SCALES: [1, 2]
  EMPTY:
trainer:
  note: |
    several
    lines
  after_block: 5
seq:
  - name: a
    value: 1
anchored: &base 4
aliased: *base
"""


def test_yaml_reader_reads_block_mappings_and_scalars():
    keys = read_yaml(YAML_TEXT)
    assert keys[("ACCUMULATION_STEPS",)] == 1
    assert keys[("LR",)] == 2.0e-4
    assert keys[("NAME",)] == "mot17"
    assert keys[("USE_DAB",)] is False
    assert keys[("DATASET", "TEST_SET")] == "list/val.lst"
    assert keys[("DATASET", "AUG", "FLIP")] is True
    assert keys[("DATASET", "EMPTY")] is None
    assert keys[("AFTER_LIST",)] == 3
    assert keys[("trainer", "after_block")] == 5
    assert keys[("anchored",)] == 4
    assert ("DATASET",) not in keys and ("DATASET", "AUG") not in keys  # mappings, not values


def test_yaml_reader_marks_what_it_does_not_read():
    keys = read_yaml(YAML_TEXT)
    for path in [("LIST",), ("DATASET", "AUG", "SCALES"), ("trainer", "note"), ("seq",), ("aliased",)]:
        assert keys[path] is OPAQUE, path
    assert ("seq", "name") not in keys and ("note",) not in keys


def test_yaml_reader_documents_that_disagree_and_tabs():
    assert read_yaml("a: 1\n---\na: 2\n")[("a",)] is OPAQUE
    assert read_yaml("a: 1\n---\na: 1\n")[("a",)] == 1
    assert read_yaml("a:\n\tb: 1\n") == {}


def test_shipped_value_needs_every_config_to_agree(tmp_path):
    _write(tmp_path, {"configs/a.yaml": "train:\n  amp: false\n  accum: 1\n",
                      "configs/b.yml": "train:\n  amp: false\n  accum: 4\n",
                      ".github/workflows/ci.yml": "train:\n  amp: true\n"})  # hidden folders are no configs
    assert shipped_value(str(tmp_path), ("train", "amp")) is False
    assert shipped_value(str(tmp_path), ("amp",)) is False  # a key path ending with the one read
    assert shipped_value(str(tmp_path), ("accum",)) is NOT_KNOWN  # 1 and 4
    assert shipped_value(str(tmp_path), ("other", "amp")) is NOT_KNOWN  # no config sets it


ENGINE = '''import torch
from torch.nn.parallel import DistributedDataParallel


def train(config: dict):
    model = DistributedDataParallel(torch.nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    OVERRIDE
    for epoch in range(3):
        train_one_epoch(model, optimizer, epoch, accumulation_steps=READ)


def train_one_epoch(model, optimizer, epoch, accumulation_steps: int = 1):
    for i, (x, y) in enumerate(loader()):
        loss = torch.nn.functional.mse_loss(model(x), y) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def loader():
    return [(torch.randn(2, 4), torch.randn(2, 2))]
'''


def _tr218(tmp_path, values: list[str], read: str = 'config["ACCUMULATION_STEPS"]', override: str = "pass") -> list:
    files = {"train_engine.py": ENGINE.replace("READ", read).replace("OVERRIDE", override)}
    for n, value in enumerate(values):
        files[f"configs/train_{n}.yaml"] = f"LR: 0.1\nACCUMULATION_STEPS: {value}\nDATA:\n  ROOT: ./data\n"
    root = _write(tmp_path, files)
    return [(f.confidence, "above its default 1" in f.message) for f in _found(root, ("TR218",))]


def test_accumulation_factor_that_every_shipped_config_sets_to_one_is_idle(tmp_path):
    assert _tr218(tmp_path, ["1", "1"]) == [("low", True)]


def test_accumulation_factor_read_with_get_is_idle_too(tmp_path):
    assert _tr218(tmp_path, ["1"], read='config.get("ACCUMULATION_STEPS", 1)') == [("low", True)]


def test_accumulation_factor_above_one_in_a_shipped_config_keeps_the_finding(tmp_path):
    assert _tr218(tmp_path, ["1", "4"]) == [("high", False)]


def test_accumulation_factor_no_config_sets_keeps_the_finding(tmp_path):
    assert _tr218(tmp_path, []) == [("high", False)]


def test_accumulation_factor_the_file_overrides_keeps_the_finding(tmp_path):
    assert _tr218(tmp_path, ["1"], override='config["ACCUMULATION_STEPS"] = 8') == [("high", False)]


def test_accumulation_factor_of_a_mapping_the_file_builds_itself_keeps_the_finding(tmp_path):
    # a dict literal is no configuration file: its keys are not what the YAML says
    assert _tr218(tmp_path, ["1"], override='config = {"ACCUMULATION_STEPS": 4}') == [("high", False)]


AMP = '''import yaml
import torch
from torch.cuda.amp import autocast


def train_one_epoch(config, model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        with autocast(enabled=config.trainer.use_fp16):
            loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()


def main(path):
    LOAD
    model = torch.nn.Linear(4, 2)
    train_one_epoch(config, model, torch.optim.SGD(model.parameters(), lr=0.1), [])
'''


def _tr417(tmp_path, values: list[str], load: str = "config = yaml.safe_load(open(path))") -> list:
    files = {"train.py": AMP.replace("LOAD", load)}
    for n, value in enumerate(values):
        files[f"experiments/set{n}/diffusion.yaml"] = f"trainer:\n  use_fp16: {value}\n  max_epoch: 10\n"
    return [(f.confidence, "the defaults leave it off" in f.message)
            for f in _found(_write(tmp_path, files), ("TR417",))]


def test_autocast_enabled_by_a_config_key_every_shipped_config_turns_off_is_low(tmp_path):
    assert _tr417(tmp_path, ["False", "false"]) == [("low", True)]


def test_autocast_enabled_by_a_config_key_one_config_turns_on_stays(tmp_path):
    assert _tr417(tmp_path, ["False", "True"]) == [("high", False)]


def test_autocast_enabled_by_a_config_key_the_file_sets_stays(tmp_path):
    assert _tr417(tmp_path, ["False"], load="config = yaml.safe_load(open(path)); config.trainer.use_fp16 = True") \
        == [("high", False)]


def test_cached_review_follows_an_edit_of_a_shipped_config(tmp_path, monkeypatch, capsys):
    import json
    import os

    from torchreview.cache import CACHE_DIR_NAME
    from torchreview.cli import main

    _write(tmp_path, {"train.py": AMP.replace("LOAD", "config = yaml.safe_load(open(path))"),
                      "configs/a.yaml": "trainer:\n  use_fp16: false\n"})
    monkeypatch.chdir(tmp_path)

    def confidences() -> list[str]:
        main(["check", "train.py", "--format", "json", "--select", "TR417", "--min-confidence", "low"])
        return [f["confidence"] for f in json.loads(capsys.readouterr().out)["findings"]]

    assert confidences() == ["low"]
    assert confidences() == ["low"]  # served from the cache
    assert any((tmp_path / CACHE_DIR_NAME).rglob("*.json")), "the cache is in use"
    (tmp_path / "configs/a.yaml").write_text("trainer:\n  use_fp16: true\n")
    os.utime(tmp_path / "configs/a.yaml", ns=(1, 10**18))  # a different stamp, whatever the clock
    assert confidences() == ["high"]


# --- a split named by a configuration key or an option's default is the split its value names
# (mdeq/HRNet: `testloader` over `list_path=config.DATASET.TEST_SET`, `val` or `list/val.lst` in
# every shipped YAML, TR519 judged false; DocRED's `--test_prefix dev_dev`) -----------------------

SEG_TRAIN = '''import _init_paths
import torch
from torch.utils.data import DataLoader

import datasets
from config import config


def validate(model, loader):
    return sum(float(model(x).mean()) for x, _ in loader)


def main():
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    test_dataset = datasets.SegDataset(root=config.DATASET.ROOT, list_path=config.DATASET.TEST_SET)
    testloader = DataLoader(test_dataset, batch_size=4)
    best_miou = 0.0
    for epoch in range(20):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        miou = validate(model, testloader)
        if miou > best_miou:
            best_miou = miou
            torch.save(model.state_dict(), "best.pth")


if __name__ == "__main__":
    main()
'''

INIT_PATHS = '''import os.path as osp
import sys


def add_path(path):
    if path not in sys.path:
        sys.path.insert(0, path)


this_dir = osp.dirname(__file__)
lib_path = osp.join(this_dir, '..', 'lib')
add_path(lib_path)
'''


def _seg(tmp_path, values: list[str], init_paths: str = INIT_PATHS) -> list:
    files = {"tools/seg_train.py": SEG_TRAIN, "tools/_init_paths.py": init_paths,
             "lib/config/__init__.py": "from .default import _C as config\n",
             "lib/config/default.py": "from yacs.config import CfgNode as CN\n_C = CN()\n",
             "lib/datasets/__init__.py": "class SegDataset:\n    def __init__(self, root, list_path):\n"
                                         "        self.items = open(list_path).read().split()\n"}
    for n, value in enumerate(values):
        files[f"experiments/exp{n}.yaml"] = f"DATASET:\n  ROOT: data\n  TEST_SET: {value}\nTRAIN:\n  LR: 0.01\n"
    return [f.line for f in _found(_write(tmp_path, files), ("TR519",))]


def test_test_loader_over_the_split_every_shipped_config_names_val_is_validation(tmp_path):
    assert _seg(tmp_path, ["'val'", "'list/cityscapes/val.lst'"]) == []


def test_test_loader_over_a_config_key_naming_the_test_list_selects_on_test(tmp_path):
    assert _seg(tmp_path, ["'list/cityscapes/test.lst'"]) == [24]


def test_test_loader_over_a_config_key_the_configs_split_between_val_and_test_is_named(tmp_path):
    # `val` in one config, `test` in another: the key's name decides, as before
    assert _seg(tmp_path, ["'val'", "'test.lst'"]) == [24]


def test_config_of_a_folder_no_init_paths_adds_is_not_the_projects(tmp_path):
    # without the `sys.path` line, `config` is no module of this project: its reads say nothing
    assert _seg(tmp_path, ["'val'"], init_paths="import os.path as osp\nthis_dir = osp.dirname(__file__)\n") == [24]


def test_init_paths_sibling_puts_its_joined_folder_on_the_import_path(tmp_path):
    from torchreview.engine import project_index as P

    _write(tmp_path, {"tools/train.py": "import _init_paths\nfrom config import config\n",
                      "tools/_init_paths.py": INIT_PATHS, "lib/config/__init__.py": "config = {}\n"})
    P.forget_files(force=True)
    import os

    found = P.resolve(str(tmp_path / "tools/train.py"), "config")
    assert found is not None and os.path.samefile(found, tmp_path / "lib/config/__init__.py")
    _write(tmp_path, {"tools/_init_paths.py": "import sys\nprint(sys.path)\n"})
    P.forget_files(force=True)
    P._additions.clear()
    assert P.resolve(str(tmp_path / "tools/train.py"), "config") is None


DOCRED = '''import argparse

import torch
from torch.utils.data import DataLoader


def evaluate(model, loader):
    return sum(float(model(x).mean()) for x, _ in loader)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--test_prefix", type=str, default=DEFAULT)
    args = parser.parse_args()
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    test_loader = DataLoader(torch.load(f"prepro_data/{args.test_prefix}.pt"), batch_size=4)
    best = 0.0
    for epoch in range(20):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        score = evaluate(model, test_loader)
        if score > best:
            best = score
            torch.save(model.state_dict(), "best.pth")


if __name__ == "__main__":
    main()
'''


def test_test_loader_of_an_option_defaulting_to_the_dev_split_is_validation(tmp_path):
    assert _review(tmp_path, DOCRED.replace("DEFAULT", '"dev_dev"')) == []


def test_test_loader_of_an_option_defaulting_to_the_test_split_selects_on_test(tmp_path):
    assert _review(tmp_path, DOCRED.replace("DEFAULT", '"dev_test"')) == [24]


def _review(tmp_path, text: str) -> list:
    return [f.line for f in _found(_write(tmp_path, {"train.py": text}), ("TR519",))]


# --- code nothing runs: a same-named function of another module, a plain class's method, a
# `self.__dict__` read (LMforImageGeneration's MAE `misc.load_model`, TR520 judged noise;
# retention_model_NLP's `Prompting.fine_tune`, TR401/TR411 judged noise) ------------------------

FINETUNE = '''import torch


def fine_tune(model, data):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in data:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()


class Meter:
    def __getattr__(self, attr):
        if attr in self.__dict__:
            return self.__dict__[attr]
        raise AttributeError(attr)
'''

OTHER = '''import torch


def fine_tune(model, data):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in data:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
'''

MAIN_FT = '''import argparse

import torch

import misc
from IMPORT import fine_tune

parser = argparse.ArgumentParser()
parser.add_argument("--fine_tune_steps", type=int, default=3)


def main():
    model = torch.nn.Linear(4, 2)
    misc.Meter()
    fine_tune(model, [])


if __name__ == "__main__":
    main()
'''


def _tr401(tmp_path, imported_from: str) -> list:
    root = _write(tmp_path, {"misc.py": FINETUNE, "utils/__init__.py": "", "utils/other.py": OTHER,
                             "main.py": MAIN_FT.replace("IMPORT", imported_from)})
    return [(f.path.rsplit("/", 1)[-1], f.confidence) for f in _found(root, ("TR401",))]


def test_function_only_a_same_named_function_of_another_module_shadows_never_runs(tmp_path):
    assert _tr401(tmp_path, "utils.other") == [("misc.py", "low")]


def test_function_imported_from_its_own_module_runs(tmp_path):
    assert _tr401(tmp_path, "misc") == [("misc.py", "high")]


PROMPTING = '''import torch


class Prompting(object):
    def __init__(self, model):
        self.model = model

    def predict(self, x):
        return self.model(x).softmax(-1)

    def fine_tune(self, data):
        optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for x, y in data:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            optimizer.step()
'''


def _prompting(tmp_path, use: str) -> list:
    root = _write(tmp_path, {"prompting.py": PROMPTING,
                             "zero_shot.py": "import torch\nfrom prompting import Prompting\n\n"
                                             f"p = Prompting(torch.nn.Linear(4, 2))\n{use}\n"})
    return [f.confidence for f in _found(root, ("TR401",))]


def test_method_of_a_plain_class_nothing_calls_never_runs(tmp_path):
    assert _prompting(tmp_path, "p.predict(torch.randn(1, 4))") == ["low"]


def test_method_of_a_plain_class_a_script_calls_runs(tmp_path):
    assert _prompting(tmp_path, "p.fine_tune([])") == ["high"]


# --- TR518: a frozen teacher's weights are no resume; a script that reads the optimizer state from
# the same file again at top level restores it (MARS: model_Flow kept in eval beside the trained
# model, `optimizer.load_state_dict(torch.load(opt.resume_path)["optimizer"])`, judged false) -----

MARS = '''import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume_path", default="")
parser.add_argument("--resume_flow", default="")
opt = parser.parse_args()

model = nn.Linear(4, 2)
teacher = nn.Linear(4, 2)
if opt.resume_flow:
    flow = torch.load(opt.resume_flow)
    teacher.load_state_dict(flow["state_dict"])
begin = 0
if opt.resume_path:
    checkpoint = torch.load(opt.resume_path)
    begin = checkpoint["epoch"]
    model.load_state_dict(checkpoint["state_dict"])
trainable = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.SGD(trainable, lr=0.1, momentum=0.9)
OPTIMIZER_RESTORE
TEACHER_MODE
for epoch in range(begin, 10):
    model.train()
    for x in [torch.randn(2, 4)]:
        optimizer.zero_grad()
        loss = (model(x) - teacher(x).detach()).pow(2).mean()
        loss.backward()
        optimizer.step()
    torch.save({"epoch": epoch, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict()},
               "checkpoint.pth")
'''


def _mars(tmp_path, restore: str, teacher_mode: str = "teacher.eval()") -> list:
    text = MARS.replace("OPTIMIZER_RESTORE", restore).replace("TEACHER_MODE", teacher_mode)
    return sorted(f.line for f in _found(_write(tmp_path, {"train.py": text}), ("TR518",)))


RESTORE = 'if opt.resume_path:\n    optimizer.load_state_dict(torch.load(opt.resume_path)["optimizer"])'


def test_optimizer_read_again_from_the_same_file_at_top_level_is_restored(tmp_path):
    assert _mars(tmp_path, RESTORE) == []


def test_optimizer_never_restored_is_reported_on_the_trained_model_only(tmp_path):
    assert _mars(tmp_path, "pass") == [18]


def test_teacher_also_put_in_train_mode_is_a_trained_model(tmp_path):
    assert _mars(tmp_path, RESTORE, "teacher.train()") == [14]


# --- accumulation: a loop that zeroes the gradients before every backward accumulates nothing in
# `.grad`, whatever buffer it sums by hand (kgTransformer, TR218 judged false) ---------------------

KG = '''import torch
from torch.nn.parallel import DistributedDataParallel


def train(model, optimizer, loader, accum):
    model = DistributedDataParallel(model)
    grads = [torch.zeros_like(p) for p in model.parameters()]
    for i, (x, y) in enumerate(loader):
        ZERO
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        with torch.no_grad():
            for g, p in zip(grads, model.parameters()):
                g += p.grad
        if (i + 1) % accum == 0:
            for g, p in zip(grads, model.parameters()):
                p.grad = g / accum
            optimizer.step()
            optimizer.zero_grad()
'''


def test_gradients_zeroed_before_every_backward_do_not_accumulate(tmp_path):
    root = _write(tmp_path, {"train.py": KG.replace("ZERO", "optimizer.zero_grad()")})
    assert _found(root, ("TR218",)) == []


def test_gradients_zeroed_only_after_the_step_accumulate(tmp_path):
    root = _write(tmp_path, {"train.py": KG.replace("ZERO", "pass")})
    assert [f.line for f in _found(root, ("TR218",))] == [11]


# --- TR414: an adaptive optimizer cancels a constant factor on the gradients (retention_model_NLP's
# AdamW, judged false); clipping with a fixed threshold does not ---------------------------------

ACCUM = '''import torch
import torch.nn.functional as F


def train(model, loader, accum):
    optimizer = torch.optim.OPT(model.parameters(), lr=1e-3)
    for i, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        CLIP
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
'''


def _tr414(tmp_path, opt: str, clip: str = "pass") -> list:
    root = _write(tmp_path, {"train.py": ACCUM.replace("OPT", opt).replace("CLIP", clip)})
    return [(f.confidence, f.kind) for f in _found(root, ("TR414",))]


def test_undivided_accumulated_loss_under_adamw_is_low_advice(tmp_path):
    assert _tr414(tmp_path, "AdamW") == [("low", "advice")]


def test_undivided_accumulated_loss_under_sgd_stays(tmp_path):
    assert _tr414(tmp_path, "SGD") == [("high", "likely-defect")]


def test_undivided_accumulated_loss_under_adamw_with_clipping_stays(tmp_path):
    assert _tr414(tmp_path, "AdamW", "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)") == \
        [("high", "likely-defect")]


# --- the torch an install script pins (VQ-Diffusion's install_req.sh: `pip install torch==1.9.0`):
# `torch._six` still exists there, so its import is no crash (TR429 judged noise) -------------------

def _six(tmp_path, files: dict) -> list:
    from torchreview.engine.runner import Settings, run_review

    root = _write(tmp_path, {"train.py": "import torch\nfrom torch._six import inf\n\nprint(inf, torch.zeros(1))\n",
                             **files})
    report = run_review([str(root)], Settings(rule_codes=("TR429",), jobs=1, min_confidence="low",
                                              detect_torch=True))
    return [f.kind for f in report.findings]


def test_install_script_pin_before_the_removal_makes_the_private_import_advice(tmp_path):
    assert _six(tmp_path, {"install_req.sh": "#!/bin/bash\npip install torch==1.9.0 torchvision -U\n"}) == ["advice"]


def test_without_an_install_script_the_private_import_crashes(tmp_path):
    assert _six(tmp_path, {"run.sh": "#!/bin/bash\npip install torch==1.9.0\npython train.py\n"}) == ["defect"]


# --- `import torch._six` then `torch._six.string_classes`: on torch 2 the import line raises, so
# that is the line of the comment (nn_tutorial's copied coco_eval.py, judged on the wrong line) ------

def test_removed_private_module_is_reported_where_it_is_imported(tmp_path):
    text = "import torch\nimport torch._six\n\n\ndef f(x):\n    return isinstance(x, torch._six.string_classes)\n"
    assert [(f.line, f.kind) for f in _found(_write(tmp_path, {"a.py": text}), ("TR429",))] == [(2, "defect")]


def test_removed_private_name_reached_through_torch_is_reported_where_it_is_used(tmp_path):
    text = "import torch\n\n\ndef f(x):\n    return isinstance(x, torch._six.string_classes)\n"
    assert [(f.line, f.kind) for f in _found(_write(tmp_path, {"a.py": text}), ("TR429",))] == [(5, "defect")]


# --- a notebook cell that ends with `def f():` and no body: Python notices at the next cell's
# first line, and skipping that cell changes nothing (pytorch-first's dataset_mean_std.ipynb: the
# same error was reported 64 times, and every later cell was lost) ---------------------------------

def _nb(path, cells: list[str]) -> None:
    import json

    path.write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                           "execution_count": None, "source": c} for c in cells],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def test_cell_with_an_unfinished_definition_is_the_one_skipped(tmp_path):
    from torchreview.engine.runner import Settings, run_review

    _nb(tmp_path / "a.ipynb", ["import torch\n", "def calculate_mean_std():\n",
                               "x = torch.randn(4, 3)\nprint(x.mean())\n",
                               "x.data = torch.zeros(4, 3)\nwith torch.no_grad:\n    pass\n"])
    report = run_review([str(tmp_path / "a.ipynb")], Settings(rule_codes=("TR514",), jobs=1, min_confidence="low"))
    assert [e.message.split(":")[0] for e in report.errors] == ["syntax error at cell 2, line 1"]
    assert [(f.code, f.cell) for f in report.findings] == [("TR514", 4)]  # the later cells are still reviewed


def test_cell_that_blanking_cannot_fix_is_reported_once(tmp_path):
    from torchreview.engine.runner import Settings, run_review

    # an unfinished `if` in cell 2: Python stops at cell 3's first line whatever cell 3 holds
    _nb(tmp_path / "b.ipynb", ["import torch\n", "if torch.cuda.is_available():\n", "    \n", "x = 1\n"])
    report = run_review([str(tmp_path / "b.ipynb")], Settings(rule_codes=("TR514",), jobs=1, min_confidence="low"))
    assert 1 <= len(report.errors) <= 2 and len({e.message for e in report.errors}) == len(report.errors)


# --- a README that lists "[PyTorch](http://pytorch.org/), tested with version 0.4.1" names the
# torch the project runs on (latent-i2a's KFAC `torch.symeig`, judged noise: it exists there) -------

def test_readme_listing_the_tested_torch_after_a_link_pins_it(tmp_path):
    from torchreview.config import nearest_torch_pin

    _write(tmp_path, {"README.md": "# Project\n\n## Requirements\n* Python 3, tested on python 3.5\n"
                                   "* [PyTorch](http://pytorch.org/), tested with version 0.4.1\n",
                      "main.py": "import torch\n"})
    assert nearest_torch_pin(str(tmp_path / "main.py"), memo=False) == (True, (0, 4))


def test_readme_naming_a_floor_after_the_link_pins_nothing(tmp_path):
    from torchreview.config import nearest_torch_pin

    _write(tmp_path, {"README.md": "* [PyTorch](http://pytorch.org/), tested with 1.13 or later\n",
                      "main.py": "import torch\n"})
    assert nearest_torch_pin(str(tmp_path / "main.py"), memo=False) == (False, None)


# --- TR401: a step helper of another project module that zeroes the optimizer it is handed resets
# the gradients (Implicit-LVM's `optimizer_step(loss, optimizer)`, judged false) -------------------

STEP_HELPER = '''def optimizer_step(loss, optimizer):
    ZERO
    loss.backward()
    optimizer.step()
'''

STEP_TRAIN = '''import torch

from utils import optimizer_step

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in [torch.randn(2, 4)]:
    loss = model(x).pow(2).mean()
    optimizer_step(loss, optimizer)
'''


def test_step_helper_of_another_module_that_zeroes_the_gradients_resets_them(tmp_path):
    root = _write(tmp_path, {"utils.py": STEP_HELPER.replace("ZERO", "optimizer.zero_grad()"), "train.py": STEP_TRAIN})
    assert _found(root, ("TR401",)) == []


def test_step_helper_of_another_module_without_a_reset_keeps_the_finding(tmp_path):
    root = _write(tmp_path, {"utils.py": STEP_HELPER.replace("ZERO", "pass"), "train.py": STEP_TRAIN})
    assert [f.line for f in _found(root, ("TR401",))] == [7]


# --- TR511: `Variable(data.data, requires_grad=True).cuda()` of data moved with `.cuda()` before is
# the same leaf tensor (gradnorm_ood's input-gradient loop, judged false) --------------------------

GRADNORM = '''import torch
from torch.autograd import Variable


def scores(model, batches):
    out = []
    for batch in batches:
        data = torch.tensor(batch)
        MOVE
        data = Variable(data, volatile=True)
        inputs = Variable(data.data, requires_grad=True).cuda()
        loss = model(inputs).sum()
        loss.backward()
        out.append(inputs.grad)
    return out
'''


def test_leaf_moved_with_cuda_after_its_data_was_moved_there_is_the_same_leaf(tmp_path):
    root = _write(tmp_path, {"a.py": GRADNORM.replace("MOVE", "data = data.cuda()")})
    assert _found(root, ("TR511",)) == []


def test_leaf_moved_with_cuda_from_host_data_is_a_copy(tmp_path):
    root = _write(tmp_path, {"a.py": GRADNORM.replace("MOVE", "pass")})
    assert [f.line for f in _found(root, ("TR511",))] == [11]


# --- TR513: a loader helper of another module that sets the epoch of the sampler it builds, rebuilt
# every epoch with `epoch=epoch` (online-conformal's `data_loader`, judged false) --------------------

LOADER_HELPER = '''import torch
import torch.distributed as dist


def data_loader(dataset, batch_size=256, epoch=0):
    sampler = torch.utils.data.DistributedSampler(dataset, shuffle=True)
    SET
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, sampler=sampler)
'''

LOADER_TRAIN = '''import torch

from utils import data_loader


def train(model, dataset, optimizer):
    for epoch in range(10):
        for x, y in data_loader(dataset, epoch=epoch):
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
'''


def test_loader_helper_that_sets_the_epoch_it_is_given_seeds_its_sampler(tmp_path):
    root = _write(tmp_path, {"utils.py": LOADER_HELPER.replace("SET", "sampler.set_epoch(epoch)"),
                             "train.py": LOADER_TRAIN})
    assert _found(root, ("TR513",)) == []


def test_loader_helper_that_never_sets_the_epoch_keeps_the_finding(tmp_path):
    root = _write(tmp_path, {"utils.py": LOADER_HELPER.replace("SET", "pass"), "train.py": LOADER_TRAIN})
    assert len(_found(root, ("TR513",))) == 1


# --- TR403: a wrapper that scatters its inputs like DataParallel (mmcv's MMDataParallel; a project
# class deriving from DataParallel) moves the CPU batch itself (mmskeleton, lfdm, judged false) ------

WRAPPED_TRAIN = '''import torch
from torch.utils.data import DataLoader, TensorDataset

IMPORT


def main():
    model = torch.nn.Linear(4, 2).cuda()
    WRAP
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 2)), batch_size=4)
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y.cuda())
        loss.backward()
        optimizer.step()
'''


def _tr403(tmp_path, imp: str, wrap: str, files: dict | None = None) -> list:
    root = _write(tmp_path, {"train.py": WRAPPED_TRAIN.replace("IMPORT", imp).replace("WRAP", wrap), **(files or {})})
    return [f.line for f in _found(root, ("TR403",))]


def test_model_wrapped_by_mmcv_data_parallel_scatters_its_batch(tmp_path):
    assert _tr403(tmp_path, "from mmcv.parallel import MMDataParallel",
                  "model = MMDataParallel(model, device_ids=[0]).cuda()") == []


def test_model_wrapped_by_a_project_data_parallel_subclass_scatters_its_batch(tmp_path):
    helper = "from torch.nn.parallel import DataParallel\n\n\nclass CallbackParallel(DataParallel):\n    pass\n"
    assert _tr403(tmp_path, "from parallel import CallbackParallel", "model = CallbackParallel(model).cuda()",
                  {"parallel.py": helper}) == []


def test_model_wrapped_by_another_project_class_keeps_the_finding(tmp_path):
    helper = "import torch\n\n\nclass Wrapper(torch.nn.Module):\n    def __init__(self, m):\n        super().__init__()\n" \
             "        self.m = m\n\n    def forward(self, x):\n        return self.m(x)\n"
    assert _tr403(tmp_path, "from parallel import Wrapper", "model = Wrapper(model).cuda()", {"parallel.py": helper}) == [14]


# --- a value a cache round-trips (`features = torch.load(cache)` ... `torch.save(features, cache)`)
# is whatever the file held, not plain data (simpletransformers' SquadFeatures cache: TR102 told to
# load it weights-only, judged false) ------------------------------------------------------------

CACHE = """import os

import torch

from lib.features import convert


def load_and_cache(examples, cache):
    if os.path.exists(cache):
        features = torch.load(cache, weights_only=False)
    else:
        SAVE
    return features
"""


def _cache(tmp_path, save: str) -> list:
    root = _write(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='lib', packages=['lib'])\n",
                             "lib/__init__.py": "", "lib/cache.py": CACHE.replace("SAVE", save),
                             "lib/features.py": "def convert(examples):\n    return list(examples), None\n"})
    return [(f.confidence, "plain values only" in f.message) for f in _found(root, ("TR102",))]


def test_cache_of_a_value_also_bound_by_torch_load_is_not_known_plain(tmp_path):
    assert _cache(tmp_path, "features, dataset = convert(examples)\n        torch.save(features, cache)") == \
        [("medium", False)]


def test_cache_of_tensors_built_here_is_plain(tmp_path):
    assert _cache(tmp_path, "stacked = torch.stack([torch.tensor(e) for e in examples])\n"
                            "        torch.save(stacked, cache)\n        features = stacked") == [("high", True)]


# --- TR401: a model whose own `forward` calls `self.zero_grad()` resets the gradients on every step
# of a loop that calls it (lstm-crf's `rnn_crf`, star-imported by the training script, judged false)

RNN_CRF = '''import torch
from torch import nn


class rnn_crf(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 1)

    def forward(self, x):
        RESET
        return self.lin(x).sum()
'''

CRF_TRAIN = '''import torch
from rnn_crf import *

model = rnn_crf()
optim = torch.optim.Adam(model.parameters(), lr=0.01)
for x in [torch.randn(2, 4)]:
    loss = model(x)
    loss.backward()
    optim.step()
'''


def test_model_that_zeroes_its_gradients_in_forward_resets_them(tmp_path):
    root = _write(tmp_path, {"rnn_crf.py": RNN_CRF.replace("RESET", "self.zero_grad()"), "train.py": CRF_TRAIN})
    assert _found(root, ("TR401",)) == []


def test_model_whose_forward_resets_nothing_keeps_the_finding(tmp_path):
    root = _write(tmp_path, {"rnn_crf.py": RNN_CRF.replace("RESET", "pass"), "train.py": CRF_TRAIN})
    assert [f.line for f in _found(root, ("TR401",))] == [6]


# --- a README whose requirement line names the one Python the code runs on (`Python3.6`) caps the
# torch at the last release built for it (nn_tutorial's copied coco_eval.py: `torch._six` exists in
# torch 1.10, TR429 judged noise); a floor (`Python 3.6 and above`) pins nothing --------------------

def _readme_python(tmp_path, line: str):
    from torchreview.config import nearest_torch_pin

    _write(tmp_path, {"README.md": f"# Tutorial\n\n## Requirements\n\n{line}\n\n$ python train.py\n",
                      "train.py": "import torch\n"})
    return nearest_torch_pin(str(tmp_path / "train.py"), memo=False)


def test_readme_requirement_line_naming_python_36_caps_torch(tmp_path):
    assert _readme_python(tmp_path, "Python3.6") == (True, (1, 10))


def test_readme_naming_a_python_floor_pins_nothing(tmp_path):
    assert _readme_python(tmp_path, "Python 3.6 and above") == (False, None)


# --- TR426: NumPy draws under an option the defaults leave off (VL-T5's `--shuffle_boxes`, judged
# noise: the shipped scripts never pass it) --------------------------------------------------------

SHUFFLE = '''import argparse

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Boxes(Dataset):
    def __init__(self, args):
        self.args = args
        self.items = [np.arange(4) for _ in range(8)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        boxes = self.items[i].copy()
        if self.args.shuffle_boxes:
            np.random.shuffle(boxes)
        return torch.from_numpy(boxes)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shuffle_boxes", action="store_true", default=DEFAULT)
    args = parser.parse_args()
    for batch in DataLoader(Boxes(args), batch_size=2, num_workers=4):
        print(batch)


if __name__ == "__main__":
    main()
'''


def _boxes(tmp_path, default: str) -> list:
    root = _write(tmp_path, {"data.py": SHUFFLE.replace("DEFAULT", default), "requirements.txt": "torch==1.6.0\n"})
    return [f.line for f in _found(root, ("TR426",), detect_torch=True)]


def test_numpy_draw_under_an_option_off_at_the_defaults_is_silent(tmp_path):
    assert _boxes(tmp_path, "False") == []


def test_numpy_draw_under_an_option_on_at_the_defaults_is_reported(tmp_path):
    assert _boxes(tmp_path, "True") == [19]


def test_readme_prose_that_mentions_a_tested_python_pins_nothing(tmp_path):
    # documentation text quoting such a line (this project's own README did) is no requirement
    assert _readme_python(tmp_path, 'The reader takes a line that names one Python ("tested on Python 3.6").') == \
        (False, None)


# --- TR518: a counter read back into a value nothing reads does not continue the run (VNet's
# `args.start_epoch = checkpoint["epoch"]` beside `range(1, nEpochs + 1)`: the judge's comment was
# the ignored start epoch, not the optimizer) ------------------------------------------------------

VNET = '''import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
parser.add_argument("--start-epoch", default=0, type=int)
parser.add_argument("--epochs", default=10, type=int)
args = parser.parse_args()
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
if args.resume:
    checkpoint = torch.load(args.resume)
    args.start_epoch = checkpoint["epoch"]
    print("=> loaded checkpoint (epoch {})".format(checkpoint["epoch"]))
    model.load_state_dict(checkpoint["state_dict"])
for epoch in LOOP:
    optimizer.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    torch.save({"epoch": epoch, "state_dict": model.state_dict()}, "checkpoint.pth")
'''


def _vnet(tmp_path, loop: str) -> list:
    root = _write(tmp_path, {"train.py": VNET.replace("LOOP", loop)})
    return ["counter restarts at 0" in f.message for f in _found(root, ("TR518",))]


def test_epoch_read_back_into_an_unread_option_is_no_continuation(tmp_path):
    assert _vnet(tmp_path, "range(1, args.epochs + 1)") == [True]


def test_epoch_read_back_into_the_loop_start_continues_the_run(tmp_path):
    assert _vnet(tmp_path, "range(args.start_epoch, args.epochs)") == [False]


# --- TR507: a list started over, under the same test, in every iteration that fills it (iSeeBetter's
# `if args.APITLoss: fakeHRs = []` ... `if args.APITLoss: fakeHRs.append(fakeHR)`, judged false) -----

APIT = """import torch


def train(loader, args):
    netG = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(netG.parameters(), lr=0.1)
    fakes = []
    for iteration, (x, y) in enumerate(loader, 1):
        if RESET_TEST:
            fakes = []
        optimizer.zero_grad()
        fake = netG(x)
        if args.apit:
            fakes.append(fake)
        loss = (fake - y).pow(2).mean()
        loss.backward()
        optimizer.step()
"""


def test_list_started_over_under_the_same_test_does_not_grow(tmp_path):
    root = _write(tmp_path, {"train.py": APIT.replace("RESET_TEST", "args.apit")})
    assert _found(root, ("TR507",)) == []


def test_list_started_over_under_another_test_still_grows(tmp_path):
    root = _write(tmp_path, {"train.py": APIT.replace("RESET_TEST", "iteration == 1")})
    assert [f.line for f in _found(root, ("TR507",))] == [14]
