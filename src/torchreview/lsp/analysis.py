"""The review behind the Language Server, without any LSP library.

A buffer is reviewed from its text in memory (never imported, never executed),
with the same pipeline as ``check``: file rules on the buffer, project rules
over the project's facts (the other files' facts come as ``check --project``
gets them: the result cache when it holds them, else a cached facts-only pass;
they are kept in memory and refreshed when a file's size or modification time
changes), the project refinements, merging, and the reporting policy of
``is_shown``.

Positions stay torchreview's here (1-based lines, 1-based code-point columns,
exclusive ends); ``to_lsp_range`` turns them into 0-based LSP positions in the
client's position encoding.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

from torchreview.engine.facts import FileFacts
from torchreview.findings import Finding, ReviewError, Severity

# The settings an editor may send (``initializationOptions`` or
# ``workspace/didChangeConfiguration``): the configuration keys of
# ``[tool.torchreview]`` that make sense per editor, plus ``project-rules``.
SETTING_KEYS = ("select", "extend-select", "ignore", "review", "show-advice", "target-torch",
                "min-severity", "min-confidence", "config", "project-rules", "no-cache")
_LIST_KEYS = ("select", "extend-select", "ignore")


class SettingsError(Exception):
    """A bad editor setting or configuration file; one line for the user."""


def normalise_settings(raw) -> dict:
    """Accept ``{"torchreview": {...}}`` or the keys directly, in kebab-case,
    snake_case or camelCase (``showAdvice``, ``show_advice``, ``show-advice``).
    Unknown keys are ignored (editors send their own); known keys are checked."""
    if not isinstance(raw, dict):
        return {}
    if isinstance(raw.get("torchreview"), dict):
        raw = raw["torchreview"]
    out: dict = {}
    for key, value in raw.items():
        if not isinstance(key, str):
            continue
        name = re.sub(r"(?<=[a-z])([A-Z])", r"-\1", key).replace("_", "-").lower()
        if name not in SETTING_KEYS or value is None:
            continue
        if name in _LIST_KEYS:
            if isinstance(value, str):
                value = [v for v in value.split(",") if v.strip()]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise SettingsError(f"setting '{name}' must be a list of rule codes, prefixes or names")
        elif name in ("show-advice", "project-rules", "no-cache"):
            if not isinstance(value, bool):
                raise SettingsError(f"setting '{name}' must be true or false")
        elif not isinstance(value, str):
            raise SettingsError(f"setting '{name}' must be a string")
        out[name] = value
    return out


class _Args(SimpleNamespace):
    """The command line's ``args`` for ``build_settings``: options not given are None."""

    def __getattr__(self, name):
        return None


def build_review_settings(root: str, editor: dict):
    """The engine's Settings for a workspace: its configuration file
    (``pyproject.toml`` ``[tool.torchreview]``, found as ``check`` finds it),
    overridden by the editor's settings as the command line overrides it."""
    from torchreview.errors import UsageError
    from torchreview.commands import build_settings

    args = _Args(paths=[root], config=editor.get("config"), select=editor.get("select"),
                 extend_select=editor.get("extend-select"), ignore=editor.get("ignore"),
                 review=editor.get("review"), show_advice=editor.get("show-advice", False),
                 target_torch=editor.get("target-torch"), min_severity=editor.get("min-severity"),
                 min_confidence=editor.get("min-confidence"), jobs=1, no_cache=bool(editor.get("no-cache", False)))
    if args.review is not None and args.review not in ("general", "security", "performance",
                                                        "architecture", "bugs"):
        raise SettingsError(f"setting 'review' must be one of general, security, performance, "
                            f"architecture, bugs (got {args.review!r})")
    if args.min_severity is not None:
        try:
            Severity.parse(args.min_severity)
        except ValueError as exc:
            raise SettingsError(f"setting 'min-severity': {exc}") from None
    if args.min_confidence is not None and args.min_confidence not in ("low", "medium", "high"):
        raise SettingsError(f"setting 'min-confidence' must be one of low, medium, high "
                            f"(got {args.min_confidence!r})")
    try:
        _paths, settings, _fail_on = build_settings(args)
    except UsageError as exc:
        raise SettingsError(str(exc)) from None
    except ValueError as exc:  # e.g. a bad target-torch in the configuration
        raise SettingsError(f"configuration: {exc}") from None
    return settings


def default_settings():
    """The defaults of ``check`` with no configuration (when the configuration is broken)."""
    from torchreview.commands import DEFAULT_MIN_CONFIDENCE, advice_codes, select_rules
    from torchreview.engine.runner import Settings

    codes = select_rules(None, [], [], None)
    return Settings(rule_codes=codes, advice_codes=advice_codes(codes, None, [], None, False),
                    min_confidence=DEFAULT_MIN_CONFIDENCE)


@dataclass
class BufferReview:
    findings: list[Finding]
    errors: list[ReviewError]
    facts: FileFacts | None = None


@dataclass
class _Known:
    key: tuple[int, int]
    facts: FileFacts | None


@dataclass
class ProjectIndex:
    """The facts of every reviewable file under ``root`` (keyed by display path)."""

    root: str
    settings: object
    ready: bool = False
    _sources: list[tuple[str, str]] | None = None
    _known: dict[str, _Known] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def invalidate(self) -> None:
        """Walk the tree again next time (a file was created, saved or deleted)."""
        self._sources = None

    def facts(self, skip: set[str]) -> list[FileFacts]:
        """Up-to-date facts of every file but those in ``skip`` (open buffers)."""
        from torchreview.engine.discovery import discover
        from torchreview.project_scope import _facts_of

        facts_only = replace(self.settings, rule_codes=())
        with self._lock:
            if self._sources is None:
                found = discover([self.root], exclude=self.settings.exclude, want_artifacts=False)
                self._sources = list(found.sources)
                live = {shown for _real, shown in self._sources}
                self._known = {k: v for k, v in self._known.items() if k in live}
            out = []
            for real, shown in self._sources:
                if shown in skip:
                    continue
                try:
                    st = os.stat(real)
                except OSError:
                    continue
                key = (st.st_mtime_ns, st.st_size)
                known = self._known.get(shown)
                if known is None or known.key != key:
                    known = self._known[shown] = _Known(key, _facts_of(real, shown, self.settings, facts_only)[0])
                if known.facts is not None:
                    out.append(known.facts)
            self.ready = True
            return out


def display_path(path: str) -> str:
    """As ``check`` run from the workspace root (the server's working folder) shows it."""
    from torchreview.engine.discovery import display_path as shown

    return shown(path, os.getcwd())


def notebook_json(cells: list[tuple[str, str]]) -> bytes:
    """A minimal ``.ipynb`` from (kind, text) cells, for the notebook loader."""
    doc = {"cells": [{"cell_type": kind, "source": text, "metadata": {}} for kind, text in cells],
           "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc).encode("utf-8")


def review_buffer(shown: str, text: str, settings, index: ProjectIndex | None,
                  open_facts: dict[str, FileFacts] | None = None,
                  notebook_cells: list[tuple[str, str]] | None = None) -> BufferReview:
    """Review one buffer: ``text`` for a Python file, or ``notebook_cells`` for a
    notebook (then findings carry the 1-based cell number and cell-relative lines).
    With an ``index``, project rules run over the project's facts with this
    buffer's facts in place of the file's saved ones."""
    from torchreview.engine.runner import _run_project_rules, finalize, review_source
    from torchreview.engine.refine import refine_with_project
    from torchreview.engine.source import LoadError, SourceFile, load_notebook

    if notebook_cells is not None:
        try:
            source = load_notebook(shown, shown, notebook_json(notebook_cells))
        except LoadError as exc:
            return BufferReview([], [ReviewError(shown, str(exc))])
    else:
        source = SourceFile(path=shown, text=text[1:] if text.startswith("\ufeff") else text)
    if not source.text.strip():
        return BufferReview([], [], FileFacts(path=shown, is_notebook=source.is_notebook))
    result = review_source(source, settings)
    findings = list(result.findings)
    errors = list(result.errors) + [ReviewError(shown, note) for note in result.notes]
    facts = [result.facts] if result.facts is not None else []
    if index is not None:
        others = dict(open_facts or {})
        others.pop(shown, None)
        facts += index.facts(skip={shown, *others}) + list(others.values())
        project_errors: list[ReviewError] = []
        findings += [f for f in _run_project_rules(facts, settings, project_errors) if f.path == shown]
        findings = refine_with_project(findings, facts, settings)
    findings = [f for f in finalize(findings, settings) if f.path == shown]
    return BufferReview(findings, errors, result.facts)


def fix_all(shown: str, text: str, settings, index: ProjectIndex | None,
            open_facts: dict[str, FileFacts] | None = None) -> str | None:
    """The buffer with every safe fix applied as ``check --fix`` would (passes
    until nothing changes, only code that parses, hidden advice left alone, the
    project's refinements applied); None when nothing changes or it cannot be done."""
    import io
    import tokenize

    from torchreview.engine.refine import refine_with_project
    from torchreview.fixer import fix_bytes

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(text.encode("utf-8", "surrogatepass")).readline)
        data = text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeError):
        return None
    refine = None
    if index is not None:
        others = dict(open_facts or {})
        others.pop(shown, None)
        facts = index.facts(skip={shown, *others}) + list(others.values())
        refine = lambda findings: refine_with_project(findings, facts, settings)  # noqa: E731
    outcome = fix_bytes(data, shown, shown, settings, unsafe=False, refine=refine)
    if not outcome.changed or outcome.error is not None and not outcome.applied:
        return None
    try:
        return outcome.fixed.decode(encoding)
    except UnicodeError:
        return None


def to_lsp_position(lines: list[str], line: int, column: int, units) -> tuple[int, int]:
    """torchreview's (1-based line, 1-based code-point column) as LSP's 0-based
    (line, character) counted in the client's code units (``units(text)``)."""
    index = max(line - 1, 0)
    if index >= len(lines):
        return len(lines), 0
    text = lines[index]
    return index, units(text[:max(column - 1, 0)])


def to_lsp_range(lines: list[str], finding, units) -> tuple[tuple[int, int], tuple[int, int]]:
    start = to_lsp_position(lines, finding.line, finding.column, units)
    end = to_lsp_position(lines, finding.end_line or finding.line, finding.end_column or finding.column, units)
    if end < start:
        end = start
    return start, end


_LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Lines as both Python and LSP count them (``\\n``, ``\\r\\n``, ``\\r``), no ends."""
    return _LINE_END.split(text)


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def utf8_units(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))

