"""Read pickle opcodes straight from a byte window, fast, and step over padding in bulk.

``pickletools.genops`` reads through a file object one call per byte; on a
hostile 10 MB stream of filler opcodes that costs tens of seconds.  This
decoder reads fixed-size and counted arguments directly from the buffer (an
``mmap`` or bytes: nothing is copied but short strings), hands the rare
newline-terminated arguments to ``pickletools``' own readers, and dispatches
each opcode to a handler of the abstract machine (``opcodes``) through a
256-entry table.

Padding: after a ``POP``, ``POP_MARK`` or ``FRAME`` the decoder tries
:data:`PADDING`, a regular expression for runs of stack-neutral units (push a
constant then pop it, ``MARK`` constants ``POP_MARK``, ``FRAME``...), and skips
a whole run at C speed.  Every skipped unit leaves the stack, the mark stack
and the memo as they were, so what follows is analysed exactly as if the run
had been walked.  Strings longer than ``MAX_TEXT`` are not copied unless they
start like a pickle (a nested pickle to walk).
"""

from __future__ import annotations

import mmap
import codecs
import pickletools
import re
import struct

from torchreview.artifacts.base import BudgetExceeded, SpanReader
from torchreview.artifacts.values import MAX_TEXT

# Argument kinds.
NONE, FIXED, COUNTED, LONG1, OTHER = range(5)
_FIXED = {
    "uint1": (1, None), "uint2": (2, "<H"), "int4": (4, "<i"), "uint4": (4, "<I"),
    "uint8": (8, "<Q"), "float8": (8, ">d"),
}  # fmt: skip
# Counted strings: (bytes of the length, length format, how the data is decoded).
_COUNTED = {
    "string1": (1, None, "latin-1"), "bytes1": (1, None, "bytes"),
    "unicodestring1": (1, None, "utf-8"), "string4": (4, "<i", "latin-1"),
    "bytes4": (4, "<I", "bytes"), "unicodestring4": (4, "<I", "utf-8"),
    "bytes8": (8, "<Q", "bytes"), "bytearray8": (8, "<Q", "bytes"),
    "unicodestring8": (8, "<Q", "utf-8"),
}  # fmt: skip

# Charge for padding skipped in bulk, in bytes per opcode of the opcode budget.
PADDING_BYTES_PER_OPCODE = 64


class LongArg:
    """A counted string too long to keep: its size, and where it is if it may be a pickle.

    ``offset`` (relative to the walked span, -1 if the bytes do not start like
    a pickle) lets a nested pickle be walked on a window of the same buffer,
    without a copy; ``how`` is the string's encoding ("bytes", "latin-1", "utf-8").
    """

    __slots__ = ("size", "offset", "how")

    def __init__(self, size: int, offset: int, how: str) -> None:
        self.size = size
        self.offset = offset
        self.how = how


def _starts_like_pickle(buf, start: int, how: str) -> bool:
    """PROTO 2-5 at ``start``; in UTF-8 text the 0x80 of PROTO is written c2 80."""
    if how == "utf-8":
        return buf[start] == 0xC2 and buf[start + 1] == 0x80 and 2 <= buf[start + 2] <= 5
    return buf[start] == 0x80 and 2 <= buf[start + 1] <= 5


def _table() -> list:
    table: list = [None] * 256
    for op in pickletools.opcodes:
        code = ord(op.code)
        arg = op.arg
        if arg is None:
            table[code] = (op, NONE, 0, None, None)
        elif arg.name in _FIXED:
            size, fmt = _FIXED[arg.name]
            table[code] = (op, FIXED, size, fmt, None)
        elif arg.name in _COUNTED:
            size, fmt, how = _COUNTED[arg.name]
            table[code] = (op, COUNTED, size, fmt, how)
        elif arg.name == "long1":
            table[code] = (op, LONG1, 1, None, None)
        else:
            table[code] = (op, OTHER, 0, None, None)
    return table


TABLE = _table()
_STRING = ord("S")


def _read_string0(reader) -> str:
    """The argument of protocol 0's STRING (a quoted, escaped line). ``pickletools``
    decodes it as ASCII, which fails on a Python 2 byte string holding raw bytes (NumPy
    array data in METR-LA's ``adj_mx.pkl``); Python 3 reads such pickles with
    ``encoding="latin1"``, so the scan does too: every byte maps to one character."""
    data = reader.readline()
    if not data.endswith(b"\n"):
        raise ValueError("no newline found when trying to read stringnl")
    data = data[:-1]
    for quote in (b'"', b"'"):
        if data.startswith(quote):
            if len(data) < 2 or not data.endswith(quote):
                raise ValueError(f"string quote {quote!r} not found at both ends of {data[:40]!r}")
            data = data[1:-1]
            break
    else:
        raise ValueError(f"no string quotes around {data[:40]!r}")
    return codecs.escape_decode(data)[0].decode("latin-1")


def _short_counted(code: bytes, longest: int = 16) -> bytes:
    """``code`` + 1-byte length + exactly that many bytes, for lengths 0..longest."""
    lengths = b"|".join(re.escape(bytes([n])) + (b"." * n if n else b"") for n in range(longest + 1))
    return re.escape(code) + b"(?:" + lengths + b")"  # one prefix: fails fast on other bytes


_PUSH = (
    rb"(?:[N)\]}\x8f\x88\x89]|K.|M..|J....|G.{8}|\x8a(?:\x00|\x01.|\x02..)|I-?\d{1,18}\n|"
    + _short_counted(b"\x8c") + b"|" + _short_counted(b"C") + b"|" + _short_counted(b"U")
    + b")"
)
_VALUE = rb"(?:" + _PUSH + rb"(?:\x85|" + _PUSH + rb"\x86|" + _PUSH + _PUSH + rb"\x87)?|\((?:" \
    + _PUSH + rb")*[tl])"
_UNIT = (
    rb"(?:" + _VALUE + rb"(?:20)?0|\((?:" + _PUSH + rb")*1|\(0|\x95.{8}|\x80[\x00-\x05])"
)
PADDING = re.compile(rb"(?:" + _UNIT + rb"){1,4096}", re.DOTALL)  # bounded: regex state stays small
_ONE_UNIT = re.compile(rb"(?:" + _UNIT + rb")", re.DOTALL)
_REPEAT_BLOCK = 1024 * 1024


def skip_padding(buf, pos: int, end: int) -> int:
    """Where the run of stack-neutral units starting at ``pos`` ends (``pos`` if none).

    Filler is usually one short sequence of units repeated: its period (the
    first 1..8 units) is found first, and the run measured by comparing ever
    larger blocks of bytes (C speed).  Anything else goes through
    :data:`PADDING`, 4096 units at a time.
    """
    while pos < end:
        reach = _periodic_run(buf, pos, end)
        if reach > pos:
            pos = reach
            continue
        found = PADDING.match(buf, pos, end)
        if found is None:
            break
        pos = found.end()
    return pos


def _periodic_run(buf, pos: int, end: int) -> int:
    """End of a run of one sequence of 1..8 units repeated at least twice (``pos`` if none)."""
    boundary = pos
    for _ in range(8):
        one = _ONE_UNIT.match(buf, boundary, end)
        if one is None or one.end() - pos > 256:
            return pos
        boundary = one.end()
        size = boundary - pos
        if buf[boundary : boundary + size] == buf[pos:boundary]:
            return _repeat_end(buf, pos, end, bytes(buf[pos:boundary]))
    return pos


def _repeat_end(buf, pos: int, end: int, unit: bytes) -> int:
    """End of the run of ``unit`` repeated from ``pos`` (block compares, doubling)."""
    size = len(unit)
    block = unit * max(1, 4096 // size)
    grow = True
    while len(block) >= size:
        if pos + len(block) <= end and buf[pos : pos + len(block)] == block:
            pos += len(block)
            if grow and len(block) < _REPEAT_BLOCK:
                block = block * 2
        else:  # the run ends inside this block: halve it
            grow = False
            block = block[: (len(block) // 2 // size) * size]
    return pos


_PADDING_AFTER = frozenset({ord("0"), ord("1"), 0x95})


class Truncated(ValueError):
    pass


RELEASE_EVERY = 16 * 1024 * 1024  # bytes walked between two page releases


def _release_pages(buf):
    """For an ``mmap``: a function that drops the pages already walked from memory.

    The walk reads forward only, so a long stream mapped from disk (a big file, or
    decompressed output spilled to a temporary file) does not stay resident: peak
    memory stays bounded whatever the size.  Pages are read again from the page
    cache if something looks back (nothing in the walk does).
    """
    advise = getattr(buf, "madvise", None)
    dontneed = getattr(mmap, "MADV_DONTNEED", None)
    if advise is None or dontneed is None or not isinstance(buf, mmap.mmap):
        return None

    def release(pos: int) -> None:
        upto = (max(0, pos - 1024 * 1024) // mmap.PAGESIZE) * mmap.PAGESIZE
        if upto > 0:
            try:
                advise(dontneed, 0, upto)
            except (OSError, ValueError):
                pass

    return release


def run(machine, reader: SpanReader) -> None:
    """Walk opcodes from ``reader.pos`` until STOP; raises on malformed input.

    ``machine.handlers[code](machine, arg, offset)`` does the work; a handler
    returns True at STOP.  ``reader.pos`` is kept current around every handler
    (the joblib array skipper moves it).
    """
    span = reader.span
    buf, base, end = span.buf, span.start, span.end
    handlers = machine.handlers
    budget = machine.budget
    res = machine.res
    limits = machine.limits
    max_ops = limits.max_opcodes
    unpack = struct.unpack_from
    pos = base + reader.pos
    first_opcode = budget.opcodes
    release = _release_pages(buf)
    next_release = pos + RELEASE_EVERY if release is not None else end + 1
    try:
        while True:
            if pos >= next_release:
                release(pos)
                next_release = pos + RELEASE_EVERY
            if pos >= end:
                raise Truncated("pickle exhausted before seeing STOP")
            code = buf[pos]
            entry = TABLE[code]
            if entry is None:
                raise ValueError(f"unknown opcode byte 0x{code:02x} at byte {pos - base}")
            op, kind, size, fmt, how = entry
            offset = pos - base
            budget.opcodes += 1
            if budget.opcodes > max_ops:
                budget.exhausted = True
                raise BudgetExceeded(f"more than {max_ops} pickle opcodes in one file")
            at = pos + 1
            if kind == NONE:
                arg = None
                pos = at
            elif kind == FIXED:
                if at + size > end:
                    raise Truncated(f"{op.name} argument runs past the end")
                arg = buf[at] if fmt is None else unpack(fmt, buf, at)[0]
                pos = at + size
            elif kind == COUNTED:
                if at + size > end:
                    raise Truncated(f"{op.name} length runs past the end")
                n = buf[at] if fmt is None else unpack(fmt, buf, at)[0]
                start = at + size
                if n < 0:
                    raise ValueError(f"{op.name} with a negative length {n}")
                if start + n > end:
                    raise Truncated(f"{op.name} wants {n} bytes, only {end - start} left")
                pos = start + n
                if n <= MAX_TEXT:
                    data = bytes(buf[start:pos])
                    arg = data if how == "bytes" else data.decode(
                        how, "surrogatepass" if how == "utf-8" else "strict")
                elif _starts_like_pickle(buf, start, how):
                    arg = LongArg(n, start - base, how)  # may be a nested pickle
                else:
                    arg = LongArg(n, -1, how)
            elif kind == LONG1:
                if at >= end:
                    raise Truncated("LONG1 length runs past the end")
                n = buf[at]
                if at + 1 + n > end:
                    raise Truncated("LONG1 argument runs past the end")
                arg = int.from_bytes(buf[at + 1 : at + 1 + n], "little", signed=True)
                pos = at + 1 + n
            else:
                reader.pos = at - base
                arg = _read_string0(reader) if code == _STRING else op.arg.reader(reader)
                pos = base + reader.pos
            reader.pos = pos - base
            if handlers[code](machine, arg, offset):
                return
            pos = base + reader.pos
            if code in _PADDING_AFTER:
                after = skip_padding(buf, pos, end)
                if after > pos:
                    budget.opcodes += (after - pos) // PADDING_BYTES_PER_OPCODE
                    pos = after
                    reader.pos = pos - base
    finally:
        reader.pos = min(pos, end) - base
        res.opcodes += budget.opcodes - first_opcode
