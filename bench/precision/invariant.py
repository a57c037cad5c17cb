"""Invariant check: what a change to the rules does to the findings on fixed trees.

    python bench/precision/invariant.py run SRC OUT.json PATH...
        reviews each PATH (every confidence, advice shown, JSON) with the package under SRC
        (a checkout's ``src`` directory: a worktree of another commit compares
        two versions) and writes every finding's (path, line, code) per PATH.
    python bench/precision/invariant.py diff BEFORE.json AFTER.json
        prints the count per PATH and each finding that appeared or went away.

Typical use: ``git worktree add /tmp/base HEAD`` then ``run /tmp/base/src base.json
examples tests/fixtures <timm> <detectron2>`` and ``run src after.json ...``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys


def run(src: str, out: str, paths: list[str]) -> None:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    result = {}
    for path in paths:
        proc = subprocess.run([sys.executable, "-m", "torchreview", "check", path, "--format", "json",
                               "--no-cache", "--min-confidence", "low", "--show-advice"], capture_output=True, text=True, env=env)
        try:
            report = json.loads(proc.stdout)
            findings = report["findings"]
        except (ValueError, KeyError):
            sys.exit(f"{path}: no JSON report (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
        # a file the review could not finish loses its findings silently: its error is an entry too
        errors = [e for e in report.get("errors", []) if "internal error" in str(e.get("message", e))]
        result[path] = sorted({(f["path"], f["line"], f["code"]) for f in findings} |
                              {(e.get("path", "?"), 0, "REVIEW-ERROR") for e in errors})
        print(f"{path}: {len(findings)} findings" + (f", {len(errors)} INTERNAL ERRORS" if errors else ""))
    with open(out, "w") as fh:
        json.dump(result, fh)


def diff(before: str, after: str) -> int:
    a, b = json.load(open(before)), json.load(open(after))
    changed = 0
    for path in sorted(set(a) | set(b)):
        old = {tuple(x) for x in a.get(path, [])}
        new = {tuple(x) for x in b.get(path, [])}
        print(f"{path}: {len(old)} -> {len(new)}")
        for item in sorted(old - new):
            print(f"  - {item[0]}:{item[1]} {item[2]}")
        for item in sorted(new - old):
            print(f"  + {item[0]}:{item[1]} {item[2]}")
        changed += len(old ^ new)
    return 1 if changed else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 4 and sys.argv[1] == "diff":
        sys.exit(diff(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
