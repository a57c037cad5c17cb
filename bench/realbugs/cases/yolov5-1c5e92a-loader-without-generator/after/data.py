import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Boxes(Dataset):
    def __init__(self, n=32, augment=True):
        self.items = torch.rand(n, 3, 8, 8)
        self.augment = augment

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        img = self.items[i]
        if self.augment and random.random() < 0.5:
            img = img.flip(-1)
        if self.augment:
            img = img * float(np.random.uniform(0.8, 1.2))
        return img, i % 2


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2 ** 32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def make_loader(batch_size, workers, shuffle=True):
    dataset = Boxes()
    generator = torch.Generator()
    generator.manual_seed(0)
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, num_workers=workers,
                      pin_memory=True, worker_init_fn=seed_worker, generator=generator)
