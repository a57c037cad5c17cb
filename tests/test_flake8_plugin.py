"""The flake8 plugin, tested through flake8 itself (``python -m flake8``): it needs
the entry point of an installed torchreview (``pip install -e .``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchreview.catalog import rule_by_code

ROOT = Path(__file__).parent.parent
FORMAT = "%(path)s:%(row)d:%(col)d:%(code)s"
CATALOG = rule_by_code()


def flake8(*argv: str, cwd=ROOT) -> set[tuple[str, int, str]]:
    done = subprocess.run([sys.executable, "-m", "flake8", "--jobs", "1", "--format", FORMAT, *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    found = set()
    for line in done.stdout.splitlines():
        path, row, _col, code = line.rsplit(":", 3)
        found.add((path, int(row), code))
    return found


def check_json(*argv: str, cwd=ROOT) -> dict:
    done = subprocess.run([sys.executable, "-m", "torchreview", "check", *argv, "--format", "json",
                           "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=300)
    return json.loads(done.stdout)


def is_file_rule(code: str) -> bool:
    return "file" in CATALOG[code].scope


def expected_for_flake8(report: dict) -> set[tuple[str, int, str]]:
    """What flake8 must report for a `torchreview check` report: the file-rule
    findings of Python files. flake8 gives a plugin one file at a time, so a place
    merged into a finding elsewhere (a summarized repeat in another file, or an
    aspect merged into a project rule's finding) stands on its own there: once per
    file and rule, at its first line."""
    out = set()
    for f in report["findings"]:
        primary_here = is_file_rule(f["code"]) and f["path"].endswith(".py")
        if primary_here:
            out.add((f["path"], f["line"], f["code"]))
        firsts: dict[tuple[str, str], int] = {}
        for r in f.get("related", []):
            if not (is_file_rule(r["code"]) and r["path"].endswith(".py")):
                continue
            if primary_here and r["path"] == f["path"]:
                continue  # merged in flake8 too (same file)
            key = (r["path"], r["code"])
            firsts[key] = min(firsts.get(key, r["line"]), r["line"])
        # Aspects standing alone in flake8 still merge among themselves there (one problem, one
        # finding: the same root cause at the same place), led by the most severe rule.
        leads: dict[tuple[str, int], str] = {}
        for (path, code), line in firsts.items():
            other = leads.get((path, line))
            if other is None or (CATALOG[code].severity, other) > (CATALOG[other].severity, code):
                leads[(path, line)] = code
        out |= {(path, line, code) for (path, line), code in leads.items()}
    return out


@pytest.fixture(scope="module", autouse=True)
def plugin_installed():
    done = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True)
    assert done.returncode == 0, "flake8 is in the test extra: pip install -e '.[test]'"
    assert "torchreview" in done.stdout, (
        "the flake8.extension entry point is not registered: re-run `pip install -e .`")


@pytest.mark.shipped_track_record
def test_flake8_select_tr_reports_what_check_reports():
    got = flake8("--select", "TR", "examples/")
    report = check_json("examples/")
    want = expected_for_flake8(report)
    assert len(want) >= 10  # the default report of the Python files (notebooks are not flake8's)
    assert got == want
    # the same defaults: no advice unless asked for (a rule whose default kind is advice
    # reports a defect where the code crashes on the targeted torch, e.g. TR429, TR425)
    assert all(f["kind"] != "advice" or f["category"] == "security" for f in report["findings"])


@pytest.mark.shipped_track_record
def test_advice_through_flake8_matches_check_show_advice():
    got = flake8("--select", "TR", "--torchreview-show-advice", "examples/")
    report = check_json("examples/", "--show-advice")
    assert got == expected_for_flake8(report)
    assert any(code == "TR408" for _, _, code in got)  # summarized per project by check: per file here
    # a narrower selection asks for that advice, as `check --extend-select` does
    got = flake8("--select", "TR", "--extend-select", "TR2", "examples/")
    assert got == expected_for_flake8(check_json("examples/", "--extend-select", "TR2"))
    assert any(code.startswith("TR2") for _, _, code in got)


def test_flake8_follows_the_torchreview_configuration_and_noqa(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchreview]\nignore = ["TR103"]\ntarget-torch = "2.4"\nmin-confidence = "medium"\n'
                                             '[tool.torchreview.per-file-ignores]\n"gen_*.py" = ["TR102"]\n')
    src = "import torch, pickle\nstate = torch.load('m.pt')\nx = pickle.loads(b'')\n"
    (tmp_path / "a.py").write_text(src)
    (tmp_path / "gen_b.py").write_text(src)
    (tmp_path / "c.py").write_text("import torch\nstate = torch.load('m.pt')  # noqa: TR102\n")
    got = flake8("--select", "TR", ".", cwd=tmp_path)
    assert got == {("./a.py", 2, "TR102")}
    want = {(f"./{p}", line, code) for p, line, code in
            expected_for_flake8(check_json(".", cwd=tmp_path))}
    assert got == want


def test_columns_and_messages_are_flake8s(tmp_path):
    (tmp_path / "a.py").write_text("import torch\nstate = torch.load('m.pt')\n")
    (tmp_path / "pyproject.toml").write_text('[tool.torchreview]\ntarget-torch = "2.4"\nmin-confidence = "medium"\n')
    done = subprocess.run([sys.executable, "-m", "flake8", "--select", "TR", "a.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.startswith("a.py:2:9: TR102 `torch.load` without `weights_only=True`")
    assert done.returncode == 1
    done = subprocess.run([sys.executable, "-m", "flake8", "--select", "E", "a.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert "TR102" not in done.stdout  # not selected, not reported


def test_importing_torchreview_does_not_import_flake8():
    code = ("import sys, torchreview, torchreview.cli, torchreview.flake8_plugin\n"
            "print('flake8' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
