"""TR403 in a project that never places anything on an accelerator (class fix:
a device mismatch cannot happen when the whole project runs on one device)."""

from __future__ import annotations

import json
import textwrap

import pytest

from torchreview.engine.runner import Settings, run_review

MODEL = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 2)

        def forward(self, x):
            mask = torch.ones(x.shape[0], 8)
            return self.fc(x * mask)
""")

TRAIN_CPU = textwrap.dedent("""\
    import torch
    from model import Net

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(4, 8)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")


def _review(tmp_path, train: str):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "train.py").write_text(train)
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR403",), jobs=1))
    assert not report.errors
    return [(f.path.replace("\\", "/").rsplit("/", 1)[-1], f.line) for f in report.findings if f.code == "TR403"]


def test_cpu_only_project_is_silent(tmp_path):
    assert _review(tmp_path, TRAIN_CPU) == []


@pytest.mark.parametrize("line, expected", [
    ("model.cuda()", [("model.py", 11)]),
    ("model = model.to('cuda')", [("model.py", 11)]),
    ("model.to(torch.device('cuda' if torch.cuda.is_available() else 'cpu'))", [("model.py", 11)]),
    ("model = torch.nn.DataParallel(model)", [("model.py", 11)]),
    # dtype and CPU moves are not accelerator placements
    ("model = model.to(torch.float64)", []),
    ("model = model.to('cpu')", []),
    ("x = torch.zeros(3, device='cpu')", []),
    ("model = model.to(torch.device('cpu'))", []),
])
def test_only_an_accelerator_placement_elsewhere_keeps_the_finding(tmp_path, line, expected):
    train = TRAIN_CPU.replace("opt = ", line + "\nopt = ", 1)
    assert _review(tmp_path, train) == expected


def test_fact_survives_the_cache_validator():
    from torchreview.cache import _facts_from, _facts_to
    from torchreview.cache_schema import facts_ok
    from torchreview.engine.facts import FileFacts

    facts = FileFacts(path="m.py", places_on_accelerator=True)
    doc = json.loads(json.dumps(_facts_to(facts)))  # as the cache stores it
    assert facts_ok(doc, "m.py")
    assert _facts_from(doc).places_on_accelerator is True
    for bad in (["not", "a", "bool"], "yes", 1):
        doc["places_on_accelerator"] = bad
        assert not facts_ok(doc, "m.py")


def test_importers_follow_absolute_and_relative_imports_up_to_the_scripts():
    from torchreview.engine.facts import FileFacts, importers

    files = [FileFacts(path="pkg/ops.py"),
             FileFacts(path="pkg/model.py", imports=(".ops",)),
             FileFacts(path="train.py", imports=("pkg.model",)),
             FileFacts(path="other/encoder.py"),
             FileFacts(path="demo.py", imports=("other.encoder",))]
    chain = [f.path for f in importers(files, "pkg/ops.py")]
    assert chain == ["pkg/ops.py", "pkg/model.py", "train.py"]  # not the sibling package nor its script
