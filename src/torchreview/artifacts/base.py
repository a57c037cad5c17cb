"""Shared pieces of the artifact scanner: limits, byte windows, stream readers.

Everything the scanner reads goes through a :class:`Span`: a window on an
``mmap`` of the file (zero copy: stored zip members, tar members and the
pickles of a legacy file are windows on the file itself) or on bytes that had
to be decompressed (bounded by :class:`Limits`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field


class ScanProblem(Exception):
    """The input is malformed or hostile; the message is one line for the report."""


class LimitExceeded(ScanProblem):
    """A safety limit was reached (zip bomb, opcode flood, too many members...)."""


class BudgetExceeded(LimitExceeded):
    """A limit for the whole file was reached: scanning the file stops."""


MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Bounds on the work one file may cause.  Reaching any is an error entry."""

    max_members: int = 100_000  # entries in one zip or tar
    max_depth: int = 4  # containers inside containers (zip in zip in ...)
    max_member_bytes: int = 256 * MIB  # decompressed size of one member
    max_total_bytes: int = 1024 * MIB  # decompressed bytes for a whole file
    max_opcodes: int = 10_000_000  # pickle opcodes for a whole file
    max_streams: int = 10_000  # pickle streams for a whole file
    max_memo: int = 2_000_000  # memo entries of one pickle
    max_marks: int = 100_000  # nested MARKs of one pickle
    max_line: int = 16 * MIB  # a protocol-0 argument line
    max_arg: int = 16 * MIB  # larger counted arguments are skipped, not copied


DEFAULT_LIMITS = Limits()


@dataclass
class Budget:
    """What one top-level file has consumed so far."""

    limits: Limits = DEFAULT_LIMITS
    opcodes: int = 0
    streams: int = 0
    decompressed: int = 0
    exhausted: bool = False
    # copyreg.add_extension calls seen so far: code -> (module, name).  The
    # registry is the loading process's, so it lasts from one pickle to the next.
    extensions: dict = field(default_factory=dict)

    def charge_stream(self) -> None:
        self.streams += 1
        if self.streams > self.limits.max_streams:
            self.exhausted = True
            raise BudgetExceeded(f"more than {self.limits.max_streams} pickle streams")

    def charge_bytes(self, n: int) -> None:
        self.decompressed += n
        if self.decompressed > self.limits.max_total_bytes:
            self.exhausted = True
            raise BudgetExceeded(
                f"more than {self.limits.max_total_bytes // MIB} MiB decompressed in one file"
            )


class Span:
    """A read-only window ``[start, end)`` on a bytes-like buffer (bytes or mmap)."""

    __slots__ = ("buf", "start", "end")

    def __init__(self, buf, start: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.start = start
        self.end = len(buf) if end is None else end

    def __len__(self) -> int:
        return self.end - self.start

    def read(self, offset: int, size: int) -> bytes:
        """Bytes at ``[offset, offset+size)`` relative to the window (clipped)."""
        a = self.start + max(0, offset)
        b = min(self.end, a + max(0, size))
        return bytes(self.buf[a:b]) if b > a else b""

    def head(self, size: int = 16) -> bytes:
        return self.read(0, size)

    def window(self, offset: int, size: int) -> "Span":
        a = self.start + max(0, offset)
        return Span(self.buf, a, min(self.end, a + max(0, size)))

    def rfind(self, needle: bytes, lo: int = 0) -> int:
        pos = self.buf.rfind(needle, self.start + max(0, lo), self.end)
        return -1 if pos < 0 else pos - self.start


class Skipped:
    """Stands for a counted argument too large to copy; only its length is known."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size


class SpanReader:
    """The file-like object ``pickletools.genops`` reads from.

    ``tell()`` is relative to the window, so offsets in findings are offsets in
    the member (or in the file, for top-level pickles).  Huge counted arguments
    (``BINBYTES8`` of a pickled array) are skipped instead of copied.
    """

    __slots__ = ("span", "pos", "limits")

    def __init__(self, span: Span, limits: Limits = DEFAULT_LIMITS, pos: int = 0) -> None:
        self.span = span
        self.pos = pos
        self.limits = limits

    def tell(self) -> int:
        return self.pos

    def remaining(self) -> int:
        return len(self.span) - self.pos

    def read(self, n: int = -1):
        left = len(self.span) - self.pos
        if n is None or n < 0 or n > left:
            n = left
        if n > self.limits.max_arg:
            self.pos += n
            return Skipped(n)
        data = self.span.read(self.pos, n)
        self.pos += len(data)
        return data

    def readline(self) -> bytes:
        a = self.span.start + self.pos
        stop = min(self.span.end, a + self.limits.max_line)
        nl = self.span.buf.find(b"\n", a, stop)
        b = stop if nl < 0 else nl + 1
        data = bytes(self.span.buf[a:b])
        self.pos += len(data)
        return data


class SpanFile(io.RawIOBase):
    """A seekable file object over a span, for ``tarfile``."""

    def __init__(self, span: Span) -> None:
        super().__init__()
        self._span = span
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._span)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer) -> int:
        data = self._span.read(self._pos, len(buffer))
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)
