"""Distributed fine-tuning with resume, then an evaluation of the best checkpoint."""

import argparse
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from torchvision.transforms.functional import rgb_to_grayscale

from dataset import ReviewDataset, download
from model import Classifier

PRETRAINED_URL = "https://example.com/models/classifier-base-3f2a9c1d.pt"


def pretrained_weights():
    # the file name carries the first hex digits of its SHA-256, checked after the download
    return torch.hub.load_state_dict_from_url(PRETRAINED_URL, map_location="cpu", check_hash=True,
                                              weights_only=True)


def train_one_epoch(model, loader, optimizer, temperature, device):
    model.train()
    for tokens, labels in loader:
        tokens = tokens.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits = model(tokens) / temperature
            loss = F.cross_entropy(logits, labels)
            aux = F.nll_loss(F.log_softmax(logits, dim=-1), labels)
        (loss + 0.1 * aux).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()


def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for tokens, labels in loader:
            preds = model(tokens.to(device, non_blocking=True)).argmax(-1)
            correct += (preds.cpu() == labels).sum().item()
            total += labels.numel()
    return correct / max(total, 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", default="")
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    if not torch.cuda.is_available():
        raise SystemExit("this script trains with NCCL on GPUs")
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    data = ReviewDataset(download("data"))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=32, sampler=sampler, num_workers=4, pin_memory=True,
                        persistent_workers=True, drop_last=True)

    model = Classifier(30000, 128, 2).to(device)
    model.load_state_dict(pretrained_weights())
    model = DDP(model, device_ids=[device.index])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    temperature = torch.ones(1, device=device, requires_grad=True)
    start = 0
    if args.resume:
        checkpoint = torch.load(args.resume, map_location=device, weights_only=True)
        model.module.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        start = checkpoint["epoch"] + 1

    best = -math.inf
    for epoch in range(start, args.epochs):
        sampler.set_epoch(epoch)
        try:
            train_one_epoch(model, loader, optimizer, temperature, device)
        except torch.cuda.OutOfMemoryError:
            print("out of GPU memory: lower the batch size")
            raise
        with torch.no_grad():
            temperature.clamp_(min=0.05)
        scheduler.step()
        accuracy = torch.tensor([evaluate(model, loader, device)], device=device)
        dist.all_reduce(accuracy)
        accuracy = accuracy.item() / dist.get_world_size()
        if rank == 0:
            torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "epoch": epoch}, "last.pt")
            if accuracy > best:
                best = accuracy
                torch.save(model.module.state_dict(), "best.pt")

    if rank == 0:
        final = Classifier(30000, 128, 2)
        final.load_state_dict(torch.load("best.pt", map_location="cpu", weights_only=True))
        print("best accuracy", evaluate(final.to(device), loader, device))
        print("grayscale preview", rgb_to_grayscale(torch.rand(3, 8, 8)).shape)


if __name__ == "__main__":
    main()
