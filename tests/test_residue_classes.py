"""Classes of findings judged noise/false on the session-3 sweeps (residue), checked at
default settings: what the default report hides and what it keeps."""
from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review

FIXTURES = Path(__file__).parent / "fixtures"


def _default(path: Path, codes: tuple[str, ...], **kw):
    """The default report's gate: advice hidden, only high confidence shown."""
    settings = Settings(rule_codes=codes, jobs=1, advice_codes=(), min_confidence="high", **kw)
    return run_review([str(path)], settings).findings


def test_old_torch_load_of_an_operator_path_is_hidden_advice_and_a_download_stays_a_defect():
    path = FIXTURES / "security" / "TR101_old_torch_operator_path.py"
    everything = {f.line: f for f in run_review([str(path)], Settings(rule_codes=("TR101",), jobs=1,
                                                                        target_torch=(1, 4))).findings}
    assert sorted(everything) == [21, 26, 31]
    for line in (21, 26):
        f = everything[line]
        assert (f.kind, f.confidence, f.severity.label) == ("advice", "medium", "medium"), line
        assert "predates `weights_only`" in f.message
    assert (everything[31].kind, everything[31].severity.label) == ("defect", "high")
    shown = _default(path, ("TR101",), target_torch=(1, 4))
    assert [f.line for f in shown] == [31]
