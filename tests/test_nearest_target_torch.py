"""Each file targets the torch of its nearest enclosing project folder (issue 11: a
sub-project with its own requirements / pyproject / setup.py / uv.lock is reviewed
against its own pin, not the repository root's)."""
from __future__ import annotations

import json

from torchreview.cli import main
from torchreview.config import nearest_torch_pin

LOAD = "import sys\nimport torch\nstate = torch.load(sys.argv[1])\n"


def test_sub_project_takes_its_own_pin(tmp_path, capsys, monkeypatch):
    (tmp_path / "requirements.txt").write_text("torch==2.4.1\n")
    sub = tmp_path / "ppo"
    sub.mkdir()
    (sub / "uv.lock").write_text('version = 1\n\n[[package]]\nname = "torch"\nversion = "2.7.1+cu118"\n')
    other = tmp_path / "old"
    other.mkdir()
    (other / "setup.py").write_text('setup(install_requires=[\n    "torch<2.5",\n])\n')
    plain = tmp_path / "tools"
    plain.mkdir()
    for folder in (tmp_path, sub, other, plain):
        (folder / "run.py").write_text(LOAD)
    assert nearest_torch_pin(str(sub / "run.py")) == (True, (2, 7))
    assert nearest_torch_pin(str(other / "run.py")) == (True, (2, 4))
    assert nearest_torch_pin(str(plain / "run.py")) == (True, (2, 4))  # the root's pin
    monkeypatch.chdir(tmp_path)
    assert main(["check", ".", "--select", "TR101,TR102", "--no-cache", "--show-advice",
                 "--output-format", "json"]) in (0, 1)
    # each place (a copy of run.py in another folder is a related place of the same finding)
    found = {p["path"].replace("\\", "/"): f for f in json.loads(capsys.readouterr().out)["findings"]
             for p in (f, *f.get("related", ()))}
    assert found["ppo/run.py"]["kind"] == "advice"  # torch 2.7 loads weights-only by default
    for near_miss in ("run.py", "old/run.py", "tools/run.py"):  # torch 2.4: a defect
        assert found[near_miss]["kind"] == "defect" and found[near_miss]["severity"] == "high", near_miss


def test_explicit_target_wins_everywhere(tmp_path, capsys, monkeypatch):
    (tmp_path / "requirements.txt").write_text("torch==2.4.1\n")
    sub = tmp_path / "ppo"
    sub.mkdir()
    (sub / "requirements.txt").write_text("torch==2.7.1\n")
    (sub / "run.py").write_text(LOAD)
    monkeypatch.chdir(tmp_path)
    assert main(["check", ".", "--select", "TR101,TR102", "--no-cache", "--target-torch", "2.4",
                 "--output-format", "json"]) in (0, 1)
    # each place (a copy of run.py in another folder is a related place of the same finding)
    found = {p["path"].replace("\\", "/"): f for f in json.loads(capsys.readouterr().out)["findings"]
             for p in (f, *f.get("related", ()))}
    assert found["ppo/run.py"]["kind"] == "defect"
