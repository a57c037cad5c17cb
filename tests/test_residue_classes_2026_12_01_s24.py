"""Residue classes of the twenty-fourth session (2026-12-01): each a class of false or noisy findings
judged on fresh public repositories, with a positive that must stay and near-misses that must not."""
from __future__ import annotations

from residue_helpers import found as _found, write as _write


# --- TR520: a script that converts old checkpoints reads one file and writes another from what it
# read (gallev-caption's load_and_resave_models: `BEST_x` in, `NEW_x` out with each pickled module's
# `.state_dict()`); the save shares the load's keys but is not the writer of the file read, and
# `loaded["encoder"].state_dict()` is a state dict, not the module the loading code handles ----------

CONVERT = '''import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--model", type=str)
args = parser.parse_args()
name = "best.pth.tar"
src = "/data/{}/{}".format(args.model, name)
saved = torch.load(src, map_location="cpu")
SAVE
'''


def _convert(tmp_path, save):
    root = _write(tmp_path, {"convert.py": CONVERT.replace("SAVE", save)})
    return [(f.line, f.confidence) for f in _found(root, ("TR520",))]


def test_tr520_a_conversion_writing_another_file_from_what_it_read_is_not_the_file_read(tmp_path):
    # the module pickled into the new file: the old file read here was written elsewhere
    moved = ('enc = nn.Linear(2, 2)\ntorch.save({"epoch": saved["epoch"], "encoder": enc, '
             '"decoder": saved["decoder"]}, "/data/{}/NEW_{}".format(args.model, name))')
    assert _convert(tmp_path / "a", moved) == []
    # each module's state dict written out: a state dict is no module, whatever the key
    states = ('dst = "/data/{}/NEW_{}".format(args.model, name)\n'
              'torch.save({"epoch": saved["epoch"], "encoder": saved["encoder"].state_dict(), '
              '"decoder": saved["decoder"].state_dict()}, dst)')
    assert _convert(tmp_path / "b", states) == []


def test_tr520_a_rewrite_in_place_and_a_fresh_save_still_link(tmp_path):
    # the same path rewritten with a module in it: the next run's load reads this save
    in_place = 'torch.save({"epoch": saved["epoch"] + 1, "encoder": nn.Linear(2, 2)}, src)'
    assert _convert(tmp_path / "a", in_place) == [(10, "high")]
    # a save that copies nothing from the load, with the keys the load reads: the writer
    fresh = ('print(saved["epoch"], saved["encoder"])\n'
             'torch.save({"epoch": 3, "encoder": nn.Linear(2, 2)}, "/data/{}/{}".format(args.model, name))')
    assert _convert(tmp_path / "b", fresh) == [(10, "high")]
