"""Data: verified download, tokenisation, a Dataset."""

import hashlib
import os
import urllib.request

import torch
from torch.utils.data import Dataset

DATA_URL = "https://example.com/reviews.tsv"
DATA_SHA256 = "9f2c1e0b7a5d4c3b2a19087f6e5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3"


def download(root: str) -> str:
    target = os.path.join(root, "reviews.tsv")
    if not os.path.exists(target):
        urllib.request.urlretrieve(DATA_URL, target)
    with open(target, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    if digest != DATA_SHA256:
        raise ValueError(f"{target}: checksum mismatch, refusing to train on it")
    return target


class ReviewDataset(Dataset):
    def __init__(self, path: str, max_len: int = 64, seed: int = 0) -> None:
        with open(path, encoding="utf-8") as handle:
            rows = [line.rstrip("\n").split("\t") for line in handle]
        self.items = [(text, int(label)) for text, label in rows]
        self.max_len = max_len
        self.seed = seed

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        text, label = self.items[index]
        ids = [hash(word) % 30000 for word in text.split()][: self.max_len]
        generator = torch.Generator().manual_seed(self.seed + index)
        if torch.rand((), generator=generator) < 0.1:
            order = torch.randperm(len(ids), generator=generator).tolist()
            ids = [ids[i] for i in order]
        ids = ids + [0] * (self.max_len - len(ids))
        return torch.tensor(ids), torch.tensor(label)
