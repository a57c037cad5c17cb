import os

import torch
import torch.nn.functional as F

from model import TinyGPT

init_from = "resume" if os.path.exists("ckpt.pt") else "scratch"
model = TinyGPT()
iter_num = 0
if init_from == "resume":
    checkpoint = torch.load("ckpt.pt", map_location="cpu", weights_only=True)
    state_dict = checkpoint["model"]
    prefix = "_orig_mod."
    for key in list(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    model.load_state_dict(state_dict)
    iter_num = checkpoint["iter_num"]

optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
if init_from == "resume":
    optimizer.load_state_dict(checkpoint["optimizer"])
model = torch.compile(model)

while iter_num < 3:
    x = torch.randint(0, 32, (2, 8))
    logits = model(x[:, :-1])
    loss = F.cross_entropy(logits.flatten(0, 1), x[:, 1:].flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    iter_num += 1
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "iter_num": iter_num}, "ckpt.pt")
