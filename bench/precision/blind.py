"""Tabulate a blind test: the judged findings of review runs and which of them the default report
(track record applied) still shows.

    python bench/precision/blind.py RUN_DIR[:DEFAULT_DIR] ...

RUN_DIR holds `<name>.findings.json` and `<name>.verdicts.json` of a review made with
`--ignore-track-record` (what is judged); DEFAULT_DIR, when given, holds the findings of the same
repositories reviewed by the same code at default settings (`sweep.py review` without arguments):
a judged finding is "left at default" when the default run reports the same code on the same line
of the same file. Prints one row per RUN_DIR and the total.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def _verdict(v) -> str:
    return (v.get("verdict") if isinstance(v, dict) else v) or "unjudged"


def _key(f: dict) -> tuple:
    return (f["path"], f.get("cell"), f["line"], f["code"])


def tabulate(spec: str) -> tuple[str, int, int, Counter, Counter, Counter]:
    run, _, default = spec.partition(":")
    repos = lines = 0
    judged, left, rules = Counter(), Counter(), Counter()
    for path in sorted(Path(run).glob("*.findings.json")):
        name = path.name[: -len(".findings.json")]
        data = json.loads(path.read_text())
        repos += 1
        lines += data.get("loc", 0)
        vfile = path.with_name(f"{name}.verdicts.json")
        verdicts = json.loads(vfile.read_text()) if vfile.exists() else {}
        shown = None
        if default:
            dfile = Path(default) / path.name
            shown = {_key(f) for f in json.loads(dfile.read_text())["findings"]} if dfile.exists() else set()
        for f in data["findings"]:
            v = _verdict(verdicts.get(f["id"]))
            judged[v] += 1
            rules[(f["code"], v)] += 1
            if shown is not None and _key(f) in shown:
                left[v] += 1
    return run, repos, lines, judged, left, rules


def _tnf(c: Counter) -> str:
    n = sum(c.values())
    pct = f" ({100 * c['true'] // n} %)" if n else ""
    extra = f", {c['unjudged']} unjudged" if c["unjudged"] else ""
    return f"{c['true']} / {c['noise']} / {c['false']}{pct}{extra}"


def main(specs: list[str]) -> None:
    total_j, total_l, total_r = Counter(), Counter(), Counter()
    repos = lines = 0
    print("| run | repositories | lines | findings | true / noise / false | left at default | true / noise / false |")
    print("|---|---:|---:|---:|---|---:|---|")
    for spec in specs:
        run, r, n, judged, left, rules = tabulate(spec)
        repos, lines = repos + r, lines + n
        total_j.update(judged), total_l.update(left), total_r.update(rules)
        print(f"| {Path(run).name} | {r} | {n:,} | {sum(judged.values())} | {_tnf(judged)} | "
              f"{sum(left.values()) if ':' in spec else '-'} | {_tnf(left) if ':' in spec else '-'} |")
    print(f"| **total** | {repos} | {lines:,} | {sum(total_j.values())} | {_tnf(total_j)} | "
          f"{sum(total_l.values())} | {_tnf(total_l)} |")
    print("\nper rule: " + ", ".join(f"{code} {v} {k}" for (code, v), k in sorted(total_r.items())))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
