import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def cache_latents(vae, images, batch_size=4):
    accelerator = Accelerator()
    vae.to(accelerator.device, dtype=torch.float16)
    loader = DataLoader(TensorDataset(images), batch_size=batch_size)
    cached = []
    with torch.no_grad():
        for (pixel_values,) in loader:
            pixel_values = pixel_values.to(dtype=vae.dtype)
            cached.append(vae.encode(pixel_values).cpu())
    return torch.cat(cached)
