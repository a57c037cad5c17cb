import torch

from model import Classifier


def drop_wrapper_prefix(state):
    cleaned = {}
    for k, v in state.items():
        for prefix in ("module.", "_orig_mod."):
            if k.startswith(prefix):
                k = k[len(prefix):]
        cleaned[k] = v
    return cleaned


ckpt = torch.load("last.pth", map_location="cpu")
net = Classifier()
net.load_state_dict(drop_wrapper_prefix(ckpt["state_dict"]))
net.eval()
