"""Every malicious artifact of the issue's corpus is found, critical, with the right details."""

from __future__ import annotations

import zipfile

import pytest

import artifact_craft as craft
from torchreview.findings import Severity


def _critical(findings):
    return [f for f in findings if f.severity is Severity.CRITICAL]


def _assert_finding_shape(finding, shown):
    assert finding.code == "TR108"
    assert finding.name == "unsafe-pickle-artifact"
    assert finding.path == shown
    assert (finding.line, finding.column) == (1, 1)
    assert finding.detection == "static"
    assert finding.scope == "artifact"
    assert finding.category == "security"


CASES = {
    # name: (file name, builder, text every critical message must contain)
    "os.system via REDUCE": ("model.pkl", craft.os_system_reduce, "os.system"),
    "builtins.exec via STACK_GLOBAL + memo": ("model.pkl", craft.exec_stack_global_memo,
                                              "builtins.exec"),
    "protocol-0 INST": ("model.pkl", craft.protocol0_inst, "os.system (INST"),
    "protocol-0 OBJ": ("model.pkl", craft.protocol0_obj, "subprocess.check_output"),
    "subprocess.Popen in the 2nd legacy pickle": (
        "legacy.pt",
        lambda: craft.legacy_torch_file(second=craft.call("subprocess", "Popen", "id")),
        "subprocess.Popen",
    ),
    "payload in a zip member not named data.pkl": (
        "model.pt",
        lambda: craft.torch_like_zip(
            craft.benign_dict_pickle(), extra={"archive/extra/hooks.pkl": craft.os_system_reduce()}
        ),
        "archive/extra/hooks.pkl",
    ),
    "payload in a zip member without a suffix": (
        "model.pt",
        lambda: craft.torch_like_zip(
            craft.benign_dict_pickle(), extra={"archive/constants": craft.os_system_reduce()}
        ),
        "archive/constants",
    ),
    "zip with a wrong CRC": (
        "model.pt",
        lambda: craft.corrupt_crc(craft.torch_like_zip(craft.os_system_reduce())),
        "archive/data.pkl",
    ),
    "deflated zip with a wrong CRC": (
        "model.pt",
        lambda: craft.corrupt_crc(
            craft.torch_like_zip(craft.os_system_reduce(), compression=zipfile.ZIP_DEFLATED)
        ),
        "os.system",
    ),
    "renamed extension (pickle as .txt)": ("notes.txt", craft.os_system_reduce, "os.system"),
    "renamed extension (torch zip as .dat)": (
        "weights.dat", lambda: craft.torch_like_zip(craft.os_system_reduce(), folder="x"),
        "x/data.pkl",
    ),
    "renamed protocol-0 pickle": ("readme.md", craft.protocol0_inst, "os.system"),
    "object .npy": ("array.npy", lambda: craft.npy_object(craft.os_system_reduce()), "os.system"),
    "object array inside .npz": (
        "arrays.npz",
        lambda: craft.zip_bytes({"a.npy": craft.npy_object(craft.importlib_import())},
                                zipfile.ZIP_DEFLATED),
        "importlib.import_module",
    ),
    "nested zip (.mar)": (
        "handler.mar",
        lambda: craft.zip_bytes({
            "MAR-INF/MANIFEST.json": b"{}",
            "weights/model.pt": craft.torch_like_zip(craft.os_system_reduce()),
        }, zipfile.ZIP_DEFLATED),
        "weights/model.pt!archive/data.pkl",
    ),
    "zip in tar (.nemo)": (
        "model.nemo",
        lambda: craft.tar_bytes({
            "model_config.yaml": b"a: 1\n",
            "model_weights.ckpt": craft.torch_like_zip(craft.torch_hub_load()),
        }),
        "model_weights.ckpt!archive/data.pkl",
    ),
    "torch.hub.load": ("hub.pt", craft.torch_hub_load, "torch.hub.load"),
    "importlib.import_module": ("imp.pkl", craft.importlib_import, "importlib.import_module"),
    "builtins.getattr chain": ("chain.pkl", craft.getattr_chain, "getattr"),
    "legacy tar checkpoint": ("old.tar", lambda: craft.legacy_tar(craft.os_system_reduce()),
                              "pickle"),
    "second pickle of a raw multi-pickle file": (
        "two.pkl", lambda: craft.benign_dict_pickle() + craft.os_system_reduce(), "pickle #2"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malicious_artifact_is_critical(case, tmp_path, monkeypatch):
    filename, build, expected = CASES[case]
    path = tmp_path / filename
    path.write_bytes(build())
    findings, _errors = craft.scan(path, f"repo/{filename}", monkeypatch)
    critical = _critical(findings)
    assert critical, f"{case}: not detected ({[f.message for f in findings]})"
    assert any(expected in f.message for f in critical), [f.message for f in critical]
    for finding in critical:
        _assert_finding_shape(finding, f"repo/{filename}")
        assert "byte" in finding.message


def test_message_names_member_offset_and_use(tmp_path, monkeypatch):
    path = tmp_path / "model.pt"
    path.write_bytes(craft.torch_like_zip(craft.os_system_reduce()))
    (finding,) = _critical(craft.scan(path, None, monkeypatch)[0])
    assert "member 'archive/data.pkl'" in finding.message
    assert "os.system (GLOBAL at byte 2" in finding.message
    assert "called by REDUCE" in finding.message
    assert finding.path == str(path)


def test_getattr_chain_shows_the_resolved_call(tmp_path, monkeypatch):
    path = tmp_path / "chain.pkl"
    path.write_bytes(craft.getattr_chain())
    (finding,) = _critical(craft.scan(path, None, monkeypatch)[0])
    assert "builtins.getattr" in finding.message or "__builtin__.getattr" in finding.message
    assert "'system'" in finding.message
    assert "__import__" in finding.message


def test_every_offending_global_is_listed(tmp_path, monkeypatch):
    body = (
        craft.glob("os", "system") + craft.POP
        + craft.glob("mypackage", "Thing") + craft.POP
        + craft.glob("runpy", "run_path") + craft.POP
        + craft.glob("collections", "OrderedDict") + craft.POP
        + craft.NONE
    )
    path = tmp_path / "many.pkl"
    path.write_bytes(craft.PROTO(2) + body + craft.STOP)
    (finding,) = craft.scan(path, None, monkeypatch)[0]
    assert finding.severity is Severity.CRITICAL
    for name in ("os.system", "runpy.run_path", "mypackage.Thing"):
        assert name in finding.message
    assert "collections.OrderedDict" not in finding.message


@pytest.mark.parametrize(
    "module,name",
    [
        ("posix", "system"), ("nt", "system"), ("builtins", "eval"), ("builtins", "compile"),
        ("builtins", "open"), ("builtins", "breakpoint"), ("builtins", "setattr"),
        ("runpy", "_run_code"), ("pty", "spawn"), ("socket", "create_connection"),
        ("webbrowser", "open"), ("sys", "exit"), ("shutil", "rmtree"), ("pip", "main"),
        ("marshal", "loads"), ("types", "FunctionType"), ("ctypes", "CDLL"), ("code", "interact"),
        ("pickle", "loads"), ("_pickle", "loads"), ("dill", "loads"), ("torch", "load"),
        ("torch.serialization", "load"), ("torch.storage", "_load_from_bytes"),
        ("numpy", "load"), ("os.path", "join"), ("torch.serialization", "os.system"),
        ("collections", "OrderedDict.__init__.__globals__"), ("mylib.shell", "system"),
        ("operator", "attrgetter"), ("__builtin__", "eval"), ("torch.fx.graph_module",
                                                              "reduce_graph_module"),
    ],
)
def test_deny_list_is_critical(module, name, tmp_path, monkeypatch):
    path = tmp_path / "x.pkl"
    path.write_bytes(craft.PROTO(2) + craft.glob(module, name) + craft.STOP)
    findings, errors = craft.scan(path, None, monkeypatch)
    assert errors == []
    assert [f.severity for f in findings] == [Severity.CRITICAL]


def test_build_onto_a_global_is_critical(tmp_path, monkeypatch):
    # Writing attributes onto an imported (even allowed) object monkey-patches it.
    payload = (
        craft.PROTO(2) + craft.glob("torch._utils", "_rebuild_tensor_v2")
        + craft.NONE + craft.EMPTY_DICT + craft.TUPLE2 + craft.BUILD + craft.STOP
    )
    path = tmp_path / "patch.pkl"
    path.write_bytes(payload)
    (finding,) = craft.scan(path, None, monkeypatch)[0]
    assert finding.severity is Severity.CRITICAL
    assert "BUILD writes attributes" in finding.message


def test_computed_stack_global_is_critical(tmp_path, monkeypatch):
    # The module name is the result of a call: it cannot be known statically.
    payload = (
        craft.PROTO(4) + craft.glob("mypackage", "make_name") + craft.EMPTY_TUPLE + craft.REDUCE
        + craft.ustr("system") + craft.STACK_GLOBAL + craft.STOP
    )
    path = tmp_path / "computed.pkl"
    path.write_bytes(payload)
    findings, _ = craft.scan(path, None, monkeypatch)
    assert any(
        f.severity is Severity.CRITICAL and "computed at load time" in f.message for f in findings
    )


def test_joblib_array_data_is_stepped_over(tmp_path, monkeypatch):
    # Raw float bytes sit inside the pickle stream; the payload comes after them.
    payload = craft.glob("os", "system") + craft.MARK + craft.ustr("id") + craft.TUPLE
    payload += craft.REDUCE + craft.POP
    data = craft.joblib_like(b"\xff\x0c\x93" * 8, after=payload)
    path = tmp_path / "model.joblib"
    path.write_bytes(data)
    findings, errors = craft.scan(path, None, monkeypatch)
    assert errors == []
    assert any(f.severity is Severity.CRITICAL and "os.system" in f.message for f in findings)


def test_joblib_object_array_nested_pickle(tmp_path, monkeypatch):
    data = craft.joblib_like(craft.os_system_reduce(), dtype="O8", shape=1)
    path = tmp_path / "objects.joblib"
    path.write_bytes(data)
    findings, errors = craft.scan(path, None, monkeypatch)
    assert errors == []
    assert any(f.severity is Severity.CRITICAL and "os.system" in f.message for f in findings)


def test_benign_joblib_is_medium_and_verified(tmp_path, monkeypatch):
    path = tmp_path / "clean.joblib"
    path.write_bytes(craft.joblib_like(b"\x00" * 24))
    findings, errors = craft.scan(path, None, monkeypatch)
    assert errors == []
    assert [f.severity for f in findings] == [Severity.MEDIUM]
    assert "joblib.numpy_pickle.NumpyArrayWrapper" in findings[0].message
