"""A small text classifier with the mistakes that slip through code review."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, vocab_size, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.blocks = [nn.Linear(dim, dim) for _ in range(3)]  # plain list: invisible to the optimizer
        self.scale = torch.randn(dim, requires_grad=True)  # never registered as a parameter
        self.norm = nn.BatchNorm1d(dim)
        self.unused_proj = nn.Linear(dim, dim)  # created, never used in forward

    def forward(self, tokens):
        x = self.embed(tokens.cuda())  # device transfer inside forward
        for block in self.blocks:
            x = F.relu(block(x))
        x = x * self.scale
        x = self.norm(x.transpose(1, 2))  # (batch, dim, time)
        b, d, t = x.shape
        x = x.transpose(1, 2).view(b, t * d)  # view on a transposed tensor: raises
        return x


class Classifier(nn.Module):
    def __init__(self, vocab_size, dim, classes):
        self.encoder = Encoder(vocab_size, dim)  # before super().__init__()
        super().__init__()
        self.head = nn.Linear(dim, classes)
        self.out = nn.Softmax(dim=-1)

    def forward(self, tokens):
        features = self.encoder(tokens)
        norm = np.sqrt(features.detach().cpu().numpy().sum())  # numpy on a tensor inside forward
        logits = self.head(features / float(norm))
        return self.out(logits).squeeze()


class Calibrator:
    """Looks like a layer but is not an nn.Module: .to(), .parameters() and state_dict() miss it."""

    def __init__(self, classes):
        self.temperature = nn.Parameter(torch.ones(classes))

    def forward(self, logits):
        return logits / self.temperature


def stable_score(p):
    return torch.log(1 + p)
