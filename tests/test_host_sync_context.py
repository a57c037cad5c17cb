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
    # the used value is read beside the logged one: the step waits at line 12 anyway (blind test 84)
    assert (used["severity"], used["kind"], used["confidence"]) == ("low", "advice", "low")
    assert "already waits at `loss.item()` (line 12)" in used["message"]
    # the step already waits for the GPU at `loss.item()` (line 12): the explicit
    # synchronize adds little (dino/mae time their steps this way)
    assert (stall["severity"], stall["kind"], stall["confidence"]) == ("low", "advice", "low")
    assert "already waits for the GPU at `loss.item()` (line 12)" in stall["message"]


STALL_ONLY = SRC.replace("        running += loss.item()\n", "").replace(
    "        k = loss.detach().argmax().item()\n        table[k] += 1\n", "")


def test_default_settings_show_the_stall_when_nothing_else_waits(tmp_path, capsys):
    assert sorted(findings(tmp_path, capsys)) == []  # the only stall waits at `.item()` anyway
    path = tmp_path / "alone.py"
    path.write_text(STALL_ONLY)
    main(["check", str(path), "--format", "json", "--no-cache"])
    got = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "TR209"]
    assert [(f["line"], f["severity"], f["kind"], f["confidence"]) for f in got] == \
        [(12, "medium", "likely-defect", "high")]


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


LOGGED_STEP = '''\
import math
import sys
import torch


def train_one_epoch(model, criterion, loader, optimizer, loss_scaler, logger):
    for samples, targets in logger.log_every(loader, 20):
        samples = samples.to("cuda", non_blocking=True)
        with torch.autocast("cuda"):
            loss = criterion(model(samples), targets.cuda())
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            sys.exit(1)
        loss_scaler(loss, optimizer, parameters=model.parameters())
        optimizer.zero_grad()
        torch.cuda.synchronize()
        logger.update(loss=loss_value)


def train_linear(model, loader, optimizer, logger):
    for inp, target in loader:
        loss = torch.nn.functional.cross_entropy(model(inp.cuda()), target.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        logger.update(loss=loss.item())


def train_quiet(model, batches, optimizer, history):
    for x, y in batches:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        history.append(loss.detach())
'''


def test_synchronize_next_to_a_per_step_item_is_hidden_advice(tmp_path, capsys):
    path = tmp_path / "engine.py"
    path.write_text(LOGGED_STEP)
    main(["check", str(path), "--format", "json", "--no-cache"])
    default = [f["line"] for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "TR209"]
    assert default == [36]  # only the loop that reads nothing back on the host
    main(["check", str(path), "--format", "json", "--no-cache", "--select", "TR209"])
    # (a merged finding's places share its confidence: the key of the merge holds it)
    got = {line: f["confidence"] for f in json.loads(capsys.readouterr().out)["findings"]
           if f["message"].startswith("`torch.cuda.synchronize()`")  # (the temporary path names it too)
           for line in (f["line"], *(r["line"] for r in f.get("related", [])))}
    assert got == {16: "low", 26: "low", 36: "high"}


REDUCED_STEP = """import torch
import torch.distributed as dist


def reduce_tensor(t):
    rt = t.clone()
    dist.all_reduce(rt)
    return rt / dist.get_world_size()


def train(model, loader, optimizer, meter):
    for batch in loader:
        optimizer.zero_grad()
        loss = model(batch.cuda()).sum()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        loss_t = reduce_tensor(loss)
        meter.update(loss_t.item())
"""


def test_an_item_of_a_helper_result_counts_as_the_steps_wait(tmp_path, capsys):
    """MONAI mgpu_ssl_train.py: synchronize() before `reduce_tensor(loss).item()` through a
    name the model cannot type (judged noise): the step waits there anyway."""
    path = tmp_path / "ssl.py"
    path.write_text(REDUCED_STEP)
    main(["check", str(path), "--format", "json", "--no-cache", "--select", "TR209"])
    got = {f["line"]: (f["confidence"], f["kind"]) for f in json.loads(capsys.readouterr().out)["findings"]
           if "synchronize" in f["message"]}
    assert got == {17: ("low", "advice")}
    main(["check", str(path), "--format", "json", "--no-cache"])
    assert [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "TR209"] == []
