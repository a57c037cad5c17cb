"""Which downloads of a file end in an unpickler (or another loader
that runs code), so that a missing checksum there is a defect and elsewhere
(text, images, JSON, TensorFlow checkpoints, safetensors) only advice.

A download is linked to a load when they name the same file: the download's
destination (``urlretrieve(url, dst)``, ``download_url_to_file(url, dst)``,
``gdown.download(url, output)``, the file a streamed response is written to) or
the name its result is bound to (``path, _ = urlretrieve(url)``, ``r =
requests.get(url, stream=True)``) meets the argument of the load (``torch.load(dst)``,
``pickle.load(open(dst, "rb"))``, ``pickle.loads(r.content)``) by the same name,
by a name bound to ``open(<dst>)``, or by the same file name in a string
(``f"{root}/w.pt"`` and ``os.path.join(root, "w.pt")``). Only this file is read.
"""

from __future__ import annotations

import ast
import posixpath
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext

# Loads that run code from the file: unpicklers, and torch.load unless weights-only.
_UNPICKLERS = frozenset({
    "pickle.load", "pickle.loads", "_pickle.load", "_pickle.loads", "cPickle.load", "cPickle.loads",
    "dill.load", "dill.loads", "cloudpickle.load", "cloudpickle.loads", "joblib.load",
    "pandas.read_pickle", "torch.load", "numpy.load", "torch.jit.load",
})
# Where a download call writes (keyword, position); None: it returns the path or the bytes.
_DESTINATION = {
    "urllib.request.urlretrieve": ("filename", 1),
    "wget.download": ("out", 1),
    "gdown.download": ("output", 1),
    "gdown.cached_download": ("path", 1),
    "torch.hub.download_url_to_file": ("dst", 1),
    "torchvision.datasets.utils.download_url": ("filename", 2),
    "torchvision.datasets.utils.download_file_from_google_drive": ("filename", 2),
}
_PATH_JOINS = frozenset({"os.path.join", "posixpath.join", "pathlib.Path", "pathlib.PurePath"})


def unpickled_downloads(ctx: "FileContext", downloads: list[ast.Call]) -> list[ast.Call]:
    """The downloads among ``downloads`` whose file (or bytes) this file loads with
    an unpickler (``torch.load`` with ``weights_only=False``, or without the
    argument when the targeted torch is older than 2.6; ``numpy.load`` only with
    ``allow_pickle=True``)."""
    loads = [call for call in ctx.model.calls if _runs_code(ctx, call)]
    if not loads:
        return []
    assigned = _assignments(ctx)
    load_keys: set[str] = set()
    for call in loads:
        if call.args:
            load_keys |= _keys(ctx, call.args[0], assigned, depth=2)
    return [d for d in downloads if _download_keys(ctx, d, assigned) & load_keys]


def _runs_code(ctx: "FileContext", call: ast.Call) -> bool:
    q = ctx.qualname(call.func) or ""
    if q not in _UNPICKLERS:
        return False
    kws = {k.arg: k.value for k in call.keywords}
    if q == "numpy.load":
        flag = kws.get("allow_pickle")
        return isinstance(flag, ast.Constant) and flag.value is True
    if q == "torch.load":  # weights-only by default from torch 2.6 on
        flag = kws.get("weights_only")
        if flag is None:
            return not ctx.torch_at_least(2, 6)
        return not (isinstance(flag, ast.Constant) and flag.value is True)
    return True


def _assignments(ctx: "FileContext") -> dict[str, list[ast.AST]]:
    """name -> values assigned to it anywhere in the file (``x = v``, ``with v as x``)."""
    out: dict[str, list[ast.AST]] = {}
    for node in ctx.model.nodes_by_type.get(ast.Assign, ()):
        for target in node.targets:
            if isinstance(target, ast.Name):
                out.setdefault(target.id, []).append(node.value)
    for node in [*ctx.model.nodes_by_type.get(ast.With, ()), *ctx.model.nodes_by_type.get(ast.AsyncWith, ())]:
        for item in node.items:
            if isinstance(item.optional_vars, ast.Name):
                out.setdefault(item.optional_vars.id, []).append(item.context_expr)
    return out


def _download_keys(ctx: "FileContext", call: ast.Call, assigned) -> set[str]:
    q = ctx.qualname(call.func) or ""
    keys: set[str] = set()
    where = _DESTINATION.get(q)
    if where is not None:
        dst = ctx.arg(call, *where)
        if dst is not None:
            keys |= _keys(ctx, dst, assigned, depth=1)
    holder = _statement_target(call)
    if holder is not None:  # `path, _ = urlretrieve(url)`, `r = requests.get(url, stream=True)`
        keys |= {f"name:{n.id}" for n in ast.walk(holder) if isinstance(n, ast.Name)}
        for name in [n.id for n in ast.walk(holder) if isinstance(n, ast.Name)]:
            keys |= _written_to(ctx, name, assigned)
    return keys


def _statement_target(call: ast.Call):
    node, above = call, getattr(call, "_tr_parent", None)
    while isinstance(above, (ast.Attribute, ast.Call)) and not isinstance(above, ast.stmt):
        node, above = above, getattr(above, "_tr_parent", None)
    if isinstance(above, ast.Assign) and len(above.targets) == 1:
        return above.targets[0]
    if isinstance(above, ast.withitem):
        return above.optional_vars
    if isinstance(above, (ast.With, ast.AsyncWith)):
        return next((i.optional_vars for i in above.items if i.context_expr is node), None)
    return None


def _written_to(ctx: "FileContext", name: str, assigned) -> set[str]:
    """A response ``name`` whose body is written to a file (``f.write(r.content)``,
    ``for chunk in r.iter_content(): f.write(chunk)``): the keys of that file."""
    keys: set[str] = set()
    for call in ctx.model.calls_by_name.get("write", ()):
        if not (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)):
            continue
        handle = call.func.value.id
        body = call.args[0] if call.args else None
        if body is None:
            continue
        mentions = any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(body))
        if not mentions and isinstance(body, ast.Name):  # a chunk of `for chunk in r.iter_content()`
            loop = next((a for a in _parents(call) if isinstance(a, ast.For)), None)
            mentions = loop is not None and any(isinstance(n, ast.Name) and n.id == name
                                                for n in ast.walk(loop.iter))
        if mentions:
            for value in assigned.get(handle, ()):
                if isinstance(value, ast.Call) and value.args and (ctx.qualname(value.func) or "") in (
                        "builtins.open", "open"):
                    keys |= _keys(ctx, value.args[0], assigned, depth=1)
    return keys


def _parents(node):
    node = getattr(node, "_tr_parent", None)
    while node is not None:
        yield node
        node = getattr(node, "_tr_parent", None)


def _keys(ctx: "FileContext", expr: ast.AST, assigned, depth: int) -> set[str]:
    """What names a file: ``name:x`` for a name (and what it was bound to, ``depth``
    hops back: ``f = open(x)``), ``file:w.pt`` for the last component of a literal path."""
    keys: set[str] = set()
    if isinstance(expr, ast.Name):
        keys.add(f"name:{expr.id}")
        if depth > 0:
            for value in assigned.get(expr.id, ()):
                keys |= _keys(ctx, value, assigned, depth - 1)
    elif isinstance(expr, ast.Constant) and isinstance(expr.value, str) and expr.value.strip():
        keys.add("file:" + posixpath.basename(expr.value.strip().replace("\\", "/")))
    elif isinstance(expr, ast.JoinedStr) and expr.values:
        last = expr.values[-1]
        if isinstance(last, ast.Constant) and isinstance(last.value, str) and "/" in last.value:
            keys |= _keys(ctx, last, assigned, depth)
        elif isinstance(last, ast.FormattedValue):
            keys |= _keys(ctx, last.value, assigned, 0)
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Div, ast.Add)):  # Path(root) / "w.pt"
        keys |= _keys(ctx, expr.right, assigned, depth)
    elif isinstance(expr, ast.Call):
        q = ctx.qualname(expr.func) or ""
        if q in ("builtins.open", "open", "io.open", "gzip.open", "bz2.open", "lzma.open", "io.BytesIO") \
                and expr.args:
            keys |= _keys(ctx, expr.args[0], assigned, depth)
        elif q in _PATH_JOINS and expr.args:
            keys |= _keys(ctx, expr.args[-1], assigned, depth)
        elif isinstance(expr.func, ast.Attribute) and expr.func.attr in ("read", "open", "getvalue"):
            keys |= _keys(ctx, expr.func.value, assigned, depth)
    elif isinstance(expr, ast.Attribute) and expr.attr in ("content", "raw", "data"):
        keys |= _keys(ctx, expr.value, assigned, depth)
    return keys
