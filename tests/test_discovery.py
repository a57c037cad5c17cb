"""Discovery: git's ignore rules (compared with git itself), symlinked folders,
virtual environments under any name, and files that are not regular files."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from torchreview.cli import main
from torchreview.engine.discovery import discover

TORCH_BUG = "import torch\nstate = torch.load('m.pt')\n"
GIT = shutil.which("git")

# Root .gitignore: one tricky form per line (git's own rules decide what is right).
ROOT_IGNORE = [
    "# a comment line",
    r"\#hash.py",                 # escaped '#': a literal name
    r"\!bang.py",                 # escaped '!': a literal name
    "   lead.py",                 # leading spaces are part of the pattern
    "*.log",
    "!keep.log",                  # negation after a glob
    "/anchored.py",               # leading slash: only at the root
    "docs/*.py",                  # middle slash: anchored, one level
    "**/gen_*.py",                # leading **/: any depth
    "cache/",                     # directory only
    "out/**",                     # everything inside, not the folder itself
    "!out/keep.py",               # ... so this can be re-included
    "a/**/b.py",                  # zero or more folders
    "data[0-9].py",               # range
    "file[!a-c].py",              # negated class
    "alt[^x].py",                 # '^' negates too
    "tmp?.py",                    # one character
    "[[:upper:]]*.py",            # POSIX class
    "[[:digit:]][[:alpha:]].py",
    "trailing.py   ",             # trailing spaces are dropped
    "space\\ ",                   # ... unless escaped
    "ab**cd.py",                  # '**' inside a name is '*'
    "weird[].py",                 # unterminated class: never matches
    "br[]]acket.py",              # ']' first in a class is literal
    "dash[a-].py",                # '-' last in a class is literal
    "lib/*/tmp.py",
    "x/y.py",                     # middle slash
    "deep/**/node.py",
    "**/logs",                    # a name at any depth (file or folder)
    "nested/",
    "!nested/keep.py",            # cannot re-include below an ignored folder
    "*.PY",                       # case matters
    "only_dir_pattern/",          # a file of that name stays
    "pkg/**/*.pyc",
    "star/*",
    "!star/kept.py",
    "q\\?.py",                    # escaped '?': literal
    "range[z-a].py",              # reversed range matches nothing
    "cls[[:bogus:]].py",          # unknown class: never matches
    "*~",
    ".*.swp",
    "semi/**/",                   # trailing /**/: folders below semi
    "**/mid/**/leaf.py",
    "crlf.py\r",                  # a CR before the newline is dropped
    "gen**/*.txt",                # '**' right after the literal prefix counts as delimited (git)
]
SUB_IGNORE = [
    "*.py",
    "!important.py",
    "/local.py",                  # anchored to sub/
    "!/sub_keep*.py",
    "inner/",
    "!*.pyi",
    "deeper/**/x.py",
]
INFO_EXCLUDE = ["excluded_by_info.py", "!kept_by_info.log"]

FILES = [
    "#hash.py", "hash.py", "!bang.py", "bang.py", "   lead.py", "lead.py",
    "a.log", "keep.log", "sub/b.log", "kept_by_info.log",
    "anchored.py", "sub/anchored.py", "docs/d.py", "docs/inner/d.py", "other/docs/d.py",
    "gen_a.py", "x/gen_b.py", "x/y/gen_c.py", "gen.py",
    "cache/c.py", "other/cache", "deep/cache/c.py",
    "out/o.py", "out/keep.py", "out/sub/o.py", "outer.py",
    "a/b.py", "a/x/b.py", "a/x/y/b.py", "b.py", "other/a/b.py",
    "data1.py", "dataX.py", "data10.py", "filed.py", "filea.py", "altx.py", "alty.py",
    "tmp1.py", "tmp.py", "tmp12.py", "Upper.py", "lower.py", "1a.py", "11.py",
    "trailing.py", "space ", "space", "abcd.py", "abXYcd.py", "ab/cd.py",
    "weird[].py", "weird.py", "br]acket.py", "brXacket.py", "dasha.py", "dash-.py", "dashb.py",
    "lib/m/tmp.py", "lib/m/n/tmp.py", "lib/tmp.py", "x/y.py", "z/x/y.py",
    "deep/node.py", "deep/q/r/node.py", "node.py",
    "logs", "m/logs/l.py", "m/logslog.py",
    "nested/n.py", "nested/keep.py",
    "UP.PY", "up.py", "only_dir_pattern", "only_dir_pattern2/only_dir_pattern/f.py",
    "pkg/a.pyc", "pkg/x/y/a.pyc", "pkg/a.py",
    "star/s.py", "star/kept.py", "star/inner/s.py",
    "q?.py", "qa.py", "rangem.py", "clsa.py", "backup.py~", ".x.py.swp", "x.py.swp",
    "semi/s.py", "semi/f/s.py", "k/mid/leaf.py", "mid/p/leaf.py", "crlf.py",
    "excluded_by_info.py", "gen.txt", "gen/y.txt", "gen/x/y.txt", "genx/y.txt", "other/gen.txt",
    "sub/s.py", "sub/important.py", "sub/local.py", "sub/t/local.py", "sub/sub_keep1.py",
    "sub/stub.pyi", "sub/inner/i.pyi", "sub/deeper/a/x.py", "sub/deeper/x.pyi",
    "sub/t/important.py",
]


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    env = dict(os.environ, HOME=str(repo), XDG_CONFIG_HOME=str(repo), GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL=os.devnull)
    proc = subprocess.run([GIT, *args], cwd=repo, input=stdin, capture_output=True, env=env, timeout=60)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return proc.stdout


@pytest.fixture
def ignore_repo(tmp_path):
    if GIT is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_bytes(("\n".join(ROOT_IGNORE) + "\n").encode())
    for rel in FILES:
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    (repo / "sub" / ".gitignore").write_text("\n".join(SUB_IGNORE))  # no final newline
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("\n".join(INFO_EXCLUDE) + "\n")
    return repo


def _all_paths(repo: Path) -> list[str]:
    out = []
    for root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            out.append(os.path.relpath(os.path.join(root, name), repo).replace(os.sep, "/"))
    return sorted(out)


def test_ignore_decisions_match_git_check_ignore(ignore_repo):
    from torchreview.engine.gitignore import IgnoreRules

    assert len([line for line in ROOT_IGNORE + SUB_IGNORE + INFO_EXCLUDE if not line.startswith("#")]) >= 40
    paths = _all_paths(ignore_repo)
    raw = _git(ignore_repo, "check-ignore", "--stdin", "-z", "--no-index",
               stdin=b"".join(p.encode() + b"\0" for p in paths))
    direct = {p.decode() for p in raw.split(b"\0") if p}
    # git never looks inside an ignored folder: everything below one is ignored too
    git_says = {p for p in paths if any(p == d or p.startswith(d + "/") for d in direct)}
    rules = IgnoreRules(str(ignore_repo))
    ours = {p for p in paths if rules.ignored_path(str(ignore_repo / p), (ignore_repo / p).is_dir())}
    assert ours == git_says, (sorted(ours - git_says), sorted(git_says - ours))
    assert 40 <= len(git_says) and len(paths) - len(git_says) >= 40  # a real mix either way


def test_discovered_files_match_git_ls_files(ignore_repo, monkeypatch):
    listed = _git(ignore_repo, "ls-files", "-z", "--others", "--exclude-standard")
    git_files = {p.decode() for p in listed.split(b"\0") if p} - {".gitignore", "sub/.gitignore"}
    monkeypatch.chdir(ignore_repo)
    found = discover(["."], is_artifact=lambda path: True)
    ours = {shown.replace(os.sep, "/") for _, shown in found.sources + found.artifacts}
    ours -= {".gitignore", "sub/.gitignore"}
    assert not found.errors
    assert ours == git_files, (sorted(ours - git_files), sorted(git_files - ours))


def test_gitignore_of_a_parent_folder_applies_to_a_subfolder_run(ignore_repo, monkeypatch):
    monkeypatch.chdir(ignore_repo / "sub")
    found = discover(["."])
    shown = {s for _, s in found.sources}
    assert shown == {"important.py", "sub_keep1.py", "stub.pyi", os.path.join("deeper", "x.pyi"),
                     os.path.join("t", "important.py")}


def test_gitignore_honoured_outside_a_git_repository(tmp_path, monkeypatch):
    (tmp_path / ".gitignore").write_text("generated/\n*_pb2.py\n")
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "g.py").write_text(TORCH_BUG)
    (tmp_path / "api_pb2.py").write_text(TORCH_BUG)
    (tmp_path / "main.py").write_text(TORCH_BUG)
    monkeypatch.chdir(tmp_path)
    assert [s for _, s in discover(["."]).sources] == ["main.py"]
    # a file named on the command line is always reviewed
    assert [s for _, s in discover(["api_pb2.py"]).sources] == ["api_pb2.py"]


def test_symlinked_folders_that_loop_or_leave_the_tree_are_skipped_quietly(tmp_path, monkeypatch, capsys):
    tree = tmp_path / "tree"
    (tree / "pkg" / "inner").mkdir(parents=True)
    (tree / "pkg" / "m.py").write_text(TORCH_BUG)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "far.py").write_text(TORCH_BUG)
    os.symlink(tree, tree / "pkg" / "inner" / "up")           # loop to the top
    os.symlink(tree / "pkg", tree / "pkg" / "self")           # loop to the parent
    os.symlink(outside, tree / "elsewhere")                    # leaves the tree
    os.symlink(tree / "pkg" / "inner", tree / "alias")         # inside, already walked
    monkeypatch.chdir(tree)
    found = discover(["."])
    assert found.errors == []
    assert [s for _, s in found.sources] == [os.path.join("pkg", "m.py")]
    code = main(["check", ".", "--select", "TR102", "--no-cache", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == [] and code == 1


def test_venv_with_any_name_is_excluded_and_its_lib64_link_is_no_loop(tmp_path, monkeypatch, capsys):
    venv = tmp_path / "my-tools-3.12"
    site = venv / "lib" / "python3.12" / "site-packages" / "thing"
    site.mkdir(parents=True)
    (site / "mod.py").write_text(TORCH_BUG)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    os.symlink("lib", venv / "lib64")
    (venv / "bin").mkdir()
    os.symlink(sys.executable, venv / "bin" / "python")
    (tmp_path / "train.py").write_text(TORCH_BUG)
    monkeypatch.chdir(tmp_path)
    code = main(["check", ".", "--select", "TR102", "--no-cache", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == []
    assert {f["path"] for f in data["findings"]} == {"train.py"}
    assert code == 1


def _special_files(root: Path) -> list[str]:
    os.mkfifo(root / "x.py")
    os.mkfifo(root / "weights.pt")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "server.py"))
    sock.close()
    return ["x.py", "weights.pt", "server.py"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_socket_in_tree_are_skipped_with_a_note_and_do_not_hang(tmp_path):
    names = _special_files(tmp_path)
    (tmp_path / "good.py").write_text(TORCH_BUG)
    proc = subprocess.run([sys.executable, "-m", "torchreview", "check", ".", "--select", "TR102,TR108",
                           "--no-cache", "--jobs", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "good.py:2" in proc.stdout
    for name in names:
        notes = [line for line in proc.stdout.splitlines() if line.startswith(f"note: {name}:")]
        assert len(notes) == 1 and "not a regular file; skipped" in notes[0], proc.stdout
    assert "a FIFO" in proc.stdout and "a socket" in proc.stdout
    assert proc.returncode == 1  # findings in good.py; the skipped files are no error


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_and_devices_named_explicitly_are_one_line_errors(tmp_path):
    _special_files(tmp_path)
    kinds = {"x.py": "a FIFO (named pipe)", "weights.pt": "a FIFO (named pipe)", "server.py": "a socket",
             os.devnull: "a character device"}
    for command, targets in (("check", ["x.py", os.devnull, "server.py", "--no-cache"]),
                             ("scan", ["x.py", "weights.pt", os.devnull, "server.py"])):
        proc = subprocess.run([sys.executable, "-m", "torchreview", command, *targets],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
        errors = [line for line in proc.stdout.splitlines() if line.startswith("error:")]
        named = [t for t in targets if not t.startswith("--")]
        assert len(errors) == len(named), (command, proc.stdout)
        for target in named:
            line = next(e for e in errors if e.startswith(f"error: {target}: "))
            assert f"{kinds[target]}, not a regular file" in line, (command, target, line)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_reading_a_fifo_by_name_never_blocks(tmp_path):
    from torchreview.engine.source import LoadError, read_bytes

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(tmp_path / "pipe.py")
    with pytest.raises(LoadError, match="FIFO"):
        read_bytes(str(tmp_path / "pipe.py"))


def test_random_patterns_one_at_a_time_match_git(tmp_path):
    """Fixed-seed random patterns built from the tricky pieces, each alone in a
    .gitignore, over a tree of look-alike names: git decides, we must agree."""
    import random

    from torchreview.engine.gitignore import IgnoreRules

    if GIT is None:
        pytest.skip("git is not installed")
    rng = random.Random(12)
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    folders, names = ["a", "b", "ab", "d.d", "A"], ["a.py", "b.py", "ab.py", "x.txt", "A.py", ".h.py", "[a].py", "a b"]
    for _ in range(60):
        parts = [rng.choice(folders) for _ in range(rng.randint(0, 3))] + [rng.choice(names)]
        path = repo.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    paths = _all_paths(repo)
    pieces = ["a", "b", "*", "**", "?", "/", "[ab]", "[!a]", "[a-b]", ".py", "\\[a]", "[[:upper:]]", "d.d",
              "*.py", "**/", "/**", "\\ ", " "]
    nontrivial = 0
    for _ in range(100):
        pattern = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 3)))
        (repo / ".gitignore").write_text(pattern + "\n")
        raw = _git(repo, "check-ignore", "--stdin", "-z", "--no-index",
                   stdin=b"".join(p.encode() + b"\0" for p in paths))
        direct = {p.decode() for p in raw.split(b"\0") if p}
        git_says = {p for p in paths if any(p == d or p.startswith(d + "/") for d in direct)}
        rules = IgnoreRules(str(repo))
        ours = {p for p in paths if rules.ignored_path(str(repo / p), (repo / p).is_dir())}
        assert ours == git_says, (pattern, sorted(ours ^ git_says))
        nontrivial += 0 < len(git_says) < len(paths)
    assert nontrivial >= 30, nontrivial  # many patterns split the tree: the comparison means something


def test_linked_worktree_exclude_and_symlinked_gitignore_as_git_has_them(tmp_path, monkeypatch):
    """A linked work tree's `.git` is a file: info/exclude lives in the common git
    folder. A `.gitignore` that is a symbolic link is not read (git >= 2.32)."""
    main_repo = tmp_path / "main"
    main_repo.mkdir()
    _git(main_repo, "init", "-q")
    (main_repo / "seed.txt").write_text("x\n")
    _git(main_repo, "add", "seed.txt")
    _git(main_repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "seed")
    _git(main_repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    wt = tmp_path / "wt"
    assert (wt / ".git").is_file()
    (main_repo / ".git" / "info").mkdir(exist_ok=True)
    (main_repo / ".git" / "info" / "exclude").write_text("secret_*.py\n")
    (tmp_path / "rules").write_text("linked.py\n")
    (wt / "pkg").mkdir()
    os.symlink(tmp_path / "rules", wt / "pkg" / ".gitignore")
    for name in ("secret_a.py", "kept.py", "pkg/linked.py"):
        (wt / name).write_text(TORCH_BUG)
    listed = _git(wt, "ls-files", "-z", "--others", "--exclude-standard")
    git_files = {p.decode() for p in listed.split(b"\0") if p.endswith(b".py")}
    monkeypatch.chdir(wt)
    ours = {s.replace(os.sep, "/") for _, s in discover(["."]).sources}
    assert ours == git_files == {"kept.py", "pkg/linked.py"}


def test_macos_archive_debris_is_skipped_quietly(tmp_path):
    """A zip made on a Mac unpacks a `__MACOSX/` folder of AppleDouble files (`._train.py`, binary
    resource forks) and may leave `._name.py` files beside the real ones: neither is Python, and
    each used to be a "contains NUL bytes" error (12-15 per course repository in blind test 126).
    A named file is still reviewed (explicit paths are always taken)."""
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "train.py").write_text(TORCH_BUG)
    fork = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        \x00\x02"
    (tmp_path / "hw" / "._train.py").write_bytes(fork)
    (tmp_path / "__MACOSX" / "hw").mkdir(parents=True)
    (tmp_path / "__MACOSX" / "hw" / "._train.py").write_bytes(fork)
    found = discover([str(tmp_path)])
    assert [os.path.basename(real) for real, _ in found.sources] == ["train.py"]
    assert not found.errors
    named = discover([str(tmp_path / "hw" / "._train.py")])
    assert len(named.sources) == 1
