"""The reviewer adds no host-device synchronisation per step.

Every Tensor method that forces a device-to-host read (``item``, ``cpu``,
``tolist``, ``numpy``, ``__bool__``, ``__float__``, ``__int__``) is wrapped to
count the calls made *from torchreview's runtime package*; a step post-hook of
the test records the count after every optimizer step.  Reads may happen only
at the periodic checks (every ``check_every`` steps) and at exit.
"""

import os
import sys

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
from torch.optim.optimizer import register_optimizer_step_post_hook  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

SYNCING = ("item", "cpu", "tolist", "numpy", "__bool__", "__float__", "__int__")


def test_no_host_sync_per_step(review, monkeypatch):
    import torchreview.runtime as runtime_pkg

    ours = os.path.dirname(runtime_pkg.__file__) + os.sep
    calls = []

    def counting(name, real):
        def wrapper(self, *args, **kwargs):
            caller = sys._getframe(1).f_code.co_filename
            if caller.startswith(ours):
                calls.append(name)
            return real(self, *args, **kwargs)
        return wrapper

    for name in SYNCING:
        monkeypatch.setattr(torch.Tensor, name, counting(name, getattr(torch.Tensor, name)))

    per_step = []
    handles = []

    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                          nn.Dropout(0.1), nn.Linear(4 * 6 * 6, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = TensorDataset(torch.randn(96 * 4, 1, 8, 8), torch.randint(0, 2, (96 * 4,)))
    loader = DataLoader(data, batch_size=4)

    def train():
        # registered after the reviewer's own hook, so it runs after it
        handles.append(register_optimizer_step_post_hook(
            lambda opt, args, kwargs: per_step.append(len(calls))))
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

    try:
        review(train, check_every=25)
    finally:
        for handle in handles:
            handle.remove()

    assert len(per_step) == 96
    added = [b - a for a, b in zip([0] + per_step, per_step)]
    syncing_steps = [i + 1 for i, n in enumerate(added) if n]
    # only the periodic checks read device data: steps 25, 50, 75
    assert syncing_steps == [25, 50, 75], syncing_steps
    assert sum(added) <= 3 * 6  # a handful of reads per check, never per step
