"""Project-aware refinement of file findings.

File rules run on one file at a time, before the project's facts exist. A rule
whose advice depends on the rest of the project (is the automatic
``weights_only=True`` edit safe for the checkpoints this project writes?)
declares ``refine_with_project(finding, project) -> Finding`` as a classmethod;
the runner calls it for each finding of that rule once the facts of the
finding's project are known, and ``--fix`` calls it before choosing edits, so
the report and the fixer agree. A hook that fails leaves the finding as it was.
"""

from __future__ import annotations

from typing import Callable

from torchreview.engine.facts import FileFacts, ProjectFacts
from torchreview.findings import Finding


def _hooks(settings) -> dict[str, type]:
    from torchreview.engine.runner import _selected

    return {r.code: r for r in _selected(settings) if callable(getattr(r, "refine_with_project", None))}


def refine_with_project(findings: list[Finding], facts: list[FileFacts], settings) -> list[Finding]:
    hooks = _hooks(settings)
    if not hooks or not any(f.code in hooks and f.scope == "file" for f in findings):
        return findings
    from torchreview.engine.runner import project_root

    memo: dict[str, str] = {}
    groups: dict[str, list[FileFacts]] = {}
    for f in facts:
        groups.setdefault(project_root(f.path, memo), []).append(f)
    projects: dict[str, ProjectFacts] = {}
    out = []
    for finding in findings:
        rule = hooks.get(finding.code)
        if rule is None or finding.scope != "file":
            out.append(finding)
            continue
        root = project_root(finding.path, memo)
        project = projects.get(root)
        if project is None:
            project = projects[root] = ProjectFacts(files=groups.get(root, []), target_torch=settings.target_torch)
        try:
            out.append(rule.refine_with_project(finding, project))
        except Exception:  # a refinement is an improvement: never lose the finding over it
            out.append(finding)
    return out


def project_refiner(sources: list[tuple[str, str]], settings) -> Callable[[list[Finding]], list[Finding]] | None:
    """For ``--fix``: the refinement over the facts of ``sources`` (None when no
    selected rule refines). Facts come from one review of every file (cached when
    the cache is on)."""
    if not _hooks(settings):
        return None
    from torchreview.engine.runner import _run_files

    facts = [r.facts for r in _run_files(sources, settings) if r.facts is not None]
    return lambda findings: refine_with_project(findings, facts, settings)
