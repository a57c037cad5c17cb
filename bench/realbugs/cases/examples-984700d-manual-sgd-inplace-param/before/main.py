import torch
import torch.nn as nn
import torch.nn.functional as F

net = nn.Sequential(nn.Embedding(20, 8), nn.Flatten(), nn.Linear(24, 20))
lr = 0.5
clip = 0.25


def train_epoch(batches):
    net.train()
    for src, tgt in batches:
        net.zero_grad()
        loss = F.cross_entropy(net(src), tgt)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), clip)
        for p in net.parameters():
            p.add_(p.grad, alpha=-lr)


batches = [(torch.randint(0, 20, (4, 3)), torch.randint(0, 20, (4,))) for _ in range(3)]
for epoch in range(2):
    train_epoch(batches)
