"""The subcommands, behind the argument parser."""

from __future__ import annotations

import json
import os
import sys

from torchreview.errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, UsageError
from torchreview.findings import REVIEW_MODES, Severity


def _split(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


def _use_color(args) -> bool:
    if getattr(args, "no_color", False) or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return getattr(args, "output", None) is None and sys.stdout.isatty()


def select_rules(select: list[str] | None, extend: list[str], ignore: list[str],
                 review: str | None) -> tuple[str, ...]:
    from torchreview.catalog import all_rules, is_valid_selector, matches_selector

    for sel in [*(select or []), *extend, *ignore]:
        if not is_valid_selector(sel):
            raise UsageError(f"unknown rule, prefix or name {sel!r} (see `torchreview rules`)")
    rules = all_rules()
    chosen = [r for r in rules if select is None or any(matches_selector(r, s) for s in select)]
    if review and review != "general":
        mode = REVIEW_MODES[review]
        chosen = [r for r in chosen if mode in r.review()]
    chosen += [r for r in rules if r not in chosen and any(matches_selector(r, s) for s in extend)]
    chosen = [r for r in chosen if not any(matches_selector(r, s) for s in ignore)]
    return tuple(r.code for r in chosen)


def _write(text: str, output: str | None, stderr: bool = False) -> None:
    if output:
        try:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    else:
        stream = sys.stderr if stderr else sys.stdout  # stdout may carry fixed source
        stream.write(text)
        stream.flush()


def _exit_code(report, fail_on: str, exit_zero: bool = False) -> int:
    if exit_zero:
        return EXIT_OK
    threshold = Severity.parse(fail_on)
    if any(f.severity >= threshold for f in report.findings):
        return EXIT_FINDINGS
    return EXIT_OK


def build_settings(args):
    from torchreview.config import ConfigError, Config, detect_target_torch, find_config, \
        load_config_file, parse_version
    from torchreview.engine.runner import DEFAULT_MAX_SOURCE_SIZE, Settings

    paths = args.paths or ["."]
    try:
        config_path = args.config or find_config(paths[0])
        config = load_config_file(config_path) if config_path else Config()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    select = _split(args.select) or config.get("select")
    extend = _split(args.extend_select) + list(config.get("extend-select", []))
    ignore = _split(args.ignore) + list(config.get("ignore", []))
    review = args.review or config.get("review")
    codes = select_rules(select, extend, ignore, review)
    advice = advice_codes(codes, select, extend, review,
                          bool(getattr(args, "show_advice", False) or config.get("show-advice")))
    # a --review mode other than general is a deliberate review of one area: its rules
    # report at any confidence (the bug hunt, a security audit), as they show their advice
    # an explicit minimum (flag or configuration) holds for every rule, named ones too
    asked_min = getattr(args, "min_confidence", None) or config.get("min-confidence")
    min_confidence = (asked_min
                      or ("low" if review in REVIEW_MODES and review != "general" else DEFAULT_MIN_CONFIDENCE))
    if args.target_torch:
        try:
            target = parse_version(args.target_torch)
        except ValueError as exc:
            raise UsageError(f"--target-torch: {exc}") from None
    elif config.get("target-torch"):
        target = parse_version(str(config.get("target-torch")))
    else:
        target = detect_target_torch(paths[0])
    detect = not args.target_torch and not config.get("target-torch")
    per_file = tuple((glob, tuple(_resolve_codes(sels))) for glob, sels in
                     (config.get("per-file-ignores") or {}).items())
    min_sev = args.min_severity or config.get("min-severity") or "low"
    settings = Settings(
        rule_codes=codes,
        target_torch=target,
        detect_torch=detect,
        per_file_ignores=per_file,
        severity_map=tuple((k.upper(), v) for k, v in (config.get("severity") or {}).items()),
        min_severity=Severity.parse(min_sev),
        exclude=tuple(config.get("exclude", [])) + tuple(config.get("extend-exclude", [])),
        jobs=max(0, args.jobs or 0),
        cache_dir=None if args.no_cache else _cache_dir(config_path),
        artifact_globs=tuple(config.get("artifact-globs", [])),
        artifact_max_size=int(config.get("artifact-max-size", 0)),
        max_source_size=int(config.get("max-source-size", DEFAULT_MAX_SOURCE_SIZE)),
        advice_codes=advice,
        min_confidence=min_confidence,
        any_confidence_codes=() if asked_min else asked_codes(codes, select, extend),
        track_record=not getattr(args, "ignore_track_record", False) and config.get("track-record", True) is not False,
    )
    fail_on = args.fail_on or config.get("fail-on") or "low"
    return paths, settings, fail_on


ADVICE_REVIEWS = ("security", "performance", "architecture")


def advice_codes(codes: tuple[str, ...], select: list[str] | None, extend: list[str],
                 review: str | None, show_advice: bool) -> tuple[str, ...] | None:
    """The rules whose advice is reported (None: all). Advice is shown when asked
    for: --show-advice (config ``show-advice``), a --review mode that shows its
    rules' advice (security, performance, architecture), or a rule selected by
    name or prefix."""
    from torchreview.catalog import rule_by_code

    if show_advice:
        return None
    catalog = rule_by_code()
    asked = set(asked_codes(codes, select, extend))
    return tuple(code for code in codes if code in asked or (
        review in ADVICE_REVIEWS and REVIEW_MODES[review] in catalog[code].review()))


# The confidence a finding needs to be in the default report (README, What is
# reported): on unseen repositories, likely defects of medium or low confidence
# were 1 true in 55 (bench/precision).
DEFAULT_MIN_CONFIDENCE = "high"


def asked_codes(codes: tuple[str, ...], select: list[str] | None, extend: list[str]) -> tuple[str, ...]:
    """The chosen rules the user named by code, prefix or name (``--select``,
    ``--extend-select``, their configuration keys): their advice and findings of
    any confidence are reported."""
    from torchreview.catalog import rule_by_code, matches_selector

    catalog = rule_by_code()
    asked = [*(select or []), *extend]
    return tuple(code for code in codes if any(matches_selector(catalog[code], s) for s in asked))


def _cache_dir(config_path: str | None) -> str | None:
    from torchreview.cache import ensure_dir

    root = os.path.dirname(os.path.abspath(config_path)) if config_path else os.getcwd()
    return ensure_dir(root)


def _resolve_codes(selectors: list[str]) -> list[str]:
    from torchreview.catalog import all_rules, matches_selector

    return [r.code for r in all_rules() if any(matches_selector(r, s) for s in selectors)]


def _reads_stdin(args) -> bool:
    if "-" in args.paths:
        if len(args.paths) > 1:
            raise UsageError("`-` (standard input) cannot be combined with other paths")
        return True
    return not args.paths and bool(args.stdin_filename)  # as in ruff


def cmd_check(args) -> int:
    from torchreview.report import render

    if args.jobs is not None and args.jobs < 0:
        raise UsageError("--jobs must be 0 (all cores) or more")
    stdin = _reads_stdin(args)
    if stdin:
        for flag in ("since", "baseline", "write_baseline", "project"):
            if getattr(args, flag):
                raise UsageError(f"--{flag.replace('_', '-')} cannot be used with standard input (`-`)")
        args.paths = [args.stdin_filename or "."]  # where the configuration is looked for
    paths, settings, fail_on = build_settings(args)
    if stdin:
        from torchreview.stdin_input import check_stdin

        report, code_hint = check_stdin(settings, args)
    elif args.diff:
        from torchreview.changes import run_diff

        return run_diff(paths, settings, args)
    elif args.fix or args.since or args.baseline or args.write_baseline or getattr(args, "project", None):
        from torchreview.changes import run_with_changes

        report, code_hint = run_with_changes(paths, settings, args)
    else:
        from torchreview.engine.runner import run_review

        report, code_hint = run_review(paths, settings), None
    if report is None:  # --diff of standard input: the diff is the output
        return code_hint or EXIT_OK
    if not args.silent:
        text = render(report, args.format, color=_use_color(args), statistics=args.statistics,
                      quiet=args.quiet, show_fixes=args.show_fixes, unsafe=args.unsafe_fixes)
        _write(text, args.output, stderr=stdin and args.fix and not args.output)
    if report.errors and not args.exit_zero:
        return EXIT_ERROR
    code = _exit_code(report, fail_on, args.exit_zero)
    if code_hint is not None and not args.exit_zero:
        code = max(code, code_hint)
    return code


def cmd_rules(args) -> int:
    from torchreview.catalog import all_rules, find_rule
    from torchreview.report.rules_doc import explain_rule, rules_markdown_table, rules_table

    rules = list(all_rules())
    if args.review and args.review != "general":
        mode = REVIEW_MODES[args.review]
        rules = [r for r in rules if mode in r.review()]
    if args.rule:
        rule = find_rule(args.rule)
        if rule is None:
            raise UsageError(f"unknown rule {args.rule!r} (see `torchreview rules`)")
        if args.format == "json":
            _write(json.dumps(rule.to_json(), indent=2) + "\n", None)
        else:
            _write(explain_rule(rule), None)
        return EXIT_OK
    if args.format == "json":
        _write(json.dumps({"rules": [r.to_json() for r in rules]}, indent=2) + "\n", None)
    elif args.format == "markdown":
        _write(rules_markdown_table(rules), None)
    else:
        _write(rules_table(rules), None)
    return EXIT_OK


def cmd_detect(args) -> int:
    from torchreview.engine.discovery import discover
    from torchreview.engine.facts import detect_signals
    from torchreview.engine.source import LoadError, load_source

    found = discover(args.paths or ["."])
    rows = []
    errors = [e.to_json() for e in found.errors]
    for real, shown in found.sources:
        try:
            source = load_source(real, shown)
        except LoadError as exc:
            errors.append({"path": shown, "message": str(exc)})
            continue
        rows.append({"path": shown, "signals": detect_signals(source.text)})
    torch_files = [r for r in rows if r["signals"]]
    overall = sorted({s for r in rows for s in r["signals"]})
    if args.format == "json":
        _write(json.dumps({"files": rows, "pytorch": bool(torch_files), "signals": overall,
                           "errors": errors}, indent=2) + "\n", None)
    else:
        lines = []
        for row in rows:
            mark = ", ".join(row["signals"]) if row["signals"] else "no PyTorch signal"
            lines.append(f"{row['path']}: {mark}")
        for err in errors:
            lines.append(f"{err['path']}: error: {err['message']}")
        verdict = "PyTorch project" if torch_files else "no PyTorch code found"
        lines.append(f"{verdict}: {len(torch_files)} of {len(rows)} files have signals"
                     + (f" ({', '.join(overall)})" if overall else ""))
        _write("\n".join(lines) + "\n", None)
    return EXIT_OK if not errors else EXIT_ERROR


def cmd_scan(args) -> int:
    from torchreview.report import render

    try:
        import torchreview.artifacts  # noqa: F401
    except ImportError:
        raise UsageError("the artifact scanner is not available in this build") from None
    report = scan_paths(list(args.files))
    text = render(report, args.format, color=_use_color(args))
    _write(text, args.output)
    if report.errors:
        return EXIT_ERROR
    return _exit_code(report, args.fail_on)


def scan_paths(paths: list[str]):
    """``scan PATH...``: named files are scanned as given; folders are walked with
    the discovery of ``check`` (git ignores, virtual environments, the
    configuration's exclude, artifact-globs and artifact-max-size)."""
    from torchreview.artifacts import scan_files
    from torchreview.config import ConfigError, Config, find_config, load_config_file
    from torchreview.engine.discovery import discover
    from torchreview.engine.runner import Settings, _artifact_sniffer

    folders = [p for p in paths if os.path.isdir(p)]
    if not folders:
        return scan_files(paths)
    try:
        config_path = find_config(folders[0])
        config = load_config_file(config_path) if config_path else Config()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    settings = Settings(rule_codes=("TR108",), artifact_globs=tuple(config.get("artifact-globs", [])),
                        artifact_max_size=int(config.get("artifact-max-size", 0)))
    exclude = tuple(config.get("exclude", [])) + tuple(config.get("extend-exclude", []))
    found = discover(folders, exclude=exclude, is_artifact=_artifact_sniffer(settings))
    report = scan_files([p for p in paths if p not in folders])
    if found.artifacts:
        from torchreview.engine.runner import _scan_artifact

        for real, shown in found.artifacts:
            result = _scan_artifact(real, shown)
            report.findings.extend(result.findings)
            report.errors.extend(result.errors)
        report.files += len(found.artifacts)
        report.findings.sort(key=lambda f: f.sort_key())
    report.errors.extend(found.errors)
    report.notes.extend(found.notes)
    return report


def cmd_run(args) -> int:
    try:
        from torchreview.runtime import run_script
    except ImportError as exc:
        raise UsageError(f"runtime review is not available: {exc}") from None
    module = args.module is not None
    if module:
        if args.script is not None or not args.module:
            raise UsageError("run: give a SCRIPT or -m MODULE (arguments follow the module)")
        target, script_args = args.module[0], list(args.module[1:])
    elif args.script is None:
        raise UsageError("run: give a SCRIPT or -m MODULE")
    else:
        target, script_args = args.script, list(args.args)
    if script_args and script_args[0] == "--":
        script_args = script_args[1:]
    return run_script(target, script_args, fmt=args.format, output=args.output,
                      fail_on=args.fail_on, color=_use_color(args), module=module,
                      report=args.report, tensorboard=args.tensorboard)
