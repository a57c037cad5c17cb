import torch
import torch.nn.functional as F
from accelerate import Accelerator


def train(model, optimizer, train_loader, epochs, resume_dir=None, start_epoch=0, resume_step=None):
    accelerator = Accelerator()
    model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)
    if resume_dir:
        accelerator.load_state(resume_dir)
    for epoch in range(start_epoch, epochs):
        model.train()
        if resume_dir and epoch == start_epoch and resume_step is not None:
            train_loader = accelerator.skip_first_batches(train_loader, resume_step)
        for step, (x, y) in enumerate(train_loader):
            loss = F.cross_entropy(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        accelerator.save_state(f"epoch_{epoch}")
