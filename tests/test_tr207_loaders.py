"""TR207 and project loaders: a container filled with modules switched to eval, a
wrapper whose constructor evaluates the module it holds (fixture
TR207_eval_loader_container), and a message that says where autograd is off."""

from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review

FIXTURE = Path(__file__).parent / "fixtures" / "performance" / "TR207_eval_loader_container"


def test_the_message_names_where_autograd_is_off():
    report = run_review([str(FIXTURE)], Settings(rule_codes=("TR207",), jobs=1))
    by_line = {f.line: f.message for f in report.findings}
    assert "in `detect_decorated` (decorated with `@torch.no_grad()`)" in by_line[23]
    assert "in `detect_raw` (only called with autograd disabled: line 64)" in by_line[39]
    assert not any("(autograd disabled)" in m for m in by_line.values())
    assert not report.errors
