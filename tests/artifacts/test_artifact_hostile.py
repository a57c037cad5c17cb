"""Broken and hostile input: an error entry (plus a finding when unverified), never a crash."""

from __future__ import annotations

import struct
import zipfile

import pytest

import artifact_craft as craft
from torchreview.artifacts.base import Budget, Limits, Span
from torchreview.artifacts.containers import ScanState, scan_span
from torchreview.artifacts.verdict import build
from torchreview.findings import Severity


def _scan_bytes(tmp_path, monkeypatch, data: bytes, name: str = "model.pt"):
    path = tmp_path / name
    path.write_bytes(data)
    return craft.scan(path, None, monkeypatch)


def _scan_with_limits(data: bytes, **limits):
    state = ScanState(budget=Budget(Limits(**limits)))
    scan_span(Span(data), "", ".pt", 0, state, strict=True)
    return build(state, "x.pt", explicit=False)


def _assert_unverified(findings, errors, text=""):
    assert errors, "expected an error entry"
    assert any(text in e.message for e in errors), [e.message for e in errors]
    assert any(
        f.code == "TR108" and "could not be fully verified" in f.message
        and f.severity is Severity.MEDIUM for f in findings
    ), [f.message for f in findings]


def test_truncated_pickle(tmp_path, monkeypatch):
    data = craft.benign_dict_pickle()[:-5]
    findings, errors = _scan_bytes(tmp_path, monkeypatch, data, "x.pkl")
    _assert_unverified(findings, errors, "unreadable pickle")


def test_truncated_payload_still_reports_what_it_saw(tmp_path, monkeypatch):
    # pickle would run os.system before failing on the missing STOP.
    data = craft.os_system_reduce()[:-1]
    findings, errors = _scan_bytes(tmp_path, monkeypatch, data, "x.dat")
    assert errors
    assert any(f.severity is Severity.CRITICAL and "os.system" in f.message for f in findings)


def test_bad_opcode(tmp_path, monkeypatch):
    data = craft.PROTO(2) + b"\xff" + craft.STOP
    _assert_unverified(*_scan_bytes(tmp_path, monkeypatch, data, "x.pkl"), "opcode")


def test_huge_memo_indices(tmp_path, monkeypatch):
    ok = craft.PROTO(2) + craft.NONE + craft.long_binput(0xFFFFFFFF) + craft.POP
    ok += craft.long_binget(0xFFFFFFFF) + craft.STOP
    assert _scan_bytes(tmp_path, monkeypatch, ok, "ok.pkl") == ([], [])
    missing = craft.PROTO(2) + craft.long_binget(0xFFFFFFF0) + craft.STOP
    _assert_unverified(*_scan_bytes(tmp_path, monkeypatch, missing, "bad.pkl"), "memo entry")


def test_stack_underflow(tmp_path, monkeypatch):
    data = craft.PROTO(2) + craft.REDUCE + craft.STOP
    _assert_unverified(*_scan_bytes(tmp_path, monkeypatch, data, "x.pkl"), "underflow")


def test_mark_flood_is_a_limit_error():
    data = craft.PROTO(2) + craft.MARK * 5000 + craft.STOP
    findings, errors = _scan_with_limits(data, max_marks=1000)
    _assert_unverified(findings, errors, "MARK")


def test_deep_nesting_is_fine_within_limits(tmp_path, monkeypatch):
    depth = 20_000
    data = craft.PROTO(2) + craft.MARK * depth + craft.TUPLE * depth + craft.STOP
    assert _scan_bytes(tmp_path, monkeypatch, data, "deep.pkl") == ([], [])


def test_self_referencing_memo_is_fine(tmp_path, monkeypatch):
    # l = []; l.append(l) written by hand, plus a global reached through the memo twice.
    data = (
        craft.PROTO(2) + b"]" + craft.binput(0) + craft.binget(0) + b"a"
        + craft.glob("mypackage", "Cls") + craft.binput(1) + craft.POP
        + craft.binget(1) + craft.POP + craft.STOP
    )
    findings, errors = _scan_bytes(tmp_path, monkeypatch, data, "loop.pkl")
    assert errors == []
    assert [f.severity for f in findings] == [Severity.MEDIUM]


def test_opcode_flood_is_a_limit_error():
    # A list grown one APPEND at a time is real work for the walk, not padding.
    data = craft.PROTO(2) + b"]" + (b"K\x01a") * 5000 + craft.STOP
    _assert_unverified(*_scan_with_limits(data, max_opcodes=1000), "opcodes")


PADDINGS = {
    "NONE POP": craft.NONE + craft.POP,
    "MARK POP_MARK": craft.MARK + b"1",
    "MARK ints TUPLE POP": craft.MARK + b"K\x01M\x02\x00" + craft.TUPLE + craft.POP,
    "short string POP": craft.ustr("pad") + craft.POP,
    "FRAME": b"\x95" + bytes(8),
    "mixed": craft.NONE + craft.POP + b"\x88\x89\x86" + craft.POP + b"(0" + b"I42\n0",
}


@pytest.mark.parametrize("kind", sorted(PADDINGS))
def test_payload_after_padding_is_found_within_the_opcode_budget(kind, tmp_path, monkeypatch):
    unit = PADDINGS[kind]
    data = craft.PROTO(2) + unit * (200_000 // len(unit)) + craft.os_system_reduce()[2:]
    findings, errors = _scan_with_limits(data, max_opcodes=20_000)
    assert errors == []
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert "os.system" in findings[0].message


def test_padding_skip_keeps_the_stack_and_memo():
    # Values pushed before the padding are still there after it; the memo too.
    before = craft.ustr("os") + craft.ustr("system") + craft.binput(1) + craft.POP
    after = craft.binget(1) + craft.STACK_GLOBAL + craft.ustr("id") + craft.TUPLE1
    data = craft.PROTO(4) + before + (craft.NONE + craft.POP) * 5000 + after + craft.REDUCE
    findings, errors = _scan_with_limits(data + craft.STOP, max_opcodes=1000)
    assert errors == []
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert "os.system (STACK_GLOBAL" in findings[0].message


def test_zip_bomb_is_a_limit_error():
    data = craft.deflate_bomb(8 * 1024 * 1024)
    _assert_unverified(*_scan_with_limits(data, max_member_bytes=1024 * 1024), "zip bomb")


def test_zip_bomb_declared_small():
    # The central directory claims a tiny size; the inflated data is what counts.
    data = bytearray(craft.deflate_bomb(4 * 1024 * 1024))
    for sig, at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        pos = bytes(data).find(sig)
        data[pos + at : pos + at + 4] = struct.pack("<I", 10)
    state = ScanState(budget=Budget(Limits(max_member_bytes=1024 * 1024)))
    scan_span(Span(bytes(data)), "", ".pt", 0, state, strict=True)
    _assert_unverified(*build(state, "x.pt", explicit=False), "zip bomb")


def test_too_many_members_is_a_limit_error():
    data = craft.zip_bytes({f"m{i}.txt": b"x" for i in range(50)})
    _assert_unverified(*_scan_with_limits(data, max_members=10), "members")


def test_nesting_depth_is_a_limit_error(tmp_path, monkeypatch):
    data = craft.torch_like_zip(craft.benign_dict_pickle())
    for level in range(7):
        data = craft.zip_bytes({f"level{level}.pt": data})
    _assert_unverified(*_scan_bytes(tmp_path, monkeypatch, data), "nested")


def _eocd_at(data: bytes) -> int:
    return data.rfind(b"PK\x05\x06")


def test_corrupted_central_directory_still_finds_payload(tmp_path, monkeypatch):
    data = bytearray(craft.torch_like_zip(craft.os_system_reduce()))
    eocd = _eocd_at(bytes(data))
    data[eocd + 16 : eocd + 20] = struct.pack("<I", 0x7FFFFFF0)  # directory offset: nonsense
    findings, errors = _scan_bytes(tmp_path, monkeypatch, bytes(data))
    assert any("central directory" in e.message for e in errors)
    assert any(f.severity is Severity.CRITICAL and "os.system" in f.message for f in findings)


def test_corrupted_central_directory_benign_is_unverified(tmp_path, monkeypatch):
    data = bytearray(craft.torch_like_zip(craft.benign_dict_pickle()))
    cd = bytes(data).find(b"PK\x01\x02")
    data[cd : cd + 4] = b"XXXX"
    _assert_unverified(*_scan_bytes(tmp_path, monkeypatch, bytes(data)), "central directory")


def test_truncated_zip(tmp_path, monkeypatch):
    data = craft.torch_like_zip(craft.benign_dict_pickle())
    findings, errors = _scan_bytes(tmp_path, monkeypatch, data[: len(data) // 2])
    _assert_unverified(findings, errors)


def test_encrypted_and_unknown_compression_members(tmp_path, monkeypatch):
    data = bytearray(craft.zip_bytes({"archive/data.pkl": craft.benign_dict_pickle()}))
    for sig, flag_at, method_at in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        pos = bytes(data).find(sig)
        data[pos + method_at : pos + method_at + 2] = struct.pack("<H", 99)
    _assert_unverified(*_scan_bytes(tmp_path, monkeypatch, bytes(data), "a.pt"), "compression")
    data = bytearray(craft.zip_bytes({"archive/data.pkl": craft.benign_dict_pickle()}))
    for sig, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        pos = bytes(data).find(sig)
        data[pos + flag_at] |= 1
    _assert_unverified(*_scan_bytes(tmp_path, monkeypatch, bytes(data), "b.pt"), "encrypted")


def test_malformed_npy_header(tmp_path, monkeypatch):
    data = b"\x93NUMPY\x01\x00" + struct.pack("<H", 20) + b"{'descr': __import__"
    _assert_unverified(*_scan_bytes(tmp_path, monkeypatch, data, "a.npy"), "NumPy header")


def test_garbage_tar(tmp_path, monkeypatch):
    data = bytearray(craft.tar_bytes({"pickle": craft.benign_dict_pickle()}))
    data[100:156] = b"\xff" * 56  # mode/uid/gid/size/mtime fields
    findings, errors = _scan_bytes(tmp_path, monkeypatch, bytes(data), "old.tar")
    assert isinstance(findings, list) and isinstance(errors, list)


def test_legacy_file_cut_short(tmp_path, monkeypatch):
    data = craft.legacy_torch_file()
    cut = data.find(b"protocol_version")
    _assert_unverified(*_scan_bytes(tmp_path, monkeypatch, data[:cut], "old.pt"))


def test_ext_opcode_is_medium(tmp_path, monkeypatch):
    data = craft.PROTO(2) + b"\x82\x07" + craft.STOP
    findings, errors = _scan_bytes(tmp_path, monkeypatch, data, "ext.pkl")
    assert errors == []
    assert [f.severity for f in findings] == [Severity.MEDIUM]
    assert "extension code 7" in findings[0].message


@pytest.mark.parametrize("name", ["empty.pt", "empty.pkl"])
def test_empty_artifact_is_an_error(name, tmp_path, monkeypatch):
    findings, errors = _scan_bytes(tmp_path, monkeypatch, b"", name)
    assert findings == []
    assert errors and "empty" in errors[0].message


def test_unreadable_paths(tmp_path):
    findings, errors = craft.scan(tmp_path / "missing.pt")
    assert findings == [] and "cannot read" in errors[0].message
    findings, errors = craft.scan(tmp_path)
    assert findings == [] and "not a regular file" in errors[0].message


def test_strict_suffix_with_unknown_content(tmp_path, monkeypatch):
    _assert_unverified(*_scan_bytes(tmp_path, monkeypatch, b"\xfe\xfegarbage", "m.pth"),
                       "not a recognised")


def test_deflated_torch_zip_is_scanned(tmp_path, monkeypatch):
    data = craft.torch_like_zip(craft.benign_dict_pickle(), compression=zipfile.ZIP_DEFLATED)
    assert _scan_bytes(tmp_path, monkeypatch, data) == ([], [])


def test_joblib_array_running_past_the_end(tmp_path, monkeypatch):
    data = craft.joblib_like(b"\x00" * 16, shape=200)
    _assert_unverified(*_scan_bytes(tmp_path, monkeypatch, data, "m.joblib"), "joblib array")
