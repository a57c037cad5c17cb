"""Classes judged noise or false in the second development sweep (issue 11):
what each rule reports at default settings (advice hidden) and what it folds."""

from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review

FIXTURES = Path(__file__).parent / "fixtures"


def _findings(path, codes, *, default=True):
    settings = Settings(rule_codes=codes, jobs=1, advice_codes=() if default else None)
    return run_review([str(path)], settings).findings


def test_object_collectives_and_test_pickles_are_hidden_advice_folded_per_function():
    folder = FIXTURES / "security" / "TR103_tests_and_collectives"
    everything = _findings(folder, ("TR103",), default=False)
    where = {(Path(f.path).name, f.line): (f.kind, f.severity.label, sorted(r.line for r in f.related))
             for f in everything}
    assert where == {
        ("comm.py", 11): ("advice", "low", [13]),  # if/else branches of one call: one finding
        ("comm.py", 20): ("advice", "low", []),
        ("test_pickling.py", 34): ("advice", "medium", [36]),  # two loads in one test: one finding
        ("test_pickling.py", 42): ("defect", "high", []),  # a download stays a defect in a test
    }
    shown = [(Path(f.path).name, f.line) for f in _findings(folder, ("TR103",))]
    assert shown == [("test_pickling.py", 42)]


def test_round_trips_of_data_the_function_just_wrote_are_silent(tmp_path):
    (tmp_path / "copying.py").write_text(
        "import io, pickle, dill\n"
        "def clone(obj, path):\n"
        "    a = dill.loads(dill.dumps(obj))\n"
        "    buf = io.BytesIO()\n"
        "    pickle.dump(obj, buf)\n"
        "    buf.seek(0)\n"
        "    b = pickle.load(buf)\n"
        "    with open(path, 'wb') as f:\n"
        "        pickle.dump(obj, f)\n"
        "    with open(path, 'rb') as f:\n"
        "        c = pickle.load(f)\n"
        "    return a, b, c, pickle.loads(obj)\n")
    found = [(f.line, f.kind) for f in _findings(tmp_path, ("TR103",), default=False)]
    assert found == [(12, "defect")]
