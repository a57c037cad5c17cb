import torch
import torch.nn as nn
import torch.nn.functional as F

gradient_accumulation_steps = 4
grad_clip = 1.0
max_iters = 3


def get_batch():
    x = torch.randint(0, 32, (2, 9))
    return x[:, :-1], x[:, 1:]


model = nn.Sequential(nn.Embedding(32, 16), nn.Linear(16, 32))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
X, Y = get_batch()
for iter_num in range(max_iters):
    for micro_step in range(gradient_accumulation_steps):
        logits = model(X)
        loss = F.cross_entropy(logits.flatten(0, 1), Y.flatten())
        loss = loss / gradient_accumulation_steps
        X, Y = get_batch()
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    print(iter_num, loss.item())
