import torch
import torch.nn as nn


class Ensemble(nn.ModuleList):
    def forward(self, x):
        return torch.stack([m(x) for m in self]).mean(0)


def load_models(paths, device=None):
    ensemble = Ensemble()
    for path in paths if isinstance(paths, list) else [paths]:
        ckpt = torch.load(path, map_location=device)
        net = (ckpt.get("ema") or ckpt["model"]).float()
        ensemble.append(net.eval())
    return ensemble[0] if len(ensemble) == 1 else ensemble
