"""The entry points: run_script() (``torchreview run``) and torchreview.watch()."""

import io
import json
import sys

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import torchreview  # noqa: E402
from torchreview.runtime import TORCH_MISSING, TorchMissingError, run_script  # noqa: E402

BUGGY = """
    import torch, torch.nn as nn
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.eval()  # left in eval mode
    for _ in range(5):
        opt.zero_grad()
        nn.functional.cross_entropy(model(torch.randn(4, 4)), torch.randint(0, 2, (4,))).backward()
        opt.step()
"""


def global_hooks_empty():
    from torch.nn.modules import module
    from torch.optim import optimizer

    return not (module._global_forward_pre_hooks or module._global_forward_hooks
                or optimizer._global_optimizer_pre_hooks
                or optimizer._global_optimizer_post_hooks)


def test_run_script_behaves_like_python(run_py, tmp_path):
    from torch.utils.data import dataloader

    next_before = dataloader._BaseDataLoaderIter.__next__
    backward_before = torch.autograd.backward
    argv_before, path0_before = list(sys.argv), sys.path[0]
    code, findings, report = run_py("""
        import json, sys, os
        info = {"argv": sys.argv, "name": __name__, "path0": sys.path[0]}
        open(os.path.join(os.path.dirname(__file__), "info.json"), "w").write(json.dumps(info))
        sys.exit(3)
    """, ["--epochs", "2"])
    info = json.loads((tmp_path / "info.json").read_text())
    assert code == 3
    assert info["name"] == "__main__"
    assert info["argv"][1:] == ["--epochs", "2"] and info["argv"][0].endswith("train.py")
    assert info["path0"] == str(tmp_path)
    assert sys.argv == argv_before and sys.path[0] == path0_before
    assert dataloader._BaseDataLoaderIter.__next__ is next_before
    assert torch.autograd.backward is backward_before
    assert global_hooks_empty()
    assert report["summary"]["findings"] == 0 and findings == []


def test_run_script_fail_on_and_report(run_py):
    code, findings, report = run_py(BUGGY)
    assert code == 1
    assert [f["code"] for f in findings] == ["TR504"]
    f = findings[0]
    assert f["detection"] == "runtime" and f["path"].endswith("train.py") and f["line"] == 9
    assert set(report) >= {"version", "findings", "errors", "summary"}
    assert run_py(BUGGY, fail_on="high")[0] == 0  # TR504 is medium
    assert run_py(BUGGY.replace("model.eval()", "model.train()"))[0] == 0


def test_run_script_error_exit_and_traceback(run_py, capsys):
    code, _, _ = run_py("""
        def main():
            raise KeyError("boom")
        main()
    """)
    assert code == 1
    err = capsys.readouterr().err
    assert 'KeyError: \'boom\'' in err
    frames = err.split("Traceback")[1].split("KeyError")[0]
    assert "runpy" not in err and "torchreview" not in frames


def test_run_script_usage_errors(tmp_path, capsys):
    assert run_script(str(tmp_path / "missing.py"), []) == 2
    assert "can't open file" in capsys.readouterr().err
    script = tmp_path / "ok.py"
    script.write_text("pass\n")
    assert run_script(str(script), [], fail_on="sometimes") == 2
    assert run_script(str(script), [], fmt="yaml") == 2


def test_watch_context_manager_writes_text_report_and_live_warnings():
    stream = io.StringIO()
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2)).eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchreview.watch(stream=stream) as watcher:
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
    text = stream.getvalue()
    live = [line for line in text.splitlines() if line.startswith("torchreview: ")]
    assert len(live) == 1 and "TR504" in live[0] and "test_runtime_api.py" in live[0]
    assert "TR504" in text.split(live[0], 1)[1]  # then the report itself
    assert [f.code for f in watcher.report.findings] == ["TR504"]
    assert global_hooks_empty()


def test_watch_call_with_objects_json_output(tmp_path):
    model = nn.Linear(4, 2)
    unused = nn.Linear(4, 2)
    opt = torch.optim.SGD(list(model.parameters()) + list(unused.parameters()), lr=0.1)
    out = tmp_path / "runtime.json"
    watcher = torchreview.watch(model, opt, fmt="json", output=str(out), live=False)
    for _ in range(4):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
    report = watcher.stop()
    assert watcher.stop() is report  # idempotent
    data = json.loads(out.read_text())
    assert [f["code"] for f in data["findings"]] == ["TR603"]
    assert "unused.weight" in data["findings"][0]["message"]
    assert global_hooks_empty()


ATTACHED = """
    import torch, torch.nn as nn
    import torchreview
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2)).eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchreview.watch(model, opt) as watcher:  # joins the running review
        for _ in range(5):
            opt.zero_grad()
            model(torch.randn(4, 4)).sum().backward()
            opt.step()
    assert [f.code for f in watcher.findings] == ["TR504"]
"""


def test_watch_inside_a_reviewed_script_attaches(run_py):
    code, findings, _ = run_py(ATTACHED)
    assert code == 1 and [f["code"] for f in findings] == ["TR504"]


def test_syntax_error_is_reported_like_python(run_py, capsys):
    code, _, _ = run_py("x = (\n")
    assert code == 1
    err = capsys.readouterr().err
    assert "SyntaxError" in err and "runner.py" not in err


def test_watch_rejects_unknown_options_and_double_start():
    with pytest.raises(TypeError, match="unknown torchreview.watch option"):
        torchreview.watch(colour=True)
    with torchreview.watch(live=False, write_report=False):
        from torchreview.runtime.watcher import Watcher

        with pytest.raises(RuntimeError, match="already active"):
            Watcher(write_report=False).start()
    assert global_hooks_empty()


def test_clear_error_without_torch(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(TorchMissingError, match="pip install 'torchreview\\[runtime\\]'"):
        torchreview.watch()
    script = tmp_path / "s.py"
    script.write_text("pass\n")
    assert run_script(str(script), []) == 2
    assert capsys.readouterr().err.strip() == f"torchreview: {TORCH_MISSING}"


def test_review_never_changes_training_and_removes_every_hook(review):
    def run(reviewed):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2),
                              nn.Linear(16, 2))

        def train():
            for epoch in range(3):
                opt = torch.optim.Adam(model.parameters(), lr=1e-2)  # re-created each epoch
                for _ in range(5):
                    opt.zero_grad()
                    nn.functional.cross_entropy(model(torch.randn(8, 8)),
                                                torch.randint(0, 2, (8,))).backward()
                    opt.step()

        review(train) if reviewed else train()
        return model

    plain, watched = run(False), run(True)
    for (name, a), (_, b) in zip(plain.state_dict().items(), watched.state_dict().items()):
        assert torch.equal(a, b), name
    assert all(not p._backward_hooks for p in watched.parameters())
    assert global_hooks_empty()
