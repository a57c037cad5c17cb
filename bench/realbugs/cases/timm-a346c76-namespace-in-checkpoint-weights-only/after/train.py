import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

from checkpoint import resume

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--resume", default="")
args = parser.parse_args()

model = nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
start = resume(model, opt, args.resume) if args.resume else 0
for epoch in range(start, args.epochs):
    opt.zero_grad()
    F.mse_loss(model(torch.randn(4, 8)), torch.randn(4, 2)).backward()
    opt.step()
    torch.save({"state_dict": model.state_dict(), "optimizer": opt.state_dict(),
                "epoch": epoch, "args": args}, "checkpoint.pth")
