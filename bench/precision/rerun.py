"""Re-run judged precision sets at the current code and match the findings to their
first-pass verdicts (NOT an independent measurement: the rules have seen these sets).

    python bench/precision/rerun.py [--focused] SET...

Each SET names ``bench/precision/repos-<SET>-<date>.toml`` and its first-pass run
``bench/precision/runs/<date>-<SET>`` (``...-newrules`` with ``--focused``, the
rule-focused pass of TR209, TR218, TR219, TR517-TR520). The sets are reviewed again with
``sweep.py review`` into ``/tmp/precision-rerun/<SET>``; a finding is matched to a
first-pass verdict by rule, file, notebook cell and line, and counted "unjudged" when
none matches (a finding that moved, or a new one). Prints every finding with its verdict,
a count per set, and a count per rule.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
FOCUSED = ["--", "--select", "TR209,TR218,TR219,TR517,TR518,TR519,TR520", "--min-confidence", "medium",
           "--show-advice"]


def main(argv: list[str]) -> int:
    focused = "--focused" in argv
    sets = [a for a in argv if a != "--focused"]
    if not sets:
        print(__doc__)
        return 2
    suffix = "-newrules" if focused else ""
    grand: Counter = Counter()
    per_rule: dict[str, Counter] = defaultdict(Counter)
    for name in sets:
        toml = _one(glob.glob(os.path.join(HERE, f"repos-{name}-20??-??-??.toml")), name)
        first = _one(glob.glob(os.path.join(HERE, "runs", f"20??-??-??-{name}{suffix}")), name + suffix)
        out = os.path.join("/tmp/precision-rerun", name + suffix)
        os.makedirs(out, exist_ok=True)
        # what the rules say, not what the track record lets through: the record is computed
        # from these verdicts (calibrate.py), and a capped rule must still be counted
        subprocess.run([sys.executable, os.path.join(HERE, "sweep.py"), "review", toml, out,
                        *(FOCUSED + ["--ignore-track-record"] if focused else ["--", "--ignore-track-record"])],
                       capture_output=True, check=True)
        counts: Counter = Counter()
        for path in sorted(glob.glob(os.path.join(out, "*.findings.json"))):
            repo = os.path.basename(path)[: -len(".findings.json")]
            new = json.load(open(path))["findings"]
            old = json.load(open(os.path.join(first, f"{repo}.findings.json")))["findings"]
            verdict_file = os.path.join(first, f"{repo}.verdicts.json")
            verdicts = json.load(open(verdict_file)) if os.path.exists(verdict_file) else {}
            key = lambda f: (f.get("code"), f.get("path"), f.get("cell"), f.get("line"))  # noqa: E731
            ids = {key(f): f"{repo}-{i}" for i, f in enumerate(old, 1)}
            for f in new:
                verdict = verdicts.get(ids.get(key(f), ""), {})
                verdict = (verdict.get("verdict") if isinstance(verdict, dict) else verdict) or "unjudged"
                counts[verdict] += 1
                per_rule[f["code"]][verdict] += 1
                print(f"   {name} {repo} {f['code']} {f['path'][-50:]} {f['line']} {f.get('confidence')} {verdict}")
        grand += counts
        print(name + suffix, dict(counts))
    print("all", dict(grand))
    for code in sorted(per_rule):
        print(code, dict(per_rule[code]))
    return 0


def _one(paths: list[str], name: str) -> str:
    """The one file or folder of a set (sets are named once, whatever the date)."""
    if len(paths) != 1:
        raise SystemExit(f"rerun: set {name}: expected one match, found {len(paths)}")
    return paths[0]


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
