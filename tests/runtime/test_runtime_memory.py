"""Memory checks: TR507 (autograd graphs kept alive) and TR604 (memory growth)."""

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


def setup():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def step(model, opt):
    opt.zero_grad()
    x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    loss.backward()
    opt.step()
    return out, loss


def by_code(findings, code):
    return [f for f in findings if f.code == code]


def test_tr507_list_of_losses_names_the_list(review):
    model, opt = setup()

    def train():
        epoch_losses = []
        for _ in range(30):
            _, loss = step(model, opt)
            epoch_losses.append(loss)  # bug: keeps every graph

    found = by_code(review(train), "TR507")
    assert len(found) == 1
    f = found[0]
    assert "the list `epoch_losses`" in f.message and "losses" in f.message
    assert "epoch_losses.append(loss)" in f.source_line
    assert not by_code(review(lambda: None), "TR507")


def test_tr507_running_total_names_the_tensor(review):
    model, opt = setup()

    def train():
        total = 0
        for _ in range(30):
            _, loss = step(model, opt)
            total += loss  # bug: one ever-growing graph
        return total

    found = by_code(review(train), "TR507")
    assert len(found) == 1
    assert "the tensor `total`" in found[0].message
    assert "total += loss" in found[0].source_line


def test_tr507_list_of_outputs(review):
    model, opt = setup()

    def train():
        outputs = []
        for _ in range(30):
            out, _ = step(model, opt)
            outputs.append(out)

    found = by_code(review(train), "TR507")
    assert len(found) == 1 and "outputs of Sequential" in found[0].message


def test_tr507_tr604_silent_with_item_detach_and_a_kept_last_step(review, codes_of):
    model, opt = setup()

    def train():
        losses, outs, previous = [], [], None
        total = torch.zeros(())
        for _ in range(40):
            out, loss = step(model, opt)
            losses.append(loss.item())
            outs.append(out.detach()[:1])
            total += loss.detach()
            previous = loss  # keeping one step back is fine
        return previous

    assert not ({"TR507", "TR604"} & codes_of(review(train)))


def test_tr604_memory_grows_step_over_step(review):
    model, opt = setup()

    def train():
        cache = []
        for _ in range(60):
            out, _ = step(model, opt)
            cache.append(torch.ones(1 << 20) * out.detach().mean())  # 4 MB per step

    found = review(train)
    tr604 = by_code(found, "TR604")
    assert len(tr604) == 1, found
    msg = tr604[0].message
    assert "process memory (RSS) grew" in msg and "the list `cache` holds" in msg
    assert not by_code(found, "TR507")


def test_tr604_silent_for_a_dataset_that_caches_its_first_epoch(review, codes_of):
    from torch.utils.data import DataLoader, Dataset

    class Cached(Dataset):
        """Decodes each item once, then serves it from memory."""

        def __init__(self):
            self.cache = {}

        def __len__(self):
            return 40

        def __getitem__(self, i):
            if i not in self.cache:
                self.cache[i] = torch.ones(3 << 18)  # 3 MB per item
            return self.cache[i][:32], i % 4

    model, opt = setup()
    loader = DataLoader(Cached(), batch_size=1)

    def train():
        for _ in range(3):
            for x, y in loader:
                opt.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                opt.step()

    assert "TR604" not in codes_of(review(train))
