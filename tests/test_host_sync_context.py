"""TR209: where host-sync advice pays decides severity, kind and confidence.

An explicit ``synchronize()`` every step is a likely defect shown at default
settings; a value read back and *used* each step is advice; a value read only to
be logged is low-confidence advice, shown only when performance advice is asked.
"""

from __future__ import annotations

import json

from torchreview.cli import main

SRC = '''\
import torch
import torch.nn.functional as F


def train(model, loader, optimizer, table):
    running = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        running += loss.item()
        k = loss.detach().argmax().item()
        table[k] += 1
        torch.cuda.synchronize()
'''


def findings(tmp_path, capsys, *argv) -> dict[int, dict]:
    path = tmp_path / "train.py"
    path.write_text(SRC)
    main(["check", str(path), "--format", "json", "--no-cache", *argv])
    data = json.loads(capsys.readouterr().out)
    return {f["line"]: f for f in data["findings"] if f["code"] == "TR209"}


def test_each_context_has_its_own_weight(tmp_path, capsys):
    got = findings(tmp_path, capsys, "--select", "TR209")
    assert sorted(got) == [12, 13, 15]
    logged, used, stall = got[12], got[13], got[15]
    assert (logged["severity"], logged["kind"], logged["confidence"]) == ("low", "advice", "low")
    assert (used["severity"], used["kind"], used["confidence"]) == ("low", "advice", "high")
    assert (stall["severity"], stall["kind"], stall["confidence"]) == ("medium", "likely-defect", "high")


def test_default_settings_show_only_the_stall(tmp_path, capsys):
    assert sorted(findings(tmp_path, capsys)) == [15]
