import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


def train_epoch(model: DistributedDataParallel, loader, opt, accum=4):
    model.train()
    can_skip_sync = hasattr(model, "no_sync")
    for i, (x, y) in enumerate(loader):
        last = (i + 1) % accum == 0
        if can_skip_sync and not last:
            with model.no_sync():
                loss = F.cross_entropy(model(x.cuda()), y.cuda()) / accum
        else:
            loss = F.cross_entropy(model(x.cuda()), y.cuda()) / accum
        loss.backward()
        if last:
            opt.step()
            opt.zero_grad()


def main(net, loader, rank):
    model = DistributedDataParallel(net.cuda(rank), device_ids=[rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        train_epoch(model, loader, opt)
