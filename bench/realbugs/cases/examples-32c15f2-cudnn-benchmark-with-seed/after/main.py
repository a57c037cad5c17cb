import argparse
import random

import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=None)
args = parser.parse_args()

if args.seed is not None:
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    cudnn.deterministic = True
    cudnn.benchmark = False

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2)).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.01)

for step in range(3):
    x = torch.randn(2, 3, 8, 8, device=device)
    y = torch.randint(0, 2, (2,), device=device)
    loss = nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
