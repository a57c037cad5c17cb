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


HELPER = '''\
import math
import torch.nn.functional as F


class Trainer:
    def _run_batch(self, x, y):
        self.optimizer.zero_grad()
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def run_epoch(self, loader, log):
        for x, y in loader:
            batch_loss = self._run_batch(x.cuda(), y.cuda())
            log.info(batch_loss)


def train(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x.cuda()), y.cuda())
        if not math.isfinite(loss.item()):
            raise SystemExit("loss is not finite")
        loss.backward()
        optimizer.step()
'''


def test_returned_and_sanity_checked_values_count_as_logging(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(HELPER)
    main(["check", str(path), "--format", "json", "--no-cache", "--select", "TR209"])
    got = {f["line"]: f["confidence"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert got == {11: "low", 23: "low"}
