"""Overhead of runtime review on a small CNN training loop (CPU).

Runs the same training loop (same seed, same data) with and without
``torchreview.watch()``, alternating the two several times in one process,
and prints the per-step times and their ratio.  Target: <= 1.05.

    python bench/bench_runtime.py [--steps 200] [--trials 5] [--threads 1]

The reviewed loop must also end with exactly the same weights: the review
observes, it never changes the numerics.
"""

from __future__ import annotations

import argparse
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


def train(torch, model, optimizer, loader) -> tuple[float, float]:
    """One epoch; returns (wall seconds, CPU seconds of this process) per step."""
    nn = torch.nn
    model.train()
    steps = 0
    start, cpu = time.perf_counter(), time.process_time()
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        steps += 1
    return (time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps


def one(torch, reviewed: bool, args) -> tuple[tuple[float, float], object]:
    import torchreview

    model, optimizer, loader = build(torch, 0, args.steps, args.batch)
    # warm-up outside the timing: allocator, kernels, first-call imports
    x, y = next(iter(loader))
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.zero_grad()
    torch.manual_seed(1)
    if reviewed:
        with torchreview.watch(live=False, write_report=False) as watcher:
            per_step = train(torch, model, optimizer, loader)
        assert not watcher.report.errors, watcher.report.errors
    else:
        per_step = train(torch, model, optimizer, loader)
    return per_step, model.state_dict()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--trials", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    one(torch, False, args)  # process warm-up (lazy imports of torch and torchreview)
    one(torch, True, args)
    base, reviewed = [], []
    for trial in range(args.trials):
        # back-to-back pairs, alternating which goes first, so drifts in machine
        # load hit both sides of each pair alike
        order = (False, True) if trial % 2 == 0 else (True, False)
        for reviewed_run in order:
            t, state = one(torch, reviewed_run, args)
            (reviewed if reviewed_run else base).append(t)
            if reviewed_run:
                review_state = state
            else:
                plain_state = state
    same = all(torch.equal(plain_state[k], review_state[k]) for k in plain_state)
    print(f"small CNN, CPU, {args.threads} thread(s), batch {args.batch}, "
          f"{args.steps} steps x {args.trials} paired trials")
    ratios = {}
    for index, clock in ((1, "CPU time"), (0, "wall time")):
        b = statistics.median(t[index] for t in base)
        r = statistics.median(t[index] for t in reviewed)
        paired = statistics.median(rv[index] / bv[index] for bv, rv in zip(base, reviewed))
        ratios[clock] = paired
        print(f"  {clock:9}: without review {b * 1e3:7.3f} ms/step, with review "
              f"{r * 1e3:7.3f} ms/step (medians); median paired ratio {paired:.3f}")
    print(f"  identical weights after training: {same}")
    print(f"overhead ratio: {ratios['CPU time']:.3f} (CPU time of this process; wall time "
          f"{ratios['wall time']:.3f}, noisier on a shared machine). Target <= 1.05")


if __name__ == "__main__":
    main()
