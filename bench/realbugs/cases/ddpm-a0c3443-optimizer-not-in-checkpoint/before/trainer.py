import copy
from pathlib import Path

import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, results="results"):
        self.model = model
        self.ema = copy.deepcopy(model).eval()
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.99))
        self.results = Path(results)
        self.step = 0

    def save(self, milestone):
        data = {"step": self.step, "model": self.model.state_dict(), "ema": self.ema.state_dict()}
        torch.save(data, self.results / f"model-{milestone}.pt")

    def load(self, milestone):
        data = torch.load(self.results / f"model-{milestone}.pt", map_location="cpu")
        self.model.load_state_dict(data["model"])
        self.ema.load_state_dict(data["ema"])
        self.step = data["step"]

    @torch.no_grad()
    def update_ema(self, decay=0.995):
        for e, p in zip(self.ema.parameters(), self.model.parameters()):
            e.lerp_(p, 1 - decay)

    def train(self, batches, total_steps):
        while self.step < total_steps:
            x = next(batches)
            loss = F.mse_loss(self.model(x), x)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.update_ema()
            self.step += 1
            if self.step % 1000 == 0:
                self.save(self.step // 1000)
