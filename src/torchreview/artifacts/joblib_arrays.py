"""Step over the raw NumPy data that joblib writes inside its pickle stream.

``joblib.dump`` pickles a ``NumpyArrayWrapper`` for each array and writes the
array bytes right after the wrapper's ``BUILD`` opcode (optionally after a
one-byte padding length and the padding); ``joblib.load`` reads them back at
that point.  Object arrays are written as a nested pickle instead.  To keep
walking the outer stream the scanner needs the byte count: the element count
comes from the wrapper's ``shape``, the element size from its ``dtype`` (the
string numpy pickles a dtype with, such as ``'f8'`` or ``'U5'``).
"""

from __future__ import annotations

import re

from torchreview.artifacts.base import SpanReader
from torchreview.artifacts.values import CallVal, GlobalVal

WRAPPER_NAMES = frozenset({
    ("joblib.numpy_pickle", "NumpyArrayWrapper"),
    ("sklearn.externals.joblib.numpy_pickle", "NumpyArrayWrapper"),
})
_DTYPE = re.compile(r"^[<>|=]?([a-zA-Z])(\d+)$")
OBJECT = "object"


class JoblibLayoutError(ValueError):
    """The wrapper's description does not let us find the end of the array."""


def is_wrapper(value) -> bool:
    return (
        isinstance(value, CallVal)
        and isinstance(value.func, GlobalVal)
        and (value.func.module, value.func.name) in WRAPPER_NAMES
    )


def _item_size(dtype) -> int | str:
    """Bytes per element, or OBJECT for object arrays."""
    if not (isinstance(dtype, CallVal) and isinstance(dtype.args, tuple) and dtype.args):
        raise JoblibLayoutError("joblib array without a readable dtype")
    code = dtype.args[0]
    match = _DTYPE.match(code) if isinstance(code, str) else None
    if match is None:
        raise JoblibLayoutError(f"joblib array with an unsupported dtype {code!r}")
    kind, size = match.group(1), int(match.group(2))
    if kind == "O":
        return OBJECT
    return size * 4 if kind == "U" else size


def skip_array(state: dict, reader: SpanReader) -> str | None:
    """Move ``reader`` past one array's data; OBJECT means a nested pickle follows."""
    shape = state.get("shape")
    if not isinstance(shape, tuple) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise JoblibLayoutError("joblib array without a readable shape")
    size = _item_size(state.get("dtype"))
    if size == OBJECT:
        return OBJECT
    count = 1
    for n in shape:
        count *= n
    if "numpy_array_alignment_bytes" in state:
        pad = reader.span.read(reader.pos, 1)
        reader.pos += 1 + (pad[0] if pad else 0)
    reader.pos += count * size
    if reader.pos > len(reader.span):
        raise JoblibLayoutError("joblib array data runs past the end of the stream (truncated)")
    return None
