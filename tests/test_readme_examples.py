"""Every shell and Python example of the README's Quick start and "Use it
with…" sections runs here, as written, in a temporary folder holding a copy
of examples/ in a git repository with two commits, with the installed
torchreview first on PATH.

A block whose first line is ``# not run by the tests: <why>`` is left out
(long-running, or the test suite itself); the marker is visible in the README.
Commands may exit 0 or 1 (1: findings, as documented); anything else, or a
traceback, fails. In the Quick start, ``pip install .`` is checked to be that
command and not re-run (this environment already has torchreview installed
from this checkout); set TORCHREVIEW_SLOW_TESTS=1 to also run it for real in a
fresh virtual environment (about 30 s).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from readme_blocks import NOT_RUN, block, blocks, subsections

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
SECTIONS = ["Quick start", *subsections("Use it with…")]
RUNNABLE = ("bash", "sh", "python")
EXAMPLES = [(section, i, lang, body) for section in SECTIONS
            for i, (lang, body) in enumerate(blocks(section)) if lang in RUNNABLE]
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "GIT_CONFIG_NOSYSTEM": "1"}
# Exit 1 means findings (documented); a command failing otherwise stops the block.
STRICT = ("trap 'rc=$?; if [ $rc -gt 1 ]; then echo \"README example failed ($rc): $BASH_COMMAND\" >&2; "
          "exit $rc; fi' ERR\n")
PIP_CHECK = ('pip() { [ "$*" = "install ." ] && python -c "import torchreview" && return 0; '
             'echo "unexpected: pip $*" >&2; return 3; }\n')


@pytest.fixture
def sandbox(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    shutil.copytree(os.path.join(ROOT, "examples"), work / "examples",
                    ignore=shutil.ignore_patterns(".torchreview_cache", "__pycache__", "*.html", "*.sarif"))
    env = {**os.environ, **GIT_ENV, "HOME": str(home), "PRE_COMMIT_HOME": str(home / "pre-commit"),
           "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), "NO_COLOR": "1"}
    for key in [k for k in env if k.startswith(("GITHUB_", "INPUT_", "PRE_COMMIT_FROM", "PRE_COMMIT_TO"))]:
        del env[key]

    def git(*args):
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)

    git("init", "-q")
    (work / ".pre-commit-config.yaml").write_text(block("pre-commit", "# .pre-commit-config.yaml"))
    git("add", ".")
    git("commit", "-q", "-m", "examples")
    with open(work / "examples" / "model.py", "a", encoding="utf-8") as handle:
        handle.write("\n# a second commit, for the HEAD~1 examples\n")
    git("commit", "-q", "-am", "second")
    return work, env


def run_block(lang: str, body: str, cwd, env) -> subprocess.CompletedProcess:
    if lang == "python":
        argv = [sys.executable, "-c", body]
    else:
        argv = ["bash", "-c", STRICT + PIP_CHECK + body]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _check_after(section: str, work, proc) -> None:
    """What each section's example promises, beyond running."""
    said = proc.stdout + proc.stderr
    if section == "Quick start":
        assert proc.returncode == 1 and "examples/train.py" in said  # "exits 1 because it has findings"
    elif section == "pre-commit":
        assert os.path.exists(work / ".git" / "hooks" / "pre-commit")
        assert "torchreview" in proc.stdout and "Failed" in proc.stdout  # examples/ has findings
    elif section.startswith("GitHub"):
        summary = (work / "summary.md").read_text()
        assert summary.startswith("## torchreview") and "dry run: would POST" in proc.stdout
        assert (work / "torchreview.sarif").exists()
    elif section == "flake8 set-ups":
        assert proc.returncode == 1 and "examples/finetune.py:34:16: TR411" in proc.stdout
    elif section == "Notebooks":
        assert "examples/explore.ipynb:cell" in proc.stdout and (work / "explore.sarif").exists()
        assert "+++" in proc.stdout  # the --diff
    elif section.startswith("Training runs"):
        assert "TR401" in proc.stdout and (work / "run.html").stat().st_size > 1000


@pytest.mark.parametrize("section,index,lang,body", EXAMPLES,
                         ids=[f"{s}-{i}" for s, i, _, _ in EXAMPLES])
def test_readme_example_runs(section, index, lang, body, sandbox):
    first = body.splitlines()[0].strip()
    if first.startswith(NOT_RUN):
        assert len(first) > len(NOT_RUN) + 5, "the marker says why the block is not run"
        pytest.skip(first)
    if lang == "python" and "torch" in body:
        pytest.importorskip("torch")
    work, env = sandbox
    proc = run_block(lang, body, work, env)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    _check_after(section, work, proc)


def test_every_use_it_with_section_has_a_run_example():
    sections = {s for s, _, _, body in EXAMPLES if not body.startswith(NOT_RUN)}
    wanted = {"Quick start", "pre-commit", "flake8 set-ups", "Notebooks"}
    assert wanted <= sections
    assert any(s.startswith("GitHub") for s in sections) and any(s.startswith("Training runs") for s in sections)


def test_readme_workflow_matches_the_action():
    import yaml  # comes with pre-commit (test extra)

    section = next(s for s in SECTIONS if s.startswith("GitHub"))
    workflow = yaml.safe_load(block(section, "# .github/workflows/torchreview.yml"))
    action = yaml.safe_load(open(os.path.join(ROOT, "action.yml"), encoding="utf-8"))
    steps = workflow["jobs"]["review"]["steps"]
    ours = [s for s in steps if s.get("uses") == "./"]
    assert len(ours) == 1 and os.path.exists(os.path.join(ROOT, "action.yml"))  # `./` is this repository
    assert set(ours[0]["with"]) <= set(action["inputs"])
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0  # the merge base needs the history
    assert workflow["permissions"]["security-events"] == "write"


@pytest.mark.skipif(not os.environ.get("TORCHREVIEW_SLOW_TESTS"), reason="set TORCHREVIEW_SLOW_TESTS=1 (~30 s)")
def test_quick_start_for_real_in_a_fresh_environment(tmp_path):
    clone = tmp_path / "clone"  # the committed tree, as a fresh clone has it
    clone.mkdir()
    subprocess.run(f"git -C '{ROOT}' archive HEAD | tar -x -C '{clone}'", shell=True, check=True,
                   executable="/bin/bash")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {**os.environ, "PATH": str(venv / "bin") + os.pathsep + os.environ.get("PATH", "")}
    env.pop("PYTHONPATH", None)
    body = blocks("Quick start")[0][1]
    proc = subprocess.run(["bash", "-c", body], cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "examples/train.py" in proc.stdout
