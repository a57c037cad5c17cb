import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

block_size, batch_size = 16, 4
data_dir = tempfile.mkdtemp()
np.random.randint(0, 64, size=200_000, dtype=np.uint16).tofile(os.path.join(data_dir, "train.bin"))

train_data = np.memmap(os.path.join(data_dir, "train.bin"), dtype=np.uint16, mode="r")


def get_batch():
    data = train_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size].astype(np.int64)) for i in ix])
    return x, y


torch.manual_seed(0)
model = nn.Sequential(nn.Embedding(64, 16), nn.Linear(16, 64))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(3):
    x, y = get_batch()
    loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
print(loss.item())
