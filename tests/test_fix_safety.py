"""--fix cannot lose work: symlinks are fixed through (the link stays a link),
hard links stay one file, and a file edited while --fix runs is left alone."""

from __future__ import annotations

import os
import stat

import pytest

import torchreview.fixer as fixer
from torchreview.cli import main

BUGGY = "import torch\n\nstate = torch.load('model.pt')\n"
FIXED = "import torch\n\nstate = torch.load('model.pt', weights_only=True)\n"
ARGS = ["--select", "TR102", "--fix", "--unsafe-fixes", "--no-cache", "--jobs", "1"]


def _fix(path, capsys) -> tuple[int, str]:
    code = main(["check", str(path), *ARGS])
    return code, capsys.readouterr().err


def test_fix_through_a_symlink_writes_the_target_once_and_keeps_the_link(tmp_path, monkeypatch, capsys):
    real_dir = tmp_path / "shared"
    real_dir.mkdir()
    target = real_dir / "model_io.py"
    target.write_text(BUGGY)
    os.chmod(target, 0o750)
    tree = tmp_path / "tree"
    tree.mkdir()
    os.symlink(target, tree / "model_io.py")   # leaves the tree
    os.symlink("model_io.py", tree / "alias.py")  # a second link to the same file
    monkeypatch.chdir(tree)
    code, err = _fix(".", capsys)
    assert (tree / "model_io.py").is_symlink() and (tree / "alias.py").is_symlink()
    assert os.readlink(tree / "model_io.py") == str(target)
    assert target.read_text() == FIXED
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert "Fixed 1 finding in 1 file." in err, err
    assert not [p for p in os.listdir(real_dir) + os.listdir(tree) if p.startswith(".torchreview-")]
    assert code == 0


def test_fix_keeps_hard_links_one_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.py").write_bytes(BUGGY.replace("\n", "\r\n").encode())
    os.link(tmp_path / "a.py", tmp_path / "b.py")
    os.chmod(tmp_path / "a.py", 0o640)
    monkeypatch.chdir(tmp_path)
    code, err = _fix(".", capsys)
    a, b = (tmp_path / "a.py").stat(), (tmp_path / "b.py").stat()
    assert (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) and a.st_nlink == 2
    assert (tmp_path / "a.py").read_bytes() == FIXED.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(a.st_mode) == 0o640
    assert "Fixed 1 finding in 1 file." in err, err
    assert sorted(os.listdir(tmp_path)) == ["a.py", "b.py"]
    assert code == 0


def _edit_after_fix(monkeypatch, edit):
    """The seam: the fixed text is computed from what was read; the file changes
    before it is written."""
    real_fix_file = fixer.fix_file

    def fix_then_edit(real, *args, **kwargs):
        outcome = real_fix_file(real, *args, **kwargs)
        edit(real)
        return outcome

    monkeypatch.setattr(fixer, "fix_file", fix_then_edit)


def test_file_edited_while_fixing_is_skipped_and_the_edit_kept(tmp_path, monkeypatch, capsys):
    path = tmp_path / "train.py"
    path.write_text(BUGGY)
    (tmp_path / "other.py").write_text(BUGGY)
    edited = BUGGY + "print('my new line')\n"

    def edit(real):
        if real.endswith("train.py"):
            with open(real, "w") as handle:
                handle.write(edited)

    _edit_after_fix(monkeypatch, edit)
    monkeypatch.chdir(tmp_path)
    code, err = _fix(".", capsys)
    assert path.read_text() == edited
    assert (tmp_path / "other.py").read_text() == FIXED
    lines = [line for line in err.splitlines() if "train.py" in line]
    assert lines == ["torchreview: train.py: changed on disk since it was read; "
                     "fixes not applied, the file is kept as it is now"]
    assert "Fixed 1 finding in 1 file." in err
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".torchreview-")]
    assert code == 1  # train.py still has its finding


def test_same_size_same_mtime_edit_is_caught_by_the_hash(tmp_path, monkeypatch, capsys):
    path = tmp_path / "train.py"
    path.write_text(BUGGY)

    def edit(real):
        before = os.stat(real)
        with open(real, "r+") as handle:
            handle.write("import TORCH")  # same length
        os.utime(real, ns=(before.st_atime_ns, before.st_mtime_ns))

    _edit_after_fix(monkeypatch, edit)
    monkeypatch.chdir(tmp_path)
    _, err = _fix(".", capsys)
    assert path.read_text() == BUGGY.replace("import torch", "import TORCH")
    assert "changed on disk since it was read" in err


@pytest.mark.parametrize("change", ["replaced", "deleted"])
def test_file_replaced_or_deleted_while_fixing_is_left_alone(tmp_path, monkeypatch, capsys, change):
    path = tmp_path / "train.py"
    path.write_text(BUGGY)

    def edit(real):
        os.unlink(real)
        if change == "replaced":  # an editor's atomic save: same text, new inode
            with open(real, "w") as handle:
                handle.write(BUGGY)

    _edit_after_fix(monkeypatch, edit)
    monkeypatch.chdir(tmp_path)
    _, err = _fix(".", capsys)
    assert "train.py: changed on disk since it was read" in err
    assert os.listdir(tmp_path) == (["train.py"] if change == "replaced" else [])
    if change == "replaced":
        assert path.read_text() == BUGGY


def test_edit_during_the_write_itself_is_caught_before_the_rename(tmp_path, monkeypatch, capsys):
    """The last check runs after the temporary file is written: an edit made while
    it was being written is kept too."""
    import torchreview.fix_write as fix_write

    path = tmp_path / "train.py"
    path.write_text(BUGGY)
    real_fsync = fix_write.os.fsync

    def fsync_then_edit(fd):
        real_fsync(fd)
        with open(path, "a") as handle:
            handle.write("# late edit\n")

    monkeypatch.setattr(fix_write.os, "fsync", fsync_then_edit)
    monkeypatch.chdir(tmp_path)
    _, err = _fix(".", capsys)
    monkeypatch.undo()
    assert path.read_text() == BUGGY + "# late edit\n"
    assert "changed on disk since it was read" in err
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".torchreview-")]


def test_failed_in_place_write_of_a_hard_link_restores_the_original(tmp_path, monkeypatch, capsys):
    import torchreview.fix_write as fix_write

    (tmp_path / "a.py").write_text(BUGGY)
    os.link(tmp_path / "a.py", tmp_path / "b.py")
    calls = []

    def failing_write(handle, data):
        calls.append(len(data))
        if len(calls) == 1:  # the fixed text: half of it lands, then the disk is full
            handle.write(data[: len(data) // 2])
            raise OSError(28, "No space left on device")
        handle.write(data)

    monkeypatch.setattr(fix_write, "_write_all", failing_write)
    monkeypatch.chdir(tmp_path)
    code, err = _fix(".", capsys)
    assert (tmp_path / "a.py").read_text() == BUGGY
    assert (tmp_path / "a.py").stat().st_ino == (tmp_path / "b.py").stat().st_ino
    assert "No space left on device" in err and "file left unchanged" in err
    assert sorted(os.listdir(tmp_path)) == ["a.py", "b.py"]
    assert code == 2


def test_in_place_write_that_cannot_be_undone_keeps_a_copy_of_the_original(tmp_path, monkeypatch, capsys):
    import torchreview.fix_write as fix_write

    (tmp_path / "a.py").write_text(BUGGY)
    os.link(tmp_path / "a.py", tmp_path / "b.py")

    def always_failing_write(handle, data):
        handle.write(b"#BROKEN")  # a torn write
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(fix_write, "_write_all", always_failing_write)
    monkeypatch.chdir(tmp_path)
    code, err = _fix(".", capsys)
    copies = [p for p in os.listdir(tmp_path) if p.endswith(".orig")]
    assert len(copies) == 1 and (tmp_path / copies[0]).read_text() == BUGGY
    assert f"its original is kept in {copies[0]}" in err and "file left unchanged" not in err
    assert code == 2


def test_symlink_target_folder_not_writable_refuses_with_a_message(tmp_path, monkeypatch, capsys):
    import tempfile

    target = tmp_path / "real.py"
    target.write_text(BUGGY)
    tree = tmp_path / "tree"
    tree.mkdir()
    os.symlink(target, tree / "link.py")

    def no_temp(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", no_temp)
    monkeypatch.chdir(tree)
    code, err = _fix(".", capsys)
    assert target.read_text() == BUGGY and (tree / "link.py").is_symlink()
    assert "link.py: fixed text not written: Permission denied; file left unchanged" in err
    assert code == 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fix_never_opens_a_fifo(tmp_path, capsys):
    from torchreview.engine.runner import Settings

    os.mkfifo(tmp_path / "pipe.py")
    with pytest.raises(OSError, match="FIFO"):
        fixer.fix_file(str(tmp_path / "pipe.py"), "pipe.py", Settings(rule_codes=("TR102",), jobs=1), unsafe=True)
