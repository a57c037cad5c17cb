import torch
import torch.nn.functional as F
from accelerate import Accelerator


def train(unet, loader, max_grad_norm=1.0, accum=4, lr=5e-6):
    accelerator = Accelerator(gradient_accumulation_steps=accum, mixed_precision="fp16")
    optimizer = torch.optim.AdamW(unet.parameters(), lr=lr)
    unet, optimizer, loader = accelerator.prepare(unet, optimizer, loader)
    unet.train()
    for step, (noisy, noise) in enumerate(loader):
        with accelerator.accumulate(unet):
            loss = F.mse_loss(unet(noisy).float(), noise.float())
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(unet.parameters(), max_grad_norm)
            optimizer.step()
            optimizer.zero_grad()
