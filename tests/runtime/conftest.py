"""Shared fixtures of the runtime-review tests (tiny CPU training loops)."""

from __future__ import annotations

import json
import textwrap

import pytest


@pytest.fixture(autouse=True)
def _one_thread():
    torch = pytest.importorskip("torch")
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def review():
    """Run ``fn`` under ``torchreview.watch`` and return the findings."""

    def run(fn, **options):
        import torchreview

        opts = {"live": False, "write_report": False, "check_every": 10}
        opts.update(options)
        with torchreview.watch(**opts) as watcher:
            fn()
        return watcher.report.findings

    return run


@pytest.fixture
def run_py(tmp_path):
    """Write a script and run it with ``run_script(..., fmt="json")``.

    Returns (exit code, findings as JSON dicts, whole report).
    """

    def run(source: str, args: list[str] | None = None, *, fail_on: str = "low",
            name: str = "train.py"):
        from torchreview.runtime import run_script

        script = tmp_path / name
        script.write_text(textwrap.dedent(source))
        out = tmp_path / "report.json"
        if out.exists():
            out.unlink()
        code = run_script(str(script), args or [], fmt="json", output=str(out),
                          fail_on=fail_on)
        report = json.loads(out.read_text()) if out.exists() else {"findings": []}
        return code, report["findings"], report

    return run


def codes(findings) -> set[str]:
    """Codes of Finding objects or JSON dicts."""
    return {f["code"] if isinstance(f, dict) else f.code for f in findings}


@pytest.fixture
def codes_of():
    return codes
