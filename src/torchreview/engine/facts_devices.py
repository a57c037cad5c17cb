"""The devices a file builds, a project fact (``FileFacts.devices``).

Each file contributes tokens: ``"cpu"``, ``"cuda"`` (the default GPU spelled out:
``"cuda"``, ``"cuda:0"``, ``torch.device("cuda")``, ``.cuda(0)``), ``"cuda()"`` (a
bare ``.cuda()``: the current GPU), ``"cuda:1"`` ... for another index,
``"mps"`` and the like, and ``"?"`` when a device is computed or spread over
several GPUs (``torch.device(f"cuda:{rank}")``, ``.cuda(args.gpu)``,
``.to(cfg.device)``, a ``--device``/``--gpu`` option, ``LOCAL_RANK``,
``DataParallel``/DDP, ``torch.cuda.set_device``, frameworks that place models).
A project that spells out the default GPU and whose tokens are otherwise only
``cpu`` and bare ``.cuda()`` only ever builds the default GPU (a GPU is chosen, if at all, with ``CUDA_VISIBLE_DEVICES``): there
``.cuda()`` and ``.to(x.device)`` land on the same device.
"""

from __future__ import annotations

import ast
import re
from operator import attrgetter
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext

UNKNOWN = "?"
# `.cuda()` with no index: the current GPU, whatever it is. On its own it proves
# nothing (a snippet, or a project that sets the device elsewhere); only an
# explicit `"cuda"`/`"cuda:0"`/`torch.device(...)` shows which GPU is built.
BARE_CUDA = "cuda()"

_LITERAL = re.compile(r"^\s*(cuda|cpu|mps|xpu|hpu|npu|mtia|meta)\s*(?::\s*(\d+))?\s*$")
_COMPUTED_PREFIX = re.compile(r"^\s*(cuda|mps|xpu|hpu|npu|mtia)\s*:")
_SPREADERS = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.DistributedDataParallel",
    "torch.cuda.set_device", "torch.cuda.device",
    "torch.distributed.init_process_group", "torch.multiprocessing.spawn",
    # replicas over several GPUs by hand (`replicate(model, device_ids)`); `device_count()` alone
    # only reads (a banner printing the GPUs), so it is not a device built
    "torch.nn.parallel.replicate", "torch.nn.parallel.scatter", "torch.nn.parallel.parallel_apply",
    "torch.nn.parallel.data_parallel", "torch.nn.parallel.gather",
})
_FRAMEWORKS = ("deepspeed.", "accelerate.", "lightning.", "pytorch_lightning.")
_SPREAD_ATTRS = frozenset({"prepare", "prepare_model", "setup_module", "to_device"})
_SPREAD_KEYWORDS = frozenset({"device_ids", "output_device", "device_map", "gpus", "devices"})
_DEVICE_KEYWORDS = frozenset({"device", "map_location"})
_RANK_NAMES = frozenset({"LOCAL_RANK", "RANK", "local_rank"})
_OPTION_WORDS = ("device", "gpu", "local_rank", "local-rank")
_NAME_WORDS = ("device", "gpu")
_VALUE = attrgetter("value")


def _literal_token(value: str) -> str | None:
    match = _LITERAL.match(value)
    if match is None:
        return None
    kind, index = match.group(1).lower(), match.group(2)
    return kind if index is None or int(index) == 0 else f"{kind}:{int(index)}"


def _index_token(node, kind: str = "cuda") -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        index = int(node.value)  # a bool is an index too: `.cuda(True)` is cuda:1
        return kind if index == 0 else f"{kind}:{index}"
    return UNKNOWN


def _spec_tokens(node) -> set[str]:
    """Tokens of a device spec built from literals (``"cuda:0" if ok else "cpu"``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        token = _literal_token(node.value)
        return {token} if token else {UNKNOWN}
    if isinstance(node, ast.IfExp):
        return _spec_tokens(node.body) | _spec_tokens(node.orelse)
    return {UNKNOWN}


def _passes_along(node, m) -> bool:
    """A device argument that only forwards a device built elsewhere: a plain name,
    ``self.device``, another tensor's ``x.device``, a dtype, a literal (counted as a
    constant), ``torch.device(...)`` (counted as a call)."""
    if node is None or isinstance(node, (ast.Name, ast.Constant)):
        return True
    if m.device_kind(node) in ("dtype", "follows", "cpu"):
        return True
    if isinstance(node, ast.Attribute):  # `self.device` is counted where the class assigns it
        return isinstance(node.value, ast.Name) and node.value.id == "self"
    if isinstance(node, ast.Call):
        return (m.qualname(node.func) or "") == "torch.device"
    if isinstance(node, ast.IfExp):
        return _passes_along(node.body, m) and _passes_along(node.orelse, m)
    return False


def _call_tokens(call: ast.Call, m) -> set[str]:
    q = m.qualname(call.func) or ""
    if q in _SPREADERS or q.startswith(_FRAMEWORKS):
        return {UNKNOWN}
    if q == "torch.device":
        out = _spec_tokens(call.args[0]) if call.args else {UNKNOWN}
        index = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "index"),
                                                             None)
        if index is not None:
            out.add(_index_token(index))
        return out
    out: set[str] = set()
    if isinstance(call.func, ast.Attribute) and not q.startswith("torch."):
        attr = call.func.attr
        if attr in _SPREAD_ATTRS:
            return {UNKNOWN}
        if attr == "cuda":
            device = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device"),
                                                         None)
            out.add(BARE_CUDA if device is None else _index_token(device))
        elif attr == "to" and call.args and not _passes_along(call.args[0], m):
            out.add(_index_token(call.args[0]) if isinstance(call.args[0], ast.Constant) else UNKNOWN)
        elif attr == "add_argument" and _device_option(call):
            out.add(UNKNOWN)
    for kw in call.keywords:
        if kw.arg in _SPREAD_KEYWORDS and not (isinstance(kw.value, ast.Constant)
                                               and kw.value.value in (None, False, 0, 1, "cpu", "auto")):
            out.add(UNKNOWN)
        elif kw.arg in _DEVICE_KEYWORDS and not _passes_along(kw.value, m):
            out.add(UNKNOWN)
    return out


def _device_option(call: ast.Call) -> bool:
    """``parser.add_argument("--gpu", type=int)``: the user picks the device (a
    ``store_true`` flag such as ``--no-cuda`` only switches the GPU on or off)."""
    names = [a.value.lower() for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    dest = next((k.value for k in call.keywords if k.arg == "dest"), None)
    if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
        names.append(dest.value.lower())
    if not any(word in name for name in names for word in _OPTION_WORDS):
        return False
    action = next((k.value for k in call.keywords if k.arg == "action"), None)
    return not (isinstance(action, ast.Constant) and action.value in ("store_true", "store_false"))


def _assigned_tokens(node: ast.Assign, m) -> set[str]:
    """``device = args.device`` / ``self.gpu = cfg["gpu"]``: a device taken from a configuration."""
    for t in node.targets:  # asked for every assignment of the file
        name = (t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else "").lower()
        if _NAME_WORDS[0] in name or _NAME_WORDS[1] in name:  # ("device", "gpu"): no generator per target
            break
    else:
        return set()
    value = node.value
    if isinstance(value, ast.Constant) or isinstance(value, ast.Call) or _passes_along(value, m):
        return set()  # literals and calls are counted where they are
    return {UNKNOWN}


# What a call's tokens need (``_call_tokens``): its qualified name, a method name or a keyword.
_TOKEN_NAMES = _SPREADERS | {"torch.device"}
_TOKEN_METHODS = _SPREAD_ATTRS | {"cuda", "to", "add_argument"}
_TOKEN_KEYWORDS = _SPREAD_KEYWORDS | _DEVICE_KEYWORDS


def devices_built(ctx: "FileContext", calls=None) -> tuple[str, ...]:
    """The device tokens of this file (see the module docstring). ``calls``: the file's
    ``CallNames`` (engine/collectors/registry.py), to skip the calls when none can give a token."""
    m = ctx.model
    tokens: set[str] = set()
    by_type = m.nodes_by_type  # the nodes of ast.walk(ctx.tree) that matter here, from the model's one walk
    # each type in its own loop (the tokens are a set: the order they are found in is not kept)
    # each distinct short string once (a string seen once gave its token already; the
    # parser's string constants are exact ``str``)
    values = set(map(_VALUE, by_type.get(ast.Constant, ())))  # (the distinct constants, read in C)
    for value in {v for v in values if type(v) is str and len(v) < 16}:
        token = _literal_token(value)
        if token:
            tokens.add(token)
        elif value in _RANK_NAMES:
            tokens.add(UNKNOWN)
    for node in by_type.get(ast.JoinedStr, ()):
        first = node.values[0] if node.values else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and \
                _COMPUTED_PREFIX.match(first.value):
            tokens.add(UNKNOWN)
    if calls is None or calls.any_of(_TOKEN_NAMES, _FRAMEWORKS) or calls.any_method(_TOKEN_METHODS) or \
            calls.any_keyword(_TOKEN_KEYWORDS):
        for node in by_type.get(ast.Call, ()):
            tokens |= _call_tokens(node, m)
    text = ctx.source.text  # an ASCII file names no device variable without spelling one of the words
    if not text.isascii() or any(word in text.lower() for word in _NAME_WORDS):
        for node in by_type.get(ast.Assign, ()):
            tokens |= _assigned_tokens(node, m)
    return tuple(sorted(tokens))

