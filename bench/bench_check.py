"""Benchmark: a full `torchreview check` against the `ast.parse` floor, in one run.

    python bench/bench_check.py [--lines 50000] [--repeat 3] [--jobs 1] [PATH ...]

For each tree (examples/, a generated corpus, and any PATH given) it prints the
median wall time of (a) reading + ast.parse of the same files in this process,
(b) torchreview's full check (all rules, single process unless --jobs), and the
ratio b/a, and the same for the first 30 rules of the foundation issue (to see
what the rest of the catalog costs). The SPEC target is a ratio of at most 1.5
single-process. Peers
(ruff, TorchFix, Bandit, Semgrep) are timed too when their commands exist.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))
sys.path.insert(0, HERE)


def python_files(root: str) -> list[str]:
    from torchreview.engine.discovery import discover

    return [real for real, _ in discover([root], is_artifact=None).sources]


def floor(files: list[str]) -> float:
    started = time.perf_counter()
    for path in files:
        with open(path, "rb") as handle:
            data = handle.read()
        if path.endswith(".ipynb"):
            continue
        try:
            ast.parse(data)
        except SyntaxError:
            pass
    return time.perf_counter() - started


FOUNDATION = ("TR101 TR102 TR103 TR104 TR107 TR202 TR203 TR207 TR212 TR214 TR307 TR401 TR402 TR404 "
              "TR409 TR411 TR412 TR413 TR416 TR501 TR502 TR504 TR505 TR507 TR508 TR509 TR510 TR511 "
              "TR514 TR305").split()


def check(root: str, jobs: int, codes: tuple[str, ...] | None = None) -> float:
    from torchreview.catalog import all_rules
    from torchreview.engine.runner import Settings, run_review

    settings = Settings(rule_codes=codes if codes is not None else tuple(r.code for r in all_rules()),
                        jobs=jobs)
    started = time.perf_counter()
    run_review([root], settings)
    return time.perf_counter() - started


def peer(cmd: list[str]) -> float | None:
    if shutil.which(cmd[0]) is None:
        return None
    started = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def count_lines(files: list[str]) -> int:
    total = 0
    for path in files:
        with open(path, "rb") as handle:
            total += handle.read().count(b"\n")
    return total


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--peers", action="store_true", help="also time ruff/torchfix/bandit/semgrep if installed")
    args = parser.parse_args()
    from corpus import generate

    corpus = os.path.join(HERE, "_corpus")
    if not os.path.isdir(corpus):
        generate(corpus, lines=args.lines)
    trees = [os.path.join(ROOT, "examples"), corpus, *args.paths]
    import torchreview.catalog as catalog

    catalog.all_rules()  # import rule modules once, outside the timings
    print(f"{'tree':40} {'files':>6} {'lines':>8} {'floor s':>8} {'check s':>8} {'ratio':>6}"
          f" {'first-30 s':>10} {'ratio':>6}")
    for tree in trees:
        if not os.path.isdir(tree):
            continue
        files = python_files(tree)
        floors = [floor(files) for _ in range(args.repeat)]
        checks = [check(tree, args.jobs) for _ in range(args.repeat)]
        firsts = [check(tree, args.jobs, tuple(FOUNDATION)) for _ in range(args.repeat)]
        f, c, c30 = statistics.median(floors), statistics.median(checks), statistics.median(firsts)
        name = os.path.relpath(tree, ROOT) if tree.startswith(ROOT) else tree
        print(f"{name[-40:]:40} {len(files):6d} {count_lines(files):8d} {f:8.3f} {c:8.3f} {c / f:6.2f}"
              f" {c30:10.3f} {c30 / f:6.2f}")
        if args.peers:
            for label, cmd in (("ruff", ["ruff", "check", "--no-cache", "--exit-zero", tree]),
                               ("torchfix", ["torchfix", tree]),
                               ("bandit", ["bandit", "-q", "-r", tree]),
                               ("semgrep", ["semgrep", "--config", "p/python", "--quiet", tree])):
                seconds = peer(cmd)
                if seconds is not None:
                    print(f"    {label:12} {seconds:8.3f} s  ratio to floor {seconds / f:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
