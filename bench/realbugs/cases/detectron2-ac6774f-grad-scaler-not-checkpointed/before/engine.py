import torch
import torch.nn.functional as F


class AmpStepRunner:
    def __init__(self, model, optimizer, loader):
        self.model, self.optimizer, self.loader = model, optimizer, iter(loader)
        self.scaler = torch.amp.GradScaler("cuda")

    def run_step(self):
        x, y = next(self.loader)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(self.model(x.cuda()), y.cuda())
        self.optimizer.zero_grad()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()


class Trainer:
    def __init__(self, model, optimizer, loader, max_iter):
        self.inner = AmpStepRunner(model, optimizer, loader)
        self.iter, self.max_iter = 0, max_iter

    def state_dict(self):
        return {"iteration": self.iter, "model": self.inner.model.state_dict(),
                "optimizer": self.inner.optimizer.state_dict()}

    def load_state_dict(self, state):
        self.iter = state["iteration"] + 1
        self.inner.model.load_state_dict(state["model"])
        self.inner.optimizer.load_state_dict(state["optimizer"])

    def resume_or_load(self, path):
        self.load_state_dict(torch.load(path, map_location="cpu"))

    def train(self):
        while self.iter < self.max_iter:
            self.inner.run_step()
            if self.iter % 500 == 0:
                torch.save(self.state_dict(), "last_checkpoint.pth")
            self.iter += 1
