"""Fixture harness: inline expectations in real-looking files.

``# expect: TR102`` (or ``# expect: TR102, TR409``) on a line means those
findings must be reported on that line; every other line is a negative.  In
notebooks the same comments work inside cells.  Each fixture runs the rule its
file name starts with, plus every code named in its expectations, selected
explicitly as with ``--select`` (so advice rules report, as they do when a user
selects them); project fixtures are folders reviewed as a whole. The targeted torch
is the newest unless the fixture says ``# fixture-target-torch: 2.4``.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

from torchreview.engine.discovery import display_path
from torchreview.engine.runner import Settings, run_review
from torchreview.engine.source import load_source

FIXTURES = Path(__file__).parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TR\d{3}(?:\s*,\s*TR\d{3})*)")
CODE_OF_NAME = re.compile(r"^(TR\d{3})")
TARGET = re.compile(r"#\s*fixture-target-torch:\s*(\d+)\.(\d+)")


def fixture_paths() -> list[Path]:
    out = []
    for category in sorted(FIXTURES.iterdir()):
        if not category.is_dir():
            continue
        for entry in sorted(category.iterdir()):
            if entry.name.endswith(".fixed.py") or not CODE_OF_NAME.match(entry.name):
                continue
            if entry.is_dir() or entry.suffix in (".py", ".ipynb"):
                out.append(entry)
    return out


def expectations(path: Path) -> Counter:
    """Counter of (display path, cell, line, code) expected."""
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*") if p.suffix in (".py", ".ipynb"))
    expected: Counter = Counter()
    for file in files:
        source = load_source(str(file), str(file))
        for i, text in enumerate(source.text.splitlines(), start=1):
            match = EXPECT.search(text)
            if match:
                cell, line = source.locate(i)
                for code in re.split(r"\s*,\s*", match.group("codes")):
                    expected[(display_path(str(file), os.getcwd()), cell, line, code)] += 1
    return expected


def fixture_target_torch(path: Path):
    """``# fixture-target-torch: 2.4`` in a fixture file (or any file of a fixture
    folder) reviews it as ``--target-torch 2.4`` would; None (newest) otherwise."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in (".py", ".ipynb"))
    for file in files:
        match = TARGET.search(file.read_text(encoding="utf-8", errors="replace"))
        if match:
            return int(match.group(1)), int(match.group(2))
    return None


def run_fixture(path: Path, *, target_torch=None):
    code = CODE_OF_NAME.match(path.name).group(1)
    expected = expectations(path)
    if target_torch is None:
        target_torch = fixture_target_torch(path)
    codes = {code} | {key[3] for key in expected}
    selected = tuple(sorted(codes))
    settings = Settings(rule_codes=selected, target_torch=target_torch, jobs=1, advice_codes=selected)
    report = run_review([str(path)], settings)
    # A place merged into another finding (same root cause, engine/merge.py) is
    # still reported: it counts where it is, as a related location.
    got = Counter((r.path, r.cell, r.line, r.code) for f in report.findings for r in (f, *f.related))
    return code, expected, got, report
