import os

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, loader, optimizer, snapshot_path):
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = model.to(self.gpu_id)
        self.loader = loader
        self.optimizer = optimizer
        self.epochs_run = 0
        self.snapshot_path = snapshot_path
        if os.path.exists(snapshot_path):
            self._load_snapshot(snapshot_path)
        self.model = DDP(self.model, device_ids=[self.gpu_id])

    def _load_snapshot(self, path):
        snap = torch.load(path)
        self.model.load_state_dict(snap["weights"])
        self.epochs_run = snap["epochs"]

    def _save_snapshot(self, epoch):
        torch.save({"weights": self.model.module.state_dict(), "epochs": epoch}, self.snapshot_path)

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            self.loader.sampler.set_epoch(epoch)
            for x, y in self.loader:
                x, y = x.to(self.gpu_id), y.to(self.gpu_id)
                self.optimizer.zero_grad()
                F.cross_entropy(self.model(x), y).backward()
                self.optimizer.step()
            if self.gpu_id == 0:
                self._save_snapshot(epoch)
