"""`check` with --fix/--diff, --since and baselines: the change-aware paths."""

from __future__ import annotations

import os
import sys

from torchreview.engine.runner import Settings, finalize, run_review
from torchreview.report import Report


def run_diff(paths: list[str], settings: Settings, args) -> int:
    """--diff: print what --fix would change as a unified diff; write nothing."""
    return _fix(paths, settings, args) or 0


def run_with_changes(paths: list[str], settings: Settings, args) -> tuple[Report, int | None]:
    code_hint: int | None = None
    if args.fix:  # --unsafe-fixes alone writes nothing (as in ruff): it only widens --fix/--diff
        code_hint = _fix(paths, settings, args)
    if getattr(args, "project", None):  # --project DIR: findings only for PATHs, facts from DIR
        from torchreview.project_scope import review_in_project

        report = review_in_project(paths, settings, args.project)
    else:
        report = run_review(paths, settings)
    if args.since:
        from torchreview.since import filter_since

        report = filter_since(report, paths, settings, args.since)
    if args.write_baseline:
        from torchreview.baseline import write_baseline

        count = write_baseline(args.write_baseline, report.findings)
        report.notes.append(f"Wrote {count} finding{'s' if count != 1 else ''} to baseline {args.write_baseline}.")
        report.findings = []
    elif args.baseline:
        from torchreview.baseline import apply_baseline

        report.findings, hidden, stale = apply_baseline(args.baseline, report.findings)
        report.notes.append(f"Baseline {args.baseline}: {hidden} known finding{'s' if hidden != 1 else ''} hidden"
                            + (f", {stale} stale entr{'ies' if stale != 1 else 'y'} (fixed since)" if stale else "")
                            + ".")
    report.findings = finalize(report.findings, settings)
    return report, code_hint


def _fix(paths: list[str], settings: Settings, args) -> int | None:
    from torchreview.engine.discovery import discover
    from torchreview.fix_write import FileChanged, file_identity, write_fixed
    from torchreview.fixer import fix_file, unified_diff
    from torchreview.findings import ReviewError

    unsafe = bool(args.unsafe_fixes)
    found = discover(paths, exclude=settings.exclude)
    from torchreview.engine.runner import project_refiner

    refine = project_refiner(found.sources, settings)
    fixed_files, errors = 0, []
    diffs = []
    applied: list[tuple[str, list[str]]] = []  # (file, codes) for --show-fixes
    done: set[tuple[int, int]] = set()  # each real file once (symlinks, hard links)
    for real, shown in found.sources:
        try:
            identity = file_identity(real)
            if identity in done:
                continue
            done.add(identity)
            outcome = fix_file(real, shown, settings, unsafe=unsafe, refine=refine)
        except FileChanged as exc:
            errors.append(ReviewError(shown, str(exc)))
            continue
        except OSError as exc:
            errors.append(ReviewError(shown, f"cannot fix: {exc.strerror or exc}"))
            continue
        if outcome.error:
            errors.append(outcome.error)
        if not outcome.changed:
            continue
        if args.diff:
            diffs.append(unified_diff(outcome))
            fixed_files += 1
            applied.append((shown, outcome.applied))
            continue
        try:
            read_only = not os.stat(real).st_mode & 0o222
        except OSError:
            read_only = False  # gone or replaced meanwhile: write_fixed says so
        if read_only:
            errors.append(ReviewError(shown, "read-only file; fixes not written"))
            continue
        try:
            write_fixed(real, outcome.fixed, outcome.original, outcome.snapshot)
        except FileChanged as exc:
            errors.append(ReviewError(shown, str(exc)))
            continue
        except OSError as exc:
            kept = "; file left unchanged" if getattr(exc, "left_unchanged", True) else ""
            errors.append(ReviewError(shown, f"fixed text not written: {exc.strerror or exc}{kept}"))
            continue
        fixed_files += 1
        applied.append((shown, outcome.applied))
    if args.diff:
        sys.stdout.write("".join(diffs))
    tell_fixes(args, errors, applied, fixed_files)
    if args.diff:
        return 1 if diffs else 0
    return 2 if errors and any("not written" in e.message for e in errors) else None


def tell_fixes(args, errors: list, applied: list[tuple[str, list[str]]], fixed_files: int) -> None:
    """On standard error: problems, then (unless --quiet/--silent) "Fixed N findings"
    or, for --diff, "Would fix N findings", and with --show-fixes what was fixed."""
    silent = getattr(args, "silent", False)
    if not silent:
        for err in errors:
            sys.stderr.write(f"torchreview: {err.path}: {err.message}\n")
    if silent or getattr(args, "quiet", False):
        return
    count = sum(len(codes) for _, codes in applied)
    verb = "Would fix" if args.diff else "Fixed"
    sys.stderr.write(f"{verb} {count} finding{'s' if count != 1 else ''} "
                     f"in {fixed_files} file{'s' if fixed_files != 1 else ''}.\n")
    if getattr(args, "show_fixes", False):
        sys.stderr.write(fixed_listing(applied))


def fixed_listing(applied: list[tuple[str, list[str]]]) -> str:
    """``--fix --show-fixes``: per file, how many findings of each rule were fixed."""
    from collections import Counter

    from torchreview.catalog import rule_by_code

    catalog = rule_by_code()
    out = []
    for path, codes in applied:
        if not codes:
            continue
        out.append(f"- {path}:")
        for code, n in sorted(Counter(codes).items()):
            name = catalog[code].name if code in catalog else code
            out.append(f"    {n} \u00d7 {code} ({name})")
    return "\n".join(out) + "\n" if out else ""
