"""Input-pipeline checks: TR202/TR605 (waiting for data) and TR513 (sampler epoch)."""

import time

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
from torch.utils.data import DataLoader, Dataset, TensorDataset  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402


class SlowImages(Dataset):
    """Stands for a dataset that decodes files: each item costs a few ms."""

    def __init__(self, n, delay=0.004):
        self.x = torch.randn(n, 8)
        self.y = torch.randint(0, 2, (n,))
        self.delay = delay

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(self.delay)
        return self.x[i], self.y[i]


def fit(loader, epochs=1):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()


def by_code(findings, code):
    return [f for f in findings if f.code == code]


def test_tr202_loop_waits_for_a_loader_without_workers(review):
    loader = DataLoader(SlowImages(4 * 40), batch_size=4)
    found = review(lambda: fit(loader), min_data_wait=0.3)
    tr202 = by_code(found, "TR202")
    assert len(tr202) == 1
    msg = tr202[0].message
    assert "waited for the next batch" in msg and "num_workers=0" in msg
    assert "DataLoader(SlowImages" in msg
    assert "for x, y in loader" in tr202[0].source_line
    assert not by_code(found, "TR605")


def test_tr605_loop_waits_even_with_a_worker(review):
    loader = DataLoader(SlowImages(4 * 40), batch_size=4, num_workers=1)
    found = review(lambda: fit(loader), min_data_wait=0.3)
    tr605 = by_code(found, "TR605")
    assert len(tr605) == 1
    assert "num_workers=1" in tr605[0].message and "prefetch_factor=2" in tr605[0].message


def test_tr202_tr605_silent_for_in_memory_data_and_eval_loaders(review, codes_of):
    data = TensorDataset(torch.randn(640, 8), torch.randint(0, 2, (640,)))
    found = review(lambda: fit(DataLoader(data, batch_size=16), epochs=2), min_data_wait=0.3)
    assert not ({"TR202", "TR605"} & codes_of(found))

    def evaluate_only():  # a slow loader with no training step is not a training bottleneck
        model = nn.Linear(8, 2)
        with torch.no_grad():
            for x, _ in DataLoader(SlowImages(4 * 30), batch_size=4):
                model(x)

    assert not ({"TR202", "TR605"} & codes_of(review(evaluate_only, min_data_wait=0.3)))


def test_tr513_distributed_sampler_epoch_never_set(review):
    data = TensorDataset(torch.randn(32, 8), torch.randint(0, 2, (32,)))
    sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=True)
    loader = DataLoader(data, batch_size=4, sampler=sampler)
    found = by_code(review(lambda: fit(loader, epochs=3)), "TR513")
    assert len(found) == 1
    assert "set_epoch" in found[0].message and "3 epochs" in found[0].message


def test_tr513_silent_when_set_epoch_is_called(review, codes_of):
    data = TensorDataset(torch.randn(32, 8), torch.randint(0, 2, (32,)))
    sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=True)
    loader = DataLoader(data, batch_size=4, sampler=sampler)

    def train():
        for epoch in range(3):
            sampler.set_epoch(epoch)
            fit(loader)

    assert "TR513" not in codes_of(review(train))
