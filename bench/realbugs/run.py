"""Real-bug benchmark: detected-before / silent-after per misuse class.

Usage: python bench/realbugs/run.py [--runtime] [--json OUT] [--cases DIR]

Static cases are reviewed with the case's codes selected (`--select`) and
with default settings. Runtime-only cases (`runtime_only = true`) are run
under `torchreview run` when `--runtime` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
REQUIRED = ("repo", "commit", "files", "class", "codes", "runtime_only", "summary")


def load_cases(root: Path) -> list[dict]:
    cases = []
    for meta in sorted(root.glob("*/case.toml")):
        data = tomllib.loads(meta.read_text(encoding="utf-8"))
        missing = [k for k in REQUIRED if k not in data]
        if missing:
            raise SystemExit(f"{meta}: missing {', '.join(missing)}")
        for side in ("before", "after"):
            if not (meta.parent / side).is_dir():
                raise SystemExit(f"{meta.parent}: no {side}/ folder")
        data["id"] = meta.parent.name
        data["dir"] = meta.parent
        cases.append(data)
    return cases


def codes_reported(folder: Path, select: list[str] | None) -> set[str]:
    cmd = [sys.executable, "-m", "torchreview", "check", str(folder), "--no-cache",
           "--format", "json", "--exit-zero"]
    if select:
        cmd += ["--select", ",".join(select)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=folder)
    if proc.returncode not in (0, 1):
        print(f"  ! {folder}: exit {proc.returncode}: {proc.stderr.strip()[:200]}", file=sys.stderr)
        return set()
    data = json.loads(proc.stdout or "{}")
    findings = data.get("findings", []) if isinstance(data, dict) else data
    return {f["code"] for f in findings}


def runtime_codes(folder: Path) -> set[str]:
    script = folder / "main.py"
    if not script.exists():
        return set()
    with_json = folder / ".runtime.json"
    cmd = [sys.executable, "-m", "torchreview", "run", "--format", "json", "--output", str(with_json),
           str(script)]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    subprocess.run(cmd, capture_output=True, text=True, cwd=folder, env=env, timeout=300)
    if not with_json.exists():
        return set()
    try:
        data = json.loads(with_json.read_text())
    finally:
        with_json.unlink()
    findings = data.get("findings", []) if isinstance(data, dict) else data
    return {f["code"] for f in findings}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtime", action="store_true", help="also run the runtime-only cases")
    ap.add_argument("--json", help="write per-case results to this file")
    ap.add_argument("--cases", default=str(HERE / "cases"))
    args = ap.parse_args()
    cases = load_cases(Path(args.cases))
    per_class: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rows = []
    for case in cases:
        want = set(case["codes"])
        row = {"id": case["id"], "class": case["class"], "codes": sorted(want),
               "runtime_only": case["runtime_only"]}
        if case["runtime_only"]:
            if args.runtime:
                before = runtime_codes(case["dir"] / "before")
                after = runtime_codes(case["dir"] / "after")
                row.update(detected=bool(before & want), silent_after=not (after & want), lens="runtime")
            else:
                row.update(detected=None, silent_after=None, lens="runtime (not run)")
        else:
            sel_before = codes_reported(case["dir"] / "before", sorted(want))
            sel_after = codes_reported(case["dir"] / "after", sorted(want))
            def_before = codes_reported(case["dir"] / "before", None)
            row.update(detected=bool(sel_before & want), silent_after=not (sel_after & want),
                       detected_default=bool(def_before & want), lens="static")
        rows.append(row)
        stats = per_class[case["class"]]
        stats["cases"] += 1
        if row["detected"] is not None:
            stats["run"] += 1
            stats["detected"] += bool(row["detected"])
            stats["silent_after"] += bool(row["silent_after"])
            stats["detected_default"] += bool(row.get("detected_default"))
        mark = {True: "yes", False: "NO", None: "-"}
        print(f"{case['id']:<44} {row['lens']:<18} detected={mark[row['detected']]:<4} "
              f"silent-after={mark[row['silent_after']]}", file=sys.stderr)
        if case.get("note"):
            row["note"] = case["note"]
            print(f"    note: {case['note']}", file=sys.stderr)
        if case.get("runtime_note") and case["runtime_only"]:
            row["runtime_note"] = case["runtime_note"]
            print(f"    note: {case['runtime_note']}", file=sys.stderr)
    print(f"\n{'class':<34} {'cases':>5} {'run':>4} {'detected':>9} {'default':>8} {'silent-after':>13}")
    tot = defaultdict(int)
    for cls in sorted(per_class):
        s = per_class[cls]
        for k, v in s.items():
            tot[k] += v
        print(f"{cls:<34} {s['cases']:>5} {s['run']:>4} {s['detected']:>9} {s['detected_default']:>8} "
              f"{s['silent_after']:>13}")
    print(f"{'TOTAL':<34} {tot['cases']:>5} {tot['run']:>4} {tot['detected']:>9} {tot['detected_default']:>8} "
          f"{tot['silent_after']:>13}")
    repos = {c["repo"] for c in cases}
    print(f"\n{len(cases)} cases from {len(repos)} repositories; "
          f"{sum(1 for c in cases if c['runtime_only'])} runtime-only.")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
