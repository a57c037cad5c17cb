import copy

import torch
import torch.nn as nn


class ShadowWeights:
    def __init__(self, net: nn.Module, decay=0.999, resume_from=""):
        self.shadow = copy.deepcopy(net)
        self.shadow.eval()
        self.decay = decay
        for p in self.shadow.parameters():
            p.requires_grad_(False)
        if resume_from:
            self._restore(resume_from)

    def _restore(self, path):
        blob = torch.load(path)
        if "ema_state" in blob:
            self.shadow.load_state_dict(blob["ema_state"])

    @torch.no_grad()
    def update(self, net):
        for s, p in zip(self.shadow.state_dict().values(), net.state_dict().values()):
            if s.dtype.is_floating_point:
                s.mul_(self.decay).add_(p, alpha=1 - self.decay)
