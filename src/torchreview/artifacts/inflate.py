"""Decompress with bounded memory: small output in memory, large output spilled to disk.

Used for gzip/bz2/xz/zlib streams and for deflated/bzip2/LZMA zip members.
Input is read 1 MiB at a time, output is produced at most 1 MiB per call, so
a decompression bomb never holds more than a few MiB at once.  Output up to
:data:`SPILL_BYTES` stays in a ``bytearray``; beyond that it goes to an
anonymous temporary file that is memory-mapped for the scan (pages the
kernel can drop, not heap).  Writing stops at the byte cap: what was
inflated so far is still scanned, and the caller reports the cut.
"""

from __future__ import annotations

import mmap
import tempfile

from torchreview.artifacts.base import Budget, ScanProblem, Span

CHUNK = 1024 * 1024  # compressed bytes read at a time, and decompressed bytes per call
SPILL_BYTES = 8 * 1024 * 1024  # larger output goes to a temporary file


class Inflated:
    """The result: a span on the output, and whether the cap cut it short."""

    __slots__ = ("span", "truncated", "size")

    def __init__(self, span: Span, truncated: bool, size: int) -> None:
        self.span = span
        self.truncated = truncated
        self.size = size


def _outputs(decomp, span: Span, start: int, end: int):
    """Decompressed pieces of ``span[start:end]``, each at most CHUNK bytes."""
    pos = start
    is_zlib = hasattr(decomp, "unconsumed_tail")
    while True:
        if is_zlib:
            data = decomp.unconsumed_tail
            if not data:
                if pos >= end or decomp.eof:
                    return
                data = span.read(pos, min(CHUNK, end - pos))
                pos += len(data)
            piece = decomp.decompress(data, CHUNK)
        else:
            if decomp.eof:
                return
            data = b""
            if decomp.needs_input:
                if pos >= end:
                    return
                data = span.read(pos, min(CHUNK, end - pos))
                pos += len(data)
            piece = decomp.decompress(data, max_length=CHUNK)
        if piece:
            yield piece
        elif is_zlib and not decomp.unconsumed_tail and pos >= end:
            return


def inflate(decomp, span: Span, start: int, end: int, cap: int, budget: Budget | None,
            head_only: int = 0) -> Inflated:
    """Run ``decomp`` over ``span[start:end]``; at most ``cap`` (or ``head_only``) bytes out.

    Decompressor errors (``zlib.error``, ``OSError``, ``EOFError``,
    ``ValueError``, ``lzma.LZMAError``) propagate to the caller.
    """
    limit = head_only or cap
    memory = bytearray()
    spill = None
    size = 0
    truncated = False
    try:
        for piece in _outputs(decomp, span, start, end):
            if size + len(piece) > limit:  # more output than allowed exists
                piece = piece[: limit - size]
                truncated = not head_only
            if budget is not None and not head_only:
                budget.charge_bytes(len(piece))
            size += len(piece)
            if spill is None and size > SPILL_BYTES and not head_only:
                spill = _spill(tempfile.TemporaryFile, prefix="torchreview-")
                _spill(spill.write, memory)
                memory = bytearray()
            if spill is not None:
                _spill(spill.write, piece)
            else:
                memory += piece
            if size >= limit and (truncated or head_only):
                break
        if spill is None:
            return Inflated(Span(memory), truncated, size)
        _spill(spill.flush)
        mapped = _spill(mmap.mmap, spill.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        return Inflated(Span(mapped), truncated, size)
    finally:
        if spill is not None:
            spill.close()  # the mapping stays valid; the file is already unlinked


def _spill(action, *args, **kwargs):
    """A temporary-file operation; a full or unwritable disk is a scan problem, not corruption."""
    try:
        return action(*args, **kwargs)
    except OSError as exc:
        raise ScanProblem(
            f"cannot keep decompressed data in a temporary file ({exc.strerror or exc})"
        ) from None
