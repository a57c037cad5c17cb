import math
import os

import torch
import torch.nn.functional as F
from accelerate import Accelerator


def train(model, loader, output_dir, epochs=10, accum=4, resume=None):
    accelerator = Accelerator(gradient_accumulation_steps=accum)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    updates_per_epoch = math.ceil(len(loader) / accum)
    global_step, first_epoch, resume_step = 0, 0, 0
    if resume:
        accelerator.load_state(os.path.join(output_dir, resume))
        global_step = int(resume.split("-")[1])
        resume_global_step = global_step * accum
        first_epoch = resume_global_step // updates_per_epoch
        resume_step = resume_global_step % updates_per_epoch
    for epoch in range(first_epoch, epochs):
        for step, (x, y) in enumerate(loader):
            if resume and epoch == first_epoch and step < resume_step:
                continue
            with accelerator.accumulate(model):
                loss = F.mse_loss(model(x), y)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients:
                global_step += 1
                if global_step % 500 == 0:
                    accelerator.save_state(os.path.join(output_dir, f"checkpoint-{global_step}"))
