import torch

from model import Classifier


def drop_wrapper_prefix(state):
    return {(k[len("module."):] if k.startswith("module.") else k): v for k, v in state.items()}


ckpt = torch.load("last.pth", map_location="cpu")
net = Classifier()
net.load_state_dict(drop_wrapper_prefix(ckpt["state_dict"]))
net.eval()
