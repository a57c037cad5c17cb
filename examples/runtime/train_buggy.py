"""A small CPU training script with the silent bugs runtime review catches.

Run it under review (takes a few seconds)::

    torchreview run examples/runtime/train_buggy.py --epochs 3

Synthetic data, no downloads.  The bugs are real ones from code review:

* ``optimizer.zero_grad()`` sits in the logging branch, so most steps add the
  new gradients to the old ones (TR401);
* every loss is kept in ``history`` with its autograd graph (TR507);
* a batch whose labels are all "ignore" divides 0 by 0: NaN (TR601);
* ``evaluate()`` switches the model to eval mode and nobody switches it back,
  so later epochs train with dropout and batch-norm off (TR504);
* a quick sanity check runs the model under ``no_grad`` in train mode (TR207);
* ``self.aux`` is registered but never used in ``forward`` (TR603);
* 500 samples in batches of 64 leave a short last batch for batch-norm (TR503);
* decoding is slow and ``num_workers=0``: the loop waits for data (TR202).
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

IGNORE = -1


class Shapes(Dataset):
    """Synthetic 1x16x16 images of two classes, 'decoded' on access."""

    def __init__(self, n: int, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, 2, (n,), generator=g)
        self.labels[64 * 5:64 * 6] = IGNORE  # an unlabelled chunk: one whole batch
        self.noise = torch.randn(n, 1, 16, 16, generator=g) * 0.3

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i):
        time.sleep(0.001)  # stands for JPEG decoding + augmentation
        label = self.labels[i]
        image = self.noise[i].clone()
        if label == 1:
            image[:, 4:12, 4:12] += 1.0
        return image, label


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.3), nn.Linear(16 * 4 * 4, 2))
        self.aux = nn.Linear(16 * 4 * 4, 2)  # meant for an auxiliary loss, never used

    def forward(self, x):
        return self.head(self.features(x))


def evaluate(model, loader) -> float:
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            keep = y != IGNORE
            correct += (model(x).argmax(1)[keep] == y[keep]).sum().item()
            total += keep.sum().item()
    return correct / max(total, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--log-every", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    train = DataLoader(Shapes(500), batch_size=64, shuffle=False)
    val = DataLoader(Shapes(128, seed=1), batch_size=64)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    with torch.no_grad():  # sanity check of the output shape
        print("output shape:", tuple(model(next(iter(val))[0]).shape))

    history = []
    step = 0
    for epoch in range(args.epochs):
        for x, y in train:
            logits = model(x)
            loss = F.cross_entropy(logits, y, ignore_index=IGNORE, reduction="sum")
            loss = loss / (y != IGNORE).sum()
            loss.backward()
            optimizer.step()
            history.append(loss)
            if step % args.log_every == 0:
                optimizer.zero_grad()
                print(f"epoch {epoch} step {step} loss {loss.item():.3f}")
            step += 1
        print(f"epoch {epoch}: val accuracy {evaluate(model, val):.2f}")


if __name__ == "__main__":
    main()
