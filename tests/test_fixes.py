"""Fixes: every fixing rule's fixture has a `.fixed.py` twin; fixes parse, converge,
are idempotent and remove what they target. Plus the file-safety guarantees."""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from fixture_harness import CODE_OF_NAME, FIXTURES
from torchreview.catalog import all_rules
from torchreview.engine.runner import Settings, review_source
from torchreview.engine.source import load_source
from torchreview.fixer import fix_file

TWINS = sorted(FIXTURES.rglob("*.fixed.py"))


def _settings(code: str) -> Settings:
    return Settings(rule_codes=(code,), jobs=1)


def _places(path: str, code: str) -> list:
    return review_source(load_source(path, path), _settings(code)).findings


@pytest.mark.parametrize("twin", TWINS, ids=[t.name for t in TWINS])
def test_fix_matches_twin_converges_and_removes_findings(twin, tmp_path):
    original = twin.with_name(twin.name.replace(".fixed.py", ".py"))
    code = CODE_OF_NAME.match(original.name).group(1)
    work = tmp_path / original.name
    shutil.copy(original, work)
    outcome = fix_file(str(work), work.name, _settings(code), unsafe=True)
    assert outcome.error is None, outcome.error
    fixed = outcome.fixed.decode()
    ast.parse(fixed)
    assert fixed == twin.read_text(), "fixed output differs from the .fixed.py twin"
    work.write_bytes(outcome.fixed)
    again = fix_file(str(work), work.name, _settings(code), unsafe=True)
    assert again.fixed == outcome.fixed, "applying --fix twice changed the file again"
    # Every place counts, merged or not (a summarized rule reports its repeats
    # as related locations of one finding; --fix works on the places).
    before = _places(os.path.relpath(original), code)  # fixtures/..., as the harness sees it
    after = _places(str(work), code)
    fixable_before = sum(1 for f in before if f.fix is not None)
    assert fixable_before > 0
    assert sum(1 for f in after if f.fix is not None) == 0
    assert len(after) == len(before) - fixable_before


def test_every_fixing_rule_has_a_twin():
    have = {CODE_OF_NAME.match(t.name).group(1) for t in TWINS}
    missing = [r.code for r in all_rules() if r.fixable and r.code not in have]
    assert not missing, f"fixing rules without a .fixed.py twin: {missing}"


BUGGY = "import torch\n\nstate = torch.load('model.pt')\n"


def test_crlf_and_encoding_are_kept(tmp_path):
    path = tmp_path / "crlf.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\r\nimport torch\r\nname = '\xe9'\r\nstate = torch.load('m.pt')\r\n")
    outcome = fix_file(str(path), "crlf.py", _settings("TR102"), unsafe=True)
    assert outcome.fixed == (b"# -*- coding: latin-1 -*-\r\nimport torch\r\nname = '\xe9'\r\n"
                             b"state = torch.load('m.pt', weights_only=True)\r\n")


def test_cli_fix_skips_read_only_file_and_fixes_others(tmp_path, monkeypatch, capsys):
    from torchreview.cli import main

    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "ro.py").write_text(BUGGY)
    os.chmod(tmp_path / "ro.py", stat.S_IRUSR | stat.S_IRGRP)
    monkeypatch.chdir(tmp_path)
    main(["check", ".", "--select", "TR102", "--fix", "--unsafe-fixes", "--no-cache"])
    err = capsys.readouterr().err
    assert "weights_only=True" in (tmp_path / "a.py").read_text()
    assert (tmp_path / "ro.py").read_text() == BUGGY
    assert "ro.py: read-only file; fixes not written" in err
    os.chmod(tmp_path / "ro.py", 0o644)


def test_failed_rename_leaves_original_intact(tmp_path, monkeypatch, capsys):
    from torchreview.cli import main

    (tmp_path / "a.py").write_text(BUGGY)
    monkeypatch.chdir(tmp_path)

    def broken_replace(src, dst):
        raise OSError(5, "simulated crash during rename")

    monkeypatch.setattr(os, "replace", broken_replace)
    code = main(["check", ".", "--select", "TR102", "--fix", "--unsafe-fixes", "--no-cache"])
    assert (tmp_path / "a.py").read_text() == BUGGY
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert code == 2
    assert "file left unchanged" in capsys.readouterr().err


def test_diff_prints_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from torchreview.cli import main

    (tmp_path / "a.py").write_text(BUGGY)
    monkeypatch.chdir(tmp_path)
    code = main(["check", ".", "--select", "TR102", "--diff", "--unsafe-fixes", "--no-cache"])
    out = capsys.readouterr().out
    assert code == 1
    assert "+state = torch.load('model.pt', weights_only=True)" in out
    assert (tmp_path / "a.py").read_text() == BUGGY
    assert main(["check", ".", "--select", "TR102", "--diff", "--no-cache"]) == 0  # TR102's fix is unsafe


def _notebook(cells):
    doc = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
           "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def test_notebook_round_trips_outside_the_fixed_cell(tmp_path):
    untouched = {"cell_type": "code", "execution_count": 1, "id": "a1", "metadata": {"tags": ["x"]},
                 "outputs": [{"name": "stdout", "output_type": "stream", "text": ["héllo\n"]}],
                 "source": ["import torch\n", "x = 1  # café"]}
    target = {"cell_type": "code", "execution_count": 2, "id": "b2", "metadata": {}, "outputs": [],
              "source": ["state = torch.load('m.pt')\n", "print(state)"]}
    md = {"cell_type": "markdown", "id": "c3", "metadata": {}, "source": ["# Title"]}
    raw = _notebook([untouched, md, target])
    path = tmp_path / "nb.ipynb"
    path.write_text(raw, encoding="utf-8")
    outcome = fix_file(str(path), "nb.ipynb", _settings("TR102"), unsafe=True)
    new = outcome.fixed.decode("utf-8")
    target_fixed = dict(target, source=["state = torch.load('m.pt', weights_only=True)\n", "print(state)"])
    assert new == _notebook([untouched, md, target_fixed])
    # bytes before the fixed cell's source are identical
    cut = raw.index("state = torch.load")
    assert new[:cut] == raw[:cut]
