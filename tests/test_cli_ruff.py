"""The command line as a ruff user expects it: stdin, --output-format, -q/-s,
--statistics, --unsafe-fixes, --show-fixes, help text on every option."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys

import pytest

from torchreview.cli import _parser, main

SRC = ("import torch\n"
       "state = torch.load('m.pt')\n"
       "x = torch.randn(3, requires_grad=True)\n"
       "y = x.numpy()\n")
FIXED_SAFE = SRC.replace("x.numpy()", "x.detach().numpy()")
TARGET = '[tool.torchreview]\ntarget-torch = "2.4"\nmin-confidence = "medium"\n'


@pytest.fixture
def tree(tmp_path, monkeypatch):
    # an older target torch: a missing weights_only is a defect there (on >= 2.6 it is advice)
    for name, text in {"a.py": SRC, "clean.py": "import torch\nx = torch.zeros(2)\n",
                       "pyproject.toml": TARGET}.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def feed(monkeypatch, data: str | bytes) -> None:
    raw = data.encode() if isinstance(data, str) else data
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))


def cli(*argv: str, stdin: bytes | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torchreview", *argv], input=stdin,
                          capture_output=True, cwd=cwd, timeout=120)


# --- standard input ----------------------------------------------------------------

def test_stdin_findings_are_reported_under_the_stdin_filename(tree, monkeypatch, capsys):
    feed(monkeypatch, SRC)
    code = main(["check", "-", "--stdin-filename", "pkg/train.py", "--format", "json", "--no-cache"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert {(f["path"], f["line"], f["code"]) for f in data["findings"]} == {
        ("pkg/train.py", 2, "TR102"), ("pkg/train.py", 4, "TR502")}
    assert data["summary"]["files"] == 1
    feed(monkeypatch, SRC)  # no name: reported as "-"
    main(["check", "-", "--output-format", "concise", "--no-cache"])
    assert capsys.readouterr().out.startswith("-:2:9: TR102 ")


def test_stdin_filename_alone_reads_stdin_and_takes_its_configuration(tree, monkeypatch, capsys):
    (tree / "pyproject.toml").write_text(TARGET + '[tool.torchreview.per-file-ignores]\n"gen/*" = ["TR102"]\n')
    feed(monkeypatch, SRC)
    main(["check", "--stdin-filename", "gen/x.py", "--format", "json", "--no-cache"])
    assert [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["TR502"]


def test_stdin_notebook_positions_and_frames(tree, monkeypatch, capsys):
    notebook = json.dumps({"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# t\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["import torch\n", "state = torch.load('m.pt')\n"]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)
    feed(monkeypatch, notebook)
    main(["check", "-", "--stdin-filename", "nb.ipynb", "--select", "TR102", "--no-cache", "--no-color"])
    out = capsys.readouterr().out
    assert "nb.ipynb:cell 2:2:9: TR102" in out and "2 | state = torch.load('m.pt')" in out
    feed(monkeypatch, notebook)
    main(["check", "-", "--stdin-filename", "nb.ipynb", "--select", "TR102", "--no-cache", "--format", "github"])
    line = next(n for n, row in enumerate(notebook.splitlines(), 1) if "torch.load" in row)
    assert f"file=nb.ipynb,line={line}," in capsys.readouterr().out


def test_stdin_fix_prints_the_fixed_source_and_writes_nothing(tree):
    done = cli("check", "-", "--stdin-filename", "a.py", "--fix", "--no-cache", stdin=SRC.encode(), cwd=tree)
    assert done.stdout.decode() == FIXED_SAFE       # safe fix only: TR102's is unsafe
    assert "TR102" in done.stderr.decode() and "Fixed 1 finding" in done.stderr.decode()
    assert done.returncode == 1                      # TR102 is left
    assert (tree / "a.py").read_text() == SRC        # the file of that name is not touched
    done = cli("check", "-", "--fix", "--unsafe-fixes", "-q", "--no-cache", stdin=SRC.encode(), cwd=tree)
    assert "weights_only=True" in done.stdout.decode() and done.returncode == 0
    assert done.stderr == b""                        # -q: nothing but findings, and none are left


def test_stdin_fix_keeps_every_byte_of_input_it_cannot_fix(tree):
    data = b"\xef\xbb\xbfimport torch\r\nx = (\r\n"  # BOM, CRLF, a syntax error
    done = cli("check", "-", "--fix", "--unsafe-fixes", "--no-cache", stdin=data, cwd=tree)
    assert done.stdout == data and done.returncode == 2
    assert "syntax error" in done.stderr.decode() and "Traceback" not in done.stderr.decode()


def test_stdin_diff_and_refusals(tree, monkeypatch, capsys):
    feed(monkeypatch, SRC)
    assert main(["check", "-", "--diff", "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "-y = x.numpy()" in out and "+y = x.detach().numpy()" in out and "torch.load('m.pt')\n" in out
    feed(monkeypatch, SRC)
    assert main(["check", "-", "a.py"]) == 2
    assert "cannot be combined" in capsys.readouterr().err
    feed(monkeypatch, SRC)
    assert main(["check", "-", "--since", "HEAD"]) == 2
    assert "--since cannot be used with standard input" in capsys.readouterr().err


# --- output formats ------------------------------------------------------------------

def test_concise_is_one_line_per_finding_and_format_is_an_alias(tree, capsys):
    main(["check", "a.py", "--output-format", "concise", "--no-cache", "--no-color"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("a.py:2:9: TR102 `torch.load` without `weights_only=True`")
    assert lines[1].startswith("a.py:4:5: TR502 [*] `x.numpy()`")  # [*]: fixable with --fix
    assert lines[2] == "Found 2 findings (2 high; 2 defect) in 1 file."
    assert lines[3] == "[*] 1 fixable with `--fix` (1 more with `--fix --unsafe-fixes`)."
    assert len(lines) == 4
    main(["check", "a.py", "--format", "concise", "--no-cache", "--no-color"])
    assert capsys.readouterr().out.splitlines() == lines
    main(["check", "a.py", "--output-format", "full", "--no-cache", "--no-color"])
    full = capsys.readouterr().out
    main(["check", "a.py", "--format", "text", "--no-cache", "--no-color"])
    assert capsys.readouterr().out == full and "2 | state = torch.load('m.pt')" in full
    main(["check", "a.py", "--no-cache", "--no-color"])
    assert capsys.readouterr().out == full  # full is the default


def test_quiet_and_silent_as_in_ruff(tree, capsys):
    assert main(["check", "clean.py", "-q", "--no-cache"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["check", "a.py", "-q", "--output-format", "concise", "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 2 and "Found" not in out and "fixable" not in out
    assert main(["check", "a.py", "--silent", "--no-cache"]) == 1
    assert main(["check", "a.py", "-s", "--fix", "--no-cache"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert (tree / "a.py").read_text() == FIXED_SAFE
    assert main(["check", "a.py", "-q", "--format", "json", "--no-cache"]) == 1
    assert len(json.loads(capsys.readouterr().out)["findings"]) == 1  # machine formats unchanged


def test_statistics_counts_per_rule_with_fixable_marker(tree, capsys):
    (tree / "b.py").write_text(SRC.replace("m.pt", "n.pt"))
    main(["check", "a.py", "b.py", "--statistics", "--no-cache", "--no-color"])
    out = capsys.readouterr().out.splitlines()
    # b.py repeats a.py's `.numpy()` line word for word: one TR502 finding for both places
    assert out[:2] == ["2\tTR102\t[ ] torch-load-without-weights-only",
                       "1\tTR502\t[*] numpy-without-detach"]
    assert out[3].startswith("Found 3 findings") and "a.py:" not in "\n".join(out)
    main(["check", "a.py", "b.py", "--statistics", "--unsafe-fixes", "-q", "--no-cache"])
    assert capsys.readouterr().out.splitlines()[0] == "2\tTR102\t[*] torch-load-without-weights-only"
    main(["check", "a.py", "b.py", "--statistics", "--format", "json", "--no-cache"])
    assert json.loads(capsys.readouterr().out) == [
        {"code": "TR102", "name": "torch-load-without-weights-only", "count": 2, "fixable": False},
        {"code": "TR502", "name": "numpy-without-detach", "count": 1, "fixable": True}]


def test_unsafe_fixes_alone_writes_nothing(tree, capsys):
    assert main(["check", ".", "--unsafe-fixes", "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert (tree / "a.py").read_text() == SRC
    assert "[*] 2 fixable with `--fix`." in out  # unsafe fixes now count as fixable
    assert main(["check", ".", "--fix", "--unsafe-fixes", "--no-cache"]) == 0
    assert "weights_only=True" in (tree / "a.py").read_text()


def test_show_fixes_previews_edits_and_lists_what_was_fixed(tree, capsys):
    main(["check", "a.py", "--show-fixes", "--no-cache", "--no-color"])
    out = capsys.readouterr().out
    assert "  Safe fix: insert `.detach()` before `.numpy()`\n  4 - y = x.numpy()\n    + y = x.detach().numpy()\n" in out
    assert "Unsafe fix" in out and "weights_only=True" in out
    assert (tree / "a.py").read_text() == SRC
    main(["check", "a.py", "--fix", "--show-fixes", "--no-cache"])
    err = capsys.readouterr().err
    assert "Fixed 1 finding in 1 file.\n- a.py:\n    1 \u00d7 TR502 (numpy-without-detach)\n" in err


# --- help ----------------------------------------------------------------------------------

def test_every_option_of_every_command_has_help():
    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, command in commands.choices.items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert len(commands.choices) >= 5 and missing == []


def test_output_format_alias_on_scan_and_rules(tree, capsys):
    assert main(["rules", "TR102", "--output-format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["code"] == "TR102"
    assert main(["scan", "a.py", "--output-format", "concise"]) == 2  # not an artifact: an error
    assert "a.py" in capsys.readouterr().out
