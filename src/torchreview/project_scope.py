"""`check --project DIR PATH...`: review some files as part of a whole project.

For pre-commit and editors: the named files get the full review (file rules,
project-aware refinement); every other source file under DIR only contributes
its project facts (imports, checkpoints saved and loaded, module classes...),
taken from the result cache when it is fresh, else from a facts-only pass that
runs no rule and is cached on its own. Project rules then run over the whole
project, and their findings are kept only when anchored in a named file, so an
old finding elsewhere never blocks a commit that does not touch it.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

from torchreview.errors import UsageError
from torchreview.engine.discovery import discover
from torchreview.engine.facts import FileFacts
from torchreview.engine.runner import (
    Settings, _artifact_sniffer, _run_files, _run_project_rules, _scan_artifact, finish, result_key,
    review_path,
)
from torchreview.report import Report


def _cached_facts(real: str, shown: str, settings: Settings, facts_only: Settings) -> tuple[bool, FileFacts | None]:
    """(known, facts): a full review's cache entry serves, else a facts-only one;
    (False, None) when the file must be indexed. A file over max-source-size is
    known to have no facts (not even read, as in a full review)."""
    limit = settings.max_source_size
    try:
        if limit and not real.endswith(".ipynb") and os.stat(real).st_size > limit:
            return True, None
    except OSError:
        return True, None
    if not settings.cache_dir:
        return False, None
    from torchreview import cache
    from torchreview.engine.source import LoadError, read_bytes

    try:
        data = read_bytes(real)
    except LoadError:
        return True, None
    for key_settings in (settings, facts_only):
        hit = cache.load(settings.cache_dir, result_key(real, shown, data, key_settings), shown)
        if hit is not None:
            return True, hit.facts
    return False, None


def _facts_of(real: str, shown: str, settings: Settings, facts_only: Settings) -> tuple[FileFacts | None, bool]:
    """One file's project facts, and whether they came from the cache (the
    Language Server asks file by file): cached, else indexed now and cached."""
    known, facts = _cached_facts(real, shown, settings, facts_only)
    if known:
        return facts, facts is not None
    return review_path(real, shown, facts_only).facts, False


def _drop_excluded(focus, tree, project: str, report: Report) -> None:
    """A named source file inside the project that the project's own walk leaves
    out (``exclude``, the default excludes, .gitignore, virtual environments) is
    not reviewed: pre-commit names every committed file, and an excluded folder
    must stay excluded (ruff's ``--force-exclude``)."""
    walked = {os.path.realpath(real) for real, _ in tree.sources}
    top = os.path.join(os.path.realpath(project), "")
    kept = []
    for real, shown in focus.sources:
        key = os.path.realpath(real)
        if key.startswith(top) and key not in walked:
            report.notes.append(f"note: {shown}: excluded by the project's configuration; not reviewed")
        else:
            kept.append((real, shown))
    focus.sources = kept


def review_in_project(paths: list[str], settings: Settings, project: str) -> Report:
    started = time.perf_counter()
    if not os.path.isdir(project):
        raise UsageError(f"--project: {project!r} is not a folder")
    focus = discover(paths, exclude=settings.exclude, is_artifact=_artifact_sniffer(settings))
    report = Report(errors=list(focus.errors), notes=list(focus.notes))
    tree = discover([project], exclude=settings.exclude, want_artifacts=False)
    _drop_excluded(focus, tree, project, report)
    results = _run_files(focus.sources, settings)
    for real, shown in focus.artifacts:
        results.append(_scan_artifact(real, shown))
    for res in results:  # the named files' own findings, errors and notes
        report.findings += res.findings
        report.errors += res.errors
        report.notes += res.notes
    facts: list[FileFacts] = [res.facts for res in results if res.facts is not None]
    named = {os.path.realpath(real) for real, _ in focus.sources}
    shown_named = {shown for _, shown in focus.sources}
    facts_only = replace(settings, rule_codes=())
    missing, cached = [], 0
    for real, shown in tree.sources:
        if os.path.realpath(real) in named:
            continue
        known, file_facts = _cached_facts(real, shown, settings, facts_only)
        if not known:
            missing.append((real, shown))
        elif file_facts is not None:
            facts.append(file_facts)
            cached += 1
    # the rest: a facts-only pass (no rule runs), in parallel as a review is, cached under its own key
    indexed = [res.facts for res in _run_files(missing, facts_only) if res.facts is not None]
    facts += indexed
    context = cached + len(indexed)
    report.files = len(focus.sources) + len(focus.artifacts)
    project_findings = _run_project_rules(facts, settings, report.errors)
    report.findings.extend(f for f in project_findings if f.path in shown_named)
    from torchreview.engine.refine import refine_with_project

    report.findings = refine_with_project(report.findings, facts, settings)
    report.notes.append(f"Project context: {context} other file{'s' if context != 1 else ''} under {project} "
                        f"({cached} from the cache); findings only for the {report.files} named.")
    finish(report, settings)
    report.seconds = time.perf_counter() - started
    return report
