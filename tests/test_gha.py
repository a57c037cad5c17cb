"""The GitHub Action: action.yml, and its script run against a fake
`pull_request` event in a temporary repository (the PR comment goes to a local
stub of the REST API; nothing leaves the machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "GIT_CONFIG_NOSYSTEM": "1"}
FIT = ("def fit(model, loader, optimizer):\n    for x, y in loader:\n"
       "        loss = torch.nn.functional.mse_loss(model(x), y)\n        loss.backward()\n        optimizer.step()\n")
OLD = "import torch\n\n\n" + FIT  # TR401 (gradients never reset) on line 5, before the PR
FIXED_OLD = OLD.replace("    for x, y in loader:\n",
                        "    for step, (x, y) in enumerate(loader):\n        optimizer.zero_grad()\n")
TRAIN = ("import torch\n\n\ndef train(model, loader, optimizer):\n    for x, y in loader:\n"
         "        optimizer.zero_grad()\n        loss = model(x).sum()\n        loss.backward()\n"
         "        optimizer.step()\n")


def git(cwd, *args) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT_ENV})
    return proc.stdout.strip()


class Stub(BaseHTTPRequestHandler):
    """GitHub's issue-comment endpoints, recording every request."""
    requests: list = []
    comments: list = []

    def _reply(self, status: int, payload) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length)) if length else None

    def do_GET(self):  # noqa: N802
        self.requests.append(("GET", self.path, None, self.headers.get("Authorization")))
        self._reply(200, self.comments)

    def do_POST(self):  # noqa: N802
        body = self._body()
        self.requests.append(("POST", self.path, body, self.headers.get("Authorization")))
        self.comments.append({"id": 99, "body": body["body"]})
        self._reply(201, self.comments[-1])

    def do_PATCH(self):  # noqa: N802
        body = self._body()
        self.requests.append(("PATCH", self.path, body, self.headers.get("Authorization")))
        self._reply(200, {"id": 99, "body": body["body"]})

    def log_message(self, *args):
        pass


@pytest.fixture
def api():
    Stub.requests, Stub.comments = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def pr_repo(tmp_path):
    """main: old.py (an old bug) and train.py; the PR branch adds a bug to
    train.py; meanwhile main fixed old.py, which the PR branch does not have."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "old.py").write_text(OLD)
    (repo / "pyproject.toml").write_text("[tool.torchreview]\ntrack-record = false\n")  # TR401 is capped
    (repo / "train.py").write_text(TRAIN)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "train.py").write_text(TRAIN + "\n\n" + FIT.replace("fit", "finetune"))  # TR401 on line 13
    git(repo, "commit", "-q", "-am", "finetune")
    git(repo, "checkout", "-q", "main")
    (repo / "old.py").write_text(FIXED_OLD)
    git(repo, "commit", "-q", "-am", "fix old")
    base_sha = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "feature")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": 7, "pull_request": {
        "number": 7, "base": {"ref": "main", "sha": base_sha}, "head": {"ref": "feature",
                                                                      "sha": git(repo, "rev-parse", "HEAD")}},
        "repository": {"full_name": "octo/proj"}}))
    return repo, event


def run_action(repo, event, tmp_path, *argv, **inputs):
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    env.update(GIT_ENV, GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event),
               GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(outputs), GITHUB_REPOSITORY="octo/proj",
               GITHUB_WORKSPACE=str(repo), NO_COLOR="1")
    env.update({"INPUT_" + k.upper(): v for k, v in inputs.items()})
    proc = subprocess.run([sys.executable, "-m", "torchreview.gha", *argv], cwd=repo, capture_output=True,
                          text=True, env=env, timeout=300)
    outs = dict(line.split("=", 1) for line in outputs.read_text().splitlines()) if outputs.exists() else {}
    return proc, (summary.read_text() if summary.exists() else ""), outs


def test_action_reviews_only_the_pull_requests_changed_lines(pr_repo, tmp_path, api):
    repo, event = pr_repo
    proc, summary, outs = run_action(repo, event, tmp_path, "--api-url", api, token="secret-token")
    assert proc.returncode == 1, proc.stderr
    sarif = json.loads((repo / "torchreview.sarif").read_text())
    results = sarif["runs"][0]["results"]
    where = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
              r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results}
    assert where == {("TR401", "train.py", 13)}  # the PR's bug; old.py's old line is not in the change
    # the same review as annotations, in the summary, as outputs and as a PR comment
    assert "file=train.py,line=13," in proc.stdout and proc.stdout.startswith("::")
    assert "old.py" not in proc.stdout
    assert summary.startswith("## torchreview") and "`TR401`" in summary and "train.py:13" in summary
    assert "old.py" not in summary and "Changed lines since" in summary
    assert outs["findings"] == "1" and outs["exit-code"] == "1" and outs["sarif-file"] == "torchreview.sarif"
    assert outs["since"].endswith("...")
    methods = [(m, p) for m, p, _, _ in Stub.requests]
    assert methods == [("GET", "/repos/octo/proj/issues/7/comments?per_page=100"),
                       ("POST", "/repos/octo/proj/issues/7/comments")]
    assert all(auth == "Bearer secret-token" for *_, auth in Stub.requests)
    posted = Stub.requests[-1][2]["body"]
    assert "<!-- torchreview-review -->" in posted and "`TR401`" in posted and "train.py:13" in posted

    # The next push updates that comment instead of adding another one.
    Stub.requests.clear()
    run_action(repo, event, tmp_path, "--api-url", api, token="secret-token")
    assert [(m, p) for m, p, _, _ in Stub.requests] == [
        ("GET", "/repos/octo/proj/issues/7/comments?per_page=100"), ("PATCH", "/repos/octo/proj/issues/comments/99")]


def test_naive_since_the_base_tip_would_report_the_old_line(pr_repo, tmp_path, capsys, monkeypatch):
    # Why the merge base: the base branch fixed old.py after the PR branched off.
    repo, event = pr_repo
    base_sha = json.loads(event.read_text())["pull_request"]["base"]["sha"]
    monkeypatch.chdir(repo)
    from torchreview.cli import main

    main(["check", ".", "--since", base_sha, "--output-format", "concise", "--no-cache"])
    assert "old.py" in capsys.readouterr().out
    main(["check", ".", "--since", base_sha + "...", "--output-format", "concise", "--no-cache"])
    out = capsys.readouterr().out
    assert "old.py" not in out and "train.py:13" in out


def test_action_clean_pr_passes_without_token_or_network(pr_repo, tmp_path):
    repo, event = pr_repo
    (repo / "train.py").write_text(TRAIN)
    git(repo, "commit", "-q", "-am", "fix the PR")
    proc, summary, outs = run_action(repo, event, tmp_path, "--dry-run", token="t")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings" in summary and outs["findings"] == "0" and outs["exit-code"] == "0"
    assert "dry run: would POST" in proc.stdout  # the comment request, printed instead of sent
    assert json.loads((repo / "torchreview.sarif").read_text())["runs"][0]["results"] == []


def test_action_missing_base_commit_is_one_clear_error(pr_repo, tmp_path):
    repo, event = pr_repo
    payload = json.loads(event.read_text())
    payload["pull_request"]["base"] = {"ref": "nope", "sha": "1" * 40}
    event.write_text(json.dumps(payload))
    proc, _, outs = run_action(repo, event, tmp_path)
    assert proc.returncode == 2 and outs["exit-code"] == "2"
    assert "fetch-depth: 0" in proc.stderr and "Traceback" not in proc.stderr


def test_action_yml_runs_the_script_and_uploads_sarif():
    import yaml  # comes with pre-commit (test extra)

    action = yaml.safe_load(open(os.path.join(ROOT, "action.yml"), encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert 'pip install --quiet "$GITHUB_ACTION_PATH"' in runs and "-m torchreview.gha" in runs
    upload = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert upload and upload[0]["with"]["sarif_file"] == "${{ steps.review.outputs.sarif-file }}"
    review = next(s for s in steps if s.get("id") == "review")
    for name in review["env"]:  # every input the script reads is wired to an action input
        assert name.startswith("INPUT_") and name[6:].lower().replace("_", "-") in action["inputs"]
