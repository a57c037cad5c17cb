"""Series of a watched run (loss, gradient norm, lr, step time, memory) and the
findings placed on their timeline; the JSON report carries them.

Step times are checked only against lower bounds made with ``time.sleep`` in
the part being measured (a sleep lasts at least that long), never against an
upper bound: no timed assertions.
"""

from __future__ import annotations

import json
import math
import time

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
from torch.utils.data import DataLoader, Dataset, TensorDataset  # noqa: E402

SLEEP = 0.002


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


class SlowData(Dataset):
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 4, generator=g)
        self.y = torch.randint(0, 2, (n,), generator=g)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(SLEEP)  # decoding
        return self.x[i], self.y[i]


class SlowNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        time.sleep(SLEEP)
        return self.fc(x)


def linear_loop(steps: int, *, bad_step: int | None = None, bad: float = float("nan")):
    """A tiny training loop; the loss of ``bad_step`` is multiplied by ``bad``
    (the weights are repaired after it, so only that step is non-finite)."""
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 4)

    def train():
        for step in range(1, steps + 1):
            opt.zero_grad()
            out = model(x).mean()
            loss = out * bad if step == bad_step else out ** 2
            loss.backward()
            opt.step()
            if step == bad_step:
                with torch.no_grad():
                    for p in model.parameters():
                        p.nan_to_num_(0.0)
    return train


def watch_run(fn, **options):
    import torchreview

    opts = {"live": False, "write_report": False, "check_every": 10}
    opts.update(options)
    with torchreview.watch(**opts) as watcher:
        fn()
    return watcher


def series(watcher, name):
    s = watcher.report.runtime["series"][name]
    return s["step"], s["value"]


def test_series_match_the_training_loop():
    model = SlowNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    # runs inside step(), after the reviewer's global pre-hook and before its post-hook
    opt.register_step_pre_hook(lambda *args: time.sleep(SLEEP))
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    loader = DataLoader(SlowData(24), batch_size=1)
    losses, norms, lrs = [], [], []

    def train():
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            losses.append(loss.item())
            norms.append(math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters())))
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
            time.sleep(SLEEP)  # logging

    watcher = watch_run(train)
    runtime = watcher.report.runtime
    assert runtime["steps"] == 24 and runtime["stride"] == 1 and runtime["device"] == "cpu"
    steps, values = series(watcher, "loss")
    assert steps == list(range(1, 25))
    assert values == pytest.approx(losses, rel=1e-6)
    steps, values = series(watcher, "grad_norm")
    assert steps == list(range(1, 25))
    assert values == pytest.approx(norms, rel=1e-5)
    steps, values = series(watcher, "lr")
    assert steps == list(range(1, 25)) and values == pytest.approx(lrs)
    assert values[0] == 0.1 and values[-1] == pytest.approx(0.1 * 0.5 ** 4)
    # each part of a step holds at least the sleep made in it; a step's interval
    # starts where the previous step ended, so "other" of step k holds the
    # logging sleep made after step k-1 (none before step 1)
    for name in ("data_wait", "forward_backward", "optimizer", "other"):
        steps, values = series(watcher, name)
        assert steps == list(range(1, 25))
        measured = values[1:] if name == "other" else values
        assert min(measured) >= SLEEP * 0.999, (name, values)
    _, times = series(watcher, "time")
    assert times == sorted(times) and times[-1] - times[0] >= 23 * 4 * SLEEP
    _, rss = series(watcher, "rss")
    assert all(isinstance(v, int) and v > 10 * 2 ** 20 for v in rss)
    assert "cuda_allocated" not in runtime["series"]
    assert runtime["markers"] == []


def test_nan_loss_is_a_gap_and_a_marker_at_its_step():
    watcher = watch_run(linear_loop(30, bad_step=13))
    steps, values = series(watcher, "loss")
    assert steps == list(range(1, 31))
    assert values[12] is None and all(v is not None for k, v in enumerate(values) if k != 12)
    _, norms = series(watcher, "grad_norm")
    assert norms[12] is None  # NaN gradients too
    marker = [m for m in watcher.report.runtime["markers"] if m["code"] == "TR601"]
    assert len(marker) == 1 and marker[0]["step"] == 13 and not marker[0]["at_end"]
    assert "non-finite" in marker[0]["message"]
    # the report's JSON stays strict JSON (no NaN literal)
    from torchreview.report import render

    data = _strict_json(render(watcher.report, "json"))
    assert data["runtime"]["series"]["loss"]["value"][12] is None


def test_accumulated_backward_passes_give_their_mean_loss():
    model = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(1.0)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # keep the weights: known losses
    ones = torch.ones(1, 2)

    def train():
        for _ in range(4):
            opt.zero_grad()
            for scale in (1.0, 3.0):  # two micro-batches per step
                (model(ones * scale).sum()).backward()
            opt.step()

    watcher = watch_run(train)
    steps, values = series(watcher, "loss")
    assert steps == [1, 2, 3, 4] and values == pytest.approx([4.0] * 4)  # mean of 2 and 6


def test_end_of_run_finding_is_placed_at_the_last_step():
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.used = nn.Linear(3, 1)
            self.unused = nn.Linear(3, 1)

        def forward(self, x):
            return self.used(x)

    model = Branchy()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(torch.randn(40, 3)), batch_size=4)

    def train():
        for (x,) in loader:
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()

    watcher = watch_run(train)
    [marker] = [m for m in watcher.report.runtime["markers"] if m["code"] == "TR603"]
    assert marker["step"] == 10 and marker["at_end"]
    assert "unused.weight" in marker["message"]


def test_long_runs_are_thinned_alike(monkeypatch):
    import torchreview.runtime.series as series_mod

    monkeypatch.setattr(series_mod, "MAX_POINTS", 8)
    watcher = watch_run(linear_loop(40))
    runtime = watcher.report.runtime
    assert runtime["steps"] == 40 and runtime["stride"] == 8
    for name, s in runtime["series"].items():
        assert s["step"] == [8, 16, 24, 32, 40], name
        assert len(s["value"]) == 5


def test_cuda_memory_series_from_a_fake_cuda_device(monkeypatch):
    """No GPU here: the memory check's device is set to CUDA by hand and
    ``torch.cuda.memory_allocated`` patched (a host-side counter on real CUDA)."""
    allocated = iter(range(2 ** 20, 2 ** 30, 2 ** 20))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *a, **k: next(allocated))
    import torchreview

    with torchreview.watch(live=False, write_report=False) as watcher:
        watcher.memory.device_kind = "cuda"
        linear_loop(5)()
    runtime = watcher.report.runtime
    assert runtime["device"] == "cuda"
    assert runtime["series"]["cuda_allocated"]["value"] == [k * 2 ** 20 for k in range(1, 6)]
    assert all(v > 0 for v in runtime["series"]["rss"]["value"])  # RSS is still read


def test_json_report_of_run_carries_the_series(run_py):
    code, findings, report = run_py("""
        import torch
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x = torch.randn(16, 3)
        for step in range(12):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
    """)
    runtime = report["runtime"]
    assert runtime["schema"] == 1 and runtime["steps"] == 12
    assert set(runtime["series"]) >= {"loss", "grad_norm", "lr", "time", "data_wait",
                                      "forward_backward", "optimizer", "other", "rss"}
    assert runtime["series"]["lr"]["value"] == [1e-3] * 12
    assert runtime["series"]["loss"]["step"] == list(range(1, 13))


def test_html_page_from_watch_option(tmp_path):
    out = tmp_path / "nested" / "run.html"
    watch_run(linear_loop(20, bad_step=7, bad=float("inf")), report=str(out))
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count('<svg class="chart"') == 5
    assert page.count('class="marker" data-code="TR601" data-step="7"') == 5
    assert 'id="finding-1"' in page


def test_unwritable_report_is_one_line_and_the_run_goes_on(tmp_path):
    import io

    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    stream = io.StringIO()
    watcher = watch_run(linear_loop(3), report=str(blocker / "run.html"), stream=stream)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchreview: cannot write the HTML report")
    assert "Traceback" not in stream.getvalue()
    assert watcher.report.runtime["steps"] == 3


def test_watch_report_inside_torchreview_run_is_written(run_py, tmp_path):
    """`watch(report=...)` in a script run by `torchreview run` joins the running
    review; the page is written when that review ends."""
    page = tmp_path / "inner.html"
    run_py(f"""
        import torch
        import torchreview
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with torchreview.watch(model, opt, report={str(page)!r}):
            for _ in range(5):
                opt.zero_grad()
                model(torch.randn(4, 3)).pow(2).mean().backward()
                opt.step()
    """)
    text = page.read_text()
    assert text.count('<svg class="chart"') == 5 and "optimizer steps</th><td>5<" in text


def test_step_parts_from_given_clock_values():
    """The split of one step interval, on exact clock values: data fetched under
    no_grad (an evaluation loop) is not training's data wait but "other"."""
    from types import SimpleNamespace

    from torchreview.runtime.series import Series

    fake = SimpleNamespace(torch=torch, step=0)
    optimizer = SimpleNamespace(param_groups=[{"lr": 0.5}])
    s = Series(fake)
    s.on_data(10.0, 11.0)  # training batch: 1 s wait
    s.forward_begin(11.0)
    s.forward_end(13.0)  # 2 s forward
    s.on_backward(13.0, 16.0)  # 3 s backward
    s.step_begin(optimizer, 16.0)
    s.step_end(1, 20.0, rss=100, cuda=None)  # 4 s optimizer
    with torch.no_grad():  # (the watcher times forwards only under grad mode)
        s.on_data(21.0, 26.0)  # evaluation batches: 5 s, not a training wait
    s.on_data(27.0, 28.0)
    s.on_backward(28.0, 29.0)
    s.step_begin(optimizer, 29.0)
    s.step_end(2, 30.0, rss=200, cuda=None)
    host = s.host
    assert s.steps == [1, 2]
    assert host["data_wait"] == [1.0, 1.0]
    assert host["forward_backward"] == [5.0, 1.0]
    assert host["optimizer"] == [4.0, 1.0]
    assert host["other"] == [0.0, 7.0]  # 10 s interval - 1 - 1 - 1
    assert host["lr"] == [0.5, 0.5] and host["rss"] == [100, 200]


def test_page_of_a_run_without_steps_says_so(tmp_path):
    page = tmp_path / "empty.html"
    watcher = watch_run(lambda: nn.Linear(2, 1)(torch.ones(1, 2)), report=str(page))
    assert watcher.report.runtime["steps"] == 0
    assert all(s["step"] == [] for s in watcher.report.runtime["series"].values())
    text = page.read_text()
    assert "No optimizer step ran under review" in text and text.count('<svg class="chart"') == 5
