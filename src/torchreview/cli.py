"""Command line: argument parsing only; the work happens in the packages."""

from __future__ import annotations

import argparse
import os
import sys

from torchreview import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchreview",
        description="Review PyTorch code, checkpoints and training runs.",
    )
    parser.add_argument("--version", action="version", version=f"torchreview {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="review source files and notebooks (default: .)")
    check.add_argument("paths", nargs="*", metavar="PATH")
    check.add_argument("--review", choices=["general", "security", "performance", "architecture", "bugs"])
    check.add_argument("--select", action="append", metavar="CODES")
    check.add_argument("--ignore", action="append", metavar="CODES")
    check.add_argument("--extend-select", action="append", metavar="CODES")
    check.add_argument("--show-advice", action="store_true",
                       help="also report advice (performance, architecture, hygiene); by default "
                            "only defects, likely defects and security findings are reported")
    check.add_argument("--min-severity", choices=["low", "medium", "high", "critical"])
    check.add_argument("--fail-on", choices=["low", "medium", "high", "critical"])
    check.add_argument("--format", default="text", choices=["text", "json", "sarif", "github", "markdown"])
    check.add_argument("--output", "-o", metavar="FILE")
    check.add_argument("--fix", action="store_true", help="apply safe fixes")
    check.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes")
    check.add_argument("--diff", action="store_true", help="print fixes as a diff, write nothing")
    check.add_argument("--since", metavar="GIT_REF")
    check.add_argument("--baseline", metavar="FILE")
    check.add_argument("--write-baseline", metavar="FILE")
    check.add_argument("--target-torch", metavar="VERSION")
    check.add_argument("--jobs", "-j", type=int, default=0, metavar="N")
    check.add_argument("--no-cache", action="store_true")
    check.add_argument("--config", metavar="FILE")
    check.add_argument("--statistics", action="store_true")
    check.add_argument("--quiet", "-q", action="store_true")
    check.add_argument("--exit-zero", action="store_true")
    check.add_argument("--no-color", action="store_true")

    rules = sub.add_parser("rules", help="list the rules, or explain one")
    rules.add_argument("rule", nargs="?", metavar="CODE|SLUG")
    rules.add_argument("--format", default="text", choices=["text", "json", "markdown"])
    rules.add_argument("--review", choices=["general", "security", "performance", "architecture", "bugs"])

    detect = sub.add_parser("detect", help="show PyTorch detection signals per file")
    detect.add_argument("paths", nargs="*", metavar="PATH")
    detect.add_argument("--format", default="text", choices=["text", "json"])

    scan = sub.add_parser("scan", help="scan checkpoint/pickle files without unpickling them")
    scan.add_argument("files", nargs="+", metavar="PATH",
                      help="files to scan, or folders to walk (same discovery as `check`: "
                           "known suffixes and pickle/zip content, .gitignore, exclude)")
    scan.add_argument("--format", default="text", choices=["text", "json", "sarif", "github", "markdown"])
    scan.add_argument("--output", "-o", metavar="FILE")
    scan.add_argument("--fail-on", default="low", choices=["low", "medium", "high", "critical"])
    scan.add_argument("--no-color", action="store_true")

    run = sub.add_parser("run", help="run a training script under runtime review")
    run.add_argument("--format", default="text", choices=["text", "json", "sarif", "github", "markdown"])
    run.add_argument("--output", "-o", metavar="FILE")
    run.add_argument("--fail-on", default="low", choices=["low", "medium", "high", "critical"])
    run.add_argument("--no-color", action="store_true")
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
