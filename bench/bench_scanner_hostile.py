"""Time and peak memory of the TR108 scanner on hostile artifacts (issue 12, point 5).

    python bench/bench_scanner_hostile.py [--quick] [--only TEXT]

Cases (built here, opcode by opcode or with the standard compressors; nothing
is ever unpickled):

* padding: 10 MB of stack-neutral filler of several shapes (one unit
  repeated, a sequence of units repeated, units in random order, filler
  broken by a push every few hundred bytes), then an ``os.system`` call: the
  payload must be found (critical), not "could not be verified";
* flood: 10 MB of real work (ints appended to a list one by one), then the
  payload: no bulk skip applies, this is the plain opcode walk;
* bombs: a 1 MB deflate zip member and gzip/bz2/xz streams that inflate far
  past the 256 MiB member cap, with the payload at the start;
* large: a 200 MB gzip-compressed pickle whose payload sits at the end (the
  output is spilled to a temporary file, not held in memory).

Each case runs in a fresh process twice: once for the wall time and the
peak RSS (``resource.getrusage``, including the interpreter, ~40 MB), once
under ``tracemalloc`` for the peak of Python allocations (the heap the
scanner holds).  The base line is a process that only imports the scanner.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "artifacts"))

MB = 1024 * 1024


def _payload() -> bytes:
    import artifact_craft as craft

    return craft.os_system_reduce()


def padding(unit: bytes, size: int = 10 * MB) -> bytes:
    return b"\x80\x02" + unit * (size // len(unit)) + _payload()[2:]


def random_padding(size: int = 10 * MB) -> bytes:
    """Stack-neutral units in random order: no period to find, the regular expression works."""
    import random

    rng = random.Random(12)
    units = [b"N0", b")0", b"]0", b"(1", b"(0", b"K\x050", b"\x88\x89\x860", b"I7\n0",
             b"\x8c\x03pad0", b"(N)1", b"\x95" + bytes(8)]
    parts, total = [], 0
    while total < size:
        unit = rng.choice(units)
        parts.append(unit)
        total += len(unit)
    return b"\x80\x02" + b"".join(parts) + _payload()[2:]


def flood(size: int = 10 * MB) -> bytes:
    return b"\x80\x02]" + b"K\x01a" * (size // 3) + b"0" + _payload()[2:]


def _compress_zeros(compressor, total: int, head: bytes) -> bytes:
    out = [compressor.compress(head)]
    zeros = bytes(MB)
    for _ in range(total // MB):
        out.append(compressor.compress(zeros))
    out.append(compressor.flush())
    return b"".join(out)


def bomb(kind: str, total: int) -> bytes:
    head = _payload() + b"\x00"  # the payload first: found although the rest is cut
    if kind == "gzip":
        return _compress_zeros(zlib.compressobj(9, zlib.DEFLATED, 31), total, head)
    if kind == "bz2":
        return _compress_zeros(bz2.BZ2Compressor(9), total, head)
    return _compress_zeros(lzma.LZMACompressor(preset=1), total, head)


def zip_bomb(total: int) -> bytes:
    """A torch-style zip whose deflated data.pkl (payload first) inflates to ``total``."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("archive/data.pkl", "w", force_zip64=True) as member:
            member.write(_payload() + b"\x00")
            zeros = bytes(MB)
            for _ in range(total // MB):
                member.write(zeros)
    return buf.getvalue()


def large_gzip(size: int) -> bytes:
    body = b"\x80\x02]" + b"K\x01a" * 16 + b"0"
    filler = b"C\xff" + b"\x00" * 255 + b"0"  # short bytes pushed and popped
    comp = zlib.compressobj(6, zlib.DEFLATED, 31)
    parts = [comp.compress(body)]
    block = filler * (MB // len(filler))
    for _ in range(size // len(block)):
        parts.append(comp.compress(block))
    parts.append(comp.compress(_payload()[2:]))
    parts.append(comp.flush())
    return b"".join(parts)


def cases(quick: bool) -> dict[str, tuple[str, callable]]:
    big = 64 * MB if quick else 200 * MB  # under the 256 MiB member cap: all of it is scanned
    return {
        "padding NONE POP (10 MB)": ("pad1.pkl", lambda: padding(b"N0")),
        "padding MARK POP_MARK (10 MB)": ("pad2.pkl", lambda: padding(b"(1")),
        "padding short strings (10 MB)": ("pad3.pkl", lambda: padding(b"\x8c\x03pad0")),
        "padding mixed units (10 MB)": ("pad4.pkl", lambda: padding(b"N0(1\x88\x89\x860I7\n0")),
        "padding, random order (10 MB)": ("pad5.pkl", random_padding),
        "padding broken by a push every 322 B (10 MB)": (
            "pad6.pkl", lambda: padding(b"N0)0]0(1" * 40 + b"K\x05")),
        "flood APPEND, no skip (10 MB)": ("flood.pkl", flood),
        "deflate zip bomb (1 MB -> 1 GiB)": ("bomb.pt", lambda: zip_bomb(1024 * MB)),
        "gzip bomb (-> 1 GiB)": ("bomb.pkl.gz", lambda: bomb("gzip", 1024 * MB)),
        "bz2 bomb (-> 1 GiB)": ("bomb.pkl.bz2", lambda: bomb("bz2", 1024 * MB)),
        "xz bomb (-> 1 GiB)": ("bomb.pkl.xz", lambda: bomb("xz", 1024 * MB)),
        f"gzip pickle, payload at the end ({big // MB} MB)": ("large.pkl.gz",
                                                               lambda: large_gzip(big)),
    }


def child(path: str, traced: bool) -> None:
    import resource

    from torchreview.artifacts import scan_file

    if path == "-":  # base line: imports only
        findings, errors, seconds = [], [], 0.0
    else:
        if traced:
            import tracemalloc

            tracemalloc.start()
        started = time.perf_counter()
        findings, errors = scan_file(path)
        seconds = time.perf_counter() - started
    peak_heap = None
    if traced and path != "-":
        import tracemalloc

        peak_heap = tracemalloc.get_traced_memory()[1]
    print(json.dumps({
        "seconds": seconds,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "heap_mb": None if peak_heap is None else peak_heap / MB,
        "severity": sorted({f.severity.name.lower() for f in findings}),
        "payload_found": any("os.system" in f.message for f in findings),
        "errors": [e.message[:90] for e in errors[:2]],
    }))


def _run(path: str, traced: bool) -> dict:
    args = [sys.executable, __file__, "--child", path] + (["--traced"] if traced else [])
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    if "--child" in sys.argv:
        child(sys.argv[sys.argv.index("--child") + 1], "--traced" in sys.argv)
        return
    quick = "--quick" in sys.argv
    if "--build" in sys.argv:  # in its own process: building must not raise our peak RSS
        label, path = sys.argv[sys.argv.index("--build") + 1 :][:2]
        with open(path, "wb") as handle:
            handle.write(cases(quick)[label][1]())
        return
    base = _run("-", False)
    print(f"base line (interpreter + scanner imported): peak RSS {base['rss_mb']:.0f} MB\n")
    print(f"{'case':46} {'input':>9} {'time':>7} {'peak RSS':>9} {'peak heap':>10}  result")
    with tempfile.TemporaryDirectory() as tmp:
        only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
        for label, (name, _build) in cases(quick).items():
            if only not in label:
                continue
            path = os.path.join(tmp, name)
            # ru_maxrss survives fork and exec: the parent must stay small, so
            # every input is built by a process of its own.
            subprocess.run([sys.executable, __file__, "--build", label, path]
                           + (["--quick"] if quick else []), check=True)
            size = os.path.getsize(path)
            timed = _run(path, False)
            traced = _run(path, True)
            result = ",".join(timed["severity"]) or "none"
            result += "; payload found" if timed["payload_found"] else "; payload NOT found"
            if timed["errors"]:
                result += f"; {timed['errors'][0]}"
            print(f"{label:46} {size / MB:7.2f}MB {timed['seconds']:6.2f}s "
                  f"{timed['rss_mb']:7.0f}MB {traced['heap_mb']:8.1f}MB  {result}")
            os.remove(path)


if __name__ == "__main__":
    main()
