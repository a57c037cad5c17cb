"""The GitHub Action's script (``action.yml`` runs ``python -m torchreview.gha``).

It reads the workflow's environment, reviews the pull request's changed lines
once (``check --since`` the merge base of the PR's base commit and ``HEAD``) and
writes the result in every form GitHub shows:

* a SARIF file for code scanning (the action uploads it with
  ``github/codeql-action/upload-sarif``),
* annotations on standard output (``--output-format github``),
* the Markdown review appended to ``$GITHUB_STEP_SUMMARY``,
* with a token, the same review as one pull-request comment, created once and
  then updated in place (REST API through ``urllib``; ``--dry-run`` prints the
  request instead, and ``--api-url``/``$GITHUB_API_URL`` can point at a stub),
* step outputs ``sarif-file``, ``findings``, ``since`` and ``exit-code`` in ``$GITHUB_OUTPUT``.

Inputs come as ``INPUT_*`` variables (``INPUT_PATHS``, ``INPUT_FAIL_ON``,
``INPUT_SARIF_FILE``, ``INPUT_TOKEN``, ``INPUT_ARGS``). Outside a pull request
(a push) the change since the event's ``before`` commit is reviewed, else the
whole tree. The exit code is ``check``'s: 0 clean, 1 findings at or above
``fail-on``, 2 errors.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import urllib.error
import urllib.request

MARKER = "<!-- torchreview-review -->"  # finds the comment to update on the next push
MAX_COMMENT = 65000  # GitHub refuses comment bodies over 65,536 characters


def _input(name: str, default: str = "") -> str:
    return os.environ.get("INPUT_" + name.upper().replace("-", "_"), "").strip() or default


def _event() -> tuple[str, dict]:
    name = os.environ.get("GITHUB_EVENT_NAME", "")
    path = os.environ.get("GITHUB_EVENT_PATH", "")
    if not path:
        return name, {}
    try:
        with open(path, encoding="utf-8") as handle:
            payload = json.load(handle)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"torchreview: error: cannot read the event payload {path}: {exc}") from None
    return name, payload if isinstance(payload, dict) else {}


def _git_ok(*args: str) -> bool:
    try:
        return subprocess.run(["git", *args], capture_output=True, timeout=300).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _have_commit(sha: str) -> bool:
    return _git_ok("cat-file", "-e", f"{sha}^{{commit}}")


def since_ref(event_name: str, payload: dict) -> str | None:
    """What to review since: ``BASE...`` (merge base with HEAD) for a pull
    request, the previous tip for a push, None (everything) otherwise."""
    pr = payload.get("pull_request") or {}
    base = pr.get("base") or {}
    sha, ref = base.get("sha"), base.get("ref")
    if sha:
        if not _have_commit(sha):  # a shallow checkout: try to get the base (needs history for the merge base)
            _git_ok("fetch", "--no-tags", "--quiet", "origin", sha)
        if _have_commit(sha):
            return sha + "..."
        if ref and _have_commit(f"origin/{ref}"):
            return f"origin/{ref}..."
        raise SystemExit(f"torchreview: error: the pull request's base commit {sha[:12]} is not in the "
                         "checkout; use actions/checkout with fetch-depth: 0")
    before = payload.get("before")
    if event_name == "push" and isinstance(before, str) and before.strip("0") and _have_commit(before):
        return before
    return None


def review(paths: list[str], since: str | None, fail_on: str, extra: list[str]):
    """One review; the report and check's exit code."""
    from torchreview.changes import run_with_changes
    from torchreview.cli import _parser
    from torchreview.commands import _exit_code, build_settings

    argv = ["check", *paths, "--fail-on", fail_on, *extra]
    if since:
        argv += ["--since", since]
    args = _parser().parse_args(argv)
    paths, settings, fail_on = build_settings(args)
    report, hint = run_with_changes(paths, settings, args)
    code = 2 if report.errors else _exit_code(report, fail_on)
    return report, max(code, hint or 0)


def _append(path: str, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def _request(method: str, url: str, token: str, body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "torchreview",
        **({"Content-Type": "application/json"} if data is not None else {})})
    with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 (an https API URL, or a test stub)
        return json.loads(resp.read().decode() or "null")


def post_comment(api: str, repo: str, number: int, token: str, markdown: str, dry_run: bool) -> str:
    """Create the review comment, or update the one a previous run left."""
    body = MARKER + "\n" + markdown
    if len(body) > MAX_COMMENT:
        body = body[:MAX_COMMENT] + "\n\n_(truncated; the job summary and code scanning have everything)_\n"
    base = f"{api.rstrip('/')}/repos/{repo}/issues"
    if dry_run:
        sys.stdout.write(f"torchreview: dry run: would POST {base}/{number}/comments "
                         f"(or PATCH an earlier torchreview comment) with {len(body)} characters\n")
        return "dry-run"
    existing = None
    comments = _request("GET", f"{base}/{number}/comments?per_page=100", token) or []
    for comment in comments:
        if isinstance(comment, dict) and MARKER in (comment.get("body") or ""):
            existing = comment.get("id")
    if existing is not None:
        _request("PATCH", f"{base}/comments/{existing}", token, {"body": body})
        return "updated"
    _request("POST", f"{base}/{number}/comments", token, {"body": body})
    return "created"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchreview.gha",
                                     description="torchreview's GitHub Action step (reads the workflow environment)")
    parser.add_argument("--dry-run", action="store_true", help="print the PR comment request instead of sending it")
    parser.add_argument("--api-url", default=os.environ.get("GITHUB_API_URL", "https://api.github.com"),
                        help="the REST API root (default: $GITHUB_API_URL, else https://api.github.com)")
    opts = parser.parse_args(argv)
    from torchreview.errors import UsageError

    event_name, payload = _event()
    paths = shlex.split(_input("paths", ".")) or ["."]
    fail_on = _input("fail-on", "low")
    sarif_file = _input("sarif-file", "torchreview.sarif")
    extra = shlex.split(_input("args"))
    outputs = os.environ.get("GITHUB_OUTPUT", "")
    try:
        since = since_ref(event_name, payload)
        report, code = review(paths, since, fail_on, extra)
    except UsageError as exc:
        sys.stderr.write(f"torchreview: error: {exc}\n")
        _append(outputs, "exit-code=2\n")
        return 2
    except SystemExit as exc:  # a bad option in INPUT_ARGS (argparse) or a missing base commit
        if isinstance(exc.code, str):
            sys.stderr.write(exc.code + "\n")
        _append(outputs, "exit-code=2\n")
        return 2
    from torchreview.report import render

    with open(sarif_file, "w", encoding="utf-8") as handle:
        handle.write(render(report, "sarif"))
    sys.stdout.write(render(report, "github"))
    markdown = render(report, "markdown")
    if since:
        markdown += f"\n_Changed lines since `{since}`._\n"
    _append(os.environ.get("GITHUB_STEP_SUMMARY", ""), markdown + "\n")
    token = _input("token")
    number = (payload.get("pull_request") or {}).get("number")
    repo = os.environ.get("GITHUB_REPOSITORY") or (payload.get("repository") or {}).get("full_name", "")
    if token and number and repo:
        try:
            outcome = post_comment(opts.api_url, repo, int(number), token, markdown, opts.dry_run)
            sys.stdout.write(f"torchreview: pull request comment {outcome}\n")
        except (urllib.error.URLError, OSError, ValueError) as exc:  # the review stands; only the comment failed
            sys.stderr.write(f"::warning::torchreview could not comment on the pull request: {exc}\n")
    _append(outputs, f"sarif-file={sarif_file}\nfindings={len(report.findings)}\nsince={since or ''}\n"
                     f"exit-code={code}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
