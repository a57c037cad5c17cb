import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=None)
parser.add_argument("--steps", type=int, default=5)
args = parser.parse_args()

if args.seed is not None:
    torch.manual_seed(args.seed)

model = nn.Linear(4, 4)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(args.steps):
    x = torch.randn(8, 4)
    loss = F.mse_loss(model(x), x)
    opt.zero_grad()
    loss.backward()
    opt.step()

generator = torch.Generator().manual_seed(args.seed) if args.seed is not None else None
model.eval()
with torch.no_grad():
    sample = model(torch.randn(2, 4, generator=generator))
print(sample)
