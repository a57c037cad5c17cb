import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class ShuffledBatches(IterableDataset):
    def __init__(self, data, batch_size, seed=0):
        self.data, self.batch_size, self.seed = data, batch_size, seed
        self.epoch = 0
        self._batches = self._plan(self.epoch)

    def _plan(self, epoch):
        g = torch.Generator().manual_seed(self.seed + epoch)
        order = torch.randperm(len(self.data), generator=g).tolist()
        return [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]

    def set_epoch(self, epoch):
        if epoch != self.epoch:
            self.epoch = epoch
            self._batches = self._plan(epoch)

    def __iter__(self):
        info = get_worker_info()
        wid, n = (info.id, info.num_workers) if info else (0, 1)
        for idx in self._batches[wid::n]:
            yield self.data[idx]


def main():
    ds = ShuffledBatches(torch.arange(32.0), batch_size=4)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    for epoch in range(3):
        ds.set_epoch(epoch)
        print(epoch, [b[0].item() for b in loader])


if __name__ == "__main__":
    main()
