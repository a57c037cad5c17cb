"""Recognise artifact formats by their first bytes, never by their name.

``sniff(head)`` looks at up to :data:`HEAD_SIZE` bytes and says which reader
applies.  Pickles are split in two strengths: ``pickle`` (a protocol 2-5
header, or a protocol-0/1 global at the very start) is certainly meant to be
unpickled; ``maybe-pickle`` only starts with a byte that is a valid opcode, as
many binary files do, so such content is reported only when it really parses
(see ``containers``).
"""

from __future__ import annotations

import io
import pickletools
import re
import warnings

HEAD_SIZE = 512  # tar needs 262 bytes; everything else fits in the first 8

ZIP = "zip"
LEGACY_TORCH = "legacy-torch"
PICKLE = "pickle"
MAYBE_PICKLE = "maybe-pickle"
NPY = "npy"
TAR = "tar"
GZIP = "gzip"
BZIP2 = "bzip2"
XZ = "xz"
ZLIB = "zlib"
EMPTY = "empty"
# macOS's AppleDouble/AppleSingle sidecar (`._weights.npy` beside `weights.npy` when a Mac copies a file
# to a disk or an archive that cannot hold its extended attributes): the Finder's metadata, no data
APPLE_DOUBLE = "apple-double"
UNKNOWN = "unknown"

COMPRESSED = (GZIP, BZIP2, XZ, ZLIB)

# torch.serialization.MAGIC_NUMBER pickled as the first object of a legacy file:
# PROTO 2, LONG1 with 10 bytes.
LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
NPY_MAGIC = b"\x93NUMPY"
ZIP_LOCAL = b"PK\x03\x04"
ZIP_EMPTY = b"PK\x05\x06"

_OPCODE_BYTES = frozenset(ord(op.code) for op in pickletools.opcodes)
# A protocol-0/1 global or instance at the start: "cos\nsystem\n", "(ios\n...",
# "(cbuiltins\n...".  Module names are identifiers joined by dots.  An INST
# needs the MARK before it: without one the unpickler stops ("could not find
# MARK") before importing anything, and text that merely starts with "i" and
# a dotted word per line (a list of file names: "imgHQ001.npy\nimgHQ002.npy\n")
# is no pickle; such content is left to the weak parse (``maybe-pickle``).
_P0_GLOBAL = re.compile(rb"(?:\(?c|\(i)[A-Za-z_][A-Za-z0-9_.]*\n[A-Za-z_][A-Za-z0-9_.]*\n")
# The same, cut short: enough for the 8-byte check of looks_like_artifact.
_P0_PREFIX = re.compile(rb"(?:\(?c|\(i)[A-Za-z_][A-Za-z0-9_.]*(\n[A-Za-z0-9_.]*)?$")


def is_pickle_header(head: bytes) -> bool:
    """``PROTO n`` (2 <= n <= 5) followed by a valid opcode, or just the PROTO."""
    if len(head) < 2 or head[0] != 0x80 or head[1] > 5:
        return False
    return len(head) == 2 or head[2] in _OPCODE_BYTES


# opcodes that call or build something: what an unpickler runs before it reaches an error
_CALLS = frozenset({"REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX"})


def looks_like_p0_global(head: bytes, complete: bool = False) -> bool:
    """A protocol-0/1 global at the start whose next opcodes parse too. A text file
    whose first two lines happen to read as one (``coverage\ninterrogate\npytest``:
    GLOBAL, then a PUT whose argument is no number) is no pickle, nor is one whose
    lines read as globals only (a list of file names starting with ``c``); a stream
    cut short by the end of ``head`` still counts -- unless ``head`` is the whole content
    (``complete``) and ends (inside an opcode's argument, or before any STOP naming no
    global the deny-list knows) with nothing called before
    (``ct_train_1005\nct_train_1011\nct_train_1015\n``: a 42-byte split list; a
    ``.gitignore`` of ``checkpoints\nwandb\n``, one GLOBAL and the end; ``cos\nsystem\n``
    still counts): it fails to unpickle before it could run anything."""
    if not _P0_GLOBAL.match(head[:256]):
        return False
    names, globals_ = [], []
    try:
        for count, (op, arg, _) in enumerate(pickletools.genops(io.BytesIO(head)), 1):
            names.append(op.name)
            if op.name == "GLOBAL" and isinstance(arg, str):
                globals_.append(arg)
            if count >= 4:
                break
    except ValueError as err:  # running out of ``head`` is no evidence against a pickle
        if not ("exhausted" in str(err) or "no newline found" in str(err)):
            return False
        if complete and "no newline found" in str(err) and not _CALLS & set(names):
            return False  # the whole file ends inside an opcode's argument, nothing called before
        if complete and not _CALLS & set(names) and not any(_denied(g) for g in globals_):
            # the whole file ends before any STOP with nothing called, naming nothing that runs
            # code (a `.gitignore` of `checkpoints\nwandb\n` reads as GLOBAL `heckpoints.wandb`
            # and ends; `cos\nsystem\n`, the head of a payload, still counts)
            return False
    # nothing but globals, one after another (``ct_train_1005_label.nii\nct_train_1005_image.nii\n
    # ...``: a list of file names read two lines at a time) pushes names and never uses them:
    # no pickle writes that; a real one marks, memoises or calls right after its first global
    if len(names) >= 2 and set(names) <= {"GLOBAL"}:
        return False
    # opcodes that pop more than was pushed (``cython\nsubmitit\nscipy\n``: GLOBAL, then
    # SETITEM on a one-item stack): text that merely reads as opcodes, which no pickler writes
    return not stack_breaks(head)


def _denied(ref: str) -> bool:
    """A protocol-0 GLOBAL argument (``"module name"``) the deny-list marks as running code."""
    from torchreview.artifacts.policy import classify
    from torchreview.findings import Severity

    module, _, name = ref.partition(" ")
    return classify(module, name).severity is Severity.CRITICAL


def stack_breaks(data: bytes) -> bool:
    """The opcodes at the start of ``data`` pop more than they pushed, or close a MARK
    that was never set, before the data runs out: no pickler writes that (text whose
    bytes happen to be opcodes). Running out of ``data`` is no evidence either way."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pickletools.dis(io.BytesIO(data), out=io.StringIO())
    except ValueError as err:
        return "tries to pop" in str(err) or "stack" in str(err) or "MARK" in str(err)
    except Exception:  # noqa: BLE001 - an odd argument or a truncated stream: not a stack fault
        return False
    return False


def _zlib_header(head: bytes) -> bool:
    return (
        len(head) >= 2
        and head[0] == 0x78
        and head[1] in (0x01, 0x5E, 0x9C, 0xDA)
        and ((head[0] << 8) | head[1]) % 31 == 0
    )


def sniff(head: bytes) -> str:
    """The format of content that starts with ``head``."""
    if not head:
        return EMPTY
    if head.startswith((b"\x00\x05\x16\x07", b"\x00\x05\x16\x00")) and len(head) >= 26:
        return APPLE_DOUBLE
    if head.startswith(ZIP_LOCAL) or head.startswith(ZIP_EMPTY):
        return ZIP
    if head.startswith(LEGACY_MAGIC[: min(len(head), len(LEGACY_MAGIC))]) and len(head) >= 4:
        return LEGACY_TORCH
    if head.startswith(NPY_MAGIC):
        return NPY
    if is_pickle_header(head):
        return PICKLE
    if len(head) >= 262 and head[257:262] == b"ustar":
        return TAR
    if head.startswith(b"\x1f\x8b"):
        return GZIP
    if head.startswith(b"BZh") and len(head) > 3 and head[3:4] in b"123456789":
        return BZIP2
    if head.startswith(b"\xfd7zXZ\x00"):
        return XZ
    if _zlib_header(head):
        return ZLIB
    if looks_like_p0_global(head, complete=len(head) < HEAD_SIZE):
        return PICKLE
    if head[0] in _OPCODE_BYTES:
        return MAYBE_PICKLE
    return UNKNOWN


STRONG = frozenset({ZIP, LEGACY_TORCH, PICKLE, NPY, TAR})
DEEP_INPUT = 1024 * 1024  # compressed bytes read at most to sniff what is inside
_DEEP_LEVELS = 3  # compression inside compression, as deep as scan_span follows it


def decompressor(kind: str):
    """A fresh decompressor object for a COMPRESSED kind."""
    import bz2
    import lzma
    import zlib

    if kind == GZIP:
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if kind == ZLIB:
        return zlib.decompressobj()
    if kind == BZIP2:
        return bz2.BZ2Decompressor()
    return lzma.LZMADecompressor()


def _inflated(first: bytes, more, kind: str):
    """A ``read(n)`` over the decompressed data (bounded input; errors end it)."""
    decomp = decompressor(kind)
    state = {"pending": first, "used": len(first), "out": b""}

    def read(n: int) -> bytes:
        while len(state["out"]) < n and not getattr(decomp, "eof", False):
            data = state["pending"] or b""
            state["pending"] = b""
            tail = getattr(decomp, "unconsumed_tail", b"")
            if not data and not tail:
                if state["used"] >= DEEP_INPUT:
                    break
                data = more(min(64 * 1024, DEEP_INPUT - state["used"]))
                state["used"] += len(data)
                if not data:
                    break
            try:
                if hasattr(decomp, "unconsumed_tail"):
                    got = decomp.decompress(tail + data, n - len(state["out"]))
                else:
                    got = decomp.decompress(data, max_length=n - len(state["out"]))
            except Exception:  # corrupted data: not an artifact we can see
                break
            state["out"] += got
        out, state["out"] = state["out"][:n], state["out"][n:]
        return out

    return read


def deep_sniff(head: bytes, more, level: int = 0) -> bool:
    """Is content starting with ``head`` (``more(n)`` reads on) an artifact ``scan`` reads?

    Compressed content is judged by its first decompressed bytes, so a
    ``.pkl.gz`` or a gzip-compressed tar of checkpoints is found whatever its
    name, and compressed text or CSV is not.
    """
    kind = sniff(head)
    if kind in STRONG:
        return True
    if kind not in COMPRESSED or level >= _DEEP_LEVELS:
        return False
    read = _inflated(head, more, kind)
    return deep_sniff(read(HEAD_SIZE), read, level + 1)
