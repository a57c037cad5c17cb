"""Device checks: TR201 and TR209 (against a fake ``torch.cuda``), TR403.

No GPU exists where these tests run.  The GPU-only checks are exercised with an
honest fake: ``torch.cuda.is_available``/``get_device_name``, the sync-debug
mode functions and ``memory_allocated`` are replaced by small fakes that record
what the reviewer asks, CPU tensors stand in for CUDA tensors (the reviewer's
device probe ``training_device`` is patched to answer "cuda"), and
``Tensor.item`` emits the very warning CUDA builds emit in sync-debug "warn"
mode ("called a synchronizing CUDA operation").  Everything else is real.
"""

import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


def fit(steps=20, item_every=1):
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(torch.randn(8, 8)), torch.randint(0, 2, (8,)))
        loss.backward()
        opt.step()
        if step % item_every == 0:
            loss.item()  # logging: a host sync on CUDA


class FakeCuda:
    """Records sync-debug-mode calls; ``Tensor.item`` warns while mode is 'warn'."""

    def __init__(self, monkeypatch, *, training_on_cuda):
        from torchreview.runtime import devices

        self.mode = 0
        self.calls = []
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "Fake GPU")
        monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: self.mode)
        monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", self.set_mode)
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 1 << 20)
        if training_on_cuda:
            monkeypatch.setattr(devices, "training_device", lambda params: "cuda")
        real_item = torch.Tensor.item

        def item(tensor):
            if self.mode in (1, "warn"):
                warnings.warn("called a synchronizing CUDA operation", UserWarning,
                              stacklevel=2)
            return real_item(tensor)

        monkeypatch.setattr(torch.Tensor, "item", item)

    def set_mode(self, mode):
        self.calls.append(mode)
        self.mode = mode


def by_code(findings, code):
    return [f for f in findings if f.code == code]


def test_tr201_training_on_cpu_while_cuda_is_available(review, monkeypatch):
    FakeCuda(monkeypatch, training_on_cuda=False)
    found = by_code(review(lambda: fit(5)), "TR201")
    assert len(found) == 1
    assert "CUDA (Fake GPU) is available" in found[0].message
    assert found[0].severity.label == "medium" and found[0].kind == "advice"


def test_tr201_silent_without_an_accelerator(review, codes_of):
    assert not torch.cuda.is_available()  # the real CPU build
    assert "TR201" not in codes_of(review(lambda: fit(5)))


def test_tr209_counts_host_syncs_per_step_and_restores_the_mode(review, monkeypatch):
    fake = FakeCuda(monkeypatch, training_on_cuda=True)
    found = review(lambda: fit(30))
    tr209 = by_code(found, "TR209")
    assert len(tr209) == 1
    assert "1.0 host-device synchronisations per step" in tr209[0].message
    assert tr209[0].source_line == "loss.item()  # logging: a host sync on CUDA"
    assert fake.calls == ["warn", 0]  # switched on at the first step, restored at exit
    assert "TR201" not in {f.code for f in found}
    with warnings.catch_warnings(record=True) as seen:  # our filter is gone
        warnings.simplefilter("default")
        warnings.warn("called a synchronizing CUDA operation", UserWarning)
    assert len(seen) == 1


def test_tr209_silent_when_syncs_follow_a_logging_cadence(review, monkeypatch, codes_of):
    FakeCuda(monkeypatch, training_on_cuda=True)
    assert "TR209" not in codes_of(review(lambda: fit(30, item_every=10)))


DEVICE_MISMATCH = """
    import torch, torch.nn as nn
    torch.set_num_threads(1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(4, 8)
            self.classifier = nn.Linear(8, 2)

        def forward(self, x):
            return self.classifier(torch.relu(self.encoder(x)))

    model = Net()
    # The "meta" device stands in for a GPU here: the classifier was moved,
    # the batch was not.
    model.classifier.to("meta")
    opt = torch.optim.SGD(model.encoder.parameters(), lr=0.1)
    batch = torch.randn(3, 4)
    out = model(batch)
"""


def test_tr403_device_mismatch_error_is_explained(run_py):
    code, findings, _ = run_py(DEVICE_MISMATCH)
    assert code == 1  # the script still fails like it would under python
    tr403 = [f for f in findings if f["code"] == "TR403"]
    assert len(tr403) == 1
    msg = tr403[0]["message"]
    assert "inside `classifier` (Linear)" in msg
    assert "weight, bias on meta" in msg and "input args[0] (3, 8) on cpu" in msg
    assert "not on the expected device" in msg
    assert tr403[0]["line"] == 12  # the failing line in forward


def test_tr403_silent_when_devices_agree(run_py):
    code, findings, _ = run_py(DEVICE_MISMATCH.replace('model.classifier.to("meta")', "pass"))
    assert code == 0 and not findings


class FakeProperties:
    total_memory = 16 * 1024 ** 3


@pytest.mark.parametrize("peak_share, accumulate, expected", [
    (0.95, False, True), (0.95, True, False), (0.5, False, False)])
def test_tr204_memory_bound_batch_without_accumulation(review, monkeypatch, peak_share,
                                                       accumulate, expected):
    FakeCuda(monkeypatch, training_on_cuda=True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index=0: FakeProperties)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated",
                        lambda device=None: int(peak_share * FakeProperties.total_memory))
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train():
        for _ in range(6):
            opt.zero_grad()
            for _ in range(2 if accumulate else 1):
                (model(torch.randn(4, 8)).sum() / 2).backward()
            opt.step()

    found = by_code(review(train), "TR204")
    assert bool(found) is expected
    if expected:
        assert "15.2 of 16.0 GiB (95%)" in found[0].message
