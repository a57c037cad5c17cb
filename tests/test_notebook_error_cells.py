"""Notebook cells whose stored outputs hold an error are demonstrations the author
already ran: file-rule findings located there are dropped (engine/runner.py)."""

from __future__ import annotations

import json

from torchreview.engine.runner import Settings, run_review
from torchreview.engine.source import load_notebook

SETUP = "import torch\nfrom torch import nn\nnet = nn.Linear(1, 1)\nxs = torch.randn(4, 1)\n"
BUG = "out = net(xs)\nshown = out.numpy()\n"
ERROR = {"output_type": "error", "ename": "RuntimeError", "evalue": "requires grad", "traceback": []}


def _notebook(*cells) -> bytes:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": src, "outputs": outs}
                                 for src, outs in cells], "metadata": {}, "nbformat": 4,
                       "nbformat_minor": 5}).encode()


def test_error_cells_are_recorded_from_outputs_only():
    data = _notebook((SETUP, []), (BUG, [ERROR]), (BUG, [{"output_type": "stream", "text": "Error!"}]),
                     (BUG, "not a list"), (BUG, [None, {"output_type": "error"}]))
    assert load_notebook("n.ipynb", "n.ipynb", data).error_cells == frozenset({2, 5})


def test_the_same_bug_is_silent_in_a_cell_that_stored_its_error(tmp_path):
    (tmp_path / "demo.ipynb").write_bytes(_notebook((SETUP, []), (BUG, [ERROR]), (BUG, [])))
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR502",), jobs=1))
    assert not report.errors
    assert [(f.code, f.cell) for f in report.findings] == [("TR502", 3)]
