import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


class EmaCopy(nn.Module):
    def __init__(self, net, decay=0.9998, device=None):
        super().__init__()
        self.copy = copy.deepcopy(net).eval()
        self.decay = decay
        self.device = device
        if device is not None:
            self.copy.to(device=device)

    @torch.no_grad()
    def step(self, net):
        for e, m in zip(self.copy.parameters(), net.parameters()):
            e.lerp_(m, weight=1.0 - self.decay)
        for eb, mb in zip(self.copy.buffers(), net.buffers()):
            eb.copy_(mb.to(device=self.device))


model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.Linear(32, 4)).cuda()
ema = EmaCopy(model, device="cpu")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(8, 16, device="cuda")
    y = torch.randint(0, 4, (8,), device="cuda")
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema.step(model)
