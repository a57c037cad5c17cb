"""Find every pickle stream inside an artifact, whatever wraps it.

``scan_span`` sniffs a window of bytes and hands it to the reader for its
format; containers (zip, tar, compressed streams) call back into it for their
members, one level deeper each time.  Only pickle streams are ever read in
full: tensor blobs of a torch zip (``<archive>/data/...``) are not even
opened, other members are sniffed from their first bytes.

Results go into a :class:`ScanState`: one :class:`StreamResult` per pickle and
one problem per container that could not be read.
"""

from __future__ import annotations

import ast
import lzma
import os
import re
import struct
import tarfile
import zlib
from dataclasses import dataclass, field

from torchreview.artifacts import sniff as fmt
from torchreview.artifacts import zipreader
from torchreview.artifacts.base import (
    Budget,
    BudgetExceeded,
    LimitExceeded,
    ScanProblem,
    Span,
    SpanFile,
    SpanReader,
)
from torchreview.artifacts.inflate import inflate
from torchreview.artifacts.opcodes import StreamResult, analyse_stream
from torchreview.artifacts.values import GlobalVal
from torchreview.artifacts.policy import CONTEXT_NUMPY, CONTEXT_TORCH, CONTEXT_TORCHSCRIPT, judge
from torchreview.findings import Severity

# Content with these suffixes is expected to be a pickle/checkpoint: when it
# is not readable that is reported.  Other files are reported only when their
# content is recognised.
STRICT_SUFFIXES = frozenset(
    ".pt .pth .ckpt .pkl .pickle .joblib .npy .npz .mar .nemo".split()
)
# Members never worth sniffing inside archives (media, text, configs).
INERT_SUFFIXES = frozenset(
    """.jpg .jpeg .png .gif .bmp .tif .tiff .webp .wav .mp3 .flac .ogg .mp4 .avi .txt
    .json .yaml .yml .xml .csv .tsv .md .rst .html .css .js .py .cfg .ini .toml .proto
    .onnx .safetensors .model .vocab .spm""".split()
)
LEGACY_PICKLES = ("magic number", "protocol version", "system info", "data", "storage keys")
LEGACY_TAR_MEMBERS = frozenset({"storages", "tensors", "pickle"})
_STORAGE_SIZES = {
    "Double": 8, "Float": 4, "Half": 2, "Long": 8, "Int": 4, "Short": 2, "Char": 1, "Byte": 1,
    "Bool": 1, "BFloat16": 2, "ComplexDouble": 16, "ComplexFloat": 8, "QUInt8": 1, "QInt8": 1,
    "QInt32": 4, "QUInt4x2": 1, "QUInt2x4": 1,
}  # fmt: skip


@dataclass
class ScanState:
    budget: Budget = field(default_factory=Budget)
    streams: list[StreamResult] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    recognised: bool = False  # some artifact format was found at the top
    # members cut at the size limit: what goes wrong after the cut in them is the scanner's
    # own limit, not damage in the file
    capped: list[str] = field(default_factory=list)

    def problem(self, location: str, message: str) -> None:
        self.problems.append((location, message))


def join(location: str, part: str) -> str:
    return part if not location else f"{location}!{part}"


def suffix_of(name: str) -> str:
    return os.path.splitext(name.rsplit("/", 1)[-1])[1].lower()


def _has_critical(result: StreamResult) -> bool:
    if any(e.severity is Severity.CRITICAL for e in result.events):
        return True
    if any(_has_critical(inner) for inner in result.nested):
        return True
    return any(
        judge(r, result.context).severity is Severity.CRITICAL for r in result.refs.values()
    )


def scan_span(span: Span, location: str, suffix: str, depth: int, state: ScanState,
              strict: bool) -> None:
    """Scan one blob of bytes; problems are recorded, never raised."""
    if state.budget.exhausted:
        return
    try:
        _dispatch(span, location, suffix, depth, state, strict)
    except BudgetExceeded as exc:
        state.problem(location, f"scan limit reached, the rest of the file was not scanned: {exc}")
    except LimitExceeded as exc:
        state.problem(location, f"scan limit reached: {exc}")
    except ScanProblem as exc:
        state.problem(location, str(exc))


def _dispatch(span: Span, location: str, suffix: str, depth: int, state: ScanState,
              strict: bool) -> None:
    if depth > state.budget.limits.max_depth:
        raise LimitExceeded(f"containers nested more than {state.budget.limits.max_depth} deep")
    kind = fmt.sniff(span.head(fmt.HEAD_SIZE))
    if depth == 0 and kind not in (fmt.MAYBE_PICKLE, fmt.UNKNOWN, fmt.EMPTY, fmt.APPLE_DOUBLE):
        state.recognised = True
    if kind == fmt.ZIP:
        scan_zip(span, location, depth, state)
    elif kind == fmt.LEGACY_TORCH:
        scan_pickles(span, location, state, CONTEXT_TORCH, names=LEGACY_PICKLES)
    elif kind == fmt.PICKLE:
        scan_pickles(span, location, state, CONTEXT_TORCH)
    elif kind == fmt.NPY:
        scan_npy(span, location, state)
    elif kind == fmt.TAR:
        scan_tar(span, location, depth, state)
    elif kind in fmt.COMPRESSED:
        scan_compressed(span, kind, location, suffix, depth, state, strict)
    elif kind == fmt.MAYBE_PICKLE:
        scan_weak_pickle(span, location, state, strict)
    elif kind == fmt.EMPTY:
        if strict:
            raise ScanProblem("empty, not a checkpoint or pickle")
    elif kind == fmt.APPLE_DOUBLE:
        return  # macOS metadata beside a copied file (`._weights.npy`): nothing a load would read
    elif strict:
        raise ScanProblem("not a recognised checkpoint or pickle format")


def scan_pickles(span: Span, location: str, state: ScanState, context: str,
                 names: tuple[str, ...] = ()) -> None:
    """Consecutive pickles: all of a legacy torch file, or a raw pickle and any that follow."""
    reader = SpanReader(span, state.budget.limits)
    found: list[StreamResult] = []
    while True:
        index = len(found)
        label = f"pickle #{index + 1}" + (f" ({names[index]})" if names else "")
        result = analyse_stream(reader, join(location, label), state.budget, context)
        found.append(result)
        if not result.complete or state.budget.exhausted:
            break
        if names and len(found) == len(names):
            break
        if not names and not fmt.is_pickle_header(span.read(reader.tell(), 3)):
            break  # trailing bytes that are not another pickle: never unpickled
    if names and len(found) < len(names) and found[-1].complete:
        state.problem(location, f"legacy torch file ends after {len(found)} of 5 pickles")
    if len(found) == 1 and not names:
        found[0].location = location
    state.streams.extend(found)


def scan_weak_pickle(span: Span, location: str, state: ScanState, strict: bool) -> None:
    """Content that merely starts with an opcode byte: a pickle only if it parses."""
    result = analyse_stream(SpanReader(span, state.budget.limits), location, state.budget)
    if not result.complete and not strict and fmt.stack_breaks(span.head(fmt.HEAD_SIZE)):
        return  # text whose bytes read as opcodes that underflow the stack: no pickle
    if result.complete or strict or _has_critical(result):
        state.recognised = state.recognised or location == ""
        state.streams.append(result)


# -- NumPy ---------------------------------------------------------------------
def _dtype_has_object(descr) -> bool:
    if isinstance(descr, str):
        return "O" in descr.lstrip("<>|=")
    if isinstance(descr, (list, tuple)):
        return any(_dtype_has_object(part) for part in descr)
    return False


_PY2_LONG = re.compile(r"\b(\d+)[lL]\b")


def scan_npy(span: Span, location: str, state: ScanState) -> None:
    head = span.read(0, 12)
    if len(head) < 10:
        raise ScanProblem("truncated NumPy header")
    major = head[6]
    if major == 1:
        size, start = struct.unpack_from("<H", head, 8)[0], 10
    elif major in (2, 3) and len(head) == 12:
        size, start = struct.unpack_from("<I", head, 8)[0], 12
    else:
        raise ScanProblem(f"unsupported NumPy format version {major}")
    if size > 1024 * 1024 or start + size > len(span):
        raise ScanProblem("NumPy header is truncated or too large")
    text = span.read(start, size).decode("utf-8" if major == 3 else "latin-1", "replace")
    # Python 2's long integers in the shape (`'shape': (480L, 480L)`): numpy reads them (with a
    # warning), so the header is well formed (the HKO-7 masks of a nowcasting repository)
    text = _PY2_LONG.sub(r"\1", text)
    try:
        header = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ScanProblem("malformed NumPy header") from None
    if not isinstance(header, dict) or "descr" not in header:
        raise ScanProblem("malformed NumPy header (no 'descr')")
    if not _dtype_has_object(header["descr"]):
        return  # plain numbers: numpy.load never unpickles them
    body = span.window(start + size, len(span))
    reader = SpanReader(body, state.budget.limits)
    state.streams.append(
        analyse_stream(reader, join(location, "object array pickle"), state.budget, CONTEXT_NUMPY)
    )


# -- zip -------------------------------------------------------------------------
def _torch_prefixes(names: list[str]) -> list[str]:
    return [n[: -len("data.pkl")] for n in names if n == "data.pkl" or n.endswith("/data.pkl")]


def scan_zip(span: Span, location: str, depth: int, state: ScanState) -> None:
    limits = state.budget.limits
    try:
        members = zipreader.read_central_directory(span, limits.max_members)
    except LimitExceeded:
        raise
    except ScanProblem as exc:
        members = zipreader.scan_local_headers(span, limits.max_members)
        state.problem(
            location, f"{exc}; searched {len(members)} member(s) found by their local headers"
        )
    prefixes = _torch_prefixes([m.name for m in members])
    # a TorchScript archive (`torch.jit.save`) keeps its compiled code beside its pickles
    scripted = [p for p in prefixes if any(m.name.startswith(p + "code/") for m in members)]
    numpy_zip = bool(members) and all(m.name.endswith(".npy") for m in members)
    for member in members:
        if state.budget.exhausted:
            return
        name = member.name
        if name.endswith("/") or any(name.startswith(p + "data/") for p in prefixes):
            continue  # directories and tensor storage blobs: raw bytes, never unpickled
        mloc = join(location, name)
        before = len(state.streams)
        try:
            _scan_zip_member(span, member, mloc, depth, state, numpy_zip)
        except BudgetExceeded:
            raise
        except LimitExceeded as exc:
            state.problem(mloc, f"scan limit reached: {exc}")
        except ScanProblem as exc:
            state.problem(mloc, str(exc))
        if any(name.startswith(p) for p in scripted):
            for result in state.streams[before:]:  # read by torch.jit.load's own unpickler
                result.context = CONTEXT_TORCHSCRIPT


def _scan_zip_member(span: Span, member, mloc: str, depth: int, state: ScanState,
                     numpy_zip: bool) -> None:
    suffix = suffix_of(member.name)
    budget = state.budget
    def report(message: str) -> None:
        state.capped.append(mloc)
        state.problem(mloc, message)

    if member.name.startswith("__MACOSX/"):
        return  # the resource forks macOS's archiver adds (`__MACOSX/._x.npy`): metadata, never loaded

    if suffix in (".pkl", ".pickle"):
        content = zipreader.open_member(span, member, budget, report=report)
        scan_span(content, mloc, suffix, depth + 1, state, strict=True)
        return
    if suffix in INERT_SUFFIXES:
        return
    head = zipreader.open_member(span, member, budget, head_only=fmt.HEAD_SIZE).head(fmt.HEAD_SIZE)
    kind = fmt.sniff(head)
    strong = kind not in (fmt.MAYBE_PICKLE, fmt.UNKNOWN, fmt.EMPTY)
    if strong or suffix in STRICT_SUFFIXES or numpy_zip:
        content = zipreader.open_member(span, member, budget, report=report)
        if _header_only_pickle(kind, suffix) and not numpy_zip:
            scan_weak_pickle(content, mloc, state, strict=False)
            return
        scan_span(content, mloc, suffix, depth + 1, state, strict=suffix in STRICT_SUFFIXES)


def _header_only_pickle(kind: str, suffix: str) -> bool:
    """An archive member taken for a pickle by its first bytes alone (``PROTO n`` and an
    opcode byte), whose name says no pickle or checkpoint (``sweep.src``, a G.711 test
    signal in a zip of codec sources: three bytes of binary data read as a pickle's start
    about once in 60,000 members). It counts as a pickle only if it parses to its
    ``STOP``, or if the part that parses already calls something dangerous."""
    return kind == fmt.PICKLE and suffix not in STRICT_SUFFIXES and suffix not in _PICKLE_LIKE_SUFFIXES


# names under which pickles are commonly stored besides the strict ones (and none at all)
_PICKLE_LIKE_SUFFIXES = frozenset(("", ".bin", ".data", ".dat", ".p", ".pk", ".pck", ".pcl", ".sav", ".th", ".tar"))


# -- tar -------------------------------------------------------------------------
def _tar_members(span: Span, max_members: int) -> list[tarfile.TarInfo]:
    try:
        with tarfile.open(fileobj=SpanFile(span), mode="r:") as tar:
            members = []
            while True:
                info = tar.next()
                if info is None:
                    break
                members.append(info)
                if len(members) > max_members:
                    raise LimitExceeded(f"tar has more than {max_members} members")
            return members
    except LimitExceeded:
        raise
    except Exception as exc:  # tarfile raises many types on hostile headers
        raise ScanProblem(f"unreadable tar archive ({type(exc).__name__}: {exc})") from None


def scan_tar(span: Span, location: str, depth: int, state: ScanState) -> None:
    members = [m for m in _tar_members(span, state.budget.limits.max_members) if m.isfile()]
    by_name = {m.name: m for m in members}
    if LEGACY_TAR_MEMBERS <= set(by_name):
        scan_legacy_tar(span, by_name, location, state)
        return
    for info in members:
        mloc = join(location, info.name)
        if info.offset_data + info.size > len(span):
            state.problem(mloc, "tar member runs past the end of the file (truncated)")
            continue
        suffix = suffix_of(info.name)
        if suffix in INERT_SUFFIXES:
            continue
        content = span.window(info.offset_data, info.size)
        kind = fmt.sniff(content.head(fmt.HEAD_SIZE))
        strong = kind not in (fmt.MAYBE_PICKLE, fmt.UNKNOWN, fmt.EMPTY)
        if _header_only_pickle(kind, suffix):
            scan_weak_pickle(content, mloc, state, strict=False)
        elif strong or suffix in STRICT_SUFFIXES:
            scan_span(content, mloc, suffix, depth + 1, state, strict=suffix in STRICT_SUFFIXES)


def scan_legacy_tar(span: Span, by_name: dict, location: str, state: ScanState) -> None:
    """torch < 0.1.10 checkpoints: pickles interleaved with raw tensor data."""
    for name in ("sys_info", "pickle", "storages", "tensors"):
        info = by_name.get(name)
        if info is None:
            continue
        mloc = join(location, name)
        member = span.window(info.offset_data, info.size)
        try:
            if name in ("sys_info", "pickle"):
                scan_span(member, mloc, "", 1, state, strict=True)
            else:
                _scan_legacy_records(member, mloc, name, state)
        except ScanProblem as exc:
            state.problem(mloc, str(exc))


def _read_pickle(reader: SpanReader, location: str, state: ScanState) -> StreamResult:
    result = analyse_stream(reader, location, state.budget)
    state.streams.append(result)
    if not result.complete:
        raise ScanProblem("stopped at an unreadable record pickle")
    return result


def _scan_legacy_records(member: Span, mloc: str, name: str, state: ScanState) -> None:
    reader = SpanReader(member, state.budget.limits)
    count = _read_pickle(reader, f"{mloc} (count)", state).result
    if not isinstance(count, int) or not 0 <= count <= state.budget.limits.max_streams:
        raise ScanProblem(f"bad record count {count!r}")
    for i in range(count):
        args = _read_pickle(reader, f"{mloc} (record {i + 1})", state).result
        if name == "storages":
            stype = args[2] if isinstance(args, tuple) and len(args) == 3 else None
            base = stype.name.replace("Storage", "") if isinstance(stype, GlobalVal) else ""
            if base not in _STORAGE_SIZES:
                raise ScanProblem("unknown storage type; the rest was not verified")
            numel = struct.unpack("<q", member.read(reader.pos, 8).ljust(8, b"\0"))[0]
            reader.pos += 8 + max(0, numel) * _STORAGE_SIZES[base]
        else:
            ndim = struct.unpack("<i", member.read(reader.pos, 4).ljust(4, b"\0"))[0]
            if not 0 <= ndim <= 64:
                raise ScanProblem(f"bad tensor rank {ndim}")
            reader.pos += 8 + 16 * ndim + 8
        if reader.pos > len(member):
            raise ScanProblem("record data runs past the end of the member (truncated)")
    if name == "storages":
        _read_pickle(reader, f"{mloc} (storage views)", state)


# -- compressed streams ------------------------------------------------------------
def scan_compressed(span: Span, kind: str, location: str, suffix: str, depth: int,
                    state: ScanState, strict: bool) -> None:
    """Inflate (memory bounded, see ``inflate``) and scan what comes out, even if cut."""
    cap = state.budget.limits.max_member_bytes
    try:
        out = inflate(fmt.decompressor(kind), span, 0, len(span), cap, state.budget)
    except (zlib.error, OSError, EOFError, ValueError, lzma.LZMAError) as exc:
        if strict:
            raise ScanProblem(f"corrupted {kind} data ({exc})") from None
        return
    inner = join(location, f"({kind})")
    if out.truncated:
        state.problem(inner, f"{kind} stream inflates past {cap // (1024 * 1024)} MiB "
                             "(decompression bomb?); only that much was scanned")
    scan_span(out.span, inner, suffix, depth + 1, state, strict)
