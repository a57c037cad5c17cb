"""A sequence tagger trained on padded batches."""

import itertools
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset, get_worker_info
from torch.utils.tensorboard import SummaryWriter

from dataset import ReviewDataset, download

VOCAB, TAGS, EPOCHS, PAD = 30000, 17, 20, -100


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 64)
        self.norm = nn.LayerNorm(64)
        self.out = nn.Linear(64, TAGS)

    def forward(self, tokens):
        return self.out(self.norm(self.embed(tokens)))


class TokenDropout(Dataset):
    """Drops a random tenth of the tokens of each sentence (augmentation)."""

    def __init__(self, base, seed=0):
        self.base = base
        self.seed = seed
        self.rng = None  # made in each worker, from the seed and the worker's id

    def __len__(self):
        return len(self.base)

    def __getitem__(self, index):
        if self.rng is None:
            info = get_worker_info()
            self.rng = np.random.default_rng([self.seed, info.id if info is not None else 0])
        tokens, tags = self.base[index]
        keep = torch.from_numpy(self.rng.random(len(tokens)) > 0.1)
        return tokens * keep, tags


def collate(batch):
    tokens = pad_sequence([t for t, _ in batch], batch_first=True, padding_value=0)
    tags = pad_sequence([y for _, y in batch], batch_first=True, padding_value=PAD)
    return tokens, tags


def main(start_epoch=0, start_step=0):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Tagger().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=EPOCHS)
    if start_epoch:
        state = torch.load(f"tagger_{start_epoch - 1}.pt", map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
    loader = DataLoader(TokenDropout(ReviewDataset(download("data"))), batch_size=32, shuffle=True, collate_fn=collate,
                        num_workers=4, pin_memory=True, persistent_workers=True, drop_last=True)
    writer = SummaryWriter()
    model.train()
    for epoch in range(start_epoch, EPOCHS):
        # skip what the interrupted run saw, in the resumed epoch only
        batches = itertools.islice(loader, start_step, None) if epoch == start_epoch and start_step else loader
        for tokens, tags in batches:
            tokens = tokens.to(device, non_blocking=True)
            tags = tags.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=torch.bfloat16):
                logits = model(tokens)
                loss = F.cross_entropy(logits.view(-1, TAGS), tags.view(-1), ignore_index=PAD)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        scheduler.step()
        writer.add_scalar("loss/train", loss.item(), epoch)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict()}, f"tagger_{epoch}.pt")


if __name__ == "__main__":
    try:
        main(*(int(a) for a in sys.argv[1:3]))
    except torch.cuda.OutOfMemoryError:
        print("out of GPU memory: lower the batch size")
        raise
