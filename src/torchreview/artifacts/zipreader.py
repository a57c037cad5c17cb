"""A small, tolerant zip reader for checkpoints.

Why not ``zipfile``: torch opens archives whose CRC is wrong (its reader does
not check it), so a scanner that stops at a CRC error misses what torch would
load; and ``zipfile`` builds every entry of a hostile central directory in
memory before we could say no.  This reader

* parses the central directory itself (zip64 included), refusing more than
  ``Limits.max_members`` entries;
* returns stored members as zero-copy windows on the file, and inflates
  deflated (or bzip2/lzma) ones with a hard cap on the output and bounded
  memory (``inflate``: zip bombs);
* never checks CRCs (like torch) and never reads a member it is not asked for;
* when the central directory is broken, can still list members from their
  local headers (:func:`scan_local_headers`), so a damaged file is searched
  rather than skipped.
"""

from __future__ import annotations

import bz2
import lzma
import struct
import zlib
from dataclasses import dataclass

from torchreview.artifacts.base import Budget, LimitExceeded, ScanProblem, Span
from torchreview.artifacts.inflate import inflate

EOCD_SIG = b"PK\x05\x06"
EOCD64_LOCATOR_SIG = b"PK\x06\x07"
EOCD64_SIG = b"PK\x06\x06"
CENTRAL_SIG = b"PK\x01\x02"
LOCAL_SIG = b"PK\x03\x04"

STORED, DEFLATED, BZIP2, LZMA = 0, 8, 12, 14


@dataclass(frozen=True)
class ZipMember:
    name: str
    method: int
    flags: int
    compressed_size: int
    size: int
    header_offset: int  # of the local header, relative to the zip's span


def _u16(data: bytes, at: int) -> int:
    return struct.unpack_from("<H", data, at)[0]


def _u32(data: bytes, at: int) -> int:
    return struct.unpack_from("<I", data, at)[0]


def _u64(data: bytes, at: int) -> int:
    return struct.unpack_from("<Q", data, at)[0]


def _decode_name(raw: bytes, flags: int) -> str:
    if flags & 0x800:
        return raw.decode("utf-8", "replace")
    return raw.decode("cp437")


def _find_eocd(span: Span) -> tuple[int, bytes]:
    lo = span.start + max(0, len(span) - (22 + 65535))
    end = span.end
    while True:
        hit = span.buf.rfind(EOCD_SIG, lo, end)
        if hit < 0:
            raise ScanProblem(
                "zip end-of-central-directory record not found (corrupted or truncated)"
            )
        pos = hit - span.start
        record = span.read(pos, 22)
        if len(record) == 22 and pos + 22 + _u16(record, 20) <= len(span):
            return pos, record
        end = hit + 3  # look further back


def read_central_directory(span: Span, max_members: int) -> list[ZipMember]:
    """The members listed in the central directory; raises ScanProblem if it is broken."""
    eocd_pos, eocd = _find_eocd(span)
    count = _u16(eocd, 10)
    cd_size = _u32(eocd, 12)
    cd_offset = _u32(eocd, 16)
    eocd_start = eocd_pos
    saturated = count == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF
    locator = span.read(eocd_pos - 20, 20) if eocd_pos >= 20 else b""
    if locator.startswith(EOCD64_LOCATOR_SIG):
        # torch always writes zip64 records; the directory ends where they start.
        rec_at = eocd_pos - 20 - 56
        record = span.read(rec_at, 56) if rec_at >= 0 else b""
        if not record.startswith(EOCD64_SIG):
            rec_at = _u64(locator, 8)
            record = span.read(rec_at, 56)
        if len(record) == 56 and record.startswith(EOCD64_SIG):
            eocd_start = rec_at
            if saturated:
                count, cd_size, cd_offset = _u64(record, 32), _u64(record, 40), _u64(record, 48)
        elif saturated:
            raise ScanProblem("zip64 end-of-central-directory record is corrupted")
    elif saturated and count != 0xFFFF:
        raise ScanProblem("zip64 end-of-central-directory locator is missing (corrupted)")
    if count > max_members:
        raise LimitExceeded(f"zip lists {count} members (limit {max_members})")
    # Data prepended to the archive shifts every offset by the same amount.
    shift = eocd_start - cd_size - cd_offset
    if shift < 0 or cd_offset + shift + cd_size > len(span):
        raise ScanProblem("zip central directory lies outside the file (corrupted)")
    cd = span.read(cd_offset + shift, cd_size)
    members: list[ZipMember] = []
    at = 0
    while at + 46 <= len(cd) and cd[at : at + 4] == CENTRAL_SIG:
        flags, method = _u16(cd, at + 8), _u16(cd, at + 10)
        csize, usize = _u32(cd, at + 20), _u32(cd, at + 24)
        name_len, extra_len, comment_len = _u16(cd, at + 28), _u16(cd, at + 30), _u16(cd, at + 32)
        offset = _u32(cd, at + 42)
        name = _decode_name(cd[at + 46 : at + 46 + name_len], flags)
        extra = cd[at + 46 + name_len : at + 46 + name_len + extra_len]
        usize, csize, offset = _apply_zip64(extra, usize, csize, offset)
        members.append(ZipMember(name, method, flags, csize, usize, offset + shift))
        if len(members) > max_members:
            raise LimitExceeded(f"zip has more than {max_members} members")
        at += 46 + name_len + extra_len + comment_len
    if len(members) != count and count != 0xFFFF:
        raise ScanProblem(
            f"zip central directory is corrupted (lists {count} members, found {len(members)})"
        )
    return members


def _apply_zip64(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int]:
    at = 0
    while at + 4 <= len(extra):
        tag, size = _u16(extra, at), _u16(extra, at + 2)
        body = extra[at + 4 : at + 4 + size]
        if tag == 0x0001:
            pos = 0
            if usize == 0xFFFFFFFF and pos + 8 <= len(body):
                usize, pos = _u64(body, pos), pos + 8
            if csize == 0xFFFFFFFF and pos + 8 <= len(body):
                csize, pos = _u64(body, pos), pos + 8
            if offset == 0xFFFFFFFF and pos + 8 <= len(body):
                offset = _u64(body, pos)
            break
        at += 4 + size
    return usize, csize, offset


def scan_local_headers(span: Span, max_members: int) -> list[ZipMember]:
    """Best-effort member list from local headers, for a broken central directory."""
    members: list[ZipMember] = []
    pos = span.buf.find(LOCAL_SIG, span.start, span.end)
    while 0 <= pos < span.end:
        rel = pos - span.start
        header = span.read(rel, 30)
        if len(header) < 30:
            break
        flags, method = _u16(header, 6), _u16(header, 8)
        csize, usize = _u32(header, 18), _u32(header, 22)
        name_len, extra_len = _u16(header, 26), _u16(header, 28)
        name = _decode_name(span.read(rel + 30, name_len), flags)
        data_at = rel + 30 + name_len + extra_len
        extra = span.read(rel + 30 + name_len, extra_len)
        usize, csize, _ = _apply_zip64(extra, usize, csize, 0)
        if flags & 0x08 or data_at + csize > len(span):
            # Sizes unknown (data descriptor) or wrong: the member ends where
            # the next zip record starts.
            nxt = _next_record(span, data_at)
            csize = nxt - data_at
            if method == STORED:
                usize = csize
        members.append(ZipMember(name, method, flags, csize, usize, rel))
        if len(members) > max_members:
            raise LimitExceeded(f"zip has more than {max_members} members")
        pos = span.buf.find(LOCAL_SIG, span.start + max(data_at + csize, rel + 4), span.end)
    return members


def _next_record(span: Span, start: int) -> int:
    best = len(span)
    for sig in (LOCAL_SIG, CENTRAL_SIG, EOCD_SIG):
        hit = span.buf.find(sig, span.start + start, span.end)
        if hit >= 0:
            best = min(best, hit - span.start)
    return best


def _data_offset(span: Span, member: ZipMember) -> int:
    header = span.read(member.header_offset, 30)
    if len(header) < 30 or not header.startswith(LOCAL_SIG):
        raise ScanProblem(f"zip member {member.name!r}: local header missing (corrupted)")
    start = member.header_offset + 30 + _u16(header, 26) + _u16(header, 28)
    if start + member.compressed_size > len(span):
        raise ScanProblem(f"zip member {member.name!r} runs past the end of the file (truncated)")
    return start


def _decompressor(method: int, member: ZipMember):
    if method == DEFLATED:
        return zlib.decompressobj(-15)
    if method == BZIP2:
        return bz2.BZ2Decompressor()
    raise ScanProblem(f"zip member {member.name!r}: unsupported compression method {method}")


def open_member(
    span: Span, member: ZipMember, budget: Budget, head_only: int = 0, report=None
) -> Span:
    """The member's bytes: a window for stored data, inflated bytes otherwise.

    With ``head_only`` set, at most that many bytes are produced (for sniffing).
    Inflating stops at ``Limits.max_member_bytes`` (memory stays bounded, see
    ``inflate``); the part inflated so far is returned and ``report(message)``
    is told about the cut.
    """
    if member.flags & 0x01:
        raise ScanProblem(f"zip member {member.name!r} is encrypted")
    start = _data_offset(span, member)
    if member.method == STORED:
        return span.window(start, member.compressed_size)
    end = start + member.compressed_size
    if member.method == LZMA:
        decomp, start = _lzma_decompressor(span, member, start)
    else:
        decomp = _decompressor(member.method, member)
    cap = budget.limits.max_member_bytes
    try:
        out = inflate(decomp, span, start, end, cap, budget, head_only)
    except (zlib.error, OSError, EOFError, ValueError, lzma.LZMAError) as exc:
        raise ScanProblem(f"zip member {member.name!r}: corrupted compressed data ({exc})")
    if out.truncated and report is not None:
        report(f"zip member {member.name!r} inflates past {cap // (1024 * 1024)} MiB "
               "(zip bomb?); only that much was scanned")
    return out.span


def _lzma_decompressor(span: Span, member: ZipMember, start: int):
    """Zip's LZMA: 2 version bytes, 2-byte properties size, properties, raw stream."""
    hdr = span.read(start, 4)
    if len(hdr) < 4:
        raise ScanProblem(f"zip member {member.name!r}: truncated LZMA header")
    psize = _u16(hdr, 2)
    props = span.read(start + 4, psize)
    try:
        filt = lzma._decode_filter_properties(lzma.FILTER_LZMA1, props)  # noqa: SLF001
        decomp = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[filt])
    except (lzma.LZMAError, ValueError, AttributeError) as exc:
        raise ScanProblem(f"zip member {member.name!r}: bad LZMA properties ({exc})")
    return decomp, start + 4 + psize
