"""A finished file's tree and model are freed by reference counting (engine/release.py)."""

from __future__ import annotations

import ast
import gc

from torchreview.catalog import all_rules
from torchreview.engine.project_index import summarize
from torchreview.engine.release import release
from torchreview.engine.runner import Settings, review_source
from torchreview.engine.semantic import SemanticModel
from torchreview.engine.source import load_python

CODE = b"""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x).softmax(-1)


def train(model, loader, opt):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
"""


def _modules() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is ast.Module)


def test_review_leaves_no_tree_for_the_collector():
    settings = Settings(rule_codes=tuple(r.code for r in all_rules()))
    review_source(load_python("warm.py", "warm.py", CODE), settings)  # imports, caches
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        before = _modules()
        result = review_source(load_python("train.py", "train.py", CODE), settings)
        left = _modules() - before
    finally:
        if enabled:
            gc.enable()
    assert result.reviewed and result.facts is not None
    assert left == 0, "the reviewed file's tree is still alive: something keeps a cycle through it"


def test_release_drops_parent_links_and_model_state():
    tree = ast.parse(CODE)
    model = SemanticModel(tree)
    call = model.calls[0]
    assert getattr(call, "_tr_parent", None) is not None
    release(model)
    assert not any(hasattr(node, "_tr_parent") for node in ast.walk(tree))
    assert vars(model) == {}


def test_release_tolerates_objects_it_cannot_empty():
    class Slotted:
        __slots__ = ("x",)

    release(Slotted(), Slotted())  # no nodes_by_type, no __dict__: nothing to do, no error


def test_summary_is_plain_data_after_its_model_is_released():
    summary = summarize(ast.parse(CODE))
    assert summary.classes["Net"].kind == "model"
    assert [f for f in summary.functions] == ["train"]
