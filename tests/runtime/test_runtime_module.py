"""``torchreview run -m MODULE ARGS`` behaves like ``python -m MODULE ARGS``."""

import json
import sys

import pytest

pytest.importorskip("torch")

from torchreview.cli import main  # noqa: E402

PROBE = """
import json, os, sys
info = {"argv": sys.argv, "name": __name__, "path0": sys.path[0], "spec": __spec__.name}
open(os.environ["PROBE_OUT"], "w").write(json.dumps(info))
sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
"""

BUGGY = """
import torch, torch.nn as nn
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model.eval()
for _ in range(5):
    opt.zero_grad()
    nn.functional.cross_entropy(model(torch.randn(4, 4)), torch.randint(0, 2, (4,))).backward()
    opt.step()
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "probe.py").write_text(PROBE)
    pkg = tmp_path / "trainer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(PROBE)
    (pkg / "buggy.py").write_text(BUGGY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROBE_OUT", str(tmp_path / "info.json"))
    yield tmp_path
    for name in [m for m in sys.modules if m.split(".")[0] in ("probe", "trainer")]:
        del sys.modules[name]  # each test's project is a fresh one


def test_module_gets_its_arguments_and_runs_as_main(project, monkeypatch):
    argv_before, path0_before = list(sys.argv), sys.path[0]
    monkeypatch.setenv("PROBE_EXIT", "3")
    code = main(["run", "--format", "json", "-o", str(project / "r.json"),
                 "-m", "probe", "--epochs", "2", "-m", "x"])
    info = json.loads((project / "info.json").read_text())
    assert code == 3  # the module's own exit status
    assert info["name"] == "__main__" and info["spec"] == "probe"
    assert info["argv"] == [str(project / "probe.py"), "--epochs", "2", "-m", "x"]
    assert info["path0"] == str(project)  # like python -m: the working directory
    assert sys.argv == argv_before and sys.path[0] == path0_before
    assert "probe" not in sys.modules or sys.modules["probe"].__name__ != "__main__"


def test_package_runs_its_main(project):
    assert main(["run", "--format", "json", "-o", str(project / "r.json"), "-m", "trainer"]) == 0
    info = json.loads((project / "info.json").read_text())
    assert info["argv"][0] == str(project / "trainer" / "__main__.py")
    assert info["spec"] == "trainer.__main__"


def test_module_findings_are_reported(project):
    out = project / "r.json"
    code = main(["run", "--format", "json", "-o", str(out), "-m", "trainer.buggy"])
    report = json.loads(out.read_text())
    assert code == 1
    found = {(f["code"], f["path"]) for f in report["findings"]}
    assert ("TR504", "trainer/buggy.py") in found  # a training step in eval mode


def test_missing_module_and_bad_usage(project, capsys):
    assert main(["run", "-m", "no_such_module_here"]) == 2
    assert "no module named 'no_such_module_here'" in capsys.readouterr().err
    assert main(["run", "-m"]) == 2
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "give a SCRIPT or -m MODULE" in err and "Traceback" not in err


def test_watch_shows_its_real_signature_without_importing_torch():
    import subprocess

    code = ("import inspect, sys, torchreview\n"
            "sig = str(inspect.signature(torchreview.watch))\n"
            "import torchreview.runtime as rt\n"
            "print(sig, torchreview.watch is rt.watch, 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    sig, same, torch_loaded = out.rsplit(" ", 2)
    assert sig.startswith("(model=None, optimizer=None, loader=None") and "*args" not in sig
    assert same == "True" and torch_loaded.strip() == "False"
    import torchreview

    assert "Start reviewing the training" in torchreview.watch.__doc__
    with pytest.raises(AttributeError):
        torchreview.no_such_name  # noqa: B018
