"""dill pickles a module attribute it cannot name directly as
`_get_attr(_import_module("<module>"), "<name>")` -- DeepRC's dataset splits, lists of NumPy index
arrays whose `_reconstruct` dill stores that way (TR108 judged false as "code-executing" in blind
test 64). The pair loads exactly what a GLOBAL of `<module>.<name>` loads, so it is judged as that
global: NumPy's array rebuild is data; `os.system` looked up the same way stays critical, and so does
an `_import_module` result put to any other use. Every payload is crafted here and only handed to the
scanner (pickle's loaders are replaced by a trap)."""
from __future__ import annotations

import artifact_craft as craft


def _ustr(text: str) -> bytes:
    return craft.ustr(text)


def _lookup(module: str, name: str) -> bytes:
    """`_get_attr(_import_module(module), name)` pushed on the stack."""
    return (craft.glob("dill._dill", "_get_attr") + craft.glob("dill._dill", "_import_module") + _ustr(module) +
            craft.TUPLE1 + craft.REDUCE + _ustr(name) + craft.TUPLE2 + craft.REDUCE)


def _scan(tmp_path, monkeypatch, data: bytes):
    return craft.scan_bytes(tmp_path, monkeypatch, data, "splits.pkl")


_critical = craft.critical


def test_dill_lookup_of_numpy_reconstruct_is_numpy_data(tmp_path, monkeypatch):
    # `_reconstruct(ndarray, (0,), b"b")` (TUPLE3 is opcode 0x87): the first step of rebuilding an array
    data = (craft.PROTO(3) + _lookup("numpy.core._multiarray_umath", "_reconstruct") +
            craft.glob("numpy", "ndarray") + b"K\x00" + craft.TUPLE1 + b"C\x01b" + b"\x87" + craft.REDUCE +
            craft.STOP)
    findings, errors = _scan(tmp_path, monkeypatch, data)
    assert not errors
    assert findings and not _critical(findings)
    assert all("numpy.core._multiarray_umath._reconstruct" in f.message for f in findings)
    assert "dill" not in " ".join(f.message for f in findings)


def test_dill_lookup_of_os_system_stays_critical(tmp_path, monkeypatch):
    data = craft.PROTO(3) + _lookup("os", "system") + _ustr("echo hi") + craft.TUPLE1 + craft.REDUCE + craft.STOP
    findings, _ = _scan(tmp_path, monkeypatch, data)
    assert _critical(findings) and any("os.system" in f.message for f in findings)


def test_an_imported_module_put_to_another_use_stays_critical(tmp_path, monkeypatch):
    # `_import_module("os")` handed to `getattr` instead of dill's `_get_attr`
    data = (craft.PROTO(3) + craft.glob("builtins", "getattr") + craft.glob("dill._dill", "_import_module") +
            _ustr("os") + craft.TUPLE1 + craft.REDUCE + _ustr("system") + craft.TUPLE2 + craft.REDUCE +
            _ustr("echo hi") + craft.TUPLE1 + craft.REDUCE + craft.STOP)
    findings, _ = _scan(tmp_path, monkeypatch, data)
    assert _critical(findings)
