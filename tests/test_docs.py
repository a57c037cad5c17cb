"""Every rule's documentation examples are executed: `Example` fires, `Use instead` is clean."""

from __future__ import annotations

import re

import pytest

from torchreview.catalog import all_rules
from torchreview.engine.runner import Settings, run_review

FENCE = re.compile(r"```python\n(.*?)```", re.S)
STATIC = [r for r in all_rules() if r.scope[0] in ("file", "project")]


def _findings(rule, code_text, tmp_path, name):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "snippet.py").write_text(code_text)
    report = run_review([str(folder)], Settings(rule_codes=(rule.code,), jobs=1))
    assert not report.errors, report.errors
    return [f for f in report.findings if f.code == rule.code]


@pytest.mark.parametrize("rule", STATIC, ids=[r.code for r in STATIC])
def test_doc_examples(rule, tmp_path):
    docs = rule.docs()
    bad = FENCE.findall(docs["Example"])
    good = FENCE.findall(docs["Use instead"])
    assert bad and good, f"{rule.code}: Example and Use instead need ```python blocks"
    assert _findings(rule, "\n".join(bad), tmp_path, "bad"), f"{rule.code}: Example does not fire"
    assert not _findings(rule, "\n".join(good), tmp_path, "good"), f"{rule.code}: Use instead fires"


def test_generated_rule_docs_and_readme_table_are_fresh():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).parent.parent
    proc = subprocess.run([sys.executable, str(root / "scripts" / "gen_docs.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
