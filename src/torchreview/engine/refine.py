"""Project-aware refinement of file findings.

File rules run on one file at a time, before the project's facts exist. A rule
whose advice depends on the rest of the project (is the automatic
``weights_only=True`` edit safe for the checkpoints this project writes?)
declares ``refine_with_project(finding, project) -> Finding`` as a classmethod;
the runner calls it for each finding of that rule once the facts of the
finding's project are known, and ``--fix`` calls it before choosing edits, so
the report and the fixer agree. Findings of scanned artifacts (checkpoint and
pickle files) are refined the same way. A hook that fails leaves the finding as it was;
a hook that returns None drops the finding (the project shows it cannot happen).
"""

from __future__ import annotations

from torchreview.catalog import all_rules
from torchreview.engine.discovery import project_root
from torchreview.engine.facts import FileFacts, ProjectContext
from torchreview.findings import Finding


# findings of a file rule, and of a scanned artifact (is the file one the project's
# torch.load calls read?)
_REFINED_SCOPES = ("file", "artifact")


def refine_hooks(settings) -> dict[str, type]:
    """The selected rules that refine their findings with the project's facts, by code."""
    codes = set(settings.rule_codes)
    return {r.code: r for r in all_rules() if r.code in codes and callable(getattr(r, "refine_with_project", None))}


def refine_with_project(findings: list[Finding], facts: list[FileFacts], settings) -> list[Finding]:
    hooks = refine_hooks(settings)
    if not hooks or not any(f.code in hooks and f.scope in _REFINED_SCOPES for f in findings):
        return findings
    memo: dict[str, str] = {}
    groups: dict[str, list[FileFacts]] = {}
    for f in facts:
        groups.setdefault(project_root(f.path, memo), []).append(f)
    projects: dict[str, ProjectContext] = {}
    out = []
    for finding in findings:
        rule = hooks.get(finding.code)
        if rule is None or finding.scope not in _REFINED_SCOPES:
            out.append(finding)
            continue
        root = project_root(finding.path, memo)
        project = projects.get(root)
        if project is None:
            project = projects[root] = ProjectContext(files=groups.get(root, []), target_torch=settings.target_torch)
        try:
            refined = rule.refine_with_project(finding, project)
        except Exception:  # a refinement is an improvement: never lose the finding over it
            refined = finding
        if refined is not None:
            out.append(refined)
    return out
