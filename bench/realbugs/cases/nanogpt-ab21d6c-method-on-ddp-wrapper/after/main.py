import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Bigram(nn.Module):
    def __init__(self, vocab=32):
        super().__init__()
        self.table = nn.Embedding(vocab, vocab)

    def forward(self, idx):
        return self.table(idx)

    def flops_per_token(self):
        return 2 * sum(p.numel() for p in self.parameters())


os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
ddp = True
dist.init_process_group("gloo", rank=0, world_size=1)
model = Bigram()
if ddp:
    model = DDP(model)
raw_model = model.module if ddp else model
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
torch.manual_seed(0)
for step in range(3):
    x = torch.randint(0, 32, (4, 9))
    loss = F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if step >= 1:
        print(step, loss.item(), raw_model.flops_per_token())
dist.destroy_process_group()
