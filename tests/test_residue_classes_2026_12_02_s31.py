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
