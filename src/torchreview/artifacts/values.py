"""Abstract values of the pickle machine in ``opcodes``, and how to show them.

Constants that matter (names, counts) stay Python strs/ints/tuples; callables
are :class:`GlobalVal` (an imported global) or :class:`CallVal` (the result of
calling one); everything else is a shared sentinel, so memory stays small.
"""

from __future__ import annotations

MAX_TEXT = 1024  # longer strings are kept as a placeholder
MAX_TUPLE = 64  # longer tuples are kept as a placeholder
MAX_USES = 3  # uses remembered per global


class _Sentinel:
    __slots__ = ("label",)

    def __init__(self, label: str) -> None:
        self.label = label

    def __repr__(self) -> str:
        return self.label


UNKNOWN = _Sentinel("…")
LONG_TEXT = _Sentinel("<long string>")
BYTES = _Sentinel("<bytes>")
# bytes holding a whole legacy `torch.save` stream whose pickles were walked and reference
# only what a weights-only load allows (tensor storages): what `torch.storage._load_from_bytes`
# rebuilds from them is data (how plain `pickle` stores a tensor)
TORCH_PAYLOAD = _Sentinel("<torch.save bytes>")
CONTAINER = _Sentinel("<container>")
INSTANCE = _Sentinel("<object>")
PERSISTENT = _Sentinel("<persistent id>")
MISSING = _Sentinel("<missing>")


class GlobalVal:
    __slots__ = ("module", "name", "offset")

    def __init__(self, module: str, name: str, offset: int) -> None:
        self.module = module
        self.name = name
        self.offset = offset

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"


class CallVal:
    __slots__ = ("func", "args")

    def __init__(self, func, args) -> None:
        self.func = func
        self.args = args


class ExtRef:
    """What an ``EXT1/2/4`` opcode loads when its code was not registered in the file."""

    __slots__ = ("code",)

    def __init__(self, code) -> None:
        self.code = code

    def __repr__(self) -> str:
        return f"<extension code {self.code}>"


def describe(value, depth: int = 0) -> str:
    """A short, safe rendering of an abstract value for messages."""
    if depth > 3:
        return "…"
    if isinstance(value, GlobalVal):
        return value.qualname
    if isinstance(value, CallVal):
        args = value.args if isinstance(value.args, tuple) else (value.args,)
        inner = ", ".join(describe(a, depth + 1) for a in args[:4])
        if len(args) > 4:
            inner += ", …"
        return f"{describe(value.func, depth + 1)}({inner})"
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, tuple):
        return "(" + ", ".join(describe(v, depth + 1) for v in value[:4]) + ")"
    if isinstance(value, dict):
        return "{…}"
    if isinstance(value, (int, bool)) or value is None:
        return repr(value)
    return repr(value)
