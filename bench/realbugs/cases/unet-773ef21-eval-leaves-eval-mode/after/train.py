import torch
import torch.nn as nn
import torch.nn.functional as F

from evaluate import evaluate


def train_net(net, train_loader, val_loader, device, epochs=2):
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    net.train()
    step = 0
    for epoch in range(epochs):
        for images, masks in train_loader:
            images, masks = images.to(device), masks.to(device)
            loss = F.binary_cross_entropy_with_logits(net(images), masks)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % 2 == 0:
                print("val dice", evaluate(net, val_loader, device))


if __name__ == "__main__":
    dev = torch.device("cpu")
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 1, 1))
    ds = torch.utils.data.TensorDataset(torch.rand(8, 3, 8, 8), (torch.rand(8, 1, 8, 8) > 0.5).float())
    loader = torch.utils.data.DataLoader(ds, batch_size=2)
    train_net(net, loader, loader, dev)
