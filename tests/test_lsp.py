"""`torchreview server` end to end: a real LSP client (pytest-lsp) drives the
server as a subprocess over stdio; nothing here calls a handler directly."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("pygls", reason="the lsp extra (pygls) is in the test extra")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is in the test extra")
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

TRAIN = textwrap.dedent('''\
    import torch
    from torch import nn


    def train(loader, epochs):
        model = nn.DataParallel(nn.Linear(16, 4))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
            torch.save(model.state_dict(), "weights/last.pth")
    ''')

# The buffer as typed in the editor (the file on disk is clean): a method named
# without a call after a non-BMP character (two UTF-16 units, one code point),
# and a load of the wrapped state dict train.py saves (a project rule).
BUFFER = textwrap.dedent('''\
    import torch
    from torch import nn


    def evaluate(x):
        model = nn.Linear(16, 4)
        model.load_state_dict(torch.load("weights/last.pth", weights_only=True))
        label = "\U0001F600"; model.eval
        return model(x), label
    ''')

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "torchreview", "server"])
# track-record = false: the confidences asserted below are the rules' own evidence, not the
# shipped record's caps (which move as judged sweeps are added)
CONFIG = '[tool.torchreview]\nextend-select = ["TR409"]\nmin-confidence = "medium"\ntrack-record = false\n'
TIMEOUT = 20  # seconds for any one expected message; the whole test takes ~2 s


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, tmp_path):
    # TR517 (a project rule, medium confidence) shown through the configuration's gate
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "evaluate.py").write_text("import torch\n")
    params = types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=tmp_path.as_uri(),
        workspace_folders=[types.WorkspaceFolder(tmp_path.as_uri(), "w")],
        initialization_options={"torchreview": {"showAdvice": False}},
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def _diagnostics(client: LanguageClient, uri: str, done) -> list[types.Diagnostic]:
    """Wait for the published diagnostics of ``uri`` to satisfy ``done``."""
    async def wait():
        while not (uri in client.diagnostics and done(client.diagnostics[uri])):
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        return list(client.diagnostics[uri])

    return await asyncio.wait_for(wait(), TIMEOUT)


def _codes(diagnostics) -> set[str]:
    return {d.code for d in diagnostics}


def _offset(text: str, position: types.Position) -> int:
    """An LSP position (UTF-16 units) as an offset into ``text``."""
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:position.line])
    line, units, index = lines[position.line] if position.line < len(lines) else "", 0, 0
    while units < position.character and index < len(line):
        units += len(line[index].encode("utf-16-le")) // 2
        index += 1
    return start + index


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text) for e in edits),
                   reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


@pytest.mark.asyncio
async def test_diagnose_fix_and_hover_a_buffer(client: LanguageClient, tmp_path):
    uri = (tmp_path / "evaluate.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=BUFFER)))

    # File rules at once; the project rule (TR517, needs train.py's facts from disk) follows.
    found = await _diagnostics(client, uri, lambda ds: {"TR514", "TR517"} <= _codes(ds))
    by_code = {d.code: d for d in found}
    assert _codes(found) == {"TR514", "TR517", "TR409"}  # TR409: advice asked for in pyproject.toml
    typo = by_code["TR514"]
    # `model.eval` on line 8: code points 17..27, but UTF-16 18..28 after the emoji.
    assert typo.range == types.Range(types.Position(7, 18), types.Position(7, 28))
    assert typo.severity == types.DiagnosticSeverity.Error and typo.source == "torchreview"
    assert typo.data["kind"] == "defect" and typo.data["confidence"] == "high" and typo.data["fix"] == "safe"
    assert "[high, defect]" in typo.message
    prefix = by_code["TR517"]
    assert prefix.range == types.Range(types.Position(6, 4), types.Position(6, 76))
    assert "medium confidence" in prefix.message and "train.py:13" in prefix.message
    assert by_code["TR409"].severity == types.DiagnosticSeverity.Hint  # low advice
    assert by_code["TR409"].data["kind"] == "advice"
    if typo.code_description is not None:  # a source checkout has docs/rules/TR514.md
        assert typo.code_description.href.endswith("/docs/rules/TR514.md")

    # Quick fixes: the safe one is preferred, the unsafe one says so; none for TR517 (display only).
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri), range=types.Range(types.Position(6, 0), types.Position(8, 0)),
        context=types.CodeActionContext(diagnostics=found)))
    titles = {a.title: a.kind for a in actions}
    safe = [a for a in actions if a.title.startswith("TR514")]
    unsafe = [a for a in actions if a.title.startswith("TR409")]
    assert len(actions) == 3 and len(safe) == 1 and len(unsafe) == 1, titles
    assert titles["torchreview: apply all safe fixes"] == "source.fixAll.torchreview"
    assert safe[0].kind == unsafe[0].kind == types.CodeActionKind.QuickFix
    assert safe[0].is_preferred and "(safe fix)" in safe[0].title
    assert not unsafe[0].is_preferred and "unsafe fix" in unsafe[0].title
    change = safe[0].edit.document_changes[0]
    assert change.text_document.uri == uri and change.text_document.version == 1
    fixed = _apply(BUFFER, change.edits)
    assert 'label = "\U0001F600"; model.eval()\n' in fixed
    assert fixed.replace("model.eval()", "model.eval") == BUFFER

    # The source action applies every safe fix at once (unsafe ones stay for the user).
    whole = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri), range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])))
    assert [(a.title, a.kind) for a in whole] == [("torchreview: apply all safe fixes", "source.fixAll.torchreview")]
    assert _apply(BUFFER, whole[0].edit.document_changes[0].edits) == fixed

    # Hover on a finding: the rule's documentation as Markdown.
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(6, 10)))
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert "**TR517** `state-dict-prefix-mismatch`" in hover.contents.value
    assert "## Severity reason" in hover.contents.value
    assert await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(0, 0))) is None

    # The edited buffer: the fixed finding disappears, the others stay.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [types.TextDocumentContentChangeWholeDocument(text=fixed)]))
    after = await _diagnostics(client, uri, lambda ds: "TR514" not in _codes(ds))
    assert _codes(after) == {"TR517", "TR409"}

    # Settings from the editor: ignore mirrors the configuration key.
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"torchreview": {"ignore": ["TR409"]}}))
    last = await _diagnostics(client, uri, lambda ds: "TR409" not in _codes(ds))
    assert _codes(last) == {"TR517"}

    # Each didChangeConfiguration replaces the last one (over initializationOptions).
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
    again = await _diagnostics(client, uri, lambda ds: "TR409" in _codes(ds))
    assert _codes(again) == {"TR517", "TR409"}

    # The workspace configuration edited and saved in the editor is read again.
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.torchreview]\nignore = ["TR5"]\n')
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(config.as_uri())))
    saved = await _diagnostics(client, uri, lambda ds: len(ds) == 0)
    assert saved == []
    config.write_text(CONFIG)
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(config.as_uri())))
    await _diagnostics(client, uri, lambda ds: _codes(ds) == {"TR517", "TR409"})

    # A bad setting: one clear message, the previous settings stay in force.
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"torchreview": {"select": ["TR999"]}}))
    await asyncio.wait_for(client.wait_for_notification(types.WINDOW_SHOW_MESSAGE), TIMEOUT)
    assert [m.message for m in client.messages] == [
        "torchreview: unknown rule, prefix or name 'TR999' (see `torchreview rules`); previous settings kept"]
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(6, 10)))
    assert "TR517" in hover.contents.value


def test_server_without_pygls_says_so_in_one_line(tmp_path):
    """The base install has no pygls: one clear line, exit 2, no traceback."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(textwrap.dedent('''\
        import sys
        class _Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("pygls", "lsprotocol"):
                    raise ImportError(name)
        sys.meta_path.insert(0, _Block())
        '''))
    import os

    env = dict(os.environ, PYTHONPATH=str(blocker))
    proc = subprocess.run([sys.executable, "-m", "torchreview", "server"], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "torchreview: error: `torchreview server` needs pygls: pip install 'torchreview[lsp]' "
        "(or pip install 'pygls>=2')"]
    assert "Traceback" not in proc.stderr


@pytest.mark.asyncio
async def test_notebook_cells_get_cell_relative_diagnostics_and_fixes(client: LanguageClient, tmp_path):
    nb_uri = (tmp_path / "explore.ipynb").as_uri()
    texts = ["# Exploration", "import torch\nfrom torch import nn\nmodel = nn.Linear(2, 2)\n",
             "x = torch.ones(2)\nmodel.eval\n"]
    kinds = [types.NotebookCellKind.Markup, types.NotebookCellKind.Code, types.NotebookCellKind.Code]
    cell_uris = [f"{nb_uri}#cell{i}" for i in range(3)]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=nb_uri, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=k, document=u) for k, u in zip(kinds, cell_uris)]),
        cell_text_documents=[types.TextDocumentItem(uri=u, language_id="markdown" if i == 0 else "python",
                                                    version=1, text=t)
                             for i, (u, t) in enumerate(zip(cell_uris, texts))]))
    found = await _diagnostics(client, cell_uris[2], lambda ds: "TR514" in _codes(ds))
    assert [(d.code, d.range) for d in found] == [
        ("TR514", types.Range(types.Position(1, 0), types.Position(1, 10)))]  # line 2 of the third cell
    assert list(client.diagnostics[cell_uris[1]]) == []

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(cell_uris[2]),
        range=found[0].range, context=types.CodeActionContext(diagnostics=found)))
    assert len(actions) == 1 and actions[0].is_preferred
    change = actions[0].edit.document_changes[0]
    assert change.text_document.uri == cell_uris[2]
    fixed = _apply(texts[2], change.edits)
    assert fixed == "x = torch.ones(2)\nmodel.eval()\n"

    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=nb_uri),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cell_uris[2], version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)])]))))
    after = await _diagnostics(client, cell_uris[2], lambda ds: len(ds) == 0)
    assert after == []


def test_settings_accept_the_editors_spellings_and_reject_bad_values():
    from torchreview.lsp.analysis import SettingsError, normalise_settings

    assert normalise_settings({"torchreview": {"showAdvice": True, "extend_select": "TR2,TR3",
                                               "target-torch": "2.4", "unrelated": 1}}) == {
        "show-advice": True, "extend-select": ["TR2", "TR3"], "target-torch": "2.4"}
    assert normalise_settings({"minSeverity": "high", "projectRules": False}) == {
        "min-severity": "high", "project-rules": False}
    assert normalise_settings(None) == {}
    for bad, message in (({"showAdvice": "yes"}, "'show-advice' must be true or false"),
                         ({"select": [1]}, "'select' must be a list"),
                         ({"targetTorch": 2.4}, "'target-torch' must be a string")):
        with pytest.raises(SettingsError, match=message):
            normalise_settings(bad)
