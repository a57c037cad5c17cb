"""pre-commit: `check --project`, the hooks, and a real `pre-commit` run in a
temporary git repository using the README's configuration as written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from readme_blocks import block
from torchreview.cli import main
from torchreview.hooks import since_ref

BIN = os.path.dirname(sys.executable)  # where the installed `torchreview` and `python` are
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "GIT_CONFIG_NOSYSTEM": "1"}
FIT = ("\n\ndef fit(model, loader, optimizer):\n    for x, y in loader:\n"
       "        loss = torch.nn.functional.mse_loss(model(x), y)\n        loss.backward()\n        optimizer.step()\n")
OLD_BUG = "import torch\n" + FIT  # TR401 (gradients never reset) on the `for` line
CLEAN = "import torch\n\n\ndef double(x):\n    return x * 2\n"
DOWNLOAD = ("import torch\nimport urllib.request\n\n\ndef fetch(url, dest):\n"
            "    urllib.request.urlretrieve(url, dest)\n    return torch.load(dest, weights_only=True)\n")
VERIFY = ("import hashlib\n\n\ndef verify(path, digest):\n    with open(path, 'rb') as handle:\n"
          "        return hashlib.sha256(handle.read()).hexdigest() == digest\n")


def env(tmp_path) -> dict:
    home = tmp_path.parent / (tmp_path.name + "-home")
    home.mkdir(exist_ok=True)
    return {**os.environ, **GIT_ENV, "HOME": str(home), "PRE_COMMIT_HOME": str(home / "pre-commit"),
            "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), "NO_COLOR": "1"}


def run(cwd, *args, check=True, environ=None):
    proc = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, env=environ, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def codes(capsys, *argv) -> tuple[int, list[tuple[str, str]]]:
    code = main(["check", *argv, "--output-format", "json"])
    report = json.loads(capsys.readouterr().out)
    return code, sorted((f["path"], f["code"]) for f in report["findings"])


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "old.py").write_text(OLD_BUG)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "download.py").write_text(DOWNLOAD)
    (tmp_path / "verify.py").write_text(VERIFY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_project_option_reports_only_the_named_files(project, capsys):
    code, found = codes(capsys, ".", "--no-cache")
    assert code == 1 and ("old.py", "TR401") in found  # the project does have an old finding
    assert codes(capsys, "--project", ".", "clean.py", "--no-cache") == (0, [])
    code, found = codes(capsys, "--project", ".", "old.py", "clean.py", "--no-cache")
    assert code == 1 and found == [("old.py", "TR401")]


def test_project_option_knows_the_rest_of_the_project(project, capsys):
    # TR105 (download without a checksum) is a project rule: verify.py checks hashes. The
    # download is read weights-only, so TR105 is advice here (of medium confidence, as a project
    # rule judging from an absence): shown with --show-advice --min-confidence medium.
    shown = ("--show-advice", "--min-confidence", "medium")
    code, found = codes(capsys, "download.py", "--no-cache", *shown)  # alone, it looks unverified
    assert ("download.py", "TR105") in found
    code, found = codes(capsys, "--project", ".", "download.py", "--no-cache", *shown)
    assert "TR105" not in {c for _, c in found}
    os.remove("verify.py")
    code, found = codes(capsys, "--project", ".", "download.py", "--no-cache", *shown)
    assert ("download.py", "TR105") in found  # and a project finding anchored in a named file is kept


def test_project_facts_come_from_the_cache(project, capsys):
    main(["check", "--project", ".", "clean.py"])
    first = capsys.readouterr().out
    assert "3 other files under . (0 from the cache)" in first
    main(["check", "--project", ".", "clean.py"])  # facts-only entries were cached
    assert "3 other files under . (3 from the cache)" in capsys.readouterr().out
    main(["check", "old.py"])  # a full review's entry serves too
    capsys.readouterr()
    (project / "verify.py").write_text(VERIFY + "\n# edited\n")
    main(["check", "--project", ".", "clean.py"])
    assert "3 other files under . (2 from the cache)" in capsys.readouterr().out


def test_project_option_refuses_a_missing_folder(project, capsys):
    assert main(["check", "--project", "nowhere", "clean.py"]) == 2
    assert "--project: 'nowhere' is not a folder" in capsys.readouterr().err


def test_since_hook_ref(monkeypatch):
    monkeypatch.delenv("PRE_COMMIT_FROM_REF", raising=False)
    assert since_ref(["--quiet"]) == ("origin/HEAD...", ["--quiet"])
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", "abc123")
    assert since_ref([]) == ("abc123", [])
    assert since_ref(["--base", "origin/main...", "-q"]) == ("origin/main...", ["-q"])
    assert since_ref(["--base=v1"]) == ("v1", [])


def test_shipped_hooks_file_names_both_hooks():
    import yaml  # comes with pre-commit (test extra)

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    hooks = {h["id"]: h for h in yaml.safe_load(open(os.path.join(root, ".pre-commit-hooks.yaml")))}
    assert hooks["torchreview"]["entry"] == "torchreview check --project ."
    assert hooks["torchreview"].get("pass_filenames", True) is True
    assert hooks["torchreview-since"]["entry"] == "python -m torchreview.hooks since"
    readme = yaml.safe_load(block("pre-commit", "# .pre-commit-config.yaml"))
    local = {h["id"]: h for h in readme["repos"][0]["hooks"]}
    for hook_id in hooks:  # the README's local hooks run the same commands
        assert local[hook_id]["entry"] == hooks[hook_id]["entry"]


@pytest.mark.skipif(shutil.which("pre-commit", path=BIN) is None or shutil.which("git") is None,
                    reason="needs pre-commit (test extra) and git")
def test_real_pre_commit_with_the_readme_configuration(tmp_path):
    environ = env(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    run(repo, "git", "init", "-q", environ=environ)
    (repo / "old.py").write_text(OLD_BUG)  # an old finding elsewhere in the project
    (repo / "pyproject.toml").write_text("[tool.torchreview]\ntrack-record = false\n")  # TR401 is capped
    (repo / "clean.py").write_text(CLEAN)
    (repo / "download.py").write_text(DOWNLOAD)
    (repo / "verify.py").write_text(VERIFY)
    (repo / ".pre-commit-config.yaml").write_text(block("pre-commit", "# .pre-commit-config.yaml"))
    run(repo, "git", "add", ".", environ=environ)
    run(repo, "git", "commit", "-q", "-m", "start", environ=environ)  # before the hook is installed
    pre_commit = shutil.which("pre-commit", path=BIN)
    run(repo, pre_commit, "install", environ=environ)
    assert run(repo, "torchreview", "check", ".", "--no-cache", check=False, environ=environ).returncode == 1

    # A commit touching a clean file passes, although old.py still has its finding.
    (repo / "clean.py").write_text(CLEAN + "\n\ndef triple(x):\n    return x * 3\n")
    run(repo, "git", "add", "clean.py", environ=environ)
    ok = run(repo, "git", "commit", "-m", "triple", check=False, environ=environ)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "torchreview" in ok.stdout + ok.stderr and "Passed" in ok.stdout + ok.stderr  # the hook did run

    # A commit adding a bug fails and names it.
    (repo / "clean.py").write_text(CLEAN + FIT)
    run(repo, "git", "add", "clean.py", environ=environ)
    bad = run(repo, "git", "commit", "-m", "load", check=False, environ=environ)
    said = bad.stdout + bad.stderr  # git shows the hook's output on standard error
    assert bad.returncode != 0
    assert "clean.py" in said and "TR401" in said and "old.py" not in said
    assert run(repo, "git", "log", "--format=%s", environ=environ).stdout.split() == ["triple", "start"]

    # The CI hook: only the lines changed since --from-ref.
    run(repo, "git", "commit", "-q", "--no-verify", "-m", "load", environ=environ)
    since = run(repo, pre_commit, "run", "torchreview-since", "--hook-stage", "manual",
                "--from-ref", "HEAD~1", "--to-ref", "HEAD", check=False, environ=environ)
    assert since.returncode == 1 and "clean.py" in since.stdout and "TR401" in since.stdout
    assert "old.py" not in since.stdout
    (repo / "clean.py").write_text("# Small helpers.\n" + CLEAN + FIT)
    run(repo, "git", "commit", "-q", "--no-verify", "-am", "doc", environ=environ)
    quiet = run(repo, pre_commit, "run", "torchreview-since", "--hook-stage", "manual",
                "--from-ref", "HEAD~1", "--to-ref", "HEAD", "--verbose", check=False, environ=environ)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr  # the bug is older than the change
    assert "Reviewed the change since HEAD~1" in quiet.stdout


def test_project_option_keeps_excluded_files_excluded(project, capsys):
    # pre-commit names every committed file; the project's `exclude` still applies (ruff's --force-exclude)
    (project / "pyproject.toml").write_text('[tool.torchreview]\nexclude = ["vendor"]\n')
    (project / "vendor").mkdir()
    (project / "vendor" / "third.py").write_text(OLD_BUG)
    assert codes(capsys, "vendor/third.py", "--no-cache") == (1, [("vendor/third.py", "TR401")])  # named: reviewed
    code = main(["check", "--project", ".", "vendor/third.py", "clean.py", "--no-cache"])
    out = capsys.readouterr().out
    assert code == 0 and "TR401" not in out
    assert "note: vendor/third.py: excluded by the project's configuration; not reviewed" in out


def test_project_option_and_standard_input_is_a_usage_error(project, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"import torch\n")))
    assert main(["check", "-", "--stdin-filename", "x.py", "--project", "."]) == 2
    assert "--project cannot be used with standard input" in capsys.readouterr().err


def test_one_files_facts_for_the_language_server(project):
    from dataclasses import replace

    from torchreview.commands import build_settings
    from torchreview.cli import _parser
    from torchreview.project_scope import _facts_of

    _, settings, _ = build_settings(_parser().parse_args(["check", "."]))
    facts_only = replace(settings, rule_codes=())
    facts, from_cache = _facts_of("verify.py", "verify.py", settings, facts_only)
    assert facts is not None and facts.path == "verify.py" and not from_cache
    again, from_cache = _facts_of("verify.py", "verify.py", settings, facts_only)
    assert from_cache and again.path == "verify.py"
