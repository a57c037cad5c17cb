"""``check`` finds the same artifacts as ``scan``: compressed and nested pickles by content.

Payload bytes are built opcode by opcode (``artifact_craft``) and never loaded.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import zlib

import pytest

import artifact_craft as craft
from torchreview.artifacts import looks_like_artifact
from torchreview.cli import main

COMPRESSORS = {
    "gz": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
}


def _check(capsys, *paths) -> dict:
    main(["check", *paths, "--format", "json", "--no-cache", "--select", "TR108"])
    return json.loads(capsys.readouterr().out)


def _scan(capsys, *paths) -> dict:
    main(["scan", *paths, "--format", "json"])
    return json.loads(capsys.readouterr().out)


def _critical_paths(report: dict) -> list[str]:
    # files that run the same code-executing global are one alert, the others its related locations
    return sorted(p for f in report["findings"] if f["severity"] == "critical"
                  for p in (f["path"], *(r["path"] for r in f.get("related", ()))))


@pytest.mark.parametrize("ext", sorted(COMPRESSORS))
def test_compressed_pickle_is_critical_in_check_and_scan(ext, tmp_path, monkeypatch, capsys):
    name = f"model.pkl.{ext}"
    (tmp_path / name).write_bytes(COMPRESSORS[ext](craft.os_system_reduce()))
    monkeypatch.chdir(tmp_path)
    scanned = _scan(capsys, name)
    checked_tree = _check(capsys, ".")
    checked_file = _check(capsys, name)
    assert _critical_paths(scanned) == [name]
    assert _critical_paths(checked_tree) == [name]
    assert _critical_paths(checked_file) == [name]
    message = [f["message"] for f in checked_tree["findings"]][0]
    assert "os.system" in message


@pytest.mark.parametrize("ext", sorted(COMPRESSORS))
def test_compressed_pickle_found_by_content_whatever_its_name(ext, tmp_path, monkeypatch, capsys):
    (tmp_path / "blob.dat").write_bytes(COMPRESSORS[ext](craft.os_system_reduce()))
    protocol0 = craft.glob("os", "system") + craft.MARK + craft.text0("id") + craft.TUPLE
    (tmp_path / "zlib.raw").write_bytes(zlib.compress(protocol0 + craft.REDUCE + craft.STOP))
    monkeypatch.chdir(tmp_path)
    assert _critical_paths(_check(capsys, ".")) == ["blob.dat", "zlib.raw"]


def test_doubly_compressed_and_tar_gz_pickles(tmp_path, monkeypatch, capsys):
    (tmp_path / "twice.gz").write_bytes(gzip.compress(bz2.compress(craft.os_system_reduce())))
    tar = craft.tar_bytes({"ckpt/hooks.pkl": craft.os_system_reduce()})
    (tmp_path / "bundle.tgz").write_bytes(gzip.compress(tar))
    monkeypatch.chdir(tmp_path)
    assert _critical_paths(_check(capsys, ".")) == ["bundle.tgz", "twice.gz"]
    assert _critical_paths(_scan(capsys, "bundle.tgz", "twice.gz")) == ["bundle.tgz", "twice.gz"]


def test_compressed_data_that_is_not_a_pickle_is_not_an_artifact(tmp_path):
    text = tmp_path / "notes.txt.gz"
    text.write_bytes(gzip.compress(b"just some text\n" * 100))
    csv = tmp_path / "table.csv.xz"
    csv.write_bytes(lzma.compress(b"a,b\n1,2\n"))
    fake = tmp_path / "fake.gz"
    fake.write_bytes(b"\x1f\x8b" + b"not gzip at all")
    for path in (text, csv, fake):
        assert not looks_like_artifact(str(path)), path.name


@pytest.mark.parametrize("name", ["m.pkl.gz", "m.pt.bz2", "m.joblib.xz", "m.npy.gz"])
def test_compressed_artifact_suffixes(name, tmp_path):
    path = tmp_path / name
    path.write_bytes(b"\x00" * 4)  # content unreadable: the name alone marks it
    assert looks_like_artifact(str(path))
