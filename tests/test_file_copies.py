"""One mistake copied into sibling scripts is one finding (engine/file_copies.py,
engine/merge.py): research projects keep one training script per dataset, copied
from one another; a reviewer comments once and names the copies. Scripts that
merely share the flagged line, and are otherwise different, keep their own findings."""
from __future__ import annotations

from pathlib import Path

from torchreview.engine.file_copies import CopyDetector
from torchreview.engine.runner import Settings, run_review


def _script(dataset: str, extra: str = "") -> str:
    # a per-dataset training script: the dataset, its size and a few lines differ
    return f'''import argparse
import os

import torch
import torch.nn as nn
import torchvision.datasets as dset
import torchvision.transforms as trn

parser = argparse.ArgumentParser(description="train on {dataset}")
parser.add_argument("--epochs", type=int, default=100)
parser.add_argument("--learning_rate", type=float, default=0.1)
parser.add_argument("--ngpu", type=int, default=1)
parser.add_argument("--load", type=str, default="")
parser.add_argument("--save", type=str, default="./snapshots")
args = parser.parse_args()

train_data = dset.{dataset}("data", train=True, transform=trn.ToTensor(), download=True)
train_loader = torch.utils.data.DataLoader(train_data, batch_size=128, shuffle=True)
net = nn.Sequential(nn.Flatten(), nn.Linear(3072, 512), nn.ReLU(), nn.Linear(512, 10))
{extra}
if args.load != "":
    model_name = os.path.join(args.load, "{dataset.lower()}_baseline.pt")
    if os.path.isfile(model_name):
        net.load_state_dict(torch.load(model_name, weights_only=True))
        print("Model restored from", model_name)

if args.ngpu > 1:
    net = torch.nn.DataParallel(net, device_ids=list(range(args.ngpu)))
optimizer = torch.optim.SGD(net.parameters(), args.learning_rate, momentum=0.9, nesterov=True)


def train():
    net.train()
    for data, target in train_loader:
        output = net(data)
        loss = nn.functional.cross_entropy(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


for epoch in range(args.epochs):
    train()
    torch.save(net.state_dict(), os.path.join(args.save, "{dataset.lower()}_baseline.pt"))
    print("epoch", epoch, "done")
'''


OTHER = '''import os

import torch
import torch.nn as nn

from models import Encoder, Decoder


def main(load, ngpu, steps):
    net = nn.ModuleDict({"enc": Encoder(), "dec": Decoder()})
    model_name = os.path.join(load, "autoencoder.pt")
    if os.path.isfile(model_name):
        net.load_state_dict(torch.load(model_name, weights_only=True))
        print("Model restored from", model_name)
    if ngpu > 1:
        net = torch.nn.DataParallel(net)
    opt = torch.optim.Adam(net.parameters(), lr=3e-4)
    for step in range(steps):
        x = torch.randn(16, 3, 64, 64)
        recon = net.module["dec"](net.module["enc"](x)) if ngpu > 1 else net["dec"](net["enc"](x))
        loss = nn.functional.mse_loss(recon, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 1000 == 0:
            torch.save(net.state_dict(), os.path.join(load, "autoencoder.pt"))
            print("saved at step", step)
    return net


if __name__ == "__main__":
    main("./ckpt", torch.cuda.device_count(), 100_000)
'''


def _review(root: Path) -> list:
    return run_review([str(root)], Settings(rule_codes=("TR517",), jobs=1, min_confidence="low")).findings


def test_one_mistake_in_sibling_copies_is_one_finding(tmp_path):
    for folder, dataset, extra in (("CIFAR", "CIFAR10", ""), ("SVHN", "SVHN", "net.eval()\nnet.train()\n"),
                                   ("MNIST", "MNIST", "torch.manual_seed(1)\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "baseline.py").write_text(_script(dataset, extra))
    (tmp_path / "CIFAR" / "oe_scratch.py").write_text(_script("CIFAR100", "outlier_weight = 0.5\n"))
    found = _review(tmp_path)
    assert len(found) == 1, [(f.path, f.line) for f in found]
    lead = found[0]
    assert lead.path.endswith("CIFAR/baseline.py")
    assert sorted(Path(r.path).parent.name + "/" + Path(r.path).name for r in lead.related) == [
        "CIFAR/oe_scratch.py", "MNIST/baseline.py", "SVHN/baseline.py"]
    assert "same in 3 more places" in lead.message
    assert len(lead.parts) == 4  # a baseline or --since still sees every place


def test_a_different_script_with_the_same_line_keeps_its_finding(tmp_path):
    (tmp_path / "cifar").mkdir()
    (tmp_path / "cifar" / "baseline.py").write_text(_script("CIFAR10"))
    (tmp_path / "autoencoder").mkdir()
    (tmp_path / "autoencoder" / "train.py").write_text(OTHER)
    found = _review(tmp_path)
    assert sorted(Path(f.path).name for f in found) == ["baseline.py", "train.py"]
    assert all(not f.related for f in found)


def test_copy_detector_thresholds(tmp_path):
    a, b, c, tiny1, tiny2 = (tmp_path / n for n in ("a.py", "b.py", "c.py", "t1.py", "t2.py"))
    a.write_text(_script("CIFAR10"))
    b.write_text(_script("SVHN", "net.eval()\n"))
    c.write_text(OTHER)
    tiny1.write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    tiny2.write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    copies = CopyDetector()
    assert copies.are_copies(str(a), str(b))
    assert not copies.are_copies(str(a), str(c))
    assert not copies.are_copies(str(a), str(a))  # one file is not its own copy
    assert not copies.are_copies(str(tiny1), str(tiny2))  # too small to call a copy
    assert not copies.are_copies(str(a), str(tmp_path / "gone.py"))  # unreadable: nobody's copy


def test_repeats_of_merged_findings_name_every_place_once(tmp_path):
    """egnn models/ae.py (dev-18): `self.w = nn.Parameter(-0.1 * torch.ones(1)).to(device)` and
    `self.b = ...` in one class, again in another class spaced `-0.1*torch`: one comment naming
    the three other places (spacing in quoted code is not wording)."""
    block = ("        self.w = nn.Parameter({w}).to(device)\n"
             "        self.b = nn.Parameter(torch.ones(1)).to(device)\n\n"
             "    def forward(self, x):\n        return x * self.w + self.b\n")
    (tmp_path / "ae.py").write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class AE(nn.Module):\n    def __init__(self, device):\n        super().__init__()\n"
        + block.format(w="-0.1 * torch.ones(1)") +
        "\n\nclass AEGNN(nn.Module):\n    def __init__(self, device):\n        super().__init__()\n"
        + block.format(w="-0.1*torch.ones(1)"))
    found = run_review([str(tmp_path)], Settings(rule_codes=("TR511",), jobs=1, min_confidence="low")).findings
    assert len(found) == 1, [f.message for f in found]
    assert found[0].message.count("same in") == 1 and "same in 3 more places" in found[0].message
    assert len(found[0].parts) == 4
