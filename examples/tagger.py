"""A sequence tagger trained one sentence at a time."""

import itertools

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

from dataset import ReviewDataset, download

VOCAB, TAGS, EPOCHS = 30000, 17, 20


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 64)
        self.norm = nn.BatchNorm1d(64)
        self.out = nn.Linear(64, TAGS)

    def forward(self, tokens):
        h = self.embed(tokens)
        h = self.norm(h.transpose(1, 2)).transpose(1, 2)
        return self.out(h)


class TokenDropout(Dataset):
    """Drops a random tenth of the tokens of each sentence (augmentation)."""

    def __init__(self, base, seed=0):
        self.base = base
        self.rng = np.random.default_rng(seed)  # one generator, copied into every worker

    def __len__(self):
        return len(self.base)

    def __getitem__(self, index):
        tokens, tags = self.base[index]
        keep = torch.from_numpy(self.rng.random(len(tokens)) > 0.1)
        return tokens * keep, tags


def collate(batch):
    tokens = pad_sequence([t for t, _ in batch], batch_first=True, padding_value=0)
    tags = pad_sequence([y for _, y in batch], batch_first=True, padding_value=0)
    return tokens, tags


def main(start_epoch=0, start_step=0):
    model = Tagger()
    if start_epoch:
        model.load_state_dict(torch.load(f"tagger_{start_epoch - 1}.pt", weights_only=True))
    loader = DataLoader(TokenDropout(ReviewDataset(download("data"))), batch_size=1, shuffle=True,
                        collate_fn=collate, num_workers=4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=EPOCHS, last_epoch=start_epoch - 1)
    model.train()
    for epoch in range(start_epoch, EPOCHS):
        if epoch == start_epoch and start_step:
            loader = itertools.islice(loader, start_step, None)  # skip what the interrupted run saw
        for tokens, tags in loader:
            optimizer.zero_grad()
            logits = model.forward(tokens)
            loss = F.cross_entropy(logits.view(-1, TAGS), tags.view(-1))
            loss.backward()
            optimizer.step()
            scheduler.step()
        torch.save(model.state_dict(), f"tagger_{epoch}.pt")


if __name__ == "__main__":
    import sys

    main(*(int(a) for a in sys.argv[1:3]))
