"""Training entry point."""

import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader

from dataset import ReviewDataset, download
from model import Classifier

LEARNING_RATE = 3e-4
BATCH_SIZE = 4
EPOCHS = 10
ACCUMULATION = 4

device = torch.device("cuda")


def train_epoch(model, loader, optimizer, scheduler, criterion, scaler):
    total_loss = 0.0
    for step, (tokens, labels) in enumerate(loader):
        with torch.cuda.amp.autocast():
            logits = model(tokens.to(device))
            loss = criterion(logits, labels.to(device))
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clips the scaled gradients
        if (step + 1) % ACCUMULATION == 0:
            scheduler.step()
            scaler.step(optimizer)
            scaler.update()
        total_loss += loss  # keeps every step's graph alive
        print(f"step {step} loss {loss.item():.4f}")
    return total_loss / len(loader)


def validate(model, loader, criterion):
    model.eval()
    losses = []
    for tokens, labels in loader:
        logits = model(tokens.to(device))
        losses.append(criterion(logits, labels.to(device)).item())
        torch.cuda.empty_cache()
    return sum(losses) / len(losses)


def main():
    torch.autograd.set_detect_anomaly(True)
    data = ReviewDataset(download("data"))
    train_loader = DataLoader(data, batch_size=BATCH_SIZE, shuffle=True)
    val_loader = DataLoader(data, batch_size=64)
    model = nn.DataParallel(Classifier(30000, 128, 2)).to(device)
    if len(sys.argv) > 1:
        model.load_state_dict(torch.load(sys.argv[1]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=LEARNING_RATE, total_steps=EPOCHS)
    criterion = nn.CrossEntropyLoss()
    scaler = torch.cuda.amp.GradScaler()
    model.train()
    for epoch in range(EPOCHS):
        train_epoch(model, train_loader, optimizer, scheduler, criterion, scaler)
        validate(model, val_loader, criterion)
        torch.save(model, f"checkpoint_{epoch}.pt")
    final = torch.load(f"checkpoint_{EPOCHS - 1}.pt")  # a pickled module: torch >= 2.6 refuses it
    print("final validation loss", validate(final, val_loader, criterion))


if __name__ == "__main__":
    main()
