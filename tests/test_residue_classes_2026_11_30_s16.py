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
