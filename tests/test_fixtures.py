from __future__ import annotations

import pytest

from fixture_harness import CODE_OF_NAME, fixture_paths, run_fixture
from torchreview.catalog import rule_by_code

PATHS = fixture_paths()


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_fixture(path):
    code, expected, got, report = run_fixture(path)
    assert not report.errors, [e.message for e in report.errors]
    missing = expected - got
    unexpected = got - expected
    detail = "\n".join(
        [f"missing    {k[3]} at {k[0]}:{'cell %s:' % k[1] if k[1] else ''}{k[2]}" for k in sorted(missing, key=str)]
        + [f"unexpected {k[3]} at {k[0]}:{'cell %s:' % k[1] if k[1] else ''}{k[2]}" for k in sorted(unexpected, key=str)]
        + [f"  {f.code} {f.path}:{f.line} {f.message}" for f in report.findings])
    assert not missing and not unexpected, detail


def test_every_file_rule_fixture_has_positives_and_negatives():
    """At least 3 positives and 2 marked near-misses (`# ok:` lines) per rule."""
    import re

    counts: dict[str, list[int]] = {}
    for path in PATHS:
        code = CODE_OF_NAME.match(path.name).group(1)
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.suffix in (".py", ".ipynb")]
        text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)
        pos = len(re.findall(r"#\s*expect:[^\n]*" + code, text)) + len(
            re.findall(r"\\\\n[^\"]*#\s*expect:[^\"]*" + code, text)) * 0
        neg = len(re.findall(r"#\s*ok:\s*" + code, text))
        c = counts.setdefault(code, [0, 0])
        c[0] += pos
        c[1] += neg
    catalog = rule_by_code()
    problems = []
    for code, rule in catalog.items():
        if rule.scope[0] in ("runtime", "artifact"):
            continue
        pos, neg = counts.get(code, [0, 0])
        if pos < 3 or neg < 2:
            problems.append(f"{code}: {pos} positives, {neg} near-misses")
    assert not problems, "\n".join(problems)
