"""Training entry point: configurable, reproducible, resumable."""

import argparse
import random

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torch.utils.tensorboard import SummaryWriter

from dataset import ReviewDataset, download
from model import Classifier


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--accumulation", type=int, default=4)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--debug", action="store_true")
    return parser.parse_args()


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def seed_worker(worker_id: int) -> None:
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def train_epoch(model, loader, optimizer, scheduler, criterion, scaler, device, accumulation):
    model.train()
    running = torch.zeros((), device=device)
    optimizer.zero_grad(set_to_none=True)
    for step, (tokens, labels) in enumerate(loader):
        tokens = tokens.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            logits = model(tokens)
            loss = criterion(logits, labels) / accumulation
        scaler.scale(loss).backward()
        if (step + 1) % accumulation == 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
        running += loss.detach()
    return running / max(1, len(loader))


@torch.no_grad()
def validate(model, loader, criterion, device):
    model.eval()
    total = torch.zeros((), device=device)
    for tokens, labels in loader:
        logits = model(tokens.to(device, non_blocking=True))
        total += criterion(logits, labels.to(device, non_blocking=True))
    return total / max(1, len(loader))


def main() -> None:
    args = parse_args()
    seed_everything(args.seed)
    if args.debug:
        torch.autograd.set_detect_anomaly(True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = ReviewDataset(download("data"), seed=args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    train_loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, drop_last=True,
                              num_workers=args.workers, pin_memory=True, persistent_workers=args.workers > 0,
                              worker_init_fn=seed_worker, generator=generator)
    val_loader = DataLoader(data, batch_size=args.batch_size, num_workers=args.workers, pin_memory=True,
                            persistent_workers=args.workers > 0)
    model = Classifier(30000, 128, 2).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    steps = args.epochs * (len(train_loader) // args.accumulation)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=max(1, steps))
    criterion = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler(device.type)
    start = 0
    if args.resume:
        state = torch.load(args.resume, map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        scaler.load_state_dict(state["scaler"])
        start = state["epoch"] + 1
    writer = SummaryWriter()
    for epoch in range(start, args.epochs):
        try:
            train_loss = train_epoch(model, train_loader, optimizer, scheduler, criterion, scaler, device,
                                     args.accumulation)
        except torch.cuda.OutOfMemoryError:
            print("out of GPU memory: lower --batch-size and raise --accumulation")
            raise
        val_loss = validate(model, val_loader, criterion, device)
        writer.add_scalar("loss/train", train_loss.item(), epoch)
        writer.add_scalar("loss/val", val_loss.item(), epoch)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(), "epoch": epoch},
                   f"checkpoint_{epoch}.pt")
    writer.close()


if __name__ == "__main__":
    main()
