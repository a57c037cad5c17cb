import glob

import torch


def score_of(path):
    ckpt = torch.load(path, map_location="cpu")
    return ckpt.get("metric", 0.0)


paths = sorted(glob.glob("checkpoint-*.pth"), key=score_of, reverse=True)[:2]
states = [torch.load(p, map_location="cpu")["state_dict"] for p in paths]
averaged = {k: sum(s[k] for s in states) / len(states) for k in states[0]}
torch.save(averaged, "averaged.pth")
