import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
args = parser.parse_args()

model = nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(args.epochs):
    opt.zero_grad()
    F.mse_loss(model(torch.randn(4, 8)), torch.randn(4, 2)).backward()
    opt.step()
    torch.save({"state_dict": model.state_dict(), "metric": float(epoch), "args": args},
               f"checkpoint-{epoch}.pth")
