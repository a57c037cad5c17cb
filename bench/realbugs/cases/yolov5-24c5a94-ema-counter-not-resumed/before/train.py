import torch
import torch.nn as nn

from ema import WeightAverage


def train(weights, epochs, accumulate=1):
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = [(torch.randn(2, 4), torch.randint(0, 2, (2,))) for _ in range(3)]
    nb = len(loader)
    start_epoch = 0
    if weights:
        ckpt = torch.load(weights, map_location="cpu", weights_only=True)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        start_epoch = ckpt["epoch"] + 1

    ema = WeightAverage(model)

    for epoch in range(start_epoch, epochs):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            ema.update(model)
        torch.save({"model": model.state_dict(), "ema": ema.shadow.state_dict(),
                    "optimizer": optimizer.state_dict(), "epoch": epoch}, "last.pt")


if __name__ == "__main__":
    train("", 2)
