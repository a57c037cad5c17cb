"""A module whose summary a review built before its own review is reviewed, at its turn,
with that tree (engine/project_index.py ``keep_trees_for``/``take_tree``, engine/runner.py
``_review_batch``): one parse instead of two, the same results, in the batch's order."""

from __future__ import annotations

import os

from torchreview.catalog import all_rules
from torchreview.engine import project_index as P, runner
from torchreview.engine.runner import Settings

A = """import torch
from helpers import build

model = build()
for x in range(3):
    model(torch.randn(2, 4))
"""
B = """import torch.nn as nn


def build():
    return nn.Linear(4, 2)
"""
C = """import torch

x = torch.zeros(3).cuda()
"""


def _project(tmp_path):
    (tmp_path / "setup.py").write_text("")
    paths = []
    for name, text in (("main.py", A), ("other.py", C), ("helpers.py", B)):
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    return [(p, p) for p in paths]


def _dump(results):
    return [([f.to_json() for f in r.findings], [str(e) for e in r.errors], r.reviewed) for r in results]


def test_summarised_module_is_reviewed_with_its_tree(tmp_path, monkeypatch):
    batch = _project(tmp_path)
    settings = Settings(rule_codes=tuple(r.code for r in all_rules()))
    P.set_review_roots((str(tmp_path),))
    monkeypatch.setattr(P, "KEEP_BYTES", 0)  # nothing kept: every file parsed by the runner
    # the batch's order (imported files first would review helpers.py before main.py:
    # tests/test_summary_from_review.py)
    monkeypatch.setattr(runner, "_imports_first", lambda batch: (list(range(len(batch))), set()))
    monkeypatch.setattr(P, "_summaries", {})
    plain = _dump(runner._review_batch(batch, settings))
    monkeypatch.setattr(P, "_summaries", {})  # summarised again in the second run

    parsed, taken, reviewed = [], [], []
    parse, take, review = runner._parse, P.take_walked, runner.review_path
    monkeypatch.setattr(P, "KEEP_BYTES", 256 * 1024)
    monkeypatch.setattr(runner, "_parse", lambda source, result: parsed.append(source.path) or parse(source, result))
    monkeypatch.setattr(P, "take_walked", lambda path, text=None: (
        lambda t: taken.append((path, t[1] is not None)) or t if t[0] else t)(take(path, text)))
    monkeypatch.setattr(runner, "review_path", lambda real, shown, s: reviewed.append(real) or review(real, shown, s))
    kept = _dump(runner._review_batch(batch, settings))

    helpers = batch[2][0]
    assert kept == plain  # the same results, in the batch's order
    assert reviewed == [b[0] for b in batch]  # at its own turn: the order is not changed for it
    # taken with the summary's walk of it (the review's model walks it no second time)
    assert (helpers, True) in taken and helpers not in parsed
    assert not P.kept_trees() and not P._keep_for  # nothing kept after the batch


def test_a_kept_tree_is_only_taken_for_the_text_it_was_parsed_from(tmp_path):
    path = str(tmp_path / "m.py")
    (tmp_path / "m.py").write_text(B)
    P.keep_trees_for({os.path.abspath(path)})
    try:
        P._keep_tree(path, B, object())
        assert P.take_tree(path, B + "\n") is None  # another text: forgotten, not taken
        assert not P.kept_trees()
    finally:
        P.keep_trees_for(())
