"""Classes of findings judged false or noise on blind tests, fixed in the fifteenth session
(2026-11-30), each as a near-miss that must change beside a positive that must stay."""
from __future__ import annotations

from residue_helpers import found as _found, write as _write


# --- project rules at a load nothing runs: a pasted helper nobody calls (meta-concepts' fairseq
# `load_model_state`, TR520 judged noise) is low confidence, like a file rule's finding there -----

TRAIN = '''import argparse

import torch
from torch import nn

from utils import load_model_state


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for epoch in range(3):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        torch.save({"model": model.state_dict(), "args": args}, "checkpoint.pt")
    CALL


if __name__ == "__main__":
    main()
'''

UTILS = '''import torch


def load_model_state(filename, model):
    state = torch.load(filename)
    model.load_state_dict(state["model"])
    return state["args"]
'''


def _tr520(tmp_path, call: str) -> list:
    root = _write(tmp_path, {"train.py": TRAIN.replace("CALL", call), "utils.py": UTILS})
    return [(f.path.rsplit("/", 1)[-1], f.confidence, "nothing in the project calls" in f.message)
            for f in _found(root, ("TR520",))]


def test_tr520_load_in_a_helper_nothing_calls_is_low(tmp_path):
    assert _tr520(tmp_path, "pass") == [("utils.py", "low", True)]


def test_tr520_load_in_a_helper_the_script_calls_stays(tmp_path):
    found = _tr520(tmp_path, 'load_model_state("checkpoint.pt", model)')
    assert len(found) == 1 and found[0][0] == "utils.py" and found[0][1] != "low" and not found[0][2], found
