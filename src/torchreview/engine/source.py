"""Loading source files: PEP 263 decoding, notebooks as one module with a line map."""

from __future__ import annotations

import ast

import io
import json
import re
import tokenize
from dataclasses import dataclass, field

from torchreview.engine.regular_files import NotRegularFile, open_regular, read_capped

MAX_FILE_BYTES = 20 * 1024 * 1024


class LoadError(Exception):
    """A file that cannot be reviewed; the message is one line for the report."""


@dataclass
class SourceFile:
    path: str  # as shown in reports
    text: str  # Python text that is parsed (notebook cells joined)
    is_notebook: bool = False
    # For notebooks: index (virtual line - 1) -> (cell number, line in cell), 1-based.
    line_map: list[tuple[int, int]] | None = None
    # Stored outputs of notebook cells: (cell number, text).
    outputs: list[tuple[int, str]] = field(default_factory=list)
    # Notebook code cells whose stored outputs hold an error (`output_type: "error"`):
    # the author ran them and saw them fail, often on purpose ("this will error").
    error_cells: frozenset[int] = frozenset()
    # Notebook code cells the stored notebook shows ran to the end without error
    # (``ran_cells``, see ``_ran_cells``): evidence against a claim that a line of
    # the cell raises when it runs (``Rule.claims_raise``, engine/runner.py).
    ran_cells: frozenset[int] = frozenset()
    # Lines that were IPython magics/shell escapes (virtual line numbers).
    magic_lines: frozenset[int] = frozenset()
    # For notebooks: the cells' own lines (magics as written), for code frames.
    display_lines: list[str] | None = None
    # For notebooks: the kernel's language when the notebook names one that is not
    # Python (``"swift"``): nothing of it is reviewed
    language: str | None = None
    # For notebooks: the (major, minor) Python version of the kernel that last ran it
    # (``metadata.language_info.version``), None when the notebook does not say
    kernel_python: tuple[int, int] | None = None
    _lines: list[str] | None = None

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines

    @property
    def written_text(self) -> str:
        """The text as its author wrote it: for a notebook, its cells' own lines with the
        magics and shell escapes (`!pip install torch==1.13`) that ``text`` neutralises."""
        return "\n".join(self.display_lines) if self.display_lines is not None else self.text

    def comment_lines(self, first: int, last: int) -> list[tuple[int, str]]:
        """The whole-line comments between two parsed lines (inclusive): (line, text after
        the ``#``). A line inside a string that starts with ``#`` counts too; callers parse
        the text and keep only what they recognise."""
        found = []
        for number in range(max(first, 1), min(last, len(self.lines)) + 1):
            stripped = self.lines[number - 1].lstrip()
            if stripped.startswith("#"):
                found.append((number, stripped.lstrip("#").strip()))
        return found

    def commented_statements(self, first: int, last: int) -> list[tuple[int, "ast.stmt"]]:
        """The whole-line comments between two lines that parse as one Python statement (code
        written out and commented out: ``# scaler.unscale_(optimizer)``): (line, statement)."""
        found = []
        for number, text in self.comment_lines(first, last):
            if not text or text[0].isspace():
                continue
            try:
                body = ast.parse(text).body
            except (SyntaxError, ValueError):
                continue
            if len(body) == 1:
                found.append((number, body[0]))
        return found

    def line_text(self, line: int) -> str:
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return ""

    def locate(self, line: int) -> tuple[int | None, int]:
        """Map a parsed line to (cell, line) for reports."""
        if self.line_map is None:
            return None, line
        if 1 <= line <= len(self.line_map):
            return self.line_map[line - 1]
        return (self.line_map[-1] if self.line_map else (1, 1))


def decode_python(data: bytes) -> str:
    if b"\x00" in data:
        raise LoadError("contains NUL bytes (binary file?); not reviewed")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise LoadError(f"cannot decode: {exc}") from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise LoadError(f"cannot decode as {encoding}: {exc.__class__.__name__} at byte "
                        f"{getattr(exc, 'start', '?')}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def load_python(path: str, display: str, data: bytes) -> SourceFile:
    return SourceFile(path=display, text=decode_python(data))


_MAGIC = re.compile(r"^(\s*)(%|!|\?)")
_ASSIGN_MAGIC = re.compile(r"^(\s*)([A-Za-z_][\w, ]*)=\s*[%!]")
_HELP = re.compile(r"^\s*[\w.]+\?{1,2}\s*$")
# IPython automagics: line magics written without `%` (`cd DeOldify`, `pip install x`),
# taken as such only when the line is not Python by itself
# (never a name assigned or operated on, as IPython itself decides: `history = fit(...,` whose
# call goes on on the next line does not compile alone, yet is Python: a book's notebooks lost
# their training cells to it)
_AUTOMAGIC = re.compile(r"^(\s*)(?:cd|ls|pwd|pip|conda|mamba|mkdir|rm|cp|mv|cat|env|pushd|popd|load_ext|"
                        r"matplotlib|run|time|timeit|tensorboard|history|who|whos|reset|alias)\s+"
                        r"(?!=(?!=)|[-+*/%&|^@<>]=|//=|\*\*=|>>=|<<=|[:,.(\[])\S")


def _automagic(line: str) -> bool:
    if not _AUTOMAGIC.match(line):
        return False
    try:
        compile(line.strip(), "<cell>", "exec")
    except SyntaxError:
        return True
    return False


def _neutralise(line: str) -> tuple[str, bool]:
    """Turn an IPython magic or shell escape into valid Python of the same shape."""
    match = _ASSIGN_MAGIC.match(line)
    if match:
        return f"{match.group(1)}{match.group(2).strip()} = None", True
    match = _MAGIC.match(line) or (_AUTOMAGIC.match(line) if _automagic(line) else None)
    if match or _HELP.match(line):
        indent = match.group(1) if match else ""
        return f"{indent}pass", True
    return line, False


class _Open:
    """Whether the Python lines fed so far leave a statement open -- an unclosed bracket, a
    triple-quoted string, a trailing backslash -- so that the next line goes on with it (a
    line starting with `%` there is the formatting operator, not a line magic)."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""  # the triple quote a string spanning lines is inside
        self.backslash = False

    @property
    def open(self) -> bool:
        return self.depth > 0 or bool(self.quote) or self.backslash

    def feed(self, line: str) -> None:
        i, n = 0, len(line)
        while i < n:
            if self.quote:
                end = line.find(self.quote, i)
                while end > 0 and line[end - 1] == "\\" and (end - len(line[:end].rstrip("\\"))) % 2:
                    end = line.find(self.quote, end + 1)
                if end < 0:
                    i = n
                    break
                i, self.quote = end + 3, ""
                continue
            ch = line[i]
            if ch == "#":
                break
            if ch in "'\"":
                if line.startswith(ch * 3, i):
                    self.quote, i = ch * 3, i + 3
                    continue
                j = i + 1
                while j < n and line[j] != ch:
                    j += 2 if line[j] == "\\" else 1
                i = j + 1
                continue
            if ch in "([{":
                self.depth += 1
            elif ch in ")]}":
                self.depth = max(0, self.depth - 1)
            i += 1
        self.backslash = not self.quote and line.rstrip().endswith("\\") and not line.lstrip().startswith("#")


def _cell_text(cell: dict) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(str(s) for s in source)
    if isinstance(source, str):
        return source
    raise LoadError("malformed notebook: a cell's source is neither text nor a list")


def _output_text(cell: dict) -> str:
    chunks: list[str] = []
    for output in cell.get("outputs") or []:
        if not isinstance(output, dict):
            continue
        for key in ("text",):
            value = output.get(key)
            if value:
                chunks.append("".join(value) if isinstance(value, list) else str(value))
        data = output.get("data")
        if isinstance(data, dict):
            value = data.get("text/plain")
            if value:
                chunks.append("".join(value) if isinstance(value, list) else str(value))
    return "".join(chunks)


def _has_error_output(cell: dict) -> bool:
    outputs = cell.get("outputs")
    return isinstance(outputs, list) and any(
        isinstance(o, dict) and o.get("output_type") == "error" for o in outputs)


def _ran_cells(runs: list[tuple[int, int, bool, bool]]) -> frozenset[int]:
    """The code cells the stored notebook shows ran to the end without error, from
    (cell, execution_count, has outputs, has an error output) of each executed
    code cell: an executed cell (``execution_count`` set) with no error output,
    when that cell or one executed after it (a higher count) kept stored outputs
    -- so the outputs were not stripped, and an error would have been stored.
    Jupyter stores a raising cell's traceback as an ``error`` output."""
    last_output = max((count for _, count, outs, _ in runs if outs), default=None)
    if last_output is None:
        return frozenset()
    return frozenset(cell for cell, count, _, error in runs if not error and count <= last_output)


_PYTHON_LANGUAGES = frozenset({"python", "python2", "python3", "ipython", "ipython3"})


def notebook_language(doc: dict) -> str | None:
    """The language a notebook's kernel runs (``metadata.kernelspec.language``, else
    ``metadata.language_info.name``), lower case; None when the notebook does not say."""
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return None
    for key, field_name in (("kernelspec", "language"), ("language_info", "name")):
        section = meta.get(key)
        value = section.get(field_name) if isinstance(section, dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip().lower()
    return None


_VERSION = re.compile(r"^\s*(\d+)\.(\d+)")


def kernel_python(doc: dict) -> tuple[int, int] | None:
    """The (major, minor) Python version of the kernel that last ran the notebook
    (``metadata.language_info.version``, ``"3.7.9"``), None when it does not say."""
    meta = doc.get("metadata")
    info = meta.get("language_info") if isinstance(meta, dict) else None
    version = info.get("version") if isinstance(info, dict) else None
    found = _VERSION.match(version) if isinstance(version, str) else None
    return (int(found.group(1)), int(found.group(2))) if found else None


def _leading_indent_removed(lines: list[str]) -> list[str]:
    """A cell whose first code line is indented (`` model.eval()`` pasted with a leading space)
    runs in IPython, which strips that indentation from every line that carries it (its
    ``leading_indent`` transformer): the same here, so the cell parses as it runs."""
    first = next((line for line in lines if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    if not indent:
        return lines
    return [line[len(indent):] if line.startswith(indent) else line for line in lines]


def load_notebook(path: str, display: str, data: bytes) -> SourceFile:
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise LoadError("malformed notebook: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise LoadError(f"malformed notebook: invalid JSON at line {exc.lineno} "
                        f"column {exc.colno} ({exc.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise LoadError("malformed notebook: no 'cells' list")
    language = notebook_language(doc)
    if language is not None and language not in _PYTHON_LANGUAGES:
        # a Swift/R/Julia notebook: its cells are not Python, there is nothing to review
        return SourceFile(path=display, text="", is_notebook=True, line_map=[], language=language)
    lines: list[str] = []
    line_map: list[tuple[int, int]] = []
    magic: set[int] = set()
    shown: list[str] = []
    outputs: list[tuple[int, str]] = []
    error_cells: set[int] = set()
    runs: list[tuple[int, int, bool, bool]] = []
    for index, cell in enumerate(doc["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = _cell_text(cell)
        out = _output_text(cell)
        if out:
            outputs.append((index, out))
        failed = _has_error_output(cell)
        if failed:
            error_cells.add(index)
        count = cell.get("execution_count")
        if type(count) is int:
            stored = cell.get("outputs")
            runs.append((index, count, isinstance(stored, list) and bool(stored), failed))
        cell_lines = _leading_indent_removed(text.splitlines()) or [""]
        whole_cell_magic = cell_lines[0].lstrip().startswith("%%")
        continued = False  # a magic or shell line ending in `\` goes on on the next line
        inside = _Open()  # Python left open by the lines above: `print("%d" \n % n)` is no magic
        for number, line in enumerate(cell_lines, start=1):
            if whole_cell_magic:
                new, was_magic = ("pass" if number == 1 else "#"), True
            elif continued:
                new, was_magic = "#", True
            elif inside.open:
                new, was_magic = line, False
            else:
                new, was_magic = _neutralise(line)
            continued = was_magic and line.rstrip().endswith("\\")
            if not was_magic:
                inside.feed(line)
            if was_magic:
                magic.add(len(lines) + 1)
            lines.append(new)
            shown.append(line)
            line_map.append((index, number))
    return SourceFile(
        path=display,
        text="\n".join(lines) + ("\n" if lines else ""),
        is_notebook=True,
        line_map=line_map,
        outputs=outputs,
        error_cells=frozenset(error_cells),
        ran_cells=_ran_cells(runs),
        magic_lines=frozenset(magic),
        display_lines=shown,
        kernel_python=kernel_python(doc),
    )


def blank_cell(source: SourceFile, cell: int) -> SourceFile:
    """Replace one notebook cell by ``pass`` lines (used when only that cell is broken)."""
    assert source.line_map is not None
    lines = source.text.split("\n")
    for i, (c, _) in enumerate(source.line_map):
        if c == cell and i < len(lines):
            lines[i] = "pass"
    return SourceFile(
        path=source.path,
        text="\n".join(lines),
        is_notebook=True,
        line_map=source.line_map,
        outputs=source.outputs,
        error_cells=source.error_cells,
        ran_cells=source.ran_cells,
        magic_lines=source.magic_lines,
        kernel_python=source.kernel_python,
    )


def read_bytes(path: str) -> bytes:
    """Read a file for review; raises LoadError with a one-line reason."""
    try:
        with open_regular(path) as handle:  # a FIFO or device would block or never end
            data = read_capped(handle, MAX_FILE_BYTES)
    except NotRegularFile as exc:
        raise LoadError(str(exc)) from None
    except PermissionError:
        raise LoadError("permission denied; not reviewed") from None
    except IsADirectoryError:
        raise LoadError("is a directory") from None
    except OSError as exc:
        raise LoadError(f"cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise LoadError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB; not reviewed")
    return data


def load_source(path: str, display: str) -> SourceFile:
    """Read and decode a file; raises LoadError with a one-line reason."""
    data = read_bytes(path)
    if path.endswith(".ipynb"):
        return load_notebook(path, display, data)
    return load_python(path, display, data)
