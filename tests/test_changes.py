"""--since, baselines and the result cache."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from torchreview.cli import main

LOAD = "state = torch.load('m.pt')\n"


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@e"})


def run_json(capsys, *argv):
    code = main(["check", *argv, "--format", "json", "--no-cache"])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q")
    (tmp_path / "old.py").write_text("import torch\n" + LOAD)
    (tmp_path / "train.py").write_text(
        "import torch\n\n"
        "def train(model, loader, optimizer):\n"
        "    for epoch in range(3):\n"
        "        for x, y in loader:\n"
        "            optimizer.zero_grad()\n"
        "            loss = model(x).sum()\n"
        "            loss.backward()\n"
        "            optimizer.step()\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_since_keeps_changed_lines_and_new_files_only(repo, capsys):
    (repo / "old.py").write_text("import torch\n" + LOAD + "other = torch.load('n.pt')\n")
    (repo / "new.py").write_text("import torch\n" + LOAD)
    code, data = run_json(capsys, ".", "--select", "TR102", "--since", "HEAD")
    got = sorted((f["path"], f["line"]) for f in data["findings"])
    assert got == [("new.py", 2), ("old.py", 3)]  # old.py:2 is untouched
    assert code == 1


def test_since_project_finding_new_compared_with_ref(repo, capsys):
    from torchreview.catalog import rule_by_code

    if "TR305" not in rule_by_code():
        pytest.skip("TR305 not implemented")
    _, before = run_json(capsys, ".", "--select", "TR305")
    assert any(f["code"] == "TR305" for f in before["findings"])
    # the project finding existed at HEAD and its anchor did not change: hidden
    (repo / "util.py").write_text("x = 1\n")
    _, data = run_json(capsys, ".", "--select", "TR305", "--since", "HEAD")
    assert data["findings"] == []
    # a new training project at a new place: reported
    git(repo, "rm", "-q", "train.py")
    git(repo, "commit", "-q", "-m", "drop training")
    (repo / "train2.py").write_text((repo / "old.py").read_text() + "\n".join([
        "", "def fit(model, loader, optimizer):", "    for epoch in range(2):", "        for x in loader:",
        "            optimizer.zero_grad()", "            model(x).sum().backward()", "            optimizer.step()", ""]))
    git(repo, "add", "train2.py")
    _, data = run_json(capsys, ".", "--select", "TR305", "--since", "HEAD")
    assert [f["code"] for f in data["findings"]] == ["TR305"]


def test_since_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("import torch\n" + LOAD)
    assert main(["check", ".", "--since", "HEAD"]) == 2
    assert "not in one" in capsys.readouterr().err
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "x")
    assert main(["check", ".", "--since", "no-such-ref"]) == 2
    assert "unknown git ref 'no-such-ref'" in capsys.readouterr().err


def test_baseline_survives_inserted_lines_and_shows_new(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("import torch\n\ndef load():\n    return torch.load('m.pt')\n")
    assert main(["check", ".", "--select", "TR102", "--write-baseline", "base.json", "--no-cache"]) == 0
    capsys.readouterr()
    (tmp_path / "a.py").write_text("import torch\n\n# a comment\nX = 1\n\n\ndef load():\n"
                                   "    return torch.load('m.pt')\n\nnew = torch.load('n.pt')\n")
    code, data = run_json(capsys, ".", "--select", "TR102", "--baseline", "base.json")
    assert [(f["path"], f["line"]) for f in data["findings"]] == [("a.py", 10)]
    assert code == 1
    (tmp_path / "a.py").write_text("import torch\n")
    main(["check", ".", "--select", "TR102", "--baseline", "base.json", "--no-cache"])
    assert "1 stale entry" in capsys.readouterr().out


def test_cache_hits_are_identical_and_edits_rereview_one_file(tmp_path, monkeypatch, capsys):
    import torchreview.engine.runner as runner

    monkeypatch.chdir(tmp_path)
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text("import torch\n" + LOAD)
    calls = []
    real = runner._review_bytes
    monkeypatch.setattr(runner, "_review_bytes", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    main(["check", ".", "--select", "TR102", "--format", "json", "--jobs", "1"])
    cold = json.loads(capsys.readouterr().out)
    assert len(calls) == 5 and os.path.isfile(tmp_path / ".torchreview_cache" / ".gitignore")
    calls.clear()
    main(["check", ".", "--select", "TR102", "--format", "json", "--jobs", "1"])
    warm = json.loads(capsys.readouterr().out)
    assert calls == [] and warm["findings"] == cold["findings"]
    (tmp_path / "m3.py").write_text("import torch\nx = 1\n" + LOAD)
    main(["check", ".", "--select", "TR102", "--format", "json", "--jobs", "1"])
    capsys.readouterr()
    assert calls == ["m3.py"]


def test_corrupted_cache_entries_are_misses(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("import torch\n" + LOAD)
    main(["check", ".", "--select", "TR102", "--format", "json"])
    first = json.loads(capsys.readouterr().out)
    for folder, _, files in os.walk(tmp_path / ".torchreview_cache"):
        for name in files:
            if name.endswith(".json"):
                with open(os.path.join(folder, name), "w") as handle:
                    handle.write("{not json")
    main(["check", ".", "--select", "TR102", "--format", "json"])
    second = json.loads(capsys.readouterr().out)
    assert second["findings"] == first["findings"] and second["errors"] == []


def test_baseline_records_every_place_of_a_merged_finding(tmp_path, monkeypatch, capsys):
    """Two loads with one message are one finding (engine/merge.py); the baseline records
    both places, so removing one is no new finding, and a third place is shown alone."""
    monkeypatch.chdir(tmp_path)
    two = "import torch\n\na = torch.load('a.pt')\nb = torch.load('b.pt')\n"
    (tmp_path / "a.py").write_text(two)
    assert main(["check", ".", "--select", "TR102", "--write-baseline", "base.json", "--no-cache"]) == 0
    capsys.readouterr()
    assert len(json.loads((tmp_path / "base.json").read_text())["findings"]) == 2
    (tmp_path / "a.py").write_text(two + "c = torch.load('c.pt')\n")
    code, data = run_json(capsys, ".", "--select", "TR102", "--baseline", "base.json")
    assert [(f["line"], f.get("related", [])) for f in data["findings"]] == [(5, [])] and code == 1
    (tmp_path / "a.py").write_text("import torch\n\nb = torch.load('b.pt')\n")
    code, data = run_json(capsys, ".", "--select", "TR102", "--baseline", "base.json")
    assert data["findings"] == [] and code == 0
