from pathlib import Path

import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, device, results="results"):
        self.device = device
        self.model = model.to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-4)
        self.results = Path(results)
        self.step = 0

    def save(self, milestone):
        data = {"step": self.step, "model": self.model.state_dict(), "opt": self.opt.state_dict()}
        torch.save(data, str(self.results / f"model-{milestone}.pt"))

    def load(self, milestone):
        data = torch.load(str(self.results / f"model-{milestone}.pt"), map_location=self.device)
        self.model.load_state_dict(data["model"])
        self.opt.load_state_dict(data["opt"])
        self.step = data["step"]

    def train(self, batches):
        for x in batches:
            x = x.to(self.device)
            loss = F.mse_loss(self.model(x), x)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.step += 1
