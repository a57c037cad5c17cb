import torch
import torch.nn as nn
import torch.nn.functional as F


class WeightAverager:
    def __init__(self, model, decay=0.99):
        self.decay = decay
        self.shadow = {k: p.detach().clone() for k, p in model.named_parameters()}

    def step(self, model):
        for k, p in model.named_parameters():
            self.shadow[k] = self.shadow[k] * self.decay + p * (1 - self.decay)


model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8))
ema = WeightAverager(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for _ in range(30):
    x, y = torch.randn(16, 64), torch.randint(0, 8, (16,))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema.step(model)
print(sum(v.sum().item() for v in ema.shadow.values()))
