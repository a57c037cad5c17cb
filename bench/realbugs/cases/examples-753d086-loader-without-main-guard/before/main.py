import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(1)
train_loader = torch.utils.data.DataLoader(torch.rand(64, 10), batch_size=16, shuffle=True, num_workers=1)
model = nn.Sequential(nn.Linear(10, 4), nn.ReLU(), nn.Linear(4, 10), nn.Sigmoid())
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def train(epoch):
    model.train()
    for x in train_loader:
        optimizer.zero_grad()
        loss = F.binary_cross_entropy(model(x), x, reduction="sum")
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())


for epoch in range(1, 3):
    train(epoch)
