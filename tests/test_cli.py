"""The command line: options, exit codes, subcommands."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from torchreview.cli import main

SRC = ("import torch\n"
       "state = torch.load('m.pt')\n"
       "model = torch.nn.DataParallel(torch.nn.Linear(2, 2))\n")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text(SRC)
    (tmp_path / "plain.py").write_text("import pickle\nx = pickle.loads(b'')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def codes(capsys, *argv) -> tuple[int, list[str]]:
    code = main(["check", *argv, "--format", "json", "--no-cache"])
    data = json.loads(capsys.readouterr().out)
    return code, sorted(f["code"] for f in data["findings"])


def test_select_ignore_prefix_and_slug(tree, capsys):
    assert codes(capsys, ".", "--select", "TR102")[1] == ["TR102"]
    assert codes(capsys, ".", "--select", "torch-load-without-weights-only")[1] == ["TR102"]
    got = codes(capsys, ".", "--select", "TR1,TR212", "--ignore", "TR102,TR409")[1]
    assert "TR102" not in got and "TR212" in got
    assert codes(capsys, ".", "--select", "TR409", "--extend-select", "TR212")[1] == ["TR212", "TR409"]


def test_review_modes(tree, capsys):
    got = codes(capsys, ".", "--review", "security")[1]
    assert got and all(c.startswith("TR1") for c in got)
    got = codes(capsys, ".", "--review", "performance")[1]
    assert "TR212" in got and "TR102" not in got


def test_default_report_holds_defects_and_advice_is_shown_when_asked(tree, capsys):
    got = codes(capsys, ".")[1]
    assert "TR103" not in got                             # a local unpickle: a defect of medium confidence
    assert "TR103" in codes(capsys, ".", "--review", "security")[1]
    assert "TR103" in codes(capsys, ".", "--min-confidence", "medium")[1]
    assert "TR212" not in got                             # advice (performance)
    assert "TR102" not in got                             # advice (security): torch >= 2.6 targeted
    assert "TR102" in codes(capsys, ".", "--review", "security")[1]
    # a defect before 2.6, of medium confidence where nothing shows who makes the file
    assert "TR102" not in codes(capsys, ".", "--target-torch", "2.5")[1]
    assert "TR102" in codes(capsys, ".", "--target-torch", "2.5", "--min-confidence", "medium")[1]
    assert "TR212" in codes(capsys, ".", "--show-advice")[1]
    assert "TR212" in codes(capsys, ".", "--review", "performance")[1]
    assert "TR212" in codes(capsys, ".", "--extend-select", "TR212")[1]
    got = codes(capsys, ".", "--select", "TR2,TR102")[1]
    assert "TR212" in got
    assert "TR212" not in codes(capsys, ".", "--select", "TR1,TR5")[1]  # not asked for
    main(["check", ".", "--no-cache", "--no-color"])
    out = capsys.readouterr().out
    assert "advice finding" in out and "not shown (--show-advice shows them" in out


def test_show_advice_config_and_fail_on_sees_only_what_is_reported(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.py").write_text("import torch\nmodel = torch.nn.DataParallel(torch.nn.Linear(2, 2))\n")
    monkeypatch.chdir(tmp_path)
    assert main(["check", ".", "--no-cache", "-q"]) == 0      # advice only: nothing reported
    assert main(["check", ".", "--no-cache", "-q", "--show-advice"]) == 1
    capsys.readouterr()
    (tmp_path / "torchreview.toml").write_text("show-advice = true\n")
    assert codes(capsys, ".")[1] == ["TR212"]
    (tmp_path / "torchreview.toml").write_text("show-advice = 1\n")
    assert main(["check", ".", "--no-cache"]) == 2
    assert "'show-advice' must be true or false" in capsys.readouterr().err


def test_non_torch_file_gets_only_general_security_rules(tree, capsys):
    code = main(["check", "plain.py", "--format", "json", "--no-cache", "--review", "security"])
    data = json.loads(capsys.readouterr().out)
    assert {f["code"] for f in data["findings"]} == {"TR103"}
    assert code == 1


def test_min_severity_and_fail_on(tree, capsys):
    _, got = codes(capsys, ".", "--select", "TR102,TR212", "--min-severity", "high")
    assert got == []  # TR102 is medium for the newest torch, TR212 is medium
    _, got = codes(capsys, ".", "--select", "TR102,TR212", "--min-severity", "high", "--target-torch", "2.1")
    assert got == ["TR102"]
    code, _ = codes(capsys, ".", "--select", "TR212", "--fail-on", "high")
    assert code == 0
    code, _ = codes(capsys, ".", "--select", "TR212", "--fail-on", "medium")
    assert code == 1
    assert main(["check", ".", "--exit-zero", "--no-cache", "-q"]) == 0
    capsys.readouterr()


def test_output_file_statistics_and_quiet(tree, capsys):
    assert main(["check", ".", "--select", "TR102", "--output", "out.json", "--format", "json", "--no-cache"]) == 1
    assert json.loads((tree / "out.json").read_text())["findings"][0]["code"] == "TR102"
    assert capsys.readouterr().out == ""
    main(["check", ".", "--select", "TR102,TR212", "--statistics", "--quiet", "--no-cache"])
    out = capsys.readouterr().out  # as in ruff: counts per rule instead of findings; -q: no summary
    assert out == "1\tTR102\t[ ] torch-load-without-weights-only\n1\tTR212\t[ ] data-parallel\n"
    main(["check", ".", "--select", "TR102,TR212", "--statistics", "--no-cache"])
    assert "Found 2 findings" in capsys.readouterr().out


def test_text_frame_and_summary(tree, capsys):
    main(["check", ".", "--select", "TR102", "--no-cache", "--no-color"])
    out = capsys.readouterr().out
    assert "a.py:2:9: TR102 [medium, advice]" in out  # torch >= 2.6 already loads weights-only
    assert "2 | state = torch.load('m.pt')" in out
    assert "^" * len("torch.load('m.pt')") + " TR102" in out
    assert out.rstrip().endswith("Found 1 finding (1 medium; 1 advice) in 2 files.\n"
                                 "1 fixable with `--fix --unsafe-fixes`.")


def test_usage_errors_exit_2(tree, capsys):
    assert main(["check", ".", "--select", "TR999"]) == 2
    assert "unknown rule" in capsys.readouterr().err
    assert main(["check", "--bogus"]) == 2
    assert main(["rules", "NOPE"]) == 2


def test_missing_path_is_an_error_entry(tree, capsys):
    code = main(["check", "a.py", "missing.py", "--format", "json", "--no-cache", "--select", "TR102"])
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == [{"path": "missing.py", "message": "no such file or directory"}]
    assert [f["path"] for f in data["findings"]] == ["a.py"]
    assert code == 2


def test_rules_list_and_explain(capsys):
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    assert "TR102" in out and "torch-load-without-weights-only" in out
    assert main(["rules", "TR102"]) == 0
    out = capsys.readouterr().out
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert heading in out
    assert main(["rules", "torch-load-without-weights-only", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["code"] == "TR102"


def test_detect(tree, capsys):
    assert main(["detect", ".", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_path = {f["path"]: f["signals"] for f in data["files"]}
    assert "import torch" in by_path["a.py"] and by_path["plain.py"] == []
    assert data["pytorch"] is True


def test_version_and_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "torchreview", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("torchreview ")


def test_version_imports_nothing_heavy():
    code = ("import sys, torchreview.cli as c\n"
            "try:\n    c.main(['--version'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('torch', 'numpy', 'json', 'torchreview.engine', 'torchreview.catalog') "
            "if m in sys.modules]\nprint(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.strip().endswith("[]"), out


def test_untrusted_load_reported_once_by_the_more_specific_rule(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.py").write_text("import sys\nimport torch\n"
                                   "a = torch.load(sys.argv[1], map_location='cpu')\n"
                                   "b = torch.load('local.pt', map_location='cpu')\n")
    monkeypatch.chdir(tmp_path)
    _, got = codes(capsys, ".", "--select", "TR101,TR102")
    assert got == ["TR101", "TR102"]  # line 3 by TR101 only, line 4 by TR102
    main(["check", ".", "--select", "TR102", "--format", "json", "--no-cache"])
    found = json.loads(capsys.readouterr().out)["findings"]
    # without TR101, TR102 covers both: one message, one finding with the other line related
    assert [(f["code"], f["line"], [r["line"] for r in f.get("related", ())]) for f in found] == [("TR102", 3, [4])]
