"""TR508 on a side-by-side lesson: the plain-list counter-example next to its
ModuleList twin, only inspected, is low-confidence advice that the default report
hides; the near-misses of the same fixtures stay high-confidence defects."""
from __future__ import annotations

from pathlib import Path

from torchreview.cli import main
from torchreview.engine.runner import Settings, run_review

BUGS = Path(__file__).parent / "fixtures" / "bugs"
FIXTURES = [BUGS / "TR508_contrast_demo_notebook.ipynb", BUGS / "TR508_contrast_demo_tutorial.py",
            BUGS / "TR508_contrast_in_one_class.ipynb"]


def _findings(path: Path):
    settings = Settings(rule_codes=("TR508",), jobs=1, advice_codes=("TR508",))
    return run_review([str(path)], settings).findings


def test_demonstration_is_low_confidence_advice_and_near_misses_stay_defects():
    for path in FIXTURES:
        found = [p for f in _findings(path) for p in (f.parts or (f,))]  # each place, merged or not
        demos = [f for f in found if f.kind == "advice"]
        defects = [f for f in found if f.kind == "defect"]
        assert len(demos) == 1 and demos[0].confidence == "low", path
        assert "side-by-side demonstration" in demos[0].message
        assert len(defects) >= 3 and all(f.confidence != "low" for f in defects), path


def test_default_report_hides_the_demonstration(capsys):
    for path in FIXTURES:
        main(["check", str(path), "--no-cache", "--output-format", "json"])
        out = capsys.readouterr().out
        assert "side-by-side demonstration" not in out
        assert out.count('"TR508"') >= 3
