import torch
import torch.nn as nn


def train(model, loader, device, epochs=2):
    cuda = device.type != "cpu"
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=cuda)
    for epoch in range(epochs):
        model.train()
        for images, labels in loader:
            images, labels = images.to(device, non_blocking=True), labels.to(device)
            with torch.amp.autocast("cuda", enabled=cuda):
                loss = criterion(model(images), labels)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()


def validate(model, loader, device):
    model.eval()
    correct = 0
    with torch.no_grad(), torch.amp.autocast("cuda", enabled=device.type != "cpu"):
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            correct += (model(images).argmax(1) == labels).sum().item()
    return correct
