"""The catalog: every code of the specification implemented, metadata sound."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from torchreview.catalog import DOC_HEADINGS, Rule, all_rules
from torchreview.findings import CONFIDENCES, KINDS, Severity

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


def spec_severities() -> dict[str, str]:
    import re

    if not SPEC.exists():
        return {}
    return dict(re.findall(r"^\| (TR\d{3}) \| (low|medium|high|critical) \|", SPEC.read_text(), re.M))


def test_kind_and_confidence_are_declared_or_defaulted():
    for rule in all_rules():
        assert rule.default_kind() in KINDS, rule.code
        assert rule.default_confidence() in CONFIDENCES, rule.code
        assert rule.explain_severity().strip(), rule.code
    by_code = {r.code: r for r in all_rules()}
    assert by_code["TR102"].default_kind() == "defect"        # security: defect by category
    assert by_code["TR302"].default_kind() == "advice"        # architecture: advice by category
    assert by_code["TR423"].default_kind() == "advice"        # quality: declared per rule
    assert by_code["TR401"].default_kind() == "defect"


def test_a_rule_without_attributes_gets_defaults_from_its_category():
    class Bare(Rule):  # what a newly added rule gets before it declares anything
        code, name, summary = "TR598", "bare-rule", "x"

    class BareProjectAdvice(Rule):
        code, name, summary, scope = "TR298", "bare-project-advice", "x", ("project",)

    assert (Bare.default_kind(), Bare.default_confidence(), Bare.shown_by_default()) == ("defect", "high", True)
    assert (BareProjectAdvice.default_kind(), BareProjectAdvice.default_confidence(),
            BareProjectAdvice.shown_by_default()) == ("advice", "medium", False)
    assert Bare.explain_severity() and Bare.precision() == "very-high"
    finding = Bare.make_finding(path="a.py", line=1, message="m")
    assert (finding.kind, finding.confidence) == ("defect", "high")
    finding = Bare.make_finding(path="a.py", line=1, message="m", kind="advice", confidence="low")
    assert (finding.kind, finding.confidence) == ("advice", "low")


def test_severity_deviations_from_the_catalog_are_explained():
    """Where a default severity differs from RULES.md, the rule's severity_reason
    says why and names the catalog's level; docs/severity.md lists it."""
    spec = spec_severities()
    listed = (HERE.parent / "docs" / "severity.md").read_text()
    for rule in all_rules():
        level = spec.get(rule.code)
        if level is None or level == rule.severity.label:
            continue
        assert f"(catalog: {level})" in rule.severity_reason, rule.code
        assert f"| {rule.code} {rule.name} | {level} | {rule.severity.label} |" in listed, rule.code


def test_severity_scale_holds():
    """Advice about speed or layout is never high; crashes are never below medium."""
    for rule in all_rules():
        if rule.default_kind() == "advice" and rule.category() in ("performance", "architecture"):
            assert rule.severity <= Severity.MEDIUM, rule.code
    by_code = {r.code: r for r in all_rules()}
    for code in ("TR421", "TR501", "TR502", "TR510"):  # raise at the flagged call
        assert by_code[code].severity == Severity.HIGH, code


def test_rules_json_cli():
    out = subprocess.run([sys.executable, "-m", "torchreview", "rules", "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    data = json.loads(out)
    assert {r["code"] for r in data["rules"]} == {r.code for r in all_rules()}
    for item in data["rules"]:
        assert {"code", "name", "severity", "category", "kind", "confidence", "precision",
                "severity_reason"} <= set(item)
