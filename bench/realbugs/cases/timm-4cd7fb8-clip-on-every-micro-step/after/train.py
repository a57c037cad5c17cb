import torch
import torch.nn.functional as F


class AmpStepper:
    def __init__(self):
        self.scaler = torch.amp.GradScaler("cuda")

    def __call__(self, loss, opt, params, max_norm=None, do_step=True):
        self.scaler.scale(loss).backward()
        if do_step:
            if max_norm is not None:
                self.scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(params, max_norm)
            self.scaler.step(opt)
            self.scaler.update()


def train_epoch(model, loader, opt, stepper, accum=4, max_norm=1.0):
    model.train()
    for i, (x, y) in enumerate(loader):
        do_step = (i + 1) % accum == 0
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(x.cuda()), y.cuda()) / accum
        stepper(loss, opt, model.parameters(), max_norm=max_norm, do_step=do_step)
        if do_step:
            opt.zero_grad()
