"""The catalog: every code of the specification implemented, metadata sound."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from torchreview.catalog import DOC_HEADINGS, all_rules

HERE = Path(__file__).parent
SPEC = HERE.parent.parent / "shared" / "RULES.md"
CHECKED_IN = HERE / "data" / "catalog_codes.txt"


def spec_codes() -> set[str]:
    import re

    if SPEC.exists():
        return set(re.findall(r"^\| (TR\d{3})", SPEC.read_text(), re.M))
    return set(CHECKED_IN.read_text().split())


def test_checked_in_code_list_matches_spec():
    if SPEC.exists():
        assert spec_codes() == set(CHECKED_IN.read_text().split())


def test_every_spec_code_is_implemented():
    have = {r.code for r in all_rules()}
    missing = sorted(spec_codes() - have)
    assert not missing, f"not implemented: {missing}"


def test_codes_and_names_unique_and_well_formed():
    codes = [r.code for r in all_rules()]
    names = [r.name for r in all_rules()]
    assert len(codes) == len(set(codes))
    assert len(names) == len(set(names))
    for rule in all_rules():
        assert rule.code[:2] == "TR" and rule.code[2:].isdigit() and len(rule.code) == 5
        assert rule.name == rule.name.lower() and " " not in rule.name and rule.name
        assert rule.summary, rule.code
        assert set(rule.scope) <= {"file", "project", "artifact", "runtime"}


def test_docs_have_ruff_headings():
    for rule in all_rules():
        docs = rule.docs()
        for heading in DOC_HEADINGS:
            assert docs.get(heading, "").strip(), f"{rule.code} lacks '{heading}'"
        if rule.fixable:
            assert docs.get("Fix safety", "").strip(), f"{rule.code} fixes but lacks 'Fix safety'"


def test_rules_json_cli():
    out = subprocess.run([sys.executable, "-m", "torchreview", "rules", "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    data = json.loads(out)
    assert {r["code"] for r in data["rules"]} == {r.code for r in all_rules()}
    for item in data["rules"]:
        assert {"code", "name", "severity", "category"} <= set(item)
