import math
from copy import deepcopy

import torch


class WeightAverage:
    def __init__(self, model, decay=0.9999, updates=0):
        self.shadow = deepcopy(model).eval()
        self.updates = updates
        self.decay = lambda n: decay * (1 - math.exp(-n / 2000))
        for p in self.shadow.parameters():
            p.requires_grad_(False)

    def update(self, model):
        with torch.no_grad():
            self.updates += 1
            d = self.decay(self.updates)
            current = model.state_dict()
            for name, value in self.shadow.state_dict().items():
                if value.dtype.is_floating_point:
                    value.mul_(d).add_(current[name].detach(), alpha=1 - d)
