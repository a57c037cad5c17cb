"""A reviewed script that stops with an uncaught exception (tiny CPU scripts).

The crash is an ``errors`` entry (type, message, the script's line); known
PyTorch misuse signatures also become findings (TR501, TR606). The exit
status stays the script's.
"""

import socket

import pytest

torch = pytest.importorskip("torch")

INPLACE_ON_SAVED = """
import torch
import torch.nn as nn

head = nn.Linear(8, 4)
out = head(torch.randn(5, 8)).exp()
out[:, 0].clamp_(min=0, max=3)
loss = out.sum()
loss.backward()
"""


def test_inplace_on_saved_tensor_is_tr501_at_the_backward_line(run_py):
    code, findings, report = run_py(INPLACE_ON_SAVED)
    assert code == 1
    [error] = report["errors"]
    assert error["type"] == "RuntimeError"
    assert error["path"].endswith("train.py") and error["line"] == 9
    assert "modified by an inplace operation" in error["message"]
    [finding] = [f for f in findings if f["code"] == "TR501"]
    assert finding["line"] == 9 and finding["detection"] == "runtime"
    assert "in place" in finding["message"]


def test_out_of_place_twin_is_clean(run_py):
    code, findings, report = run_py(INPLACE_ON_SAVED.replace(
        "out[:, 0].clamp_(min=0, max=3)", "out = torch.cat([out[:, :1].clamp(0, 3), out[:, 1:]], 1)"))
    assert code == 0
    assert report["errors"] == [] and not [f for f in findings if f["code"] == "TR501"]


def test_inplace_on_leaf_inside_a_helper_points_at_the_inplace_line(run_py, tmp_path):
    (tmp_path / "helpers.py").write_text(
        "def bump(w):\n"
        "    w.add_(1.0)\n")
    code, findings, report = run_py("""
        import torch
        from helpers import bump

        w = torch.zeros(3, requires_grad=True)
        bump(w)
        """)
    assert code == 1
    [error] = report["errors"]
    assert error["path"].endswith("helpers.py") and error["line"] == 2
    [finding] = [f for f in findings if f["code"] == "TR501"]
    assert finding["path"].endswith("helpers.py") and finding["line"] == 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_method_looked_up_on_ddp_wrapper_is_tr606(run_py):
    code, findings, report = run_py(f"""
        import os
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        class Net(nn.Linear):
            def flops(self):
                return 1

        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = "{_free_port()}"
        dist.init_process_group("gloo", rank=0, world_size=1)
        try:
            model = DDP(Net(4, 2))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(3, 4)).sum().backward()
            opt.step()
            print(model.flops())
        finally:
            dist.destroy_process_group()
        """)
    assert code == 1
    [error] = report["errors"]
    assert error["type"] == "AttributeError" and error["line"] == 20
    [finding] = [f for f in findings if f["code"] == "TR606"]
    assert finding["line"] == 20 and "model.module" in finding["message"]


def test_other_crash_is_an_error_without_finding_and_keeps_exit_status(run_py):
    code, findings, report = run_py("""
        import torch
        x = torch.ones(2)
        raise ValueError("bad config: lr must be > 0")
        """)
    assert code == 1
    [error] = report["errors"]
    assert error == {"path": error["path"], "line": 4, "type": "ValueError",
                     "message": "line 4: the script stopped with ValueError: bad config: lr must be > 0"}
    assert findings == []


def test_system_exit_is_not_a_crash(run_py):
    code, findings, report = run_py("""
        import sys
        import torch
        sys.exit(3)
        """)
    assert code == 3
    assert report["errors"] == [] and findings == []


def test_watch_context_records_the_crash():
    import torchreview

    with pytest.raises(RuntimeError):
        with torchreview.watch(live=False, write_report=False) as watcher:
            w = torch.zeros(2, requires_grad=True)
            w.mul_(2)
    assert [e.kind for e in watcher.report.errors] == ["RuntimeError"]
    assert [f.code for f in watcher.report.findings] == ["TR501"]
