"""Benchmark: `check` on large generated source files (time and peak memory).

    python bench/bench_large_source.py [--sizes 1,1.9,19.5] [--kinds code,data] [--no-limit-up-to 2]

Two shapes of generated file: ``code`` (the benchmark corpus's modules,
training loops and utilities concatenated, names made unique) and ``data`` (a
generated table literal). Each file is checked alone in a fresh process, once
with the default ``max-source-size`` and, up to ``--no-limit-up-to`` MB, once
with the limit off (``max-source-size = 0``) to show what a full review costs.
Peak memory is the child's maximum resident set size.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def write_code(path: str, size: int) -> None:
    from corpus import generate

    with tempfile.TemporaryDirectory() as tmp:
        chunks = [open(p, encoding="utf-8").read() for p in generate(tmp, lines=20_000) if p.endswith(".py")]
    written, i = 0, 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n")
        while written < size:
            chunk = chunks[i % len(chunks)].replace("class ", f"class V{i}_").replace("def ", f"def v{i}_")
            fh.write(chunk)
            written += len(chunk)
            i += 1


def write_data(path: str, size: int) -> None:
    rng = random.Random(0)
    written, i = 0, 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("import torch\nTABLE = [\n")
        while written < size:
            line = f"    ({i}, {rng.random():.6f}, 'name_{i}', [{rng.randint(0, 999)}, {rng.randint(0, 999)}]),\n"
            fh.write(line)
            written += len(line)
            i += 1
        fh.write("]\nW = torch.tensor([t[1] for t in TABLE])\n")


def measure(folder: str, name: str) -> tuple[float, float, str]:
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "torchreview", "check", "--no-cache", "--no-color", name],
                            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)  # the child's own peak RSS
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    note = next((line for line in out.splitlines() if "too large" in line), "reviewed")
    return seconds, usage.ru_maxrss / 1024, note


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,1.9,19.5", help="MB, comma-separated")
    parser.add_argument("--kinds", default="code,data")
    parser.add_argument("--no-limit-up-to", type=float, default=2.0,
                        help="also measure with max-source-size = 0 for files up to this many MB")
    args = parser.parse_args()
    print(f"{'file':<16} {'limit':>8} {'seconds':>8} {'peak MB':>8}  result")
    for kind in args.kinds.split(","):
        for mb in (float(x) for x in args.sizes.split(",")):
            with tempfile.TemporaryDirectory() as folder:
                name = f"{kind}_{mb}.py"
                (write_code if kind == "code" else write_data)(os.path.join(folder, name), int(mb * 2**20))
                runs = [("default", "")]
                if mb <= args.no_limit_up_to:
                    runs.append(("off", "[tool.torchreview]\nmax-source-size = 0\n"))
                for label, config in runs:
                    with open(os.path.join(folder, "pyproject.toml"), "w", encoding="utf-8") as fh:
                        fh.write(config)
                    seconds, peak, note = measure(folder, name)
                    print(f"{name:<16} {label:>8} {seconds:8.2f} {peak:8.0f}  {note[:70]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
