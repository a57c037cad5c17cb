"""Binary data saved under a pickle's name (Flatland keeps its msgpack scenes as `.pkl`: judged
false as "could not be fully verified" in blind test 61). Its bytes start like opcodes -- msgpack's
map header 0x83 reads as EXT2, a copyreg registry lookup -- but the stream breaks on a byte that is
no opcode of any protocol before anything is imported or called: an unpickler stops there too, so
there is nothing to trust or distrust. Content that imports or calls anything first, and a damaged
stream that starts with a pickle's PROTO opcode, stay "could not be fully verified". Every payload
is crafted here and only handed to the scanner (pickle's loaders are replaced by a trap)."""
from __future__ import annotations

import artifact_craft as craft
from torchreview.findings import Severity

# a msgpack map of three keys, as Flatland writes: {"grid": [...], ...}
MSGPACK = bytes.fromhex("83a467726964dc0014dc0032") + bytes(40)


def _scan(tmp_path, monkeypatch, data: bytes, name: str = "scene.pkl"):
    path = tmp_path / name
    path.write_bytes(data)
    return craft.scan(path, None, monkeypatch)


def _unverified(findings) -> bool:
    return any(f.code == "TR108" and "could not be fully verified" in f.message and f.severity is Severity.MEDIUM
               for f in findings)


def test_msgpack_in_a_pickle_name_is_not_a_pickle(tmp_path, monkeypatch):
    findings, errors = _scan(tmp_path, monkeypatch, MSGPACK)
    assert findings == [] and errors == []


def test_msgpack_scanned_by_name_says_it_is_not_a_pickle(tmp_path, monkeypatch):
    from torchreview.artifacts import scan_files

    path = tmp_path / "scene.pkl"
    path.write_bytes(MSGPACK)
    report = scan_files([str(path)])
    findings, errors = report.findings, report.errors
    assert findings == []
    assert len(errors) == 1 and errors[0].message.startswith("not a pickle (") and "unknown opcode" in \
        errors[0].message


def test_a_global_before_the_break_stays_unverified(tmp_path, monkeypatch):
    data = craft.glob("os", "system") + b"\x19" + bytes(8)
    findings, errors = _scan(tmp_path, monkeypatch, data)
    assert errors and findings and all(f.code == "TR108" for f in findings)


def test_a_damaged_stream_with_a_pickle_header_stays_unverified(tmp_path, monkeypatch):
    data = craft.PROTO(2) + b"\x83\xa4\x67" + b"\x19" + bytes(8)
    findings, errors = _scan(tmp_path, monkeypatch, data)
    assert errors and _unverified(findings)


def test_a_break_that_is_no_unknown_opcode_stays_unverified(tmp_path, monkeypatch):
    # EXT2, then a SHORT_BINUNICODE whose length runs past the end: a truncation, not a byte no
    # unpickler reads -- the decoder's reading of arguments is not what this class rests on
    data = bytes.fromhex("83a467") + b"\x8c\xff" + b"abc"
    findings, errors = _scan(tmp_path, monkeypatch, data)
    assert errors and _unverified(findings)


def test_a_text_file_that_reads_as_one_global_and_ends_is_not_an_artifact(tmp_path):
    """A `.gitignore` of `checkpoints\\nwandb\\n` reads as protocol 0's GLOBAL `heckpoints.wandb` and
    then ends: no STOP, nothing called -- an unpickler fails before it runs anything (judged false as
    "could not be fully verified" in blind test 69). A stream that calls something and then ends
    without STOP still counts."""
    from torchreview.artifacts import looks_like_artifact

    text = tmp_path / ".gitignore"
    text.write_bytes(b"checkpoints\nwandb\n")
    assert not looks_like_artifact(str(text))
    cut = tmp_path / "partial.txt"
    cut.write_bytes(b"cos\nsystem\n(S'echo hi'\ntR")
    assert looks_like_artifact(str(cut))
    named = tmp_path / "cut.pkl"  # an artifact's name is scanned whatever its content
    named.write_bytes(b"checkpoints\nwandb\n")
    assert looks_like_artifact(str(named))
