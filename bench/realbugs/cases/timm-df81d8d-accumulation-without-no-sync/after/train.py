import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def run(loader, rank, accum=8, epochs=2):
    dist.init_process_group("nccl")
    net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).cuda(rank)
    model = DDP(net, device_ids=[rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        model.train()
        for i, (x, y) in enumerate(loader):
            x, y = x.cuda(rank), y.cuda(rank)
            update = (i + 1) % accum == 0
            with contextlib.nullcontext() if update else model.no_sync():
                loss = F.cross_entropy(model(x), y) / accum
                loss.backward()
            if update:
                opt.step()
                opt.zero_grad()
