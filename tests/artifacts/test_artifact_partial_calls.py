"""A call of a `functools.partial` object calls the global it wraps. pandas (1.3 and later) pickles
each block of a DataFrame as `partial(new_block, ndim=2)(values, placement)`: judged as a call of
`new_block`, a known rebuilder (needs trust, medium), not as "a value made at load time" whose code
cannot be known (camera-motion's config DataFrames: TR108 critical judged noise in blind test 64 and
earlier). A partial of `os.system`, or one whose BUILD state swaps in `os.system` or a function the
scan cannot name, stays critical. Every payload is crafted here and only handed to the scanner
(pickle's loaders are replaced by a trap)."""
from __future__ import annotations

import artifact_craft as craft

TUPLE3 = b"\x87"
EMPTY_LIST = b"]"


def _partial(module: str, name: str) -> bytes:
    return craft.glob("functools", "partial") + craft.glob(module, name) + craft.TUPLE1 + craft.REDUCE


def _call(partial: bytes, state: bytes = b"") -> bytes:
    """`partial(<args>)` where the args are `([], 0)`."""
    return craft.PROTO(2) + partial + state + EMPTY_LIST + b"K\x00" + craft.TUPLE2 + craft.REDUCE + craft.STOP


def _scan(tmp_path, monkeypatch, data: bytes):
    return craft.scan_bytes(tmp_path, monkeypatch, data, "frame.pkl")


_critical = craft.critical


def test_a_call_of_partial_new_block_is_a_call_of_new_block(tmp_path, monkeypatch):
    findings, errors = _scan(tmp_path, monkeypatch, _call(_partial("pandas.core.internals.blocks", "new_block")))
    assert not errors and findings and not _critical(findings)
    assert "pandas.core.internals.blocks.new_block" in findings[0].message


def test_a_call_of_partial_new_block_with_its_own_state_stays_new_block(tmp_path, monkeypatch):
    state = craft.MARK + craft.glob("pandas.core.internals.blocks", "new_block") + craft.EMPTY_TUPLE + \
        craft.EMPTY_DICT + craft.NONE + craft.TUPLE + craft.BUILD
    findings, _ = _scan(tmp_path, monkeypatch, _call(_partial("pandas.core.internals.blocks", "new_block"), state))
    assert findings and not _critical(findings)


def test_a_call_of_partial_os_system_is_critical(tmp_path, monkeypatch):
    findings, _ = _scan(tmp_path, monkeypatch, _call(_partial("os", "system")))
    assert _critical(findings) and any("os.system" in f.message for f in findings)


def test_a_state_that_swaps_in_os_system_is_critical(tmp_path, monkeypatch):
    state = craft.MARK + craft.glob("os", "system") + craft.EMPTY_TUPLE + craft.EMPTY_DICT + craft.NONE + \
        craft.TUPLE + craft.BUILD
    findings, _ = _scan(tmp_path, monkeypatch, _call(_partial("pandas.core.internals.blocks", "new_block"), state))
    assert _critical(findings)


def test_a_state_whose_function_is_made_at_load_time_is_critical(tmp_path, monkeypatch):
    made = craft.glob("builtins", "getattr") + craft.glob("os", "path") + craft.ustr("join") + craft.TUPLE2 + \
        craft.REDUCE
    state = craft.MARK + made + craft.EMPTY_TUPLE + craft.EMPTY_DICT + craft.NONE + craft.TUPLE + craft.BUILD
    findings, _ = _scan(tmp_path, monkeypatch, _call(_partial("pandas.core.internals.blocks", "new_block"), state))
    assert _critical(findings)
