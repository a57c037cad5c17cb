"""Write ``src/torchreview/data/track_record.json`` from re-runs of the judged sets.

    python bench/precision/rerun.py SET... > runs/rerun-<label>.txt   # at the code to calibrate
    python bench/precision/calibrate.py --commit <sha> --fresh SET,SET,... runs/rerun-<label>.txt ...

Two records per rule:

* **rerun**: each finding line of a re-run output (``   SET repo CODE path line
  confidence verdict``) carries the verdict its first pass was given by an
  independent judge, or ``unjudged`` when the finding is new or moved (left out,
  counted apart). These are findings of the current code, but on repositories the
  rules have seen: the bias is upward (classes judged false there were fixed since).
* **fresh**: the first-pass verdicts of the sets named by ``--fresh`` (each
  finding judged when its repository was new to the rules, at the code of that
  day): independent, a little pessimistic (some of those classes were fixed since).

The engine's policy (``torchreview/track_record.py``) caps a rule whose record of
either kind is below its bar.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "..", "..", "src", "torchreview", "data", "track_record.json")
LINE = re.compile(r"^\s+(\S+) (\S+) (TR\d{3}) (.*) (\d+) (high|medium|low|None) (true|noise|false|unjudged)$")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outputs", nargs="+", help="rerun.py outputs")
    parser.add_argument("--commit", required=True, help="the commit that was re-run")
    parser.add_argument("--fresh", default="", help="comma-separated sets whose first passes form the fresh record")
    args = parser.parse_args()
    fresh = _first_passes([s for s in args.fresh.split(",") if s])
    per_rule: dict[str, Counter] = defaultdict(Counter)
    sets: set[str] = set()
    for path in args.outputs:
        for line in open(path, encoding="utf-8"):
            m = LINE.match(line.rstrip("\n"))
            if m:
                sets.add(m.group(1))
                per_rule[m.group(3)][m.group(7)] += 1
    data = {
        "about": "Judged findings per rule of a default review at the commit named, on the precision sweeps' "
                 "sets (bench/precision). Written by bench/precision/calibrate.py; read by torchreview/track_record.py.",
        "commit": args.commit,
        "sets": len(sets),
        "sources": [os.path.relpath(p, HERE) for p in args.outputs],
        "fresh_sets": sorted(set(s for s in args.fresh.split(",") if s)),
        "rules": {code: {kind: {"true": c["true"], "noise": c["noise"], "false": c["false"]}
                         | ({"unjudged": c["unjudged"]} if kind == "rerun" else {})
                         for kind, c in (("fresh", fresh.get(code)), ("rerun", per_rule.get(code))) if c}
                  for code in sorted(set(per_rule) | set(fresh))},
    }
    with open(TARGET, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")
    for code in sorted(set(per_rule) | set(fresh)):
        parts = []
        for kind, c in (("fresh", fresh.get(code, Counter())), ("rerun", per_rule.get(code, Counter()))):
            judged = c["true"] + c["noise"] + c["false"]
            parts.append(f"{kind} {c['true']:3d}/{judged:3d}")
        print(code, "  ".join(parts))
    return 0


def _first_passes(sets: list[str]) -> dict[str, Counter]:
    """Per rule, the verdicts of the first passes of ``sets`` (runs/<date>-<SET>, one folder per set)."""
    out: dict[str, Counter] = defaultdict(Counter)
    for name in sets:
        folders = sorted(glob.glob(os.path.join(HERE, "runs", f"20??-??-??-{name}")))
        if len(folders) != 1:
            raise SystemExit(f"calibrate: set {name}: expected one first-pass folder runs/<date>-{name}, "
                             f"found {len(folders)}")
        folder = folders[0]
        for path in sorted(glob.glob(os.path.join(folder, "*.findings.json"))):
            repo = os.path.basename(path)[: -len(".findings.json")]
            verdict_file = os.path.join(folder, f"{repo}.verdicts.json")
            verdicts = json.load(open(verdict_file)) if os.path.exists(verdict_file) else {}
            for i, finding in enumerate(json.load(open(path))["findings"], 1):
                verdict = verdicts.get(f"{repo}-{i}")
                verdict = verdict.get("verdict") if isinstance(verdict, dict) else verdict
                if verdict in ("true", "noise", "false"):
                    out[finding["code"]][verdict] += 1
    return out


if __name__ == "__main__":
    raise SystemExit(main())
