"""TR104 on dataset/metric loaders: Hugging Face's canonical loading scripts are
advice in one-off code (tutorial scripts, notebooks, tests) and reported where the
code ships; community scripts and model code with remote code are reported everywhere."""

from __future__ import annotations

import shutil
from pathlib import Path

from torchreview.engine.runner import Settings, run_review

SRC = Path(__file__).parent / "fixtures" / "security" / "TR104_script_loaders"


def _kinds(root: Path, **kw) -> dict[tuple[str, int], str]:
    report = run_review([str(root)], Settings(rule_codes=("TR104",), jobs=1, **kw))
    # a repeated message (the same canonical metric loaded in several files) is one
    # finding with the others as related locations, led by its strongest kind
    return {(r.path.rsplit("/", 1)[-1], r.line): f.kind for f in report.findings for r in (f, *f.related)}


def test_canonical_scripts_are_advice_in_one_off_code_and_defects_where_they_ship(tmp_path):
    root = tmp_path / "p"
    shutil.copytree(SRC, root)
    everything = _kinds(root, advice_codes=("TR104",))
    assert {k for k, kind in everything.items() if kind == "advice"} == {
        ("text_classification.py", 10), ("text_classification.py", 11), ("text_classification.py", 12)}
    # `glue` is loaded by the shipped package too: the one finding is led by that defect
    assert everything[("scoring.py", 7)] == everything[("test_metrics.py", 5)] == "defect"
    shown = _kinds(root, advice_codes=())
    assert {k for k in shown if k[0] != "test_metrics.py" and k[1] != 9} == {
        ("scoring.py", 7), ("scoring.py", 11), ("text_classification.py", 15), ("text_classification.py", 16)}
    assert set(shown.values()) == {"defect"}
    (root / "gluekit" / "scoring.py").unlink()  # nothing ships `glue` now: advice only
    assert ("text_classification.py", 9) not in _kinds(root, advice_codes=())
    assert _kinds(root, advice_codes=("TR104",))[("test_metrics.py", 5)] == "advice"


def test_the_message_names_a_loading_script_not_a_model_repository(tmp_path):
    root = tmp_path / "p"
    shutil.copytree(SRC, root)
    report = run_review([str(root)], Settings(rule_codes=("TR104",), jobs=1, advice_codes=("TR104",)))
    by_line = {(f.path.rsplit("/", 1)[-1], f.line): f.message for f in report.findings}
    assert "loading script of the metric `super_glue` (Hugging Face's canonical script)" in by_line[
        ("text_classification.py", 10)]
    assert "model repository" not in by_line[("scoring.py", 11)]
    assert "model repository" in by_line[("text_classification.py", 16)]
