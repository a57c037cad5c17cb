"""Decompression with bounded memory: bombs are cut, what came out is still scanned."""

from __future__ import annotations

import bz2
import gzip
import lzma
import mmap
import zipfile
import zlib

import pytest

import artifact_craft as craft
from torchreview.artifacts import inflate as inflate_module
from torchreview.artifacts.base import Budget, Limits, Span
from torchreview.artifacts.containers import ScanState, scan_span
from torchreview.artifacts.inflate import inflate
from torchreview.artifacts.sniff import BZIP2, GZIP, XZ, decompressor
from torchreview.artifacts.verdict import build
from torchreview.findings import Severity

MB = 1024 * 1024
COMPRESS = {GZIP: gzip.compress, BZIP2: bz2.compress, XZ: lzma.compress}


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_output_is_exact_under_the_cap(kind):
    data = bytes(range(256)) * 5000
    packed = COMPRESS[kind](data)
    out = inflate(decompressor(kind), Span(packed), 0, len(packed), 10 * MB, Budget())
    assert (out.truncated, out.size) == (False, len(data))
    assert out.span.read(0, len(data)) == data


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_output_is_cut_at_the_cap(kind):
    packed = COMPRESS[kind](bytes(3 * MB))
    out = inflate(decompressor(kind), Span(packed), 0, len(packed), MB, Budget())
    assert out.truncated and out.size == MB == len(out.span)


def test_exactly_the_cap_is_not_a_cut():
    packed = gzip.compress(bytes(MB))
    out = inflate(decompressor(GZIP), Span(packed), 0, len(packed), MB, Budget())
    assert (out.truncated, out.size) == (False, MB)


def test_large_output_is_spilled_to_a_mapped_file(monkeypatch):
    monkeypatch.setattr(inflate_module, "SPILL_BYTES", 64 * 1024)
    data = bytes(range(256)) * 2048  # 512 KiB
    packed = zlib.compress(data)
    out = inflate(zlib.decompressobj(), Span(packed), 0, len(packed), 10 * MB, Budget())
    assert isinstance(out.span.buf, mmap.mmap)
    assert out.span.read(0, len(data)) == data


def test_head_only_stops_early():
    packed = gzip.compress(bytes(5 * MB))
    out = inflate(decompressor(GZIP), Span(packed), 0, len(packed), MB, Budget(), head_only=512)
    assert (out.size, out.truncated) == (512, False)


def _scan(data: bytes, **limits):
    state = ScanState(budget=Budget(Limits(**limits)))
    scan_span(Span(data), "", "", 0, state, strict=False)
    return build(state, "x", explicit=False)


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_bomb_with_the_payload_first_is_critical_and_reported(kind):
    packed = COMPRESS[kind](craft.os_system_reduce() + bytes(3 * MB))
    findings, errors = _scan(packed, max_member_bytes=MB)
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert any("inflates past 1 MiB" in e.message for e in errors), errors


def test_zip_member_bomb_with_the_payload_first():
    data = craft.zip_bytes({"archive/data.pkl": craft.os_system_reduce() + bytes(3 * MB)},
                           zipfile.ZIP_DEFLATED)
    findings, errors = _scan(data, max_member_bytes=MB)
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert any("zip bomb" in e.message for e in errors), errors


def test_total_budget_still_stops_a_file():
    data = craft.zip_bytes({f"m{i}.pkl": bytes(MB) for i in range(4)}, zipfile.ZIP_DEFLATED)
    findings, errors = _scan(data, max_total_bytes=2 * MB)
    assert any("decompressed in one file" in e.message for e in errors), errors
    assert [f.severity for f in findings] == [Severity.MEDIUM]


def test_a_full_disk_is_reported_as_such(monkeypatch):
    def no_space(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(inflate_module, "SPILL_BYTES", 1024)
    monkeypatch.setattr(inflate_module.tempfile, "TemporaryFile", no_space)
    packed = gzip.compress(craft.os_system_reduce() + bytes(64 * 1024))
    findings, errors = _scan(packed)
    assert any("temporary file (No space left on device)" in e.message for e in errors), errors
    assert [f.severity for f in findings] == [Severity.MEDIUM]
