"""Precision sweep: review public code bases at default settings and prepare
the findings for strict judging, then tabulate the judgments.

    python bench/precision/sweep.py review repos.toml OUT_DIR [-- CHECK_ARGS...]
        runs `torchreview check` (default settings) on each repository listed
        in repos.toml and writes OUT_DIR/<name>.packet.md (every finding with
        the code around it, numbered) and OUT_DIR/<name>.findings.json.
        Arguments after `--` are added to the check command (a rule-focused
        pass: `-- --select TR517,TR518 --min-confidence medium --show-advice`);
        the packet header names them.

    python bench/precision/sweep.py table repos.toml OUT_DIR
        reads OUT_DIR/<name>.verdicts.json ({"<finding id>": "true"|"noise"|"false"} or
        {"<finding id>": {"verdict": ..., "why": ...}})
        and prints the Markdown table (per repository and per rule).

repos.toml lists [[repo]] entries with `name`, `path` (a checkout), `url`,
`commit` and optionally `kind` (research | notebooks | library | application);
other keys (topic, lines, absent) are notes for the reader and are ignored.
The judging is done by someone who did not write the rules, with the rubric
in bench/precision.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

CONTEXT = 12


def count_lines(root: Path) -> int:
    total = 0
    for path in root.rglob("*.py"):
        try:
            total += sum(1 for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
                         if line.strip() and not line.strip().startswith("#"))
        except OSError:
            pass
    for path in root.rglob("*.ipynb"):
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
            for cell in nb.get("cells", []):
                if cell.get("cell_type") == "code":
                    src = cell.get("source", [])
                    src = "".join(src) if isinstance(src, list) else src
                    total += sum(1 for line in src.splitlines() if line.strip())
        except (OSError, ValueError):
            pass
    return total


def code_window(root: Path, finding: dict) -> str:
    path = root / finding["path"]
    line = finding["line"]
    try:
        if path.suffix == ".ipynb":
            nb = json.loads(path.read_text(encoding="utf-8"))
            cells = nb.get("cells", [])  # `cell` counts every cell of the notebook, 1-based
            cell = cells[(finding.get("cell") or 1) - 1]
            src = cell.get("source", [])
            lines = ("".join(src) if isinstance(src, list) else src).splitlines()
        else:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, ValueError, IndexError):
        return "(source unavailable)"
    lo, hi = max(1, line - CONTEXT), min(len(lines), line + CONTEXT)
    return "\n".join(f"{'>>' if n == line else '  '}{n:5d} {lines[n - 1]}" for n in range(lo, hi + 1))


def _where(f: dict) -> str:
    return f"{f.get('path')}:{f.get('line')}" + (f" (cell {f['cell']})" if f.get("cell") else "")


def review(repos: list[dict], out: Path, extra: list[str] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    extra = list(extra or ())
    for repo in repos:
        root = Path(repo["path"])
        proc = subprocess.run([sys.executable, "-m", "torchreview", "check", str(root), "--no-cache",
                               "--format", "json", "--exit-zero", *extra], capture_output=True, text=True, cwd=root)
        data = json.loads(proc.stdout or "{}")
        findings = data.get("findings", []) if isinstance(data, dict) else data
        errors = data.get("errors", []) if isinstance(data, dict) else []
        if proc.returncode != 0 or not proc.stdout:
            # a review that crashed or was killed (a hang stopped by hand) is not "0 findings"
            last = (proc.stderr or "").strip().splitlines()[-1:] or ["no output"]
            errors = [*errors, {"path": ".", "message": f"the review did not finish (exit {proc.returncode}): "
                                                        f"{last[0][:200]}"}]
        for i, f in enumerate(findings, 1):
            f["id"] = f"{repo['name']}-{i}"
        loc = count_lines(root)
        record = {"loc": loc, "kind": repo.get("kind", ""), "findings": findings, "errors": errors}
        (out / f"{repo['name']}.findings.json").write_text(json.dumps(record, indent=1))
        parts = [f"# {repo['name']} ({repo['url']} @ {repo['commit']}), {repo.get('kind', 'kind not given')}, "
                 f"{loc} lines of code, {len(findings)} findings, {len(errors)} review errors"
                 + (f" (check arguments: {' '.join(extra)})" if extra else "") + "\n"]
        for f in findings:
            grade = ", ".join(str(f[k]) for k in ("severity", "confidence", "kind") if f.get(k))
            parts.append(f"## {f['id']}  {f['code']} [{grade}] {_where(f)}\n\n{f['message']}\n\n"
                         f"```\n{code_window(root, f)}\n```\n")
            related = f.get("related") or []
            if related:
                parts.append("Related locations: " + "; ".join(_where(r) for r in related) + "\n")
        (out / f"{repo['name']}.packet.md").write_text("\n".join(parts))
        print(f"{repo['name']}: {len(findings)} findings, {loc} lines")


def table(repos: list[dict], out: Path) -> None:
    per_rule: dict[str, Counter] = defaultdict(Counter)
    total = Counter()
    total_loc = 0
    stacked: list[str] = []
    print("| repo | kind | commit | lines | findings | per 1k lines | true | noise | false |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for repo in repos:
        data = json.loads((out / f"{repo['name']}.findings.json").read_text())
        verdict_file = out / f"{repo['name']}.verdicts.json"
        verdicts = json.loads(verdict_file.read_text()) if verdict_file.exists() else {}
        c = Counter()
        for f in data["findings"]:
            v = verdicts.get(f["id"], "unjudged")
            if isinstance(v, dict):
                v = v.get("verdict", "unjudged")
            c[v] += 1
            per_rule[f["code"]][v] += 1
        total += c
        total_loc += data["loc"]
        places = Counter((f["path"], f.get("cell"), f["line"]) for f in data["findings"])
        stacked += [f"{repo['name']}:{p}:{line}" + (f" (cell {cell})" if cell else "")
                    for (p, cell, line), k in places.items() if k > 1]
        n = len(data["findings"])
        print(f"| {repo['name']} | {repo.get('kind', '')} | {repo['commit'][:7]} | {data['loc']} | {n} "
              f"| {1000 * n / max(data['loc'], 1):.1f} | {c['true']} | {c['noise']} | {c['false']} |")
    n = sum(total.values())
    print(f"| **all** | | | {total_loc} | {n} | {1000 * n / max(total_loc, 1):.1f} | {total['true']} "
          f"| {total['noise']} | {total['false']} |")
    print(f"\nLines carrying two or more findings: {len(stacked)}" + (f" ({', '.join(stacked)})" if stacked else ""))
    judged = total["true"] + total["noise"] + total["false"]
    if judged:
        print(f"\nPrecision (true / judged): {total['true']}/{judged} = {100 * total['true'] / judged:.0f}%")
    print("\n| rule | findings | true | noise | false |\n|---|---:|---:|---:|---:|")
    for code in sorted(per_rule):
        c = per_rule[code]
        print(f"| {code} | {sum(c.values())} | {c['true']} | {c['noise']} | {c['false']} |")


def main() -> int:
    argv, extra = sys.argv, []
    if "--" in argv:
        argv, extra = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    if len(argv) != 4 or argv[1] not in ("review", "table") or (extra and argv[1] != "review"):
        print(__doc__)
        return 2
    repos = tomllib.loads(Path(argv[2]).read_text())["repo"]
    if argv[1] == "review":
        review(repos, Path(argv[3]), extra)
    else:
        table(repos, Path(argv[3]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
