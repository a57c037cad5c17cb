"""Residue classes of the thirty-sixth session (findings judged noise or false in blind tests):
each positive or near-miss below failed on the code before its fix."""
from __future__ import annotations

import pytest

from residue_helpers import found, write


# --- checkpoint index: a script that reads a trained model's weights on every run (it cannot
# start without that file) from a path one option names, and writes its own result under other
# options, does not read back its own save; TR520 had linked the two by their shared
# "state_dict" key (a calibration script, judged false in blind test 132) ------------------------

CALIBRATE = '''import argparse
import os

import torch
import torch.nn as nn


def options():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source_ckpt")
    parser.add_argument("--out_dir", default="runs")
    return parser.parse_args()


def store(args, net, scale, name):
    weights = net.state_dict()
    weights["0.weight"] /= scale
    blob = {{"state_dict": weights, "args": args}}
    target = {target}
    torch.save(blob, target)


def main():
    args = options()
    net = nn.Sequential(nn.Linear(4, 2))
    {load}
    net.load_state_dict(weights)
    store(args, net, torch.ones(1), "calibrated.pt")


if __name__ == "__main__":
    main()
'''

OUT = 'os.path.join(args.out_dir, "checkpoints", name)'
PIN = "torch==2.7.0\n"
INPUT = 'weights = torch.load(args.source_ckpt)["state_dict"]'


def test_every_run_input_of_another_option_is_not_the_scripts_own_file(tmp_path):
    write(tmp_path, {"calibrate.py": CALIBRATE.format(target=OUT, load=INPUT), "requirements.txt": PIN})
    assert found(tmp_path, ("TR520",)) == []


def test_module_level_script_reading_its_input_every_run(tmp_path):
    write(tmp_path, {"requirements.txt": PIN, "convert.py": '''import argparse
import os

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--weights")
parser.add_argument("--save_dir")
args = parser.parse_args()
net = nn.Linear(4, 2)
net.load_state_dict(torch.load(args.weights)["model"])
torch.save({"model": net.state_dict(), "args": args}, os.path.join(args.save_dir, "half.pt"))
'''})
    assert found(tmp_path, ("TR520",)) == []


@pytest.mark.parametrize("load", [
    # only when an option is set: the script's own earlier output, handed back
    'weights = torch.load(args.source_ckpt)["state_dict"] if args.source_ckpt else net.state_dict()',
    # two keys: the reader expects this script's layout
    'ckpt = torch.load(args.source_ckpt); weights = ckpt["state_dict"]; print(ckpt["args"])',
])
def test_loads_that_still_read_the_scripts_own_save(tmp_path, load):
    write(tmp_path, {"calibrate.py": CALIBRATE.format(target=OUT, load=load), "requirements.txt": PIN})
    hits = found(tmp_path, ("TR520",))
    assert [f.line for f in hits] == [26]
    assert "`args`" in hits[0].message


def test_every_run_load_of_the_file_the_script_rewrites_in_place(tmp_path):
    write(tmp_path, {"calibrate.py": CALIBRATE.format(target="args.source_ckpt", load=INPUT),
                     "requirements.txt": PIN})
    hits = found(tmp_path, ("TR520",))
    assert [f.line for f in hits] == [26]


# --- TR520: a project's own `parse_args()` that hands back an OmegaConf config is no
# `argparse.Namespace` (jdeschena's `parse_args` returning `OmegaConf.create(...)`, named a
# Namespace in blind test 132) ----------------------------------------------------------------

PARSE = '''import argparse

from omegaconf import OmegaConf


def parse_args(parser: argparse.ArgumentParser):
    args = parser.parse_args()
{convert}    return args
'''

RESUMING = '''import argparse

import torch
import torch.nn as nn

from pkg.utils import parse_args


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume")
    args = parse_args(parser)
    net = nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    if args.resume:
        ckpt = torch.load(args.resume)
        net.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
    for step in range(3):
        loss = net(torch.randn(2, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "args": args}, args.resume)


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("convert, named", [
    ("    args = vars(args)\n    args = OmegaConf.create(args)\n", "DictConfig"),
    ("", "argparse.Namespace"),  # near-miss: the helper hands back the Namespace itself
])
def test_project_parse_args_returning_a_config(tmp_path, convert, named):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/utils.py": PARSE.format(convert=convert),
                     "pkg/train.py": RESUMING, "requirements.txt": PIN})
    hits = found(tmp_path, ("TR520",))
    assert [f.line for f in hits] == [16]
    assert named in hits[0].message
    assert ("Namespace" in hits[0].message) == (named == "argparse.Namespace")
