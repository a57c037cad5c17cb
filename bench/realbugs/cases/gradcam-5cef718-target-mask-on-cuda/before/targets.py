import numpy as np
import torch


class RegionTarget:
    def __init__(self, category, mask: np.ndarray):
        self.category = category
        self.mask = torch.from_numpy(mask)
        if torch.cuda.is_available():
            self.mask = self.mask.cuda()

    def __call__(self, model_output):
        return (model_output[self.category, :, :] * self.mask).sum()


def explain(model, image, category, mask):
    target = RegionTarget(category, mask)
    out = model(image)[0]
    score = target(out)
    score.backward()
    return score.item()
