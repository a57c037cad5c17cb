import torch


class HalfPrecisionTrainer:
    def __init__(self, model, lr=1e-4, log_scale=20.0):
        self.model = model.half()
        self.master = [p.detach().float().clone().requires_grad_(True) for p in model.parameters()]
        self.opt = torch.optim.SGD(self.master, lr=lr, momentum=0.9)
        self.log_scale = log_scale

    def backward(self, loss):
        (loss * 2 ** self.log_scale).backward()

    def step(self):
        for m, p in zip(self.master, self.model.parameters()):
            m.grad = p.grad.float()
        if not all(torch.isfinite(m.grad).all() for m in self.master):
            self.log_scale -= 1
            self.model.zero_grad(set_to_none=True)
            return False
        for m in self.master:
            m.grad.mul_(1.0 / 2 ** self.log_scale)
        self.opt.step()
        self.model.zero_grad(set_to_none=True)
        with torch.no_grad():
            for m, p in zip(self.master, self.model.parameters()):
                p.copy_(m)
        self.log_scale += 0.001
        return True
