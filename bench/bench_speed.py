"""Benchmark: `torchreview check` as a separate process, paired with the `ast.parse` floor.

    python bench/bench_speed.py [--repeat 5] [--no-examples] [PATH ...]

For each tree (the bundled examples/ and every PATH) it discovers the files the
way `torchreview check` does and, in each round, runs as separate processes:

  floor     read + `ast.parse` of those same files (notebooks: their code cells
            joined), one process;
  cold -j1  `torchreview check --no-cache --jobs 1`;
  cold -j2  `torchreview check --no-cache --jobs 2`;
  warm -j1  `torchreview check --jobs 1` with the cache already filled;
  warm -j2  `torchreview check --jobs 2` with the cache already filled.

Each process's CPU (user + system, its worker processes included) and wall time
are read from the operating system (rusage of reaped children). A round runs the
floor and the four checks back to back, so each check's ratio is taken against
the floor of its own round (paired: drift of a shared machine moves both), and the
median of the per-round ratios is printed. Both sides pay the interpreter's
start-up; torchreview also pays its imports and discovery, as a user does (its
modules byte-compiled once, as an install does, even where PYTHONDONTWRITEBYTECODE is set).

``--rebuild DIR`` clones the public trees listed in ``SPEED_TREES`` (repository,
commit) into DIR first (needs network access to the code host) and benchmarks them.
``--markdown`` prints the table as Markdown (for bench/speed.md).
``--before SRC`` also runs, in each round right after the current code, the same
four checks with another copy of torchreview's ``src`` folder first on the path
(e.g. ``git archive <commit> src | tar -x -C /tmp/before``): rows ``... (before)``,
each ratio against the same round's floor, so before and after are paired.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))
sys.path.insert(0, HERE)

from bench_check import count_lines  # noqa: E402

# Public trees of real PyTorch code used in bench/speed.md (repository, commit).
SPEED_TREES = (
    ("huggingface/pytorch-image-models", "aa4b5850c1543fa488abf260f18390eda46cf85d"),
    ("facebookresearch/detectron2", "02b5c4e295e990042a714712c21dc79b731e8833"),
    ("kornia/kornia", "b4f5a78a13891c7ac4c1cd9695941380273e981d"),
)

MODES = (("cold -j1", ["--no-cache", "--jobs", "1"]), ("cold -j2", ["--no-cache", "--jobs", "2"]),
         ("warm -j1", ["--jobs", "1"]), ("warm -j2", ["--jobs", "2"]))


def discovered(tree: str) -> list[str]:
    from torchreview.engine.discovery import discover

    return [real for real, _ in discover([tree], is_artifact=None).sources]


def parse_floor(list_file: str) -> None:
    """The floor process: read and parse every file named in ``list_file``."""
    with open(list_file, encoding="utf-8") as handle:
        files = handle.read().splitlines()
    for path in files:
        with open(path, "rb") as handle:
            data = handle.read()
        if path.endswith(".ipynb"):
            try:
                cells = json.loads(data).get("cells", [])
                data = "\n".join("".join(c.get("source", "")) for c in cells
                                 if c.get("cell_type") == "code").encode()
            except (ValueError, AttributeError, TypeError):
                continue
        try:
            ast.parse(data)
        except (SyntaxError, ValueError):
            pass


# As installed: byte-compiled modules are read, not compiled on every start (this
# environment may set PYTHONDONTWRITEBYTECODE; the compiled files go to a folder of ours).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "torchreview-bench-pycache")


def timed(cmd: list[str], cwd: str, src: str | None = None) -> tuple[float, float, int]:
    """(CPU seconds of the process and its reaped children, wall seconds, peak KiB);
    ``src``: a torchreview ``src`` folder put first on the module path."""
    env = ENV if src is None else {**ENV, "PYTHONPATH": os.pathsep.join(
        p for p in (src, ENV.get("PYTHONPATH")) if p)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}")
    return cpu, wall, usage.ru_maxrss


def bench_tree(tree: str, repeat: int, before: str | None = None) -> dict:
    files = discovered(tree)
    work = tempfile.mkdtemp(prefix="trspeed-")
    list_file = os.path.join(work, "files.txt")
    with open(list_file, "w", encoding="utf-8") as handle:
        handle.write("\n".join(files))
    floor_cmd = [sys.executable, os.path.abspath(__file__), "--floor", list_file]
    check = [sys.executable, "-m", "torchreview", "check", "--exit-zero", "--quiet", "--no-color"]
    # (row name, arguments, src folder): the current code, then the "before" code
    runs = [(name, extra, None) for name, extra in MODES]
    if before:
        runs += [(f"{name} (before)", extra, before) for name, extra in MODES]
    # each version runs in its own folder, where it keeps its cache (.torchreview_cache/
    # of the working folder); the first runs also warm the OS file cache
    folders = {}
    for i, src in enumerate(dict.fromkeys(s for *_, s in runs)):
        folders[src] = os.path.join(work, f"v{i}")
        os.makedirs(folders[src])
    for name, extra, src in runs:
        if name.startswith("warm"):
            timed(check + extra + [tree], folders[src], src)
    timed(floor_cmd, work)
    rows: dict[str, dict[str, list[float]]] = {"floor": {"cpu": [], "wall": [], "peak": []}}
    for name, _, _ in runs:
        rows[name] = {"cpu": [], "wall": [], "peak": [], "ratio": [], "wall_ratio": []}
    for _ in range(repeat):
        f_cpu, f_wall, f_peak = timed(floor_cmd, work)
        rows["floor"]["cpu"].append(f_cpu)
        rows["floor"]["wall"].append(f_wall)
        rows["floor"]["peak"].append(f_peak)
        for name, extra, src in runs:
            cpu, wall, peak = timed(check + extra + [tree], folders[src], src)
            row = rows[name]
            row["cpu"].append(cpu)
            row["wall"].append(wall)
            row["peak"].append(peak)
            row["ratio"].append(cpu / f_cpu)
            row["wall_ratio"].append(wall / f_wall)
    shutil.rmtree(work, ignore_errors=True)
    return {"tree": tree, "files": len(files), "lines": count_lines(files), "rows": rows}


def med(values: list[float]) -> float:
    return statistics.median(values)


def render(results: list[dict], markdown: bool) -> str:
    out = []
    if markdown:
        out.append("| tree | files | lines | mode | CPU s | CPU / floor | wall s | wall / floor | peak MiB |")
        out.append("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    else:
        out.append(f"{'tree':24} {'files':>5} {'lines':>7} {'mode':9} {'CPU s':>7} {'CPU/fl':>7} "
                   f"{'wall s':>7} {'wall/fl':>7} {'MiB':>5}  (CPU ratio min-max)")
    for res in results:
        name = os.path.basename(os.path.normpath(res["tree"]))
        for mode, row in res["rows"].items():
            cpu, wall, peak = med(row["cpu"]), med(row["wall"]), med(row["peak"]) / 1024
            ratio = f"{med(row['ratio']):.2f}" if "ratio" in row else "1"
            wratio = f"{med(row['wall_ratio']):.2f}" if "wall_ratio" in row else "1"
            spread = f"({min(row['ratio']):.2f}-{max(row['ratio']):.2f})" if "ratio" in row else ""
            if markdown:
                out.append(f"| {name} | {res['files']} | {res['lines']} | {mode} | {cpu:.2f} | {ratio} | "
                           f"{wall:.2f} | {wratio} | {peak:.0f} |")
            else:
                out.append(f"{name[:24]:24} {res['files']:5d} {res['lines']:7d} {mode:9} {cpu:7.2f} {ratio:>7} "
                           f"{wall:7.2f} {wratio:>7} {peak:5.0f}  {spread}")
    return "\n".join(out)


def rebuild(folder: str) -> list[str]:
    trees = []
    for repo, commit in SPEED_TREES:
        dest = os.path.join(folder, repo.split("/")[1])
        if not os.path.isdir(dest):
            subprocess.run(["git", "clone", "--quiet", f"https://github.com/{repo}", dest], check=True)
        subprocess.run(["git", "-C", dest, "checkout", "--quiet", commit], check=True)
        trees.append(dest)
    return trees


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-examples", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--rebuild", metavar="DIR")
    parser.add_argument("--before", metavar="SRC", help="another torchreview src folder, run paired")
    parser.add_argument("--floor", metavar="LIST", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        parse_floor(args.floor)
        return 0
    trees = ([] if args.no_examples else [os.path.join(ROOT, "examples")]) + [os.path.abspath(p) for p in args.paths]
    if args.rebuild:
        trees += rebuild(args.rebuild)
    results = []
    for tree in trees:
        results.append(bench_tree(tree, args.repeat, os.path.abspath(args.before) if args.before else None))
        print(render(results[-1:], False), flush=True)
    if args.markdown:
        print()
        print(render(results, True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
