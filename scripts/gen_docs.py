"""Regenerate the rule documentation from the catalog.

    python scripts/gen_docs.py          # write docs/rules/*.md and the README rule table
    python scripts/gen_docs.py --check  # exit 1 when either is stale (used by the tests)
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src"))

from torchreview.catalog import all_rules  # noqa: E402
from torchreview.report.rules_doc import explain_rule, rules_markdown_table  # noqa: E402

START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def wanted() -> dict[str, str]:
    files = {}
    rules = list(all_rules())
    index = ["# torchreview rules", "", "Generated from the catalog by `scripts/gen_docs.py`; "
             "`torchreview rules CODE` prints the same text.", "", rules_markdown_table(rules)]
    files[os.path.join(ROOT, "docs", "rules", "README.md")] = "\n".join(index)
    for rule in rules:
        text = explain_rule(rule)
        title, rest = text.split("\n", 1)
        files[os.path.join(ROOT, "docs", "rules", f"{rule.code}.md")] = f"# {title}\n{rest}"
    readme_path = os.path.join(ROOT, "README.md")
    with open(readme_path, encoding="utf-8") as handle:
        readme = handle.read()
    if START in readme and END in readme:
        head, rest = readme.split(START, 1)
        _, tail = rest.split(END, 1)
        files[readme_path] = head + START + "\n" + rules_markdown_table(rules) + END + tail
    return files


def main() -> int:
    check = "--check" in sys.argv
    stale = []
    docs_dir = os.path.join(ROOT, "docs", "rules")
    want = wanted()
    existing = {os.path.join(docs_dir, n) for n in os.listdir(docs_dir)} if os.path.isdir(docs_dir) else set()
    for path in sorted(existing - set(want)):
        if path.endswith(".md"):
            stale.append(path)
            if not check:
                os.remove(path)
    for path, text in want.items():
        try:
            with open(path, encoding="utf-8") as handle:
                current = handle.read()
        except FileNotFoundError:
            current = None
        if current != text:
            stale.append(path)
            if not check:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(text)
    if check and stale:
        print("stale generated docs (run python scripts/gen_docs.py):\n  " + "\n  ".join(
            os.path.relpath(p, ROOT) for p in stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
