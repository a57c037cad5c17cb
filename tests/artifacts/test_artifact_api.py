"""Public API, rule metadata and the allow-list data."""

from __future__ import annotations

import json
from importlib import resources

import pytest

import artifact_craft as craft
from torchreview.artifacts import ARTIFACT_SUFFIXES, looks_like_artifact, scan_file, scan_files
from torchreview.artifacts.policy import CONTEXT_NUMPY, classify, load_policy
from torchreview.catalog import DOC_HEADINGS
from torchreview.findings import Severity
from torchreview.report import Report
from torchreview.rules.security.tr108_unsafe_pickle_artifact import UnsafePickleArtifact


def test_suffixes_are_lower_case_and_dotted():
    assert all(s.startswith(".") and s == s.lower() for s in ARTIFACT_SUFFIXES)
    for suffix in (".pt", ".pth", ".ckpt", ".bin", ".pkl", ".pickle", ".joblib", ".npy",
                   ".npz", ".mar", ".nemo"):
        assert suffix in ARTIFACT_SUFFIXES


def test_looks_like_artifact(tmp_path):
    cases = {
        "model.PT": b"anything",
        "weights.dat": craft.torch_like_zip(craft.benign_dict_pickle()),
        "blob": craft.os_system_reduce(),
        "p0": craft.glob("os", "system") + craft.MARK + craft.text0("x") + craft.TUPLE
        + craft.REDUCE + craft.STOP,  # protocol 0: starts with "cos\nsystem\n"
        "arr.data": craft.npy_object(b""),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        assert looks_like_artifact(str(tmp_path / name)), name
    for name, data in {"train.py": b"import torch\n", "notes.txt": b"hello", "x.json": b"{}"}.items():
        (tmp_path / name).write_bytes(data)
        assert not looks_like_artifact(str(tmp_path / name)), name
    assert not looks_like_artifact(str(tmp_path / "missing.bin.gone"))


def test_scan_file_display_path(tmp_path):
    path = tmp_path / "x.pkl"
    path.write_bytes(craft.os_system_reduce())
    findings, errors = scan_file(str(path), "models/x.pkl")
    assert errors == [] and findings[0].path == "models/x.pkl"
    findings, _ = scan_file(str(path))
    assert findings[0].path == str(path)


def test_scan_files_report(tmp_path):
    good = tmp_path / "good.pkl"
    good.write_bytes(craft.benign_dict_pickle())
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(craft.os_system_reduce())
    broken = tmp_path / "broken.pt"
    broken.write_bytes(craft.benign_dict_pickle()[:-3])
    readme = tmp_path / "README.md"
    readme.write_bytes(b"# hello\n")
    report = scan_files([str(good), str(evil), str(broken), str(readme)])
    assert isinstance(report, Report)
    assert report.files == 4
    assert {e.path for e in report.errors} == {str(broken), str(readme)}
    assert any("nothing was scanned" in e.message for e in report.errors)
    severities = {(f.path, f.severity) for f in report.findings}
    assert (str(evil), Severity.CRITICAL) in severities
    assert (str(broken), Severity.MEDIUM) in severities
    assert report.findings == sorted(report.findings, key=lambda f: f.sort_key())
    assert report.seconds >= 0


def test_rule_metadata():
    rule = UnsafePickleArtifact
    assert (rule.code, rule.name, rule.severity) == ("TR108", "unsafe-pickle-artifact",
                                                     Severity.CRITICAL)
    assert rule.scope == ("artifact",) and rule.needs_torch is False
    assert rule.summary and "\n" not in rule.summary
    docs = rule.docs()
    for heading in DOC_HEADINGS:
        assert docs.get(heading), heading
    assert "```python" in docs["Example"] and "torch.save(model," in docs["Example"]
    assert "weights_only=True" in docs["Use instead"]
    assert "state_dict()" in docs["Use instead"]


def test_allowlist_data_file_shape():
    raw = json.loads(
        resources.files("torchreview.data").joinpath("pickle_allowlist.json").read_text()
    )
    assert raw["torch_version"]
    assert "collections.OrderedDict" in raw["allow"]["torch"]
    assert "torch._utils._rebuild_tensor_v2" in raw["allow"]["torch"]
    assert not set(raw["allow"]["torch"]) & set(raw["deny"]["globals"])
    assert load_policy().torch_version == raw["torch_version"]
    for name in raw["allow"]["torch"]:
        module, _, attr = name.rpartition(".")
        assert classify(module, attr).severity is None, name


def test_allowlist_mirrors_installed_torch():
    torch = pytest.importorskip("torch")
    from torch._weights_only_unpickler import _get_allowed_globals

    policy = load_policy()
    if torch.__version__.split("+")[0] != policy.torch_version:
        pytest.skip(f"allow-list mirrors torch {policy.torch_version}")
    assert policy.allow["torch"] == frozenset(_get_allowed_globals())


@pytest.mark.parametrize(
    "module,name,severity",
    [
        ("collections", "OrderedDict", None),
        ("__builtin__", "set", None),  # Python 2 name, normalised like pickle does
        ("copy_reg", "_reconstructor", Severity.MEDIUM),
        ("numpy.core.multiarray", "scalar", Severity.MEDIUM),
        ("builtins", "frozenset", Severity.MEDIUM),  # torch 2.13 does not allow it
        ("osgeo", "gdal", Severity.MEDIUM),  # a prefix of "os" is not "os"
        ("os", "system", Severity.CRITICAL),
        ("torch.hub", "load", Severity.CRITICAL),
    ],
)
def test_classify(module, name, severity):
    assert classify(module, name).severity is severity


def test_numpy_context_allows_array_rebuilding():
    assert classify("numpy.core.multiarray", "_reconstruct", CONTEXT_NUMPY).severity is None
    assert classify("numpy", "load", CONTEXT_NUMPY).severity is Severity.CRITICAL
