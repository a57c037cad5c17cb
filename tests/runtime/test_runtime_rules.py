"""Metadata of the runtime-only rules (TR601-TR606) and of runtime findings."""

import ast
import importlib

import pytest

pytest.importorskip("torch")

from torchreview.catalog import DOC_HEADINGS  # noqa: E402
from torchreview.findings import Severity  # noqa: E402

MODULES = {
    "TR601": ("tr601_nan_or_inf", Severity.HIGH),
    "TR602": ("tr602_exploding_gradient_norm", Severity.MEDIUM),
    "TR603": ("tr603_parameter_without_gradient", Severity.MEDIUM),
    "TR604": ("tr604_memory_growth", Severity.HIGH),
    "TR605": ("tr605_input_pipeline_bound", Severity.MEDIUM),  # waste, not wrong results
    "TR606": ("tr606_distributed_problem", Severity.MEDIUM),
}


@pytest.mark.parametrize("code", sorted(MODULES))
def test_runtime_rule_metadata_and_docs(code):
    module_name, severity = MODULES[code]
    module = importlib.import_module(f"torchreview.rules.runtime.{module_name}")
    rules = [v for v in vars(module).values()
             if isinstance(v, type) and getattr(v, "code", "") == code]
    assert len(rules) == 1
    rule = rules[0]
    assert rule.severity is severity
    assert rule.scope == ("runtime",) and rule.needs_torch and rule.summary
    assert rule.name and rule.name == rule.name.lower() and " " not in rule.name
    assert not any(name in vars(rule) for name in ("check", "check_file", "check_project"))
    docs = rule.docs()
    for heading in DOC_HEADINGS:
        assert docs.get(heading), (code, heading)
    for heading in ("Example", "Use instead"):
        block = docs[heading].split("```python", 1)[1].split("```", 1)[0]
        ast.parse(block)  # the snippets are valid Python


def test_runtime_findings_carry_catalog_metadata():
    from torchreview.runtime._env import Site
    from torchreview.runtime.codes import runtime_finding

    site = Site("train.py", 7, "optimizer.step()")
    for code in [*MODULES, "TR201", "TR202", "TR207", "TR209", "TR401", "TR403", "TR503",
                 "TR504", "TR507", "TR512", "TR513"]:
        f = runtime_finding(code, "message", site)
        assert f.code == code and f.detection == "runtime" and f.scope == "runtime"
        assert (f.path, f.line, f.source_line) == ("train.py", 7, "optimizer.step()")
        assert f.name and f.category and isinstance(f.severity, Severity)
        if code in MODULES:
            assert f.category == "runtime" and f.severity is MODULES[code][1]
    assert runtime_finding("TR201", "m", site).severity is Severity.MEDIUM  # performance: never above medium
    assert runtime_finding("TR209", "m", site).severity is Severity.LOW
