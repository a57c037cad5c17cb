"""# noqa, # torchreview: ignore[...], skip-file; in notebooks too."""

from __future__ import annotations

import json

from torchreview.engine.runner import Settings, run_review
from torchreview.engine.suppression import is_suppressed, skips_file


def test_comment_forms():
    assert is_suppressed("x = torch.load(p)  # noqa", "TR102")
    assert is_suppressed("x = torch.load(p)  # noqa: TR102", "TR102")
    assert is_suppressed("x = torch.load(p)  # NOQA:TR409,TR102", "TR102")
    assert not is_suppressed("x = torch.load(p)  # noqa: TR409", "TR102")
    assert is_suppressed("x = torch.load(p)  # torchreview: ignore[TR102, TR305]", "TR102")
    assert not is_suppressed("x = torch.load(p)  # torchreview: ignore[TR305]", "TR102")
    assert is_suppressed("x = torch.load(p)  # torchreview: ignore", "TR102")
    assert not is_suppressed("x = torch.load(p)", "TR102")
    assert skips_file("# torchreview: skip-file\nimport torch\n")
    assert not skips_file("import torch\n" + "\n" * 40 + "# torchreview: skip-file\n")


def _review(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    return run_review([str(tmp_path / name)], Settings(rule_codes=("TR102",), jobs=1)).findings


def test_suppressed_in_files(tmp_path):
    text = ("import torch\n"
            "a = torch.load('a.pt')  # noqa: TR102\n"
            "b = torch.load('b.pt')  # torchreview: ignore[TR102]\n"
            "c = torch.load('c.pt')  # noqa: TR409\n")
    assert [f.line for f in _review(tmp_path, "a.py", text)] == [4]
    assert _review(tmp_path, "b.py", "# torchreview: skip-file\nimport torch\nx = torch.load('a')\n") == []


def test_suppressed_in_notebook_cells(tmp_path):
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "source": ["import torch\n"]},
             {"cell_type": "code", "metadata": {}, "outputs": [],
              "source": ["a = torch.load('a.pt')  # noqa\n", "b = torch.load('b.pt')"]}]
    doc = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    found = _review(tmp_path, "n.ipynb", doc)
    assert [(f.cell, f.line) for f in found] == [(2, 2)]
