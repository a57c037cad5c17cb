"""Benchmark: cold vs warm result cache on a generated 50k-line tree, and one edited file.

    python bench/bench_cache.py [--lines 50000] [--jobs 1]

Prints the cold run (empty cache), the warm run (unchanged tree), and a run
after editing one file (that file plus the project rules are redone).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))
sys.path.insert(0, HERE)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    from corpus import generate
    from torchreview.cache import ensure_dir
    from torchreview.catalog import all_rules
    from torchreview.engine.runner import Settings, run_review

    codes = tuple(r.code for r in all_rules())
    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "tree")
        paths = generate(tree, lines=args.lines)
        cache_root = os.path.join(tmp, "cache_root")
        os.makedirs(cache_root)
        settings = Settings(rule_codes=codes, jobs=args.jobs, cache_dir=ensure_dir(cache_root))

        def timed() -> tuple[float, int]:
            started = time.perf_counter()
            report = run_review([tree], settings)
            return time.perf_counter() - started, len(report.findings)

        cold, n_cold = timed()
        warm, n_warm = timed()
        with open(paths[0], "a", encoding="utf-8") as handle:
            handle.write("\nEXTRA = 1\n")
        edited, _ = timed()
        assert n_cold == n_warm, "a warm run must report exactly what the cold run did"
        print(f"files {len(paths)}, findings {n_cold}")
        print(f"cold  {cold:7.3f} s")
        print(f"warm  {warm:7.3f} s   ({cold / warm:5.1f}x faster; {warm / args.lines * 100_000:.3f} s per 100k lines)")
        print(f"1 file edited {edited:7.3f} s")
        shutil.rmtree(tree, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
