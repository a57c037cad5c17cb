"""Overhead of runtime review on a small CNN training loop (CPU).

Runs the same training loop (same seed, same data) without review, with
``torchreview.watch()``, and with ``torchreview.watch(report="run.html")``
(the ``--report`` page written when the review stops), in rotating order
several times in one process, and prints the per-step times and the median
paired ratios.  The reviewed times include stopping the review (the last
device reads, building the report and, with ``report=``, writing the HTML
page), spread over the steps.  Target: <= 1.05.

    python bench/bench_runtime.py [--steps 200] [--trials 9] [--threads 1]

The reviewed loop must also end with exactly the same weights: the review
observes, it never changes the numerics.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def build(torch, seed: int, steps: int, batch: int):
    nn = torch.nn
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(seed)
    images = torch.randn(steps * batch, 1, 28, 28, generator=g)
    labels = torch.randint(0, 10, (steps * batch,), generator=g)
    data = torch.utils.data.TensorDataset(images, labels)
    loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=True, generator=g)
    return model, optimizer, loader


def train(torch, model, optimizer, loader) -> int:
    """One epoch; returns the number of steps."""
    nn = torch.nn
    model.train()
    steps = 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        steps += 1
    return steps


ARMS = ("plain", "review", "review+report")


def one(torch, arm: str, args) -> tuple[tuple[float, float], object]:
    """One run; returns ((wall, CPU seconds of this process) per step, weights)."""
    import torchreview

    model, optimizer, loader = build(torch, 0, args.steps, args.batch)
    # warm-up outside the timing: allocator, kernels, first-call imports
    x, y = next(iter(loader))
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.zero_grad()
    torch.manual_seed(1)
    start, cpu = time.perf_counter(), time.process_time()
    if arm == "plain":
        steps = train(torch, model, optimizer, loader)
    else:
        report = args.page if arm == "review+report" else None
        with torchreview.watch(live=False, write_report=False, report=report) as watcher:
            steps = train(torch, model, optimizer, loader)
        assert not watcher.report.errors, watcher.report.errors
    per_step = ((time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps)
    if arm == "review+report":
        assert os.path.getsize(args.page) > 10_000 and len(
            watcher.report.runtime["series"]["loss"]["value"]) == steps
    return per_step, model.state_dict()


def series_cost(torch, steps: int = 20000) -> tuple[float, float, float]:
    """CPU cost of the series alone, away from training noise: (µs per step of
    the hooks' calls, µs per step of taking in the batched loss/norm reads,
    ms to render the HTML page of a full 4096-point run)."""
    from types import SimpleNamespace

    import torchreview.runtime.series as series_mod
    from torchreview.runtime.html_report import render_html
    from torchreview.runtime.output import RuntimeReport

    fake = SimpleNamespace(torch=torch, step=0)
    optimizer = SimpleNamespace(param_groups=[{"lr": 0.1}])
    s = series_mod.Series(fake)
    clock = time.perf_counter
    saved, series_mod.MAX_POINTS = series_mod.MAX_POINTS, 10 ** 9  # always the full path
    try:
        cpu = time.process_time()
        for step in range(1, steps + 1):  # the calls the watcher makes in one step
            start = clock()
            s.on_data(start, clock())
            s.forward_begin(clock())
            s.forward_end(clock())
            start = clock()
            s.on_backward(start, clock())
            s.step_begin(optimizer, clock())
            s.step_end(step, clock(), 300 << 20, None)
        hooks = (time.process_time() - cpu) / steps * 1e6
        numbers = list(range(1, steps + 1))
        cpu = time.process_time()
        s.add_losses(numbers, [0.5] * steps)
        s.add_grad_norms(numbers, [1.5] * steps, [True] * steps)
        intake = (time.process_time() - cpu) / steps * 1e6
    finally:
        series_mod.MAX_POINTS = saved
    s = series_mod.Series(fake)
    for step in range(1, 4097):
        s.step_begin(optimizer, step * 0.01)
        s.step_end(step, step * 0.01 + 0.005, (300 << 20) + step, None)
    s.add_losses(numbers[:4096], [1.0 / k for k in numbers[:4096]])
    s.add_grad_norms(numbers[:4096], [1.0] * 4096, [True] * 4096)
    fake.step = 4096
    report = RuntimeReport(runtime=s.to_json([]))
    cpu = time.process_time()
    render_html(report)
    return hooks, intake, (time.process_time() - cpu) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--trials", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import tempfile

    import torch

    torch.set_num_threads(args.threads)
    args.page = os.path.join(tempfile.mkdtemp(), "run.html")
    for arm in ARMS:  # process warm-up (lazy imports of torch and torchreview)
        one(torch, arm, args)
    times: dict[str, list] = {arm: [] for arm in ARMS}
    states = {}
    for trial in range(args.trials):
        # back-to-back runs, rotating which goes first, so drifts in machine
        # load hit every arm of a trial alike
        order = ARMS[trial % 3:] + ARMS[:trial % 3]
        for arm in order:
            t, states[arm] = one(torch, arm, args)
            times[arm].append(t)
    same = all(torch.equal(states["plain"][k], states[arm][k])
               for arm in ARMS[1:] for k in states["plain"])
    print(f"small CNN, CPU, {args.threads} thread(s), batch {args.batch}, "
          f"{args.steps} steps x {args.trials} paired trials")
    ratios = {}
    for index, clock in ((1, "CPU time"), (0, "wall time")):
        medians = {arm: statistics.median(t[index] for t in times[arm]) for arm in ARMS}
        print(f"  {clock:9}: " + ", ".join(f"{arm} {medians[arm] * 1e3:.3f}"
                                           for arm in ARMS) + " ms/step (medians)")
        for arm in ARMS[1:]:
            paired = statistics.median(r[index] / b[index]
                                       for b, r in zip(times["plain"], times[arm]))
            ratios[clock, arm] = paired
            print(f"    median paired ratio {arm} / plain: {paired:.3f}")
    print(f"  identical weights after training: {same}")
    hooks, intake, render = series_cost(torch)
    print(f"  series alone: {hooks:.2f} us/step in the hooks + {intake:.2f} us/step taking in the "
          f"batched loss/norm reads; HTML page of 4096 points rendered in {render:.0f} ms (once)")
    for arm in ARMS[1:]:
        print(f"overhead ratio {arm}: {ratios['CPU time', arm]:.3f} (CPU time of this process; "
              f"wall time {ratios['wall time', arm]:.3f}, noisier on a shared machine). "
              "Target <= 1.05")


if __name__ == "__main__":
    main()
