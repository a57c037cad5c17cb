"""What the configuration files a project ships set: ``ACCUMULATION_STEPS: 1`` in every YAML.

Research code reads much of its behaviour from YAML files (``configs/train_mot17.yaml``,
``experiments/cityscapes/seg_*.yaml``) instead of command-line options:
``config["ACCUMULATION_STEPS"]``, ``cfg.trainer.use_fp16``, ``config.DATASET.TEST_SET``.
A defect on a path that every shipped configuration leaves off shows only when someone
writes a new configuration, and a reviewer says so, or nothing at all. The options model
(engine/options.py) asks this module what a key holds in the project's shipped files.

``shipped_values(root, keys)`` lists what each of them sets (a split named by a key may be
``val`` in one file and ``list/val.lst`` in another: the same split).
``shipped_value(root, keys)``: the value that every YAML file under the project root
(hidden folders, virtual environments and build output skipped, as for the project's
Python files) gives the key path ``keys`` -- a key path ending with ``keys`` at any depth
(``("trainer", "use_fp16")`` matches ``trainer: {use_fp16: false}`` nested under any
section) -- when at least one file sets it and all that set it agree; ``NOT_KNOWN``
otherwise (no file sets it, the files disagree, or a value is not a plain scalar: a list,
an alias, a multi-line or tagged value).

The reader is deliberately small and standard-library only: block mappings by
indentation, plain and quoted scalars (YAML 1.1 booleans and nulls, as PyYAML reads
them), comments, several documents in one file. Sequences, flow collections, aliases,
tags and block scalars are not read: their keys answer "not a plain scalar". A file that
does not read as such YAML (a Jinja template, a broken file) contributes nothing. Static:
the files are read as text, never loaded by a YAML library.

Python configuration modules count too (EasyDict and yacs style: ``cfg = EasyDict()`` then
``cfg.acc_steps = 1``, ``_C.TRAIN.LR = 0.1`` in ``configs/voc_config.py``): a ``.py`` file in a
folder named ``config``/``configs``/``cfg``/``cfgs`` or with ``config``/``cfg`` in its name whose
top level assigns literals to attribute or subscript chains of one module-level name (at least
three such lines). Each chain without its root is a key path (``("TRAIN", "LR")``); a literal is
read as ``ast.literal_eval`` reads it, anything else (a call, a name, an assignment under an
``if``) is not a plain scalar. The module is parsed, never imported.

``configs_digest(root)`` digests the files' contents for the result cache key (a file's
findings may rest on them).
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import time

from torchreview.engine.options import NOT_KNOWN
from torchreview.engine.project_index import held_generation, walk_project

MAX_FILES = 2000
MAX_BYTES = 256 * 1024
_MEMO_SECONDS = 5.0


class _Opaque:
    """A key whose value is not a plain scalar (a list, an alias, a block scalar)."""

    def __repr__(self) -> str:
        return "OPAQUE"


OPAQUE = _Opaque()

_INT = re.compile(r"[-+]?(0|[1-9][0-9_]*)$")
_FLOAT = re.compile(r"[-+]?(\d[\d_]*)?\.?\d*([eE][-+]?\d+)?$")
_TRUE = frozenset({"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
_FALSE = frozenset({"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_KEY = re.compile(r"""^(?P<key>"[^"]*"|'[^']*'|[^\s#'"\[\]{}&*!|>%@`][^:#]*?)\s*:(?:\s+(?P<rest>.*))?$""")


def scalar(text: str):
    """A plain or quoted YAML scalar as Python reads it, ``OPAQUE`` for anything else."""
    text = text.strip()
    if not text:
        return None
    if text[0] in "\"'":
        quote = text[0]
        if len(text) >= 2 and text.endswith(quote) and quote not in text[1:-1].replace(quote * 2, ""):
            inner = text[1:-1]
            return inner.replace("''", "'") if quote == "'" else inner
        return OPAQUE
    if text[0] in "[{*!|>&@`%":
        return OPAQUE
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT.match(text):
        return int(text.replace("_", ""))
    if any(ch.isdigit() for ch in text) and _FLOAT.match(text):
        try:
            return float(text.replace("_", ""))
        except ValueError:
            return text
    if text in (".inf", ".Inf", "+.inf"):
        return float("inf")
    return text


def _strip_comment(line: str) -> str:
    """``line`` without a trailing ``# comment`` (a ``#`` at the start or after a blank,
    outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'" and (i == 0 or line[i - 1] in " :-[{,"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def read_yaml(text: str) -> dict[tuple[str, ...], object]:
    """Key path -> scalar (or ``OPAQUE``) of the block mappings in ``text``; a key set
    twice with different values (two documents) is ``OPAQUE``."""
    out: dict[tuple[str, ...], object] = {}
    stack: list[tuple[int, tuple[str, ...]]] = []  # open mappings: (indent of their keys, path)
    pending: tuple[int, tuple[str, ...]] | None = None  # `key:` with nothing after it yet
    skip_deeper = -1  # lines deeper than this (a block scalar, a sequence item's body) are skipped
    sequence_at = -1  # `- item` lines at this indent belong to a sequence already seen

    def put(path: tuple[str, ...], value: object) -> None:
        previous = out.get(path, value)
        out[path] = value if previous == value and type(previous) is type(value) else OPAQUE

    for raw in text.splitlines():
        if raw.startswith(("---", "...")) and not raw[3:].strip():
            stack, pending, skip_deeper, sequence_at = [], None, -1, -1
            continue
        line = _strip_comment(raw).rstrip()
        body = line.strip()
        if not body:
            continue
        indent = len(line) - len(line.lstrip(" "))
        if line[:indent + 1].lstrip(" ").startswith("\t"):
            return {}  # a tab in the indentation: not YAML
        if skip_deeper >= 0 and indent > skip_deeper:
            continue
        skip_deeper = -1
        is_item = body == "-" or body.startswith("- ")
        if sequence_at >= 0:
            if indent == sequence_at and is_item:
                skip_deeper = indent
                continue
            sequence_at = -1
        if pending is not None:
            key_indent, path = pending
            pending = None
            if is_item and indent >= key_indent:
                out[path] = OPAQUE  # `key:` followed by `- a`, `- b`: a list
                sequence_at, skip_deeper = indent, indent
                continue
            if indent > key_indent:
                out.pop(path, None)  # it opened a nested mapping
                stack.append((indent, path))
        while stack and stack[-1][0] > indent:
            stack.pop()
        if not stack:
            stack.append((indent, ()))
        top_indent, parent = stack[-1]
        if top_indent < indent or is_item:
            # a continuation line of a multi-line value, or a sequence where keys were
            # expected: the enclosing key's value is not a plain scalar
            if parent:
                out[parent] = OPAQUE
            skip_deeper = top_indent if top_indent < indent else indent
            continue
        match = _KEY.match(body)
        if match is None:
            skip_deeper = indent
            continue
        key = match.group("key").strip()
        if key[:1] in "\"'":
            key = key[1:-1]
        if key == "<<":
            continue  # a merge key: the merged mapping's keys are not read
        path = parent + (key,)
        rest = (match.group("rest") or "").strip()
        if rest.startswith("&"):  # an anchor names the value after it
            rest = rest.partition(" ")[2].strip()
        if not rest:
            put(path, None)  # a null, unless deeper lines follow (then a mapping)
            pending = (indent, path)
        elif rest[0] in "|>":
            put(path, OPAQUE)
            skip_deeper = indent
        else:
            put(path, scalar(rest))
    return out


_memo: dict[str, tuple[float, tuple[str, ...], int | None]] = {}
_read: dict[tuple[str, int, int], dict[tuple[str, ...], object]] = {}
_digests: dict[tuple[str, int, int], str] = {}


def config_files(root: str) -> tuple[str, ...]:
    """The YAML files under ``root``, memoised as the project's Python files are
    (call_paths.project_files: for a batch review, else for a few seconds)."""
    now = time.monotonic()
    hit = _memo.get(root)
    held = held_generation()
    if hit is not None and (hit[2] == held if held is not None else now - hit[0] <= _MEMO_SECONDS):
        return hit[1]
    # one walk for both kinds (the project's Python files are many; their configuration modules few)
    found = walk_project(root, (".yaml", ".yml", ".py"), 4 * MAX_FILES)
    result = tuple(p for p in found if not p.endswith(".py"))[:MAX_FILES] + tuple(
        p for p in found if p.endswith(".py") and _config_module_path(root, p))[:MAX_FILES]
    _memo[root] = (now, result, held)
    return result


_CONFIG_FOLDERS = frozenset({"config", "configs", "cfg", "cfgs"})


def _config_module_path(root: str, path: str) -> bool:
    """A Python file kept where configurations live, or named as one."""
    rel = os.path.relpath(path, root).replace(os.sep, "/").lower()
    *folders, name = rel.split("/")
    return any(f in _CONFIG_FOLDERS for f in folders) or "config" in name or "cfg" in name


def read_python_config(text: str) -> dict[tuple[str, ...], object]:
    """Key paths a configuration module sets at its top level (see the module's docstring);
    {} for a module that is no configuration (fewer than three chained literal settings)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out: dict[tuple[str, ...], object] = {}
    roots: dict[str, int] = {}

    def chain(node: ast.AST) -> tuple[str, tuple[str, ...]] | None:
        keys: list[str] = []
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            if isinstance(node, ast.Attribute):
                keys.append(node.attr)
            elif isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                keys.append(node.slice.value)
            else:
                return None
            node = node.value
        return (node.id, tuple(reversed(keys))) if isinstance(node, ast.Name) and keys else None

    def visit(statements, nested: bool) -> None:
        for stmt in statements:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and getattr(stmt, "value", None) is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    found = chain(target)
                    if found is None:
                        continue
                    try:
                        value = ast.literal_eval(stmt.value)
                    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                        value = OPAQUE
                    if nested or not isinstance(value, (str, int, float, bool, type(None))):
                        value = OPAQUE  # set only on some path, or not a plain scalar
                    elif found[1] in out and out[found[1]] != value:
                        value = OPAQUE  # set twice to different values in one file
                    out[found[1]] = value
                    if value is not OPAQUE:
                        roots[found[0]] = roots.get(found[0], 0) + 1
            elif isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(stmt, block, ()), True)
                for handler in getattr(stmt, "handlers", ()):
                    visit(handler.body, True)
    visit(tree.body, False)
    return out if roots and max(roots.values()) >= 3 else {}


def _stat_key(path: str) -> tuple[str, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_size > MAX_BYTES:
        return None
    return (path, st.st_size, st.st_mtime_ns)


def _bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_BYTES + 1)
    except OSError:
        return b""


def _keys_of(path: str) -> dict[tuple[str, ...], object]:
    key = _stat_key(path)
    if key is None:
        return {}
    hit = _read.get(key)
    if hit is None:
        data = _bytes(path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        reader = read_python_config if path.endswith(".py") else read_yaml
        hit = reader(text) if len(data) <= MAX_BYTES else {}
        if len(_read) > 20000:
            _read.clear()
        _read[key] = hit
    return hit


def shipped_values(root: str, keys: tuple[str, ...]):
    """Every value the shipped YAML files that set the key path ``keys`` give it, in file
    order (see the module's docstring), or ``NOT_KNOWN`` when none sets it or one value is
    not a plain scalar."""
    if not keys:
        return NOT_KNOWN
    n = len(keys)
    values: list[object] = []
    for path in config_files(root):
        for found, value in _keys_of(path).items():
            if found[-n:] == keys:
                values.append(value)
    if not values or any(v is OPAQUE for v in values):
        return NOT_KNOWN
    return tuple(values)


def shipped_value(root: str, keys: tuple[str, ...]):
    """The value every shipped YAML file that sets the key path ``keys`` gives it, or
    ``NOT_KNOWN`` (none sets it, they disagree, or one is not a plain scalar)."""
    values = shipped_values(root, keys)
    if values is NOT_KNOWN:
        return NOT_KNOWN
    first = values[0]
    if any(type(v) is not type(first) or v != first for v in values):
        return NOT_KNOWN
    return first


def configs_digest(root: str) -> str:
    """A digest of the shipped YAML files' names and contents ("" when there are none)."""
    files = config_files(root)
    if not files:
        return ""
    h = hashlib.sha256()
    for path in files:
        key = _stat_key(path)
        if key is None:
            continue
        digest = _digests.get(key)
        if digest is None:
            digest = hashlib.sha256(_bytes(path)).hexdigest()
            if len(_digests) > 20000:
                _digests.clear()
            _digests[key] = digest
        h.update(f"{os.path.relpath(path, root)}\0{digest}\0".encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]
