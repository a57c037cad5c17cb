"""Bounded fuzzing in CI: the static reviewer on generated programs, the scanner
on generated and mutated byte streams. Fixed seed (derandomize) and a small
example budget, so a run is reproducible and takes a few seconds; the longer
campaign is bench/fuzz_campaign.py.
"""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fuzz_strategies as fz  # noqa: E402
from torchreview.catalog import all_rules  # noqa: E402
from torchreview.engine.runner import Settings, review_source  # noqa: E402
from torchreview.engine.source import SourceFile  # noqa: E402
from torchreview.findings import Finding, ReviewError  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "artifacts"))

CI = settings(derandomize=True, database=None, deadline=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])
SETTINGS = Settings(rule_codes=tuple(r.code for r in all_rules()))
SOURCES = fz.real_sources()


def check_review(text: str) -> None:
    """The reviewer's contract on any text: no exception, no internal error,
    every finding inside the file."""
    result = review_source(SourceFile(path="gen.py", text=text), SETTINGS)
    internal = [e.message for e in result.errors if "internal error" in e.message]
    assert not internal, internal
    assert all(isinstance(e, ReviewError) and "\n" not in e.message for e in result.errors)
    last = text.count("\n") + 2
    for f in result.findings:
        assert isinstance(f, Finding) and f.code.startswith("TR")
        assert 1 <= f.line <= f.end_line <= last, (f.code, f.line, f.end_line, last)


@settings(CI, max_examples=60)
@given(fz.torch_programs())
def test_reviewer_on_generated_torch_programs(text):
    check_review(text)


@settings(CI, max_examples=15)
@given(fz.grammar_programs())
def test_reviewer_on_grammar_generated_python(text):
    pytest.importorskip("hypothesmith")
    check_review(fz.PRELUDE + text)


@settings(CI, max_examples=25)
@given(fz.mutated_sources(SOURCES))
def test_reviewer_on_mutated_real_files(text):
    check_review(text)


SEEDS = fz.artifact_seeds()


@settings(CI, max_examples=80)
@given(fz.artifact_streams(SEEDS), st.sampled_from(fz.ARTIFACT_SUFFIXES))
def test_scanner_on_generated_and_mutated_streams(tmp_path_factory, data, suffix):
    import artifact_craft as craft
    from _pytest.monkeypatch import MonkeyPatch

    path = tmp_path_factory.mktemp("fz") / f"input{suffix}"
    path.write_bytes(data)
    with MonkeyPatch.context() as mp:  # any unpickling attempt fails the test
        findings, errors = craft.scan(path, "input" + suffix, mp)
    assert all(isinstance(f, Finding) and f.code == "TR108" for f in findings)
    assert all(isinstance(e, ReviewError) and e.message and "\n" not in e.message for e in errors)
    assert not any("internal error" in e.message for e in errors), [e.message for e in errors]
