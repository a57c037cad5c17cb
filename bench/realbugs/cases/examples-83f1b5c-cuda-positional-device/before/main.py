import torch
import torch.nn as nn


def train(loader, model, criterion, optimizer):
    model.train()
    for images, target in loader:
        target = target.cuda(True)
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def validate(loader, model, criterion):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for images, target in loader:
            target = target.cuda(True)
            total += criterion(model(images), target).item()
    return total


if __name__ == "__main__":
    model = nn.DataParallel(nn.Sequential(nn.Flatten(), nn.Linear(12, 3))).cuda()
    criterion = nn.CrossEntropyLoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(8, 3, 2, 2), torch.randint(0, 3, (8,)))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    train(loader, model, criterion, optimizer)
    print(validate(loader, model, criterion))
