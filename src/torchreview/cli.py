"""Command line: argument parsing only; the work happens in the packages."""

from __future__ import annotations

import argparse
import os
import sys

from torchreview.version import __version__
from torchreview.errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, UsageError  # noqa: F401 (re-exported)


SEVERITIES = ["low", "medium", "high", "critical"]
CONFIDENCE_LEVELS = ["low", "medium", "high"]
REVIEWS = ["general", "security", "performance", "architecture", "bugs"]
REPORT_FORMATS = ["concise", "full", "text", "json", "sarif", "github", "markdown"]


def _output_options(command: argparse.ArgumentParser, formats: list[str], what: str) -> None:
    """--output-format (alias --format), --output and --no-color, shared by the commands."""
    command.add_argument("--output-format", "--format", dest="format", default="full", choices=formats,
                         metavar="FORMAT", help=f"report format: {', '.join(formats)}; {what}")
    command.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE")
    command.add_argument("--no-color", action="store_true", help="no colours (also: NO_COLOR=1)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchreview",
        description="Review PyTorch code, checkpoints and training runs.",
    )
    parser.add_argument("--version", action="version", version=f"torchreview {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="review source files and notebooks (default: .)")
    check.add_argument("paths", nargs="*", metavar="PATH",
                       help="files or folders to review (default: .); `-` reads one file from "
                            "standard input (see --stdin-filename)")
    check.add_argument("--review", choices=REVIEWS,
                       help="review mode: general runs every rule (default); the others run one "
                            "category plus the rules that opt into that mode")
    check.add_argument("--select", action="append", metavar="CODES",
                       help="only these rules: codes, prefixes (TR1), slugs or ALL; comma-separated "
                            "or repeated")
    check.add_argument("--ignore", action="append", metavar="CODES",
                       help="leave out these rules (codes, prefixes or slugs)")
    check.add_argument("--extend-select", action="append", metavar="CODES",
                       help="add these rules to the selection (and show their advice)")
    check.add_argument("--show-advice", action="store_true",
                       help="also report advice (performance, architecture, hygiene); by default "
                            "only defects, likely defects and security findings are reported")
    check.add_argument("--min-severity", choices=SEVERITIES, help="hide findings below this severity")
    check.add_argument("--min-confidence", choices=CONFIDENCE_LEVELS,
                       help="hide findings below this confidence (default: high; a --review mode other "
                            "than general: low); "
                            "rules named in --select/--extend-select report at any confidence")
    check.add_argument("--ignore-track-record", action="store_true",
                       help="report each finding at the confidence its rule's own evidence gives, without "
                            "the cap from the rule's judged record on real code (see `torchreview rules CODE`)")
    check.add_argument("--fail-on", choices=SEVERITIES,
                       help="exit 1 only for reported findings at or above this severity (default: low)")
    _output_options(check, REPORT_FORMATS,
                    "full: text with code frames (text is its former name); concise: one line per "
                    "finding, `path:line:col: CODE message`")
    check.add_argument("--stdin-filename", metavar="NAME",
                       help="the name a file read from standard input (`-`) is reviewed and "
                            "reported under (its suffix decides notebook or Python)")
    check.add_argument("--fix", action="store_true",
                       help="apply safe fixes (with `-`: print the fixed source to standard output)")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix or --diff, also apply fixes that can change behaviour; "
                            "alone it writes nothing and only counts them as fixable")
    check.add_argument("--diff", action="store_true", help="print what --fix would change as a diff; write nothing")
    check.add_argument("--show-fixes", action="store_true",
                       help="show each fix's edit under its finding; with --fix, list what was fixed")
    check.add_argument("--since", metavar="GIT_REF", help="only findings on lines changed since GIT_REF")
    check.add_argument("--project", metavar="DIR",
                       help="review PATHs as part of the project in DIR (pre-commit: `--project .`): "
                            "the other files there only give project facts (from the cache, else a "
                            "facts-only pass); findings only for PATHs")
    check.add_argument("--baseline", metavar="FILE", help="hide the findings recorded in FILE")
    check.add_argument("--write-baseline", metavar="FILE", help="record the current findings in FILE")
    check.add_argument("--target-torch", metavar="VERSION",
                       help="the PyTorch version the code targets (default: the project's pins, "
                            "else the newest)")
    check.add_argument("--jobs", "-j", type=int, default=0, metavar="N",
                       help="worker processes (default 0: all cores)")
    check.add_argument("--no-cache", action="store_true", help="do not read or write .torchreview_cache/")
    check.add_argument("--config", metavar="FILE", help="use this configuration file")
    check.add_argument("--statistics", action="store_true",
                       help="print the number of findings per rule (code, name, [*] when fixable) "
                            "instead of the findings")
    check.add_argument("--quiet", "-q", action="store_true",
                       help="print the findings only: no summary, notes or fix counts (nothing on success)")
    check.add_argument("--silent", "-s", action="store_true",
                       help="print nothing; the exit code still tells (--fix with `-` still prints the source)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")

    rules = sub.add_parser("rules", help="list the rules, or explain one")
    rules.add_argument("rule", nargs="?", metavar="CODE|SLUG", help="explain this rule")
    rules.add_argument("--output-format", "--format", dest="format", default="text",
                       choices=["text", "json", "markdown"], help="text (default), json or markdown")
    rules.add_argument("--review", choices=REVIEWS, help="only the rules of this review mode")

    detect = sub.add_parser("detect", help="show PyTorch detection signals per file")
    detect.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: .)")
    detect.add_argument("--output-format", "--format", dest="format", default="text",
                        choices=["text", "json"], help="text (default) or json")

    scan = sub.add_parser("scan", help="scan checkpoint/pickle files without unpickling them")
    scan.add_argument("files", nargs="+", metavar="PATH",
                      help="files to scan, or folders to walk (same discovery as `check`: "
                           "known suffixes and pickle/zip content, .gitignore, exclude)")
    _output_options(scan, REPORT_FORMATS, "full: text (text is its former name); concise: one line per finding")
    scan.add_argument("--fail-on", default="low", choices=SEVERITIES,
                      help="exit 1 for findings at or above this severity (default: low)")

    run = sub.add_parser("run", help="run a training script under runtime review")
    _output_options(run, REPORT_FORMATS, "the report goes to standard error unless --output is given")
    run.add_argument("--fail-on", default="low", choices=SEVERITIES,
                     help="exit 1 when the script succeeded but findings reach this severity (default: low)")
    run.add_argument("--report", metavar="FILE.html",
                     help="also write a self-contained HTML page with charts of the run (loss, gradient "
                          "norm, learning rate, step time, memory) and its findings on the timeline")
    run.add_argument("--tensorboard", metavar="DIR",
                     help="also write the series as TensorBoard scalars to DIR (needs the tensorboard package)")
    run.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE [ARGS]",
                     help="run a library module as a script, like `python -m MODULE ARGS`")
    run.add_argument("script", nargs="?", metavar="SCRIPT", help="the training script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                     help="arguments passed to the script (its sys.argv[1:])")
    server = sub.add_parser("server", help="run the Language Server over stdio (needs torchreview[lsp])")
    server.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default and only mode)")
    return parser


def _err(message: str) -> None:
    sys.stderr.write(f"torchreview: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not argv:
        parser.print_help()
        return EXIT_OK
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help/--version
        return int(exc.code or 0)
    try:
        if args.command == "check":
            from torchreview.commands import cmd_check

            return cmd_check(args)
        if args.command == "rules":
            from torchreview.commands import cmd_rules

            return cmd_rules(args)
        if args.command == "detect":
            from torchreview.commands import cmd_detect

            return cmd_detect(args)
        if args.command == "scan":
            from torchreview.commands import cmd_scan

            return cmd_scan(args)
        if args.command == "server":
            from torchreview.lsp import serve

            return serve()
        if args.command == "run":
            from torchreview.commands import cmd_run

            return cmd_run(args)
    except UsageError as exc:
        _err(str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except Exception as exc:  # never show a traceback to a user
        if os.environ.get("TORCHREVIEW_DEBUG"):
            raise
        _err(f"internal error: {type(exc).__name__}: {exc} (set TORCHREVIEW_DEBUG=1 for details)")
        return EXIT_ERROR
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_ERROR
    parser.print_help()
    return EXIT_ERROR
