import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=None)
args = parser.parse_args()


def train(loader, model, criterion, optimizer, device, args):
    model.train()
    for images, target in loader:
        images = images.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    device = torch.device(f"cuda:{args.gpu}" if args.gpu is not None else "cuda")
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 3)).to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(16, 3, 2, 2), torch.randint(0, 3, (16,)))
    loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True)
    for epoch in range(2):
        train(loader, model, criterion, optimizer, device, args)


if __name__ == "__main__":
    main()
