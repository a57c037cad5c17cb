"""Bad input: every problem is an entry in `errors`, the rest is reviewed, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchreview.cli import main

TORCH_BUG = "import torch\nstate = torch.load('m.pt')\n"


def make_bad_tree(root: Path) -> None:
    (root / "good.py").write_text(TORCH_BUG)
    (root / "syntax.py").write_text("import torch\ndef broken(:\n    pass\n")
    (root / "latin1.py").write_bytes(
        "# -*- coding: latin-1 -*-\nimport torch\nname = 'caf\xe9'\nx = torch.load('a.pt')\n".encode("latin-1"))
    (root / "nul.py").write_bytes(b"import torch\x00\x00\n")
    (root / "empty.py").write_text("")
    lines = ["import torch", ""] + [f"value_{i} = torch.zeros({i % 7 + 1}) * {i}" for i in range(40000)]
    (root / "huge.py").write_text("\n".join(lines) + "\n")
    assert (root / "huge.py").stat().st_size > 1_000_000
    (root / "deep.py").write_text("import torch\nx = " + "-" * 1000 + "1\ny = " + " + ".join(["1"] * 1000) + "\n")
    os.symlink(root / "missing_target.py", root / "dangling.py")
    os.symlink(root / "loop_b.py", root / "loop_a.py")
    os.symlink(root / "loop_a.py", root / "loop_b.py")
    (root / "sub").mkdir()
    os.symlink(root, root / "sub" / "back_to_root")
    (root / "locked.py").write_text(TORCH_BUG)
    os.chmod(root / "locked.py", 0)
    (root / "truncated.ipynb").write_text('{"cells": [{"cell_type": "code", "source": ["import torch\\n", "torch.lo')


@pytest.fixture
def bad_tree(tmp_path, monkeypatch):
    make_bad_tree(tmp_path)
    if os.geteuid() == 0:
        # root ignores file modes; make the read fail the way it does for a normal user
        import torchreview.engine.source as source_mod

        real_open = source_mod.open_regular

        def guarded_open(path, *args, **kwargs):
            if str(path).endswith("locked.py"):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(source_mod, "open_regular", guarded_open)
    yield tmp_path
    os.chmod(tmp_path / "locked.py", 0o644)


def test_bad_inputs_are_errors_and_the_rest_is_reviewed(bad_tree, capsys, monkeypatch):
    monkeypatch.chdir(bad_tree)
    code = main(["check", ".", "--format", "json", "--select", "TR102", "--jobs", "1"])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    data = json.loads(out.out)
    errors = {e["path"]: e["message"] for e in data["errors"]}
    assert "syntax error at line 2" in errors["syntax.py"]
    assert "NUL" in errors["nul.py"]
    assert "broken symbolic link" in errors["dangling.py"]
    assert "loop" in errors["loop_a.py"] and "loop" in errors["loop_b.py"]
    assert not any("back_to_root" in path for path in errors)  # a symlinked folder: skipped quietly
    assert "permission denied" in errors["locked.py"]
    assert "malformed notebook" in errors["truncated.ipynb"]
    flagged = {f["path"] for f in data["findings"]}
    assert {"good.py", "latin1.py"} <= flagged
    assert "empty.py" not in errors
    assert "huge.py" not in errors and "deep.py" not in errors
    assert code == 2  # some inputs could not be reviewed
    assert data["summary"]["files"] >= 9


def test_cli_subprocess_prints_no_traceback(bad_tree):
    proc = subprocess.run([sys.executable, "-m", "torchreview", "check", str(bad_tree), "--jobs", "2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "could not be reviewed" in proc.stdout


def test_crash_in_one_rule_is_reported_and_others_run(tmp_path, monkeypatch):
    from torchreview.catalog import rule_by_code
    from torchreview.engine.runner import Settings, run_review

    rule = rule_by_code()["TR102"]

    def boom(self, node, ctx):
        raise ValueError("kaboom")

    (tmp_path / "a.py").write_text(TORCH_BUG)
    monkeypatch.setattr(rule, "check", boom)
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR102",), jobs=1))
    assert any("internal error in rule TR102" in e.message and "kaboom" in e.message for e in report.errors)


def test_notebook_magics_shell_escapes_and_continuations(tmp_path):
    from torchreview.engine.runner import Settings, run_review

    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [],
         "source": ["%pip install torch\n", "!accelerate launch train.py \\\n", "  --lr=1e-4 \\\n",
                    "  --epochs=3\n", "import torch\n", "files = !ls\n", "torch.zeros?\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [],
         "source": ["%%bash\n", "echo hello\n", "if [ 1 ]; then echo x; fi\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [],
         "source": ["for i in range(2):\n", "    %time x = 1\n", "state = torch.load('m.pt')\n"]},
        # automagics (no `%`, as Colab notebooks write them); `cd = 3` and `ls` are Python
        {"cell_type": "code", "metadata": {}, "outputs": [],
         "source": ["cd DeOldify\n", "pip install -r requirements.txt\n", "cd = 3\n", "ls\n",
                    "other = torch.load('n.pt')\n"]},
    ]
    doc = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(doc))
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR102",), jobs=1))
    assert report.errors == []
    assert [(p.cell, p.line) for f in report.findings for p in (f.parts or (f,))] == [(3, 3), (4, 5)]


def test_engine_crash_loses_one_file_not_the_run(tmp_path, monkeypatch):
    import torchreview.engine.runner as runner
    from torchreview.engine.runner import Settings, run_review

    (tmp_path / "a.py").write_text(TORCH_BUG)
    (tmp_path / "b.py").write_text(TORCH_BUG)
    real = runner.collect_facts

    def flaky(ctx):
        if ctx.path.endswith("a.py"):
            raise KeyError("boom")
        return real(ctx)

    monkeypatch.setattr(runner, "collect_facts", flaky)
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR102",), jobs=1))
    assert [e.message for e in report.errors if e.path.endswith("a.py")] == [
        "internal error while reviewing this file (KeyError: 'boom'); not reviewed"]
    assert [f.path.endswith("b.py") for f in report.findings] == [True]


def test_crash_in_a_project_rule_is_an_error_entry(tmp_path, monkeypatch):
    from torchreview.catalog import rule_by_code
    from torchreview.engine.runner import Settings, run_review

    rule = rule_by_code()["TR305"]

    def boom(self, project):
        raise ValueError("kaboom")

    (tmp_path / "a.py").write_text(TORCH_BUG)
    monkeypatch.setattr(rule, "check_project", boom)
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR305", "TR102"), jobs=1))
    assert any("internal error in project rule TR305" in e.message for e in report.errors)
    assert [f.code for f in report.findings] == ["TR102"]
