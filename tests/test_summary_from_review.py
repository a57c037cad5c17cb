"""A batch review reviews imported files first (engine/runner.py ``_imports_first``)
and memoises a module's project summary from its review's model when the project
changed none of that model's answers (engine/project_index.py ``summary_from_review``):
the same summary as ``summarize`` builds from a second parse, the same results."""

from __future__ import annotations

import ast
import hashlib
import os

from torchreview.catalog import all_rules
from torchreview.engine import project_index as P, runner
from torchreview.engine.runner import Settings
from torchreview.engine.semantic import SemanticModel

MAIN = """import torch
from helpers import build, Net

model = build()
net = Net()
for x in range(3):
    model(torch.randn(2, 4))
"""
HELPERS = """import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        return x.softmax(-1)


def build():
    return nn.Linear(4, 2)


def run(model, x):
    model.eval()
    return model(x)
"""
# its model asks the project about `Net`, a model class: not summarised from its review
USES_NET = """import torch
from helpers import Net


class Wrapper(Net):
    pass


def make():
    return Net()
"""
OTHER = """import torch

x = torch.zeros(3).cuda()
"""


def _project(tmp_path, files):
    (tmp_path / "setup.py").write_text("")
    out = []
    for name, text in files:
        (tmp_path / name).write_text(text)
        out.append((str(tmp_path / name), str(tmp_path / name)))
    return out


def _dump(results):
    return [([f.to_json() for f in r.findings], [str(e) for e in r.errors], r.reviewed) for r in results]


def test_imports_first_order_and_hint(tmp_path):
    batch = _project(tmp_path, (("main.py", MAIN), ("other.py", OTHER), ("uses_net.py", USES_NET),
                                ("helpers.py", HELPERS)))
    order, imported = runner._imports_first(batch)
    assert sorted(order) == [0, 1, 2, 3]
    assert order.index(3) < order.index(0) and order.index(3) < order.index(2)  # helpers.py before its importers
    assert imported == {3}
    (tmp_path / "other.py").write_text(OTHER + "\n" * 1000)  # the largest file goes first
    assert runner._imports_first(batch)[0][0] == 1


def test_imported_module_is_summarised_from_its_review(tmp_path, monkeypatch):
    batch = _project(tmp_path, (("main.py", MAIN), ("other.py", OTHER), ("uses_net.py", USES_NET),
                                ("helpers.py", HELPERS)))
    settings = Settings(rule_codes=tuple(r.code for r in all_rules()))
    P.set_review_roots((str(tmp_path),))
    monkeypatch.setattr(runner, "_imports_first", lambda batch: (list(range(len(batch))), set()))
    monkeypatch.setattr(P, "_summaries", {})
    plain = _dump(runner._review_batch(batch, settings))
    monkeypatch.undo()

    P.set_review_roots((str(tmp_path),))
    monkeypatch.setattr(P, "_summaries", {})
    summarised, reviewed = [], []
    summarize, review = P.summarize, runner.review_path
    monkeypatch.setattr(P, "summarize", lambda tree: summarised.append(tree) or summarize(tree))
    monkeypatch.setattr(runner, "review_path", lambda real, shown, s: reviewed.append(real) or review(real, shown, s))
    first = _dump(runner._review_batch(batch, settings))
    assert first == plain  # the same results, in the batch's order
    assert reviewed[0] == batch[3][0]  # helpers.py first
    assert not summarised  # its summary came from its review: no second parse and model
    digest = hashlib.sha1(HELPERS.encode()).hexdigest()
    assert P._summaries[digest] == P.summarize(ast.parse(HELPERS))
    assert not P._from_review  # forgotten after the batch


def _review_model(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    P.set_review_roots((str(tmp_path),))
    return str(path), SemanticModel(ast.parse(text), P.ProjectView(str(path)))


def test_a_model_the_project_changed_gives_no_summary(tmp_path, monkeypatch):
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "helpers.py").write_text(HELPERS)
    monkeypatch.setattr(P, "_summaries", {})
    path, model = _review_model(tmp_path, "uses_net.py", USES_NET)
    assert model.hierarchy.module_classes == {"Wrapper"}  # Net is a model class of helpers.py
    P.summaries_from_reviews({os.path.abspath(path)})
    try:
        P.summary_from_review(path, USES_NET.encode(), USES_NET, model)
    finally:
        P.summaries_from_reviews(())
    assert hashlib.sha1(USES_NET.encode()).hexdigest() not in P._summaries


def test_only_files_another_batch_file_imports_and_the_same_text(tmp_path, monkeypatch):
    (tmp_path / "setup.py").write_text("")
    monkeypatch.setattr(P, "_summaries", {})
    path, model = _review_model(tmp_path, "helpers.py", HELPERS)
    P.summary_from_review(path, HELPERS.encode(), HELPERS, model)  # not a batch file others import
    assert not P._summaries
    P.summaries_from_reviews({os.path.abspath(path)})
    try:
        P.summary_from_review(path, HELPERS.encode() + b"\n", HELPERS, model)  # another text
        assert not P._summaries
        P.summary_from_review(path, HELPERS.encode(), HELPERS, model)
    finally:
        P.summaries_from_reviews(())
    assert P._summaries == {hashlib.sha1(HELPERS.encode()).hexdigest(): P.summarize(ast.parse(HELPERS))}


def test_a_failure_while_reading_the_summary_is_not_the_reviews(tmp_path, monkeypatch):
    (tmp_path / "setup.py").write_text("")
    monkeypatch.setattr(P, "_summaries", {})
    path, model = _review_model(tmp_path, "helpers.py", HELPERS)

    def deep(model):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(P, "_summary_of", deep)
    P.summaries_from_reviews({os.path.abspath(path)})
    try:
        P.summary_from_review(path, HELPERS.encode(), HELPERS, model)  # no exception
    finally:
        P.summaries_from_reviews(())
    assert not P._summaries


def test_a_model_the_project_changed_gives_its_summary_after_the_review(tmp_path, monkeypatch):
    # engine/project_index.py ``summary_after_review``: the review's own tree, once the
    # review is done, gives the summary a second parse would (the project-less model)
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "helpers.py").write_text(HELPERS)
    monkeypatch.setattr(P, "_summaries", {})
    path, model = _review_model(tmp_path, "uses_net.py", USES_NET)
    P.summary_after_review(path, USES_NET.encode(), USES_NET, model)  # not a batch file others import
    assert not P._summaries
    P.summaries_from_reviews({os.path.abspath(path)})
    try:
        P.summary_after_review(path, USES_NET.encode() + b"\n", USES_NET, model)  # another text
        assert not P._summaries
        P.summary_after_review(path, USES_NET.encode(), USES_NET, model)
    finally:
        P.summaries_from_reviews(())
    assert P._summaries == {hashlib.sha1(USES_NET.encode()).hexdigest(): P.summarize(ast.parse(USES_NET))}


def test_a_batch_summarises_a_changed_model_once_from_its_review(tmp_path, monkeypatch):
    batch = _project(tmp_path, (("main.py", "from uses_net import make\n\nnet = make()\n"),
                                ("uses_net.py", USES_NET), ("helpers.py", HELPERS)))
    settings = Settings(rule_codes=tuple(r.code for r in all_rules()))
    P.set_review_roots((str(tmp_path),))
    monkeypatch.setattr(P, "_summaries", {})
    parsed = []
    parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: parsed.append(a[0]) or parse(*a, **k))
    runner._review_batch(batch, settings)
    assert parsed.count(USES_NET) == 1  # reviewed once, summarised from that tree
    assert P._summaries[hashlib.sha1(USES_NET.encode()).hexdigest()] == P.summarize(parse(USES_NET))
