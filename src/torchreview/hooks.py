"""pre-commit entry points that need more than one fixed command line.

``python -m torchreview.hooks since [--base REF] [CHECK OPTIONS...]`` reviews the
lines changed since REF: pre-commit's ``--from-ref`` (``PRE_COMMIT_FROM_REF``,
set for ``pre-commit run --from-ref A --to-ref B`` and pre-push hooks), else
the merge base with ``origin/HEAD``. Other options go to ``torchreview check``.
"""

from __future__ import annotations

import os
import sys

DEFAULT_BASE = "origin/HEAD..."  # the merge base with the remote's default branch


def since_ref(argv: list[str]) -> tuple[str, list[str]]:
    """The ref to review since, and the remaining ``check`` arguments."""
    rest, ref = [], None
    it = iter(argv)
    for arg in it:
        if arg == "--base":
            ref = next(it, None)
            if ref is None:
                raise SystemExit("torchreview: error: --base needs a git ref")
        elif arg.startswith("--base="):
            ref = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return ref or os.environ.get("PRE_COMMIT_FROM_REF") or DEFAULT_BASE, rest


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "since":
        sys.stderr.write("usage: python -m torchreview.hooks since [--base REF] [CHECK OPTIONS...]\n")
        return 2
    from torchreview.cli import main as cli_main

    ref, rest = since_ref(argv[1:])
    return cli_main(["check", "--since", ref, *rest])


if __name__ == "__main__":
    sys.exit(main())
