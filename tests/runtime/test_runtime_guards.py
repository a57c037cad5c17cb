"""Runtime review keeps the script's behaviour: its excepthook, os._exit, torch.compile."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


# -- sys.excepthook --------------------------------------------------------------------------
def test_scripts_own_excepthook_runs(run_py, tmp_path, capsys):
    marker = tmp_path / "hook.txt"
    saved = sys.excepthook
    code, _, report = run_py(f"""
        import sys
        def hook(kind, value, tb):
            with open({str(marker)!r}, "w") as fh:
                fh.write(f"{{kind.__name__}}: {{value}} from {{tb.tb_frame.f_code.co_filename}}")
        sys.excepthook = hook
        raise ValueError("boom")
    """)
    assert code == 1
    assert marker.read_text() == f"ValueError: boom from {tmp_path / 'train.py'}"  # starts at the script
    assert "Traceback" not in capsys.readouterr().err  # the hook replaced the standard traceback
    assert sys.excepthook is saved  # restored after the run
    assert report["summary"]["files"] == 1  # and the review still wrote its report


def test_failing_excepthook_is_reported_like_python(run_py, capsys):
    code, _, _ = run_py("""
        import sys
        def hook(kind, value, tb):
            raise RuntimeError("hook broke")
        sys.excepthook = hook
        raise ValueError("boom")
    """)
    err = capsys.readouterr().err
    assert code == 1
    assert "Error in sys.excepthook:" in err and "RuntimeError: hook broke" in err
    assert "Original exception was:" in err and "ValueError: boom" in err


def test_default_hook_prints_the_traceback_from_the_script(run_py, capsys):
    code, _, _ = run_py("raise KeyError('k')\n")
    err = capsys.readouterr().err
    assert code == 1 and "KeyError: 'k'" in err and "runpy" not in err


# -- os._exit ---------------------------------------------------------------------------------
EXIT_SCRIPT = """
    import os, sys, torch
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(4):
        model(torch.randn(8, 4)).sum().backward()
        opt.step()  # never zero_grad: TR401
    pid = os.fork() if hasattr(os, "fork") else None
    if pid == 0:
        os._exit(7)  # a forked child passes straight through, writes nothing
    if pid:
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), flush=True)
    os._exit(3)
"""


def test_os_exit_writes_the_findings_so_far(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(EXIT_SCRIPT))
    proc = subprocess.run([sys.executable, "-m", "torchreview", "run", "--no-color", str(script)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 3  # the script's own status
    assert "TR401" in proc.stderr
    assert "the script ended with os._exit(3)" in proc.stderr
    assert proc.stderr.count("runtime review:") == 1  # one report: the forked child wrote none
    if hasattr(os, "fork"):
        assert "child 7" in proc.stdout


def test_os_exit_says_in_one_line_when_no_report_could_be_written(capsys):
    from torchreview.runtime.guards import flush_before_exit

    class Broken:
        notes: list = []

        def stop(self):
            raise OSError("disk full")

    flush_before_exit(Broken(), 5)
    err = capsys.readouterr().err
    assert err == "torchreview: the script ended with os._exit(5); no runtime report could be written " \
                  "(OSError: disk full)\n"


def test_os_exit_is_restored_after_the_review(review):
    original = os._exit
    review(lambda: None)
    assert os._exit is original


# -- torch.compile -----------------------------------------------------------------------------
def _train(compiled: bool):
    from torch.utils.data import DataLoader, TensorDataset

    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(48, 8, generator=g), torch.randint(0, 2, (48,), generator=g))
    base = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))
    # backend="eager": dynamo traces and wraps the module as with the default backend,
    # without a C++ toolchain (the inductor backend gives the same findings; see the issue report)
    model = torch.compile(base, backend="eager") if compiled else base
    opt = torch.optim.SGD(base.parameters(), lr=0.1)

    def loop():
        for _ in range(2):
            for x, y in DataLoader(data, batch_size=20):  # a short last batch of 8: TR503
                nn.functional.cross_entropy(model(x), y).backward()  # no zero_grad: TR401
                opt.step()
            with torch.no_grad():  # still in train mode: TR207
                model(torch.randn(4, 8))

    return loop


def _review_recording(review, fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = review(fn)
    return sorted((f.code, f.line) for f in found), [str(w.message) for w in caught]


def test_compile_same_findings_and_no_hook_warning(review):
    plain, _ = _review_recording(review, _train(False))
    try:
        compiled, caught = _review_recording(review, _train(True))
    finally:
        torch._dynamo.reset()
    assert {code for code, _ in plain} >= {"TR401", "TR207", "TR503"}
    assert compiled == plain
    assert not [w for w in caught if "global hooks" in w]


def test_compile_warning_kept_for_the_scripts_own_global_hooks(review):
    import torch.nn.modules.module as module_hooks

    model = torch.compile(nn.Linear(4, 2), backend="eager")
    handle = module_hooks.register_module_forward_hook(lambda *args: None)
    try:
        _, caught = _review_recording(review, lambda: model(torch.randn(2, 4)))
    finally:
        handle.remove()
        torch._dynamo.reset()
    assert any("global hooks" in w for w in caught)


def test_compile_wrapper_is_seen_once_per_forward(review):
    from torchreview.runtime import watcher as watcher_module

    seen = []
    model = torch.compile(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), backend="eager")

    def fn():
        w = watcher_module.active_watcher()
        real = w.modes.root_pre
        w.modes.root_pre = lambda module, info: (seen.append(type(module).__name__), real(module, info))
        for _ in range(3):
            model(torch.randn(2, 4))

    try:
        review(fn)
    finally:
        torch._dynamo.reset()
    assert seen == ["Sequential"] * 3  # the wrapped module, once per call; never the wrapper
