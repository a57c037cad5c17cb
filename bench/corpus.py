"""Generate a synthetic but realistic PyTorch code base for benchmarks.

Each file mixes the shapes real projects have: modules, datasets, training and
evaluation loops, utilities, argument parsing. Deterministic for a given seed.
"""

from __future__ import annotations

import os
import random

TEMPLATE_MODEL = '''
class {name}(nn.Module):
    """A {depth}-layer block."""

    def __init__(self, dim={dim}, hidden={hidden}, dropout=0.1):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim if i == 0 else hidden, hidden) for i in range({depth})])
        self.norm = nn.LayerNorm(hidden)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, {classes})

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = self.drop(F.gelu(layer(x)))
        x = self.norm(x)
        if mask is not None:
            x = x.masked_fill(mask.unsqueeze(-1), 0.0)
        return self.head(x.mean(dim=1))
'''

TEMPLATE_DATA = '''
class {name}(Dataset):
    def __init__(self, root, split="train", size={size}):
        self.root = root
        self.split = split
        self.items = [os.path.join(root, f"{{i:05d}}.npy") for i in range(size)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        array = np.load(self.items[index])
        tensor = torch.from_numpy(array).float()
        label = index % {classes}
        return tensor, label
'''

TEMPLATE_TRAIN = '''
def train_{suffix}(model, loader, optimizer, scheduler, device, epochs={epochs}, clip=1.0):
    model.train()
    history = []
    for epoch in range(epochs):
        running = torch.zeros((), device=device)
        for step, (inputs, targets) in enumerate(loader):
            inputs, targets = inputs.to(device, non_blocking=True), targets.to(device)
            optimizer.zero_grad(set_to_none=True)
            logits = model(inputs)
            loss = F.cross_entropy(logits, targets, label_smoothing=0.{smooth})
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            scheduler.step()
            running += loss.detach()
            if step % 100 == 0:
                logger.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
        history.append(running.item() / max(1, len(loader)))
    return history


@torch.no_grad()
def evaluate_{suffix}(model, loader, device):
    model.eval()
    correct, total = 0, 0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        preds = model(inputs).argmax(dim=-1)
        correct += (preds == targets).sum().item()
        total += targets.numel()
    return correct / max(1, total)
'''

TEMPLATE_UTIL = '''
def {name}(values, eps=1e-{eps}):
    out = []
    for i, value in enumerate(values):
        if value is None:
            continue
        scaled = (value - min(values)) / (max(values) - min(values) + eps)
        out.append(round(scaled, {eps}))
    return {{"values": out, "count": len(out), "name": "{name}"}}
'''

HEADER = '''"""Module {index}: generated for benchmarking torchreview."""
import argparse
import logging
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

logger = logging.getLogger(__name__)
'''


def generate(root: str, lines: int = 50_000, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    os.makedirs(root, exist_ok=True)
    written, paths, index = 0, [], 0
    while written < lines:
        parts = [HEADER.format(index=index)]
        for j in range(rng.randint(3, 7)):
            kind = rng.choice(["model", "data", "train", "util", "util"])
            suffix = f"{index}_{j}"
            if kind == "model":
                parts.append(TEMPLATE_MODEL.format(name=f"Net{suffix}", depth=rng.randint(2, 6),
                                                   dim=rng.choice([64, 128, 256]), hidden=rng.choice([128, 512]),
                                                   classes=rng.randint(2, 100)))
            elif kind == "data":
                parts.append(TEMPLATE_DATA.format(name=f"Data{suffix}", size=rng.randint(100, 5000),
                                                  classes=rng.randint(2, 100)))
            elif kind == "train":
                parts.append(TEMPLATE_TRAIN.format(suffix=suffix, epochs=rng.randint(1, 90), smooth=rng.randint(0, 2)))
            else:
                parts.append(TEMPLATE_UTIL.format(name=f"normalise_{suffix}", eps=rng.randint(3, 9)))
        text = "\n".join(parts)
        path = os.path.join(root, f"pkg{index // 50}", f"module_{index}.py")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        paths.append(path)
        written += text.count("\n")
        index += 1
    return paths
