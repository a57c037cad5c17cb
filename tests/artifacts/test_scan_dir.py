"""``torchreview scan DIR`` walks a folder with the discovery rules of ``check``."""

from __future__ import annotations

import json
import subprocess

import pytest

import artifact_craft as craft
from torchreview.cli import main


@pytest.fixture
def tree(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("ignored/\n")
    (tmp_path / "pyproject.toml").write_text('[tool.torchreview]\nexclude = ["skipme"]\n'
                                             'artifact-globs = ["*.weights"]\n')
    for folder in ("ckpt/deep", "ignored", "skipme", "env"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    evil = craft.os_system_reduce()
    (tmp_path / "ckpt" / "deep" / "evil.pkl").write_bytes(evil)       # found by suffix
    (tmp_path / "ckpt" / "blob").write_bytes(evil)                    # found by content
    (tmp_path / "ckpt" / "model.weights").write_bytes(evil)           # artifact-globs
    (tmp_path / "ckpt" / "good.pt").write_bytes(craft.torch_like_zip(craft.benign_dict_pickle()))
    (tmp_path / "ckpt" / "notes.txt").write_text("not an artifact\n")
    (tmp_path / "ckpt" / "train.py").write_text("import torch\ntorch.load('x.pt')\n")
    for skipped in ("ignored", "skipme", "env"):                      # .gitignore, exclude, venv
        (tmp_path / skipped / "evil.pkl").write_bytes(evil)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def scan(capsys, *argv) -> tuple[int, dict]:
    code = main(["scan", *argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_scan_walks_a_folder_like_check(tree, capsys):
    code, report = scan(capsys, ".")
    paths = sorted({f["path"] for f in report["findings"]})
    assert paths == ["ckpt/blob", "ckpt/deep/evil.pkl", "ckpt/model.weights"]
    assert {f["code"] for f in report["findings"]} == {"TR108"}
    assert report["summary"]["files"] == 4  # the three above and good.pt; no .py, no .txt
    assert report["errors"] == [] and code == 1


def test_scan_mixes_files_and_folders_and_names_win(tree, capsys):
    # a file named explicitly is scanned even where the walk would skip it
    code, report = scan(capsys, "ckpt/deep", "ignored/evil.pkl")
    assert sorted(f["path"] for f in report["findings"]) == ["ckpt/deep/evil.pkl", "ignored/evil.pkl"]
    assert code == 1


def test_scan_folder_without_artifacts_and_missing_path(tree, capsys):
    (tree / "clean").mkdir()
    (tree / "clean" / "a.py").write_text("x = 1\n")
    code, report = scan(capsys, "clean")
    assert code == 0 and report["findings"] == [] and report["summary"]["files"] == 0
    code, report = scan(capsys, "clean", "nowhere")
    assert code == 2 and [e["path"] for e in report["errors"]] == ["nowhere"]
