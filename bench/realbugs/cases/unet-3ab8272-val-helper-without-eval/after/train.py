import torch
import torch.nn as nn
import torch.nn.functional as F

from scoring import dice_score


def train_net(net, train_set, val_set, device, epochs=2):
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(epochs):
        net.train()
        for image, mask in train_set:
            image, mask = image.unsqueeze(0).to(device), mask.unsqueeze(0).to(device)
            loss = F.binary_cross_entropy_with_logits(net(image), mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(epoch, dice_score(net, val_set, device))


if __name__ == "__main__":
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 1, 1))
    data = [(torch.rand(3, 8, 8), (torch.rand(1, 8, 8) > 0.5).float()) for _ in range(4)]
    train_net(net, data, data, torch.device("cpu"))
