"""Per-finding confidence: a rule whose default is medium reports high only where
its evidence is direct (README, What is reported; each rule's Heuristics). For
every calibrated rule, one finding on direct evidence (high) and one resting on
something out of sight (the rule's medium)."""

from __future__ import annotations

import textwrap

import pytest

from torchreview.engine.runner import Settings, run_review

CASES = {
    "TR207": ("""
        import torch
        from torch import nn

        def predict(net, x):
            with torch.no_grad():
                return net(x)  # high: this file passes a fresh dropout model

        def score(model, x):
            with torch.no_grad():
                return model(x)  # high: library knowledge, hub models come back training

        predict(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1)), torch.rand(1, 2))
        score(torch.hub.load("org/repo", "net"), torch.rand(1, 2))
        """, {7: "high", 11: "high"}),
    "TR103": ("""
        import pickle
        import urllib.request

        import numpy as np

        def cached(path):
            with open(path, "rb") as handle:
                return pickle.load(handle)  # medium: a local file, its writer out of sight

        def remote(url):
            return pickle.loads(urllib.request.urlopen(url).read())  # high: bytes from the network

        def table(path):
            return np.load(path, allow_pickle=True)  # medium: a local file
        """, {9: "medium", 12: "high", 15: "medium"}),
    "TR403": ("""
        import torch

        def train(model, loader):
            for images, target in loader:
                target = target.cuda(True)  # high: device index 1, written literally
                model(images.cuda(), target)

        def pad(mask, n):
            filler = torch.zeros(mask.size(0), n)
            if mask.is_cuda:
                filler = filler.cuda()  # medium: wrong only on a GPU other than the default
            return torch.cat([mask, filler], dim=1)
        """, {6: "high", 12: "medium"}),
    "TR414": ("""
        from torch import nn

        def train(model, loader, optimizer, accum):
            criterion = nn.CrossEntropyLoss()
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()  # high: a mean-reduced torch loss summed over `accum` steps
                if (i + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()

        def train_sum(model, loader, optimizer, accum):
            criterion = nn.CrossEntropyLoss(reduction="sum")
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()  # medium: a summed loss, scaled on purpose perhaps
                if (i + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """, {8: "high", 17: "medium"}),
    "TR417": ("""
        import torch

        def train(model, loader, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda", dtype=torch.float16):  # high: backward in sight
                    loss = (model(x) - y).pow(2).mean()
                loss.backward()
                optimizer.step()

        class Trainer:
            def __init__(self, net, optimizer):
                self.net, self.optimizer = net, optimizer

            def run(self, loader):
                for x, y in loader:
                    self.optimizer.zero_grad()
                    self.loss(x, y).backward()
                    self.optimizer.step()

            def loss(self, x, y):
                with torch.autocast("cuda", dtype=torch.float16):  # medium: autocast in a helper
                    return (self.net(x) - y).pow(2).mean()
        """, {7: "high", 23: "medium"}),
    "TR421": ("""
        import torch
        def flatten(n):
            x = torch.randn(n, 3, 4)
            return x.permute(0, 2, 1).view(-1)  # high: a known order of a tensor laid out here

        def gram(x):
            return x.transpose(0, 1).view(-1)  # medium: a parameter may arrive transposed already

        def merge_heads(y, b, t, h, d):
            return y.transpose(1, 2).view(b, t, h * d)  # medium: the rank is not known

        def weights_row(w):
            return w.T.view(-1)  # medium: `.T` of a 1-D tensor changes nothing
        """, {5: "high", 8: "medium", 11: "medium", 14: "medium"}),
    "TR427": ("""
        import threading
        import torch
        def build(n):
            hooks = []
            for i in range(n):
                hooks.append(lambda g: g * i)  # high: kept in a list bound before the loop
            return hooks

        def spawn(shards):
            for shard in shards:
                threading.Thread(target=lambda: print(shard)).start()  # medium: may run at once
        """, {7: "high", 12: "medium"}),
    "TR504": ("""
        import torch
        from torch import nn

        def main():
            net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.2))
            sgd = torch.optim.SGD(net.parameters(), lr=0.1)
            data = [(torch.randn(2, 4), torch.randn(2, 4))]
            net.train()
            for epoch in range(5):
                for inputs, targets in data:
                    loss = nn.functional.mse_loss(net(inputs), targets)
                    sgd.zero_grad()
                    loss.backward()
                    sgd.step()
                net.eval()  # high: only torch APIs get the model
                torch.save({"net": net.state_dict(), "epoch": epoch}, "last.pt")
        """, {16: "high"}),
    "TR509": ("""
        import torch
        import torch.nn.utils.prune as prune
        from torch import nn

        layer = nn.Linear(4, 4)
        prune.l1_unstructured(layer, name="weight", amount=0.5)
        y = layer.forward(torch.randn(1, 4))  # high: this module's own pre-hook is skipped

        backbone = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        backbone[0].register_forward_hook(lambda m, i, o: None)
        z = backbone.forward(torch.randn(1, 4))  # medium: the hook is on a child
        """, {8: "high", 12: "medium"}),
    "TR515": ("""
        import torch.distributed as dist

        def exchange(tensor, peer):
            dist.isend(tensor, dst=peer)  # high: the request is dropped

        def reduce(tensor):
            work = dist.all_reduce(tensor, async_op=True)  # high: never read again
            return tensor

        def gather_all(x, sizes):
            out = []
            for i, size in enumerate(sizes):
                t = x.new_empty(size)
                dist.broadcast(t, src=i, async_op=True)  # medium: the barrier below orders it
                out.append(t)
            dist.barrier()
            return out
        """, {5: "high", 8: "high", 15: "medium"}),
    "TR519": ("""
        import torch
        from torch.utils.data import DataLoader

        def fit(model, evaluate, run_eval, val_set, test_set, epochs):
            test_loader = DataLoader(test_set)
            best = 0.0
            for epoch in range(epochs):
                acc = evaluate(model, test_loader)
                if acc > best:  # high: the test loader computed it
                    torch.save(model.state_dict(), "best.pt")
                test_acc = run_eval(model)
                if test_acc > best:  # medium: only the metric's name says "test"
                    torch.save(model.state_dict(), "best.pt")
        """, {10: "high", 13: "medium"}),
    "TR520": ("""
        import argparse
        import torch
        from torch import nn

        def train():
            model = nn.Linear(4, 2)
            torch.save(model, "last.pt")

        def evaluate():
            model = torch.load("last.pt")  # high: the file this file writes, by name
            return model

        def resume(model, opt):
            args = argparse.ArgumentParser().parse_args()
            ckpt = torch.load(args.resume)  # high: reads the keys this file writes
            model.load_state_dict(ckpt["model"])
            opt.load_state_dict(ckpt["optim"])

        def fit(model, opt, steps):
            args = argparse.ArgumentParser().parse_args()
            for step in range(steps):
                model(torch.randn(1, 4)).sum().backward()
                opt.step()
                torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "args": args},
                           f"ckpt_{step}.pt")
        """, {11: "high", 16: "high"}),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_confidence_follows_the_evidence(tmp_path, code):
    text, want = CASES[code]
    (tmp_path / "code.py").write_text(textwrap.dedent(text))  # line 1 is blank
    report = run_review([str(tmp_path)], Settings(rule_codes=(code,), jobs=1))
    got = {p.line: p.confidence for f in report.findings if f.code == code for p in (f.parts or (f,))}
    assert got == want


def test_tr207_a_caller_in_another_file_is_medium(tmp_path):
    (tmp_path / "scoring.py").write_text(textwrap.dedent("""
        import torch

        def predict(net, x):
            with torch.no_grad():
                return net(x)
        """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn
        from scoring import predict

        predict(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1)), torch.rand(1, 2))
        """))
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR207",), jobs=1))
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.confidence) for f in report.findings] == [
        ("scoring.py", 6, "medium")]


def test_tr430_and_tr504_in_the_gate_snippet(tmp_path):
    """The gate test's snippet: TR430 on a layer's output (high) and on an untyped
    argument (medium); TR504 with the model handed to a callback (medium)."""
    from test_confidence_gate import CODE

    (tmp_path / "gate.py").write_text(CODE)
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR430", "TR504"), jobs=1))
    assert {(f.code, f.line): f.confidence for f in report.findings} == {
        ("TR430", 13): "high", ("TR430", 14): "medium", ("TR504", 25): "medium"}
