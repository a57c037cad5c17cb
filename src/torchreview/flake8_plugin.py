"""flake8 plugin: torchreview's file rules as flake8 findings (``TR`` codes).

Registered under the ``flake8.extension`` entry point group with the code
prefix ``TR``, so ``flake8 --select TR`` (or ``extend-select = TR`` in a
flake8 configuration) runs it. flake8 is not imported here: it loads this
class and calls it once per file.

Each file goes through torchreview's own file pipeline
(``engine.runner.review_data``: parse, semantic model, file rules, suppression
comments, per-file ignores, severity map, merging, the advice policy) with
the settings ``torchreview check`` would use for that file: the configuration
found from the file (``[tool.torchreview]`` / ``torchreview.toml``). What
differs is what flake8 cannot give a plugin: one file at a time, so project
rules (TR105, TR201, ...) and checkpoint scans (TR108) do not run, and a
summarized repeat (``Rule.summarize``, e.g. TR408) is one finding per file
instead of one per project.

Advice follows torchreview's policy, since flake8 set-ups list a plugin's
prefix just to turn it on: ``--select TR`` reports what ``torchreview
check`` reports by default (defects, likely defects, security); a narrower
selection asks for that advice, as ``torchreview check --select`` does
(``--select TR2``, ``--extend-select TR212``); ``--torchreview-show-advice``
(or ``show-advice = true`` in the torchreview configuration) reports all of it.
Confidence follows it too: findings below the minimum confidence (default
high; ``--torchreview-min-confidence`` or ``min-confidence`` in the torchreview
configuration) are left out, except those of rules a narrower selection names
while no minimum is given.
"""

from __future__ import annotations

import os
from functools import lru_cache

from torchreview.version import __version__


def _advice_selectors(options) -> tuple[str, ...]:
    """TR selectors narrower than the whole plugin, from flake8's selection."""
    chosen = []
    for name in ("select", "extend_select", "extended_default_select"):
        for code in getattr(options, name, None) or ():
            code = code.strip().upper()
            if code.startswith("TR") and code != "TR":
                chosen.append(code)
    return tuple(chosen)


@lru_cache(maxsize=64)
def _settings(config_path: str | None, anchor: str, show_advice: bool, asked: tuple[str, ...],
              min_confidence: str | None = None):
    """The settings of ``torchreview check`` for files under ``anchor`` (one
    configuration file), limited to file rules; flake8's narrower TR selections
    count as ``--extend-select`` (their advice is shown)."""
    from argparse import Namespace
    from dataclasses import replace

    from torchreview.catalog import all_rules
    from torchreview.commands import build_settings

    args = Namespace(paths=[anchor], config=config_path, select=None, extend_select=list(asked) or None,
                     ignore=None, review=None, show_advice=show_advice, target_torch=None,
                     min_severity=None, min_confidence=min_confidence, jobs=1, no_cache=True, fail_on=None)
    _, settings, _ = build_settings(args)
    file_rules = {r.code for r in all_rules() if "file" in r.scope}
    codes = tuple(c for c in settings.rule_codes if c in file_rules)
    return replace(settings, rule_codes=codes, scan_artifacts=False)


class TorchReviewChecker:
    name = "torchreview"
    version = __version__
    show_advice = False
    min_confidence: str | None = None
    asked: tuple[str, ...] = ()

    def __init__(self, tree, filename: str, lines: list[str]) -> None:
        # ``tree`` is flake8's parse; torchreview parses the text itself (its own model)
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, parser) -> None:
        parser.add_option("--torchreview-show-advice", action="store_true", parse_from_config=True,
                          help="torchreview: also report advice (performance, architecture, hygiene)")
        parser.add_option("--torchreview-min-confidence", choices=("low", "medium", "high"),
                          parse_from_config=True,
                          help="torchreview: hide findings below this confidence (default: high)")

    @classmethod
    def parse_options(cls, options) -> None:
        cls.show_advice = bool(getattr(options, "torchreview_show_advice", False))
        cls.asked = _advice_selectors(options)
        cls.min_confidence = getattr(options, "torchreview_min_confidence", None) or None

    def _data(self) -> bytes:
        """The file's bytes as torchreview reads them (encoding cookie, BOM), else
        the lines flake8 read (standard input)."""
        from torchreview.engine.source import LoadError, read_bytes

        if self.filename not in ("-", "stdin") and os.path.isfile(self.filename):
            try:
                return read_bytes(self.filename)
            except LoadError:
                pass
        return "".join(self.lines).encode("utf-8")

    def run(self):
        from torchreview.config import find_config
        from torchreview.engine.runner import review_data

        display = os.path.normpath(self.filename) if self.filename not in ("-", "stdin") else "stdin"
        try:
            config = find_config(display if display != "stdin" else ".")
            settings = _settings(config, os.path.dirname(os.path.abspath(display)), self.show_advice,
                                 self.asked, self.min_confidence)
        except Exception as exc:  # a bad configuration: one finding, not a traceback
            if os.environ.get("TORCHREVIEW_DEBUG"):
                raise
            yield 1, 0, f"TR000 torchreview could not load its configuration: {exc}", type(self)
            return
        report = review_data(self._data(), display, os.path.abspath(display), settings)
        for f in report.findings:
            yield f.line, max(f.column - 1, 0), f"{f.code} {f.message}", type(self)
        for e in report.errors:
            yield 1, 0, f"TR000 {e.message}", type(self)
