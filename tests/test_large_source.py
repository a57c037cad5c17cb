"""Large source files: skipped with a one-line note above ``max-source-size``, never a long run."""

from __future__ import annotations

import json

import pytest

from torchreview.cli import main
from torchreview.engine.runner import DEFAULT_MAX_SOURCE_SIZE

TORCH_LOAD = "import torch\nstate = torch.load('m.pt')\n"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(TORCH_LOAD)
    return tmp_path


def config(tree, text: str) -> None:
    (tree / "pyproject.toml").write_text(f"[tool.torchreview]\n{text}\n")


def check(capsys, *argv) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def generated(lines: int) -> str:
    # a generated module: torch code repeated (would be reviewed, with findings, if not skipped)
    return TORCH_LOAD + "".join(f"w{i} = torch.load('w{i}.pt')\n" for i in range(lines))


def test_file_over_the_default_limit_is_skipped_with_one_line(tree, capsys):
    big = tree / "generated.py"
    big.write_text(generated(DEFAULT_MAX_SOURCE_SIZE // 30))
    assert big.stat().st_size > DEFAULT_MAX_SOURCE_SIZE
    code, out, err = check(capsys, ".", "--select", "TR102", "--no-cache", "--no-color")
    notes = [line for line in out.splitlines() if "generated.py" in line]
    assert notes == [f"note: generated.py: too large for review ({big.stat().st_size / 2**20:.1f} MB of "
                     f"source, max-source-size is 2.0 MB); skipped"]
    assert "a.py:2:9: TR102" in out  # the run moved on
    assert code == 1 and err == ""  # exit code from the findings, not an error


def test_limit_is_configurable_and_zero_means_none(tree, capsys):
    (tree / "b.py").write_text(generated(100))  # ~3 kB
    config(tree, "max-source-size = 1000")
    _, out, _ = check(capsys, ".", "--select", "TR102", "--format", "json", "--no-cache")
    paths = {f["path"] for f in json.loads(out)["findings"]}
    assert paths == {"a.py"}
    _, out, _ = check(capsys, ".", "--select", "TR102", "--no-cache")
    assert "note: b.py: too large for review (2.7 kB of source, max-source-size is 1000 bytes); skipped" in out
    config(tree, "max-source-size = 0")
    _, out, _ = check(capsys, ".", "--select", "TR102", "--format", "json", "--no-cache")
    found = json.loads(out)["findings"]  # b.py's load repeats a.py's line: a related location
    assert {f["path"] for f in found} | {r["path"] for f in found for r in f.get("related", ())} == {"a.py", "b.py"}


def test_the_note_survives_the_cache(tree, capsys):
    (tree / "b.py").write_text(generated(100))
    config(tree, "max-source-size = 1000")
    for _ in range(2):  # second run: served from the cache where possible
        _, out, _ = check(capsys, ".", "--select", "TR102")
        assert "note: b.py: too large for review" in out


@pytest.mark.parametrize("value", ["-1", "'2MB'", "true"])
def test_bad_limit_is_a_config_error(tree, capsys, value):
    config(tree, f"max-source-size = {value}")
    code, _, err = check(capsys, ".", "--no-cache")
    assert code == 2 and "max-source-size" in err and "pyproject.toml:2" in err


def test_notebook_limit_counts_code_not_outputs(tree, capsys):
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": TORCH_LOAD,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "x" * 5000}]}
    (tree / "nb.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                               "nbformat_minor": 5}))
    config(tree, "max-source-size = 1000")
    _, out, _ = check(capsys, "nb.ipynb", "--select", "TR102", "--format", "json", "--no-cache")
    assert [f["path"] for f in json.loads(out)["findings"]] == ["nb.ipynb"]
    config(tree, "max-source-size = 20")
    _, out, _ = check(capsys, "nb.ipynb", "--select", "TR102", "--no-cache")
    assert "note: nb.ipynb: too large for review" in out and "of code cells" in out


def test_fix_leaves_a_too_large_file_untouched(tree, capsys):
    (tree / "b.py").write_text(generated(100))
    before = (tree / "b.py").read_bytes()
    config(tree, "max-source-size = 1000")
    check(capsys, ".", "--select", "TR102", "--fix", "--unsafe-fixes", "--no-cache")
    assert (tree / "b.py").read_bytes() == before
    assert "weights_only=True" in (tree / "a.py").read_text()


def test_file_over_the_read_limit_is_a_note_too(tree, capsys):
    from torchreview.engine.source import MAX_FILE_BYTES

    big = tree / "huge_generated.py"
    with open(big, "wb") as fh:  # sparse: no 20 MB written to disk
        fh.truncate(MAX_FILE_BYTES + 1)
    code, out, err = check(capsys, ".", "--select", "TR102", "--no-cache", "--no-color")
    assert "note: huge_generated.py: too large for review (20.0 MB of source, max-source-size is 2.0 MB)" in out
    assert code == 1 and err == "" and "a.py:2:9: TR102" in out
