import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import lr_scheduler

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--resume", action="store_true")
opt = parser.parse_args()

model = nn.Linear(10, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
start_epoch = 0
if opt.resume:
    ckpt = torch.load("last.pt", map_location="cpu")
    model.load_state_dict(ckpt["model"])
    start_epoch = ckpt["epoch"] + 1

cosine = lambda e: ((1 + math.cos(e * math.pi / opt.epochs)) / 2) * 0.95 + 0.05
scheduler = lr_scheduler.LambdaLR(optimizer, lr_lambda=cosine, last_epoch=start_epoch - 1)

for epoch in range(start_epoch, opt.epochs):
    optimizer.zero_grad()
    F.cross_entropy(model(torch.randn(8, 10)), torch.randint(0, 3, (8,))).backward()
    optimizer.step()
    scheduler.step()
    torch.save({"model": model.state_dict(), "epoch": epoch}, "last.pt")
