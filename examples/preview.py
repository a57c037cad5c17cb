"""Print a few batches of the review data, to check the tokenisation before a long run."""

import torch.multiprocessing as mp
from torch.utils.data import DataLoader

from dataset import ReviewDataset, download

mp.set_start_method("spawn", force=True)  # workers may touch CUDA later: fork is unsafe then
loader = DataLoader(ReviewDataset(download("data")), batch_size=8, num_workers=2)
for index, (tokens, labels) in enumerate(loader):
    print(index, tokens.shape, labels.tolist())
    if index == 2:
        break
