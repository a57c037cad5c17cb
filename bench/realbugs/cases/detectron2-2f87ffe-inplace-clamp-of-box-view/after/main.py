import torch
import torch.nn as nn


class BoxList:
    def __init__(self, tensor):
        self.tensor = tensor

    def clip(self, h, w):
        x0 = self.tensor[:, 0].clamp(min=0, max=w)
        y0 = self.tensor[:, 1].clamp(min=0, max=h)
        x1 = self.tensor[:, 2].clamp(min=0, max=w)
        y1 = self.tensor[:, 3].clamp(min=0, max=h)
        self.tensor = torch.stack((x0, y0, x1, y1), dim=-1)


head = nn.Linear(8, 4)
opt = torch.optim.SGD(head.parameters(), lr=0.01)
for _ in range(2):
    feats = torch.randn(5, 8)
    boxes = BoxList(head(feats).exp())
    boxes.clip(16, 16)
    loss = boxes.tensor.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("ok")
