"""Random mutations of valid artifacts: every result is a verdict or an error entry.

Bounded to a few seconds with a fixed seed, so a failure is reproducible.
"""

from __future__ import annotations

import random
import time
import zipfile

import artifact_craft as craft
from torchreview.findings import Finding, ReviewError

TIME_BUDGET = 4.0
SEED = 20240613


def _seeds() -> list[tuple[str, bytes]]:
    seeds = [
        ("raw2.pkl", craft.benign_dict_pickle(2)),
        ("raw4.pkl", craft.benign_dict_pickle(4)),
        ("raw0.pkl", craft.benign_dict_pickle(0)),
        ("evil.pkl", craft.exec_stack_global_memo()),
        ("zip.pt", craft.torch_like_zip(craft.benign_dict_pickle())),
        ("zipd.pt", craft.torch_like_zip(craft.custom_class_pickle(),
                                         compression=zipfile.ZIP_DEFLATED)),
        ("legacy.pt", craft.legacy_torch_file()),
        ("obj.npy", craft.npy_object(craft.benign_dict_pickle())),
        ("old.tar", craft.legacy_tar(craft.benign_dict_pickle())),
        ("nested.mar", craft.zip_bytes({"m.pt": craft.torch_like_zip(craft.os_system_reduce())})),
        ("model.joblib", craft.joblib_like(b"\x01" * 24)),
        ("objects.joblib", craft.joblib_like(craft.benign_dict_pickle(), dtype="O8", shape=1)),
    ]
    try:
        import io

        import torch

        buf = io.BytesIO()
        torch.save({"w": torch.randn(4, 4), "b": torch.zeros(4, dtype=torch.int64)}, buf)
        seeds.append(("torch.pt", buf.getvalue()))
    except ImportError:
        pass
    return seeds


def _mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if not out:
            break
        if choice < 0.45:  # flip bytes
            for _ in range(rng.randint(1, 8)):
                out[rng.randrange(len(out))] = rng.randrange(256)
        elif choice < 0.65:  # truncate
            del out[rng.randrange(len(out)) :]
        elif choice < 0.8:  # insert random bytes
            at = rng.randrange(len(out) + 1)
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif choice < 0.9:  # duplicate a slice
            a = rng.randrange(len(out))
            b = min(len(out), a + rng.randint(1, 64))
            out[a:a] = out[a:b]
        else:  # write a big little-endian number (sizes, offsets, memo indices)
            at = rng.randrange(len(out))
            out[at : at + 4] = rng.choice([b"\xff\xff\xff\xff", b"\xff\xff\xff\x7f", b"\0\0\0\x80"])
    return bytes(out)


def test_mutated_artifacts_never_crash(tmp_path, monkeypatch):
    rng = random.Random(SEED)
    seeds = _seeds()
    deadline = time.monotonic() + TIME_BUDGET
    runs = 0
    while time.monotonic() < deadline:
        name, data = rng.choice(seeds)
        path = tmp_path / f"{runs % 50}_{name}"
        path.write_bytes(_mutate(rng, data))
        findings, errors = craft.scan(path, None, monkeypatch)
        assert isinstance(findings, list) and isinstance(errors, list)
        assert all(isinstance(f, Finding) and f.code == "TR108" for f in findings)
        assert all(isinstance(e, ReviewError) and e.message for e in errors)
        assert not any("internal error" in e.message for e in errors), [e.message for e in errors]
        if errors and findings == []:  # only an empty file has nothing to verify
            assert [e.message for e in errors] == ["empty file: not a checkpoint or pickle"]
        if errors and path.stat().st_size:  # an unreadable part never passes silently
            assert findings, f"{name}: errors without a finding: {[e.message for e in errors]}"
        runs += 1
    assert runs > 50, runs
