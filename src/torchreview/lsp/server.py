"""The Language Server: LSP plumbing over ``lsp.analysis`` (needs pygls).

* diagnostics on open and save at once, on change after ``DEBOUNCE`` seconds of
  quiet, computed from the buffer (Python files and, through notebook document
  sync, the code cells of notebooks);
* a quick fix for every finding that has a fix (safe ones preferred, unsafe ones
  say so in the title), as a versioned WorkspaceEdit;
* hover over a finding shows its rule's documentation;
* settings: the configuration keys (``analysis.SETTING_KEYS``) from
  ``initializationOptions`` and ``workspace/didChangeConfiguration``, over the
  workspace's own ``[tool.torchreview]`` configuration.
"""

from __future__ import annotations

import asyncio
import functools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from torchreview.version import __version__
from torchreview.findings import Finding, Severity
from torchreview.lsp import analysis

DEBOUNCE = 0.3  # seconds of quiet after a change before the buffer is reviewed
SOURCE = "torchreview"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.torchreview"
_DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir,
                     "docs", "rules")


@dataclass
class Reviewed:
    """What the last review of one text document (or notebook cell) found."""

    uri: str
    version: int | None
    lines: list[str]
    findings: list[Finding]
    notebook: str | None = None  # the notebook's uri, for a cell


def severity_of(finding: Finding) -> types.DiagnosticSeverity:
    """critical/high: Error; medium: Warning; low: Information; advice is one
    step milder (high advice: Warning, medium: Information, low: Hint)."""
    level = finding.severity
    if finding.kind == "advice" and finding.category != "security":
        return {Severity.CRITICAL: types.DiagnosticSeverity.Warning,
                Severity.HIGH: types.DiagnosticSeverity.Warning,
                Severity.MEDIUM: types.DiagnosticSeverity.Information}.get(level, types.DiagnosticSeverity.Hint)
    return {Severity.CRITICAL: types.DiagnosticSeverity.Error, Severity.HIGH: types.DiagnosticSeverity.Error,
            Severity.MEDIUM: types.DiagnosticSeverity.Warning}.get(level, types.DiagnosticSeverity.Information)


def rule_doc_uri(code: str) -> str | None:
    """The rule's page in a source checkout (``docs/rules/CODE.md``), if present."""
    path = os.path.normpath(os.path.join(_DOCS, f"{code}.md"))
    return from_fs_path(path) if os.path.isfile(path) else None


def rule_markdown(finding: Finding) -> str:
    from torchreview.catalog import rule_by_code
    from torchreview.report.rules_doc import explain_rule

    rule = rule_by_code().get(finding.code)
    head = f"**{finding.code}** `{finding.name}` ({finding.label()})\n\n{finding.message}\n\n---\n\n"
    if rule is None:
        return head
    body = explain_rule(rule)
    title, _, rest = body.partition("\n")
    return head + f"### {title}\n" + rest


class TorchreviewServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "torchreview", __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[types.NotebookDocumentFilterWithCells(
                    notebook="*", cells=[types.NotebookCellLanguage(language="python")])],
                save=True))
        self.root = os.getcwd()
        self.editor_settings: dict = {}
        self.initial_settings: dict = {}
        self.review_settings = None
        self.index: analysis.ProjectIndex | None = None
        self.reviewed: dict[str, Reviewed] = {}  # text document or cell uri -> last review
        self.open_facts: dict = {}  # display path -> facts of the open buffer
        self.pending: dict[str, asyncio.Task] = {}
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchreview-review")
        self.warming = False

    # -- settings ----------------------------------------------------------
    def configure(self, raw, initial: bool = False) -> None:
        """Settings from the editor: ``initializationOptions`` (``initial``) are the
        base, each ``didChangeConfiguration`` is laid over them key by key (an
        editor that sends no settings keeps them); None re-reads the configuration."""
        try:
            if raw is None:
                editor = self.editor_settings
            elif initial:
                editor = self.initial_settings = analysis.normalise_settings(raw)
            else:
                editor = {**self.initial_settings, **analysis.normalise_settings(raw)}
            settings = analysis.build_review_settings(self.root, editor)
        except analysis.SettingsError as exc:
            kept = "previous settings kept" if self.review_settings is not None else "editor settings not used"
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"torchreview: {exc}; {kept}"))
            if self.review_settings is not None:
                return
            editor = {}
            try:  # the configuration file alone, else the defaults (its error was just shown)
                settings = analysis.build_review_settings(self.root, editor)
            except analysis.SettingsError:
                settings = analysis.default_settings()
        self.editor_settings = editor
        self.review_settings = settings
        use_project = editor.get("project-rules", True)
        self.index = analysis.ProjectIndex(self.root, settings) if use_project else None
        self.open_facts.clear()

    # -- documents ---------------------------------------------------------
    def shown(self, uri: str) -> str:
        path = to_fs_path(uri)
        if not path or not uri.startswith("file:"):
            return os.path.basename(uri.split(":", 1)[-1]) or "untitled.py"
        return analysis.display_path(path)

    def is_python(self, uri: str) -> bool:
        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            return False
        return doc.language_id == "python" or uri.endswith((".py", ".pyi"))

    def schedule(self, key: str, delay: float, notebook: bool = False) -> None:
        task = self.pending.pop(key, None)
        if task is not None and not task.done():
            task.cancel()
        self.pending[key] = asyncio.ensure_future(self._review_later(key, delay, notebook))

    async def _review_later(self, key: str, delay: float, notebook: bool) -> None:
        if delay:
            await asyncio.sleep(delay)
        try:
            await (self.review_notebook(key) if notebook else self.review_document(key))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # never let a review bug take the server down
            self.window_log_message(types.LogMessageParams(
                types.MessageType.Error, f"torchreview: internal error ({type(exc).__name__}: {exc})"))
        if not (self.index is None or self.index.ready or self.warming):
            self.warming = True
            asyncio.ensure_future(self._warm())

    async def _warm(self) -> None:
        """Learn the project's facts once, off the request path, then review the
        open buffers again with the project rules."""
        index = self.index
        try:
            if index is not None:
                await asyncio.get_running_loop().run_in_executor(self.executor, index.facts, set())
        except Exception as exc:  # e.g. an unreadable tree: go on with file rules only
            self.window_log_message(types.LogMessageParams(
                types.MessageType.Error, f"torchreview: project rules off: cannot index the project "
                                         f"({type(exc).__name__}: {exc})"))
            if index is self.index:
                self.index = None
        finally:
            self.warming = False
        if self.index is None or index is self.index:
            self.review_all(0)

    def refresh(self) -> None:
        """Review every open buffer again: after learning the project's facts
        when they are not known yet (so project findings do not blink out)."""
        if self.index is not None and not self.index.ready:
            if not self.warming:
                self.warming = True
                asyncio.ensure_future(self._warm())
        else:
            self.review_all(0)

    def review_all(self, delay: float) -> None:
        for uri in list(self.workspace.text_documents):
            if self.workspace.get_notebook_document(cell_uri=uri) is None and self.is_python(uri):
                self.schedule(uri, delay)
        for uri in list(self.workspace.notebook_documents):
            self.schedule(uri, delay, notebook=True)

    async def _run(self, shown: str, text: str, cells=None) -> analysis.BufferReview:
        """Review in the worker thread with a snapshot of the state taken here."""
        index = self.index if self.index is not None and self.index.ready else None
        work = functools.partial(analysis.review_buffer, shown, text, self.review_settings, index,
                                 dict(self.open_facts), notebook_cells=cells)
        return await asyncio.get_running_loop().run_in_executor(self.executor, work)

    async def review_document(self, uri: str) -> Reviewed | None:
        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            return None
        text, version, shown = doc.source, doc.version, self.shown(uri)
        result = await self._run(shown, text)
        current = self.workspace.text_documents.get(uri)
        if current is None or current.version != version:
            return None  # edited meanwhile: a newer review is on its way
        if result.facts is not None:
            self.open_facts[shown] = result.facts
        for error in result.errors:
            self.window_log_message(types.LogMessageParams(types.MessageType.Log,  # e.g. half-typed code
                                                           f"torchreview: {error.path}: {error.message}"))
        done = self.reviewed[uri] = Reviewed(uri, version, analysis.split_lines(text), result.findings)
        self.publish(done)
        return done

    async def review_notebook(self, nb_uri: str) -> None:
        notebook = self.workspace.get_notebook_document(notebook_uri=nb_uri)
        if notebook is None:
            return
        cells, uris = [], []
        for cell in notebook.cells:
            doc = self.workspace.text_documents.get(cell.document)
            text = doc.source if doc is not None else ""
            code = cell.kind == types.NotebookCellKind.Code and (doc is None or doc.language_id == "python")
            cells.append(("code" if code else "markdown", text))
            uris.append(cell.document)
        version, shown = notebook.version, self.shown(nb_uri)
        result = await self._run(shown, "", cells)
        current = self.workspace.get_notebook_document(notebook_uri=nb_uri)
        if current is None or current.version != version:
            return
        if result.facts is not None:
            self.open_facts[shown] = result.facts
        by_cell: dict[int, list[Finding]] = {}
        for f in result.findings:
            by_cell.setdefault(f.cell or 0, []).append(f)
        for uri in [u for u, done in self.reviewed.items() if done.notebook == nb_uri and u not in uris]:
            del self.reviewed[uri]  # a deleted cell
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        for number, (uri, (_kind, text)) in enumerate(zip(uris, cells), start=1):
            doc = self.workspace.text_documents.get(uri)
            done = self.reviewed[uri] = Reviewed(uri, doc.version if doc else None, analysis.split_lines(text),
                                                 by_cell.get(number, []), notebook=nb_uri)
            self.publish(done)

    def units(self):
        encoding = self.workspace.position_encoding
        if encoding == types.PositionEncodingKind.Utf8:
            return analysis.utf8_units
        if encoding == types.PositionEncodingKind.Utf32:
            return len
        return analysis.utf16_units

    def lsp_range(self, lines: list[str], item) -> types.Range:
        (l0, c0), (l1, c1) = analysis.to_lsp_range(lines, item, self.units())
        return types.Range(types.Position(l0, c0), types.Position(l1, c1))

    def diagnostic(self, done: Reviewed, f: Finding) -> types.Diagnostic:
        href = rule_doc_uri(f.code)
        related = []
        for r in f.related:
            if r.cell is None and r.path:
                related.append(types.DiagnosticRelatedInformation(
                    types.Location(from_fs_path(os.path.abspath(r.path)),
                                   types.Range(types.Position(max(r.line - 1, 0), max(r.column - 1, 0)),
                                               types.Position(max(r.end_line - 1, 0), max(r.end_column - 1, 0)))),
                    f"{r.code}: {r.message}"))
        return types.Diagnostic(
            range=self.lsp_range(done.lines, f),
            message=f"{f.message} [{f.label()}]",
            severity=severity_of(f),
            code=f.code,
            code_description=types.CodeDescription(href) if href else None,
            source=SOURCE,
            related_information=related or None,
            data={"name": f.name, "severity": f.severity.label, "kind": f.kind, "confidence": f.confidence,
                  "fix": f.fix.applicability if f.fix else None},
        )

    def publish(self, done: Reviewed) -> None:
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=done.uri, version=done.version, diagnostics=[self.diagnostic(done, f) for f in done.findings]))

    async def current(self, uri: str) -> Reviewed | None:
        """The review of the document as it is now (reviewed again if it changed)."""
        done = self.reviewed.get(uri)
        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            return None
        if done is not None and done.version == doc.version:
            return done
        if done is not None and done.notebook is not None:
            await self.review_notebook(done.notebook)
            return self.reviewed.get(uri)
        task = self.pending.pop(uri, None)
        if task is not None and not task.done():
            task.cancel()
        return await self.review_document(uri)

    # -- requests ----------------------------------------------------------
    def code_actions(self, done: Reviewed, wanted: types.Range) -> list[types.CodeAction]:
        supports_versions = self.supports_versions()
        actions = []
        for f in done.findings:
            fix = f.fix
            if fix is None or not fix.edits or fix.applicability not in ("safe", "unsafe"):
                continue
            where = self.lsp_range(done.lines, f)
            if not _overlaps(where, wanted):
                continue
            edits = [types.TextEdit(self.lsp_range(done.lines, e), e.content) for e in fix.edits]
            if supports_versions:
                change = types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                    types.OptionalVersionedTextDocumentIdentifier(done.uri, done.version), edits)])
            else:
                change = types.WorkspaceEdit(changes={done.uri: edits})
            safe = fix.applicability == "safe"
            title = fix.title or "apply the fix"
            label = "safe fix" if safe else "unsafe fix: review the change"
            actions.append(types.CodeAction(
                title=f"{f.code}: {title} ({label})", kind=types.CodeActionKind.QuickFix,
                diagnostics=[self.diagnostic(done, f)], is_preferred=safe, edit=change))
        return actions

    async def fix_all_action(self, done: Reviewed) -> types.CodeAction | None:
        """``source.fixAll.torchreview``: every safe fix of a Python buffer at once."""
        doc = self.workspace.text_documents.get(done.uri)
        if done.notebook is not None or doc is None or not any(
                f.fix is not None and f.fix.applicability == "safe" for f in done.findings):
            return None
        index = self.index if self.index is not None and self.index.ready else None
        work = functools.partial(analysis.fix_all, self.shown(done.uri), doc.source, self.review_settings,
                                 index, dict(self.open_facts))
        fixed = await asyncio.get_running_loop().run_in_executor(self.executor, work)
        current = self.workspace.text_documents.get(done.uri)
        if fixed is None or current is None or current.version != done.version:
            return None
        units = self.units()
        end = types.Position(len(done.lines) - 1, units(done.lines[-1]))
        edit = types.TextEdit(types.Range(types.Position(0, 0), end), fixed)
        return types.CodeAction(
            title="torchreview: apply all safe fixes", kind=FIX_ALL,
            edit=types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                types.OptionalVersionedTextDocumentIdentifier(done.uri, done.version), [edit])])
            if self.supports_versions() else types.WorkspaceEdit(changes={done.uri: [edit]}))

    def supports_versions(self) -> bool:
        return bool(getattr(getattr(getattr(self.client_capabilities, "workspace", None),
                                    "workspace_edit", None), "document_changes", False))

    def hover(self, done: Reviewed, position: types.Position) -> types.Hover | None:
        hits = [f for f in done.findings if _contains(self.lsp_range(done.lines, f), position)]
        if not hits:
            return None
        text = "\n\n---\n\n".join(rule_markdown(f) for f in hits)
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text),
                           range=self.lsp_range(done.lines, hits[0]))


def _overlaps(a: types.Range, b: types.Range) -> bool:
    start_a, end_a = (a.start.line, a.start.character), (a.end.line, a.end.character)
    start_b, end_b = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return start_a <= end_b and start_b <= end_a


def _contains(r: types.Range, p: types.Position) -> bool:
    return (r.start.line, r.start.character) <= (p.line, p.character) <= (r.end.line, r.end.character)


def _is_config(uri: str) -> bool:
    return uri.rsplit("/", 1)[-1] in ("pyproject.toml", "torchreview.toml")


def build_server() -> TorchreviewServer:
    server = TorchreviewServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: TorchreviewServer, params: types.InitializeParams) -> None:
        root = None
        if params.workspace_folders:
            root = to_fs_path(params.workspace_folders[0].uri)
        elif params.root_uri:
            root = to_fs_path(params.root_uri)
        elif params.root_path:
            root = params.root_path
        if root and os.path.isdir(root):
            os.chdir(root)  # display paths, the cache and the configuration as `check` run there
            ls.root = os.getcwd()
        ls.configure(params.initialization_options or {}, initial=True)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: TorchreviewServer, params: types.DidChangeConfigurationParams) -> None:
        ls.configure(params.settings if isinstance(params.settings, dict) else None)
        ls.reviewed.clear()
        ls.refresh()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: TorchreviewServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(_is_config(c.uri) for c in params.changes):
            ls.configure(None)
            ls.refresh()
            return
        if ls.index is not None:
            ls.index.invalidate()
        ls.review_all(0)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchreviewServer, params: types.DidOpenTextDocumentParams) -> None:
        if ls.is_python(params.text_document.uri):
            ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchreviewServer, params: types.DidChangeTextDocumentParams) -> None:
        if ls.is_python(params.text_document.uri):
            ls.schedule(params.text_document.uri, DEBOUNCE)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TorchreviewServer, params: types.DidSaveTextDocumentParams) -> None:
        if _is_config(params.text_document.uri):  # the configuration edited in the editor
            ls.configure(None)
            ls.reviewed.clear()
            ls.refresh()
            return
        if ls.index is not None:
            ls.index.invalidate()  # a new file may have been saved for the first time
        if ls.is_python(params.text_document.uri):
            ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchreviewServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.reviewed.pop(uri, None)
        ls.open_facts.pop(ls.shown(uri), None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def nb_open(ls: TorchreviewServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0, notebook=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def nb_change(ls: TorchreviewServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, DEBOUNCE, notebook=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def nb_save(ls: TorchreviewServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0, notebook=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def nb_close(ls: TorchreviewServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.pending.pop(params.notebook_document.uri, None)
        ls.open_facts.pop(ls.shown(params.notebook_document.uri), None)
        for cell in params.cell_text_documents:
            ls.reviewed.pop(cell.uri, None)
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell.uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]))
    async def code_action(ls: TorchreviewServer, params: types.CodeActionParams):
        done = await ls.current(params.text_document.uri)
        if done is None:
            return None
        only = [str(getattr(k, "value", k)) for k in params.context.only or ()]

        def wanted(kind: str) -> bool:
            return not only or any(kind == k or kind.startswith(k + ".") for k in only)

        actions = ls.code_actions(done, params.range) if wanted(types.CodeActionKind.QuickFix.value) else []
        if wanted(FIX_ALL):
            whole = await ls.fix_all_action(done)
            if whole is not None:
                actions.append(whole)
        return actions

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: TorchreviewServer, params: types.HoverParams):
        done = await ls.current(params.text_document.uri)
        return ls.hover(done, params.position) if done is not None else None

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: TorchreviewServer, *args) -> None:
        for task in ls.pending.values():
            task.cancel()
        ls.executor.shutdown(wait=False, cancel_futures=True)

    return server
