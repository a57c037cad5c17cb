"""Data: download, tokenise, batch."""

import os
import random
import urllib.request

import numpy as np
import torch
from torch.utils.data import Dataset

DATA_URL = "https://example.com/reviews.tsv"


def download(root):
    target = os.path.join(root, "reviews.tsv")
    if not os.path.exists(target):
        urllib.request.urlretrieve(DATA_URL, target)  # no checksum verified anywhere
    return target


class ReviewDataset(Dataset):
    def __init__(self, path, max_len=64):
        with open(path, encoding="utf-8") as handle:
            rows = [line.rstrip("\n").split("\t") for line in handle]
        self.items = [(text, int(label)) for text, label in rows]
        self.max_len = max_len

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        text, label = self.items[index]
        ids = [hash(word) % 30000 for word in text.split()][: self.max_len]
        if np.random.rand() < 0.1:  # augmentation with the global NumPy RNG
            random.shuffle(ids)
        ids = ids + [0] * (self.max_len - len(ids))
        return torch.tensor(ids), torch.tensor(label)


def manual_batches(tokens, labels, batch_size):
    order = torch.randperm(len(tokens))
    for i in range(0, len(tokens), batch_size):
        idx = order[i:i + batch_size]
        yield tokens[idx], labels[idx]
