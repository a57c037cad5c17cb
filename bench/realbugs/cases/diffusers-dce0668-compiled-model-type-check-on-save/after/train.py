import torch
import torch.nn as nn
from accelerate import Accelerator


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 16), nn.SiLU(), nn.Linear(16, 16))

    def forward(self, x):
        return self.net(x)


accelerator = Accelerator()
denoiser = torch.compile(Denoiser())
optimizer = torch.optim.AdamW(denoiser.parameters(), lr=1e-4)
denoiser, optimizer = accelerator.prepare(denoiser, optimizer)


def unwrap(model):
    model = accelerator.unwrap_model(model)
    return getattr(model, "_orig_mod", model)


def save_hook(models, weights, output_dir):
    for model in models:
        if isinstance(model, type(unwrap(denoiser))):
            torch.save(model.state_dict(), f"{output_dir}/denoiser.pt")
        else:
            raise ValueError(f"unexpected model to save: {type(model)}")
        weights.pop()


def load_hook(models, input_dir):
    while models:
        model = models.pop()
        if isinstance(model, type(unwrap(denoiser))):
            model.load_state_dict(torch.load(f"{input_dir}/denoiser.pt", map_location="cpu"))
        else:
            raise ValueError(f"unexpected model to load: {type(model)}")


accelerator.register_save_state_pre_hook(save_hook)
accelerator.register_load_state_pre_hook(load_hook)
