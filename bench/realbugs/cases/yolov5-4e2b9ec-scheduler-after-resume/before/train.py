import argparse
import math

import torch
import torch.nn as nn
from torch.optim import lr_scheduler

parser = argparse.ArgumentParser()
parser.add_argument("--weights", default="")
parser.add_argument("--epochs", type=int, default=3)
opt = parser.parse_args()


def train(opt):
    epochs = opt.epochs
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.LazyLinear(2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    start_epoch = 0
    if opt.weights:
        ckpt = torch.load(opt.weights, map_location="cpu", weights_only=True)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        start_epoch = ckpt["epoch"] + 1

    lf = lambda x: ((1 + math.cos(x * math.pi / epochs)) / 2) * 0.8 + 0.2
    scheduler = lr_scheduler.LambdaLR(optimizer, lr_lambda=lf)
    scheduler.last_epoch = start_epoch - 1

    for epoch in range(start_epoch, epochs):
        x, y = torch.randn(2, 3, 6, 6), torch.randint(0, 2, (2,))
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        scheduler.step()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, "last.pt")


if __name__ == "__main__":
    train(opt)
