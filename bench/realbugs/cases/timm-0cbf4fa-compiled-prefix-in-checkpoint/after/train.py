import torch
import torch.nn.functional as F

from model import Classifier

model = torch.compile(Classifier())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(3):
    x, y = torch.randn(16, 20), torch.randint(0, 5, (16,))
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    torch.save({"state_dict": model.state_dict(), "epoch": epoch}, "last.pth")
