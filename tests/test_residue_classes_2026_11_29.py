"""Classes of findings judged noise/false on the sweeps of 2026-11-29 and on the
session's re-reading of earlier verdicts, each as a near-miss that must stay
silent (or hidden by default) beside a positive that must stay."""
from __future__ import annotations

from pathlib import Path

from projects import package as _package
from torchreview.engine.runner import Settings, run_review


def _found(root: Path, codes: tuple[str, ...], **kw) -> list:
    return run_review([str(root)], Settings(rule_codes=codes, jobs=1, min_confidence="low", **kw)).findings


CLI_TOOL = '''import argparse
from transformers import AutoModelForCausalLM, AutoTokenizer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    args = parser.parse_args()
    tok = AutoTokenizer.from_pretrained(args.model, trust_remote_code=True)
    return tok


def load(path):
    return AutoModelForCausalLM.from_pretrained(path, trust_remote_code=True)
'''

WEB_TOOL = '''from fastapi import FastAPI
from transformers import AutoModel

app = FastAPI()


@app.post("/load")
def load(model_id: str):
    return AutoModel.from_pretrained(model_id, trust_remote_code=True)
'''


def test_trust_remote_code_on_the_operators_own_command_line_is_medium_where_the_code_ships(tmp_path):
    """FastChat data tool / lerobot annotation script: a model id from the command line of a
    package's own tool is the operator's choice (judged noise); a library function that
    hard-codes the flag for whatever path it is given, and a web endpoint's model id, stay high."""
    pkg = _package(tmp_path / "proj")
    (pkg / "tool.py").write_text(CLI_TOOL)
    (pkg / "server.py").write_text(WEB_TOOL)
    found = sorted((Path(f.path).name, f.line, f.confidence) for f in _found(tmp_path / "proj", ("TR104",)))
    assert found == [("server.py", 9, "high"), ("tool.py", 9, "medium"), ("tool.py", 14, "high")]


TRAIN_TEST_ONLY = '''import torch
from torch.utils.data import DataLoader
from torchvision import datasets


def main(model, evaluate, epochs):
    train_loader = DataLoader(datasets.CIFAR10("data", train=True), batch_size=64)
    test_loader = DataLoader(datasets.CIFAR10("data", train=False), batch_size=64)
    best = 0.0
    for epoch in range(epochs):
        acc = evaluate(model, test_loader)
        if acc > best:
            best = acc
            torch.save(model.state_dict(), "best.pt")
'''


def test_choosing_on_test_without_validation_data_is_a_protocol_choice(tmp_path):
    """Pointnet ModelNet40 / CIFAR training scripts: only train and test data, the best
    checkpoint kept by test accuracy (the benchmark's usual protocol, judged noise): medium.
    The same choice in a file that also holds validation data is a slip: high."""
    for name, text in (("only", TRAIN_TEST_ONLY), ("with_val", TRAIN_TEST_ONLY.replace(
            "    best = 0.0\n", "    val_loader = DataLoader(datasets.CIFAR10('data', train=True), batch_size=64)\n"
                               "    best = 0.0\n"))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text(text)
    got = {n: [(f.line, f.confidence) for f in _found(tmp_path / n, ("TR519",))] for n in ("only", "with_val")}
    assert got == {"only": [(12, "medium")], "with_val": [(13, "high")]}


WORKSPACE = '''import dill
import torch


class Workspace:
    def save_checkpoint(self, path):
        torch.save({"cfg": self.cfg, "state": self.model.state_dict()}, open(path, "wb"), pickle_module=dill)

    def load_checkpoint(self, path):
        return torch.load(open(path, "rb"), pickle_module=dill)
'''


def test_a_custom_pickler_the_module_also_saves_with_is_its_format(tmp_path):
    """diffusion_policy workspace: checkpoints written and read with `pickle_module=dill` (the
    project's format, judged noise): medium. A load with a pickler nothing here saves with
    stays high."""
    for name, text in (("own", WORKSPACE), ("other", WORKSPACE.replace(", pickle_module=dill)\n\n", ")\n\n"))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "workspace.py").write_text(text)
    got = {n: [(f.line, f.confidence) for f in _found(tmp_path / n, ("TR102",))] for n in ("own", "other")}
    assert got == {"own": [(10, "medium")], "other": [(10, "high")]}


LATENCY = '''import time
import torch
from torch import nn


def main():
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1), nn.Linear(8, 2))
    x = torch.randn(4, 8)
    with torch.no_grad():
        start = time.time()
        for _ in range(10):
            out = model(x)
        print(time.time() - start, out.argmax(1))
'''


def test_inference_without_eval_in_a_latency_benchmark_is_medium(tmp_path):
    """Torch-Pruning reproduce/benchmark_latency.py, examples/.../measure_latency.py: the
    no-grad calls are timed, their outputs unused (judged noise/false): medium. The same
    code over real data in a prediction script stays high (on fake inputs, a script that trains
    nothing and clocks the calls is a benchmark by its content too: fifteenth session)."""
    for name in ("benchmark_latency.py", "measure_latency.py"):
        (tmp_path / name).write_text(LATENCY)
    (tmp_path / "predict.py").write_text(LATENCY.replace("torch.randn(4, 8)", 'torch.load("batch.pt", weights_only=True)'))
    got = {Path(p.path).name: p.confidence for f in _found(tmp_path, ("TR207",)) for p in (f.parts or (f,))}
    assert got == {"benchmark_latency.py": "medium", "measure_latency.py": "medium", "predict.py": "high"}


def test_forward_shown_next_to_the_usual_call_in_a_notebook_is_a_demonstration():
    """PyTorchStepByStep chapter 5: `dummy_model.forward(dummy_x)` shows that hooks do not fire,
    the next cell calls `dummy_model(dummy_x)` (judged noise): low advice, hidden by default.
    A module only ever called through `.forward` stays a likely defect."""
    path = Path(__file__).parent / "fixtures" / "bugs" / "TR509_demonstration_notebook.ipynb"
    found = {f.cell: (f.kind, f.confidence) for f in _found(path, ("TR509",))}
    assert found == {2: ("advice", "low"), 4: ("likely-defect", "high")}  # (cell 4 hooks `other` itself)
    default = run_review([str(path)], Settings(rule_codes=("TR509",), jobs=1, advice_codes=())).findings
    assert [f.cell for f in default] == [4]


HUB_TEST = '''import torch


def check(images):
    model = torch.hub.load(REPO, "upscaler", SOURCE)
    with torch.no_grad():
        return [model(im) for im in images]
'''


def test_a_local_hub_entry_returns_what_the_projects_hubconf_builds(tmp_path):
    """nunif waifu2x/hub.py: `torch.hub.load(ROOT_DIR, "waifu2x", source="local")` returns the
    project's own wrapper object, not an `nn.Module` in train mode (TR207 judged false x4 on
    held-out 11, fixed after its first pass): medium. A published hub repository stays high."""
    for name, repo, source in (("local", "ROOT", 'source="local"'), ("hub", '"pytorch/vision:v0.10.0"', 'pretrained=True')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "check.py").write_text(HUB_TEST.replace("REPO", repo).replace("SOURCE", source))
    got = {n: [f.confidence for f in _found(tmp_path / n, ("TR207",))] for n in ("local", "hub")}
    assert got == {"local": ["medium"], "hub": ["high"]}


ROUND_TRIP = '''import torch
from torch import nn


def test_pickles(tmp_path):
    model = nn.Linear(2, 2)
    torch.save(model, tmp_path / "whole.pt")
    loaded = torch.load(tmp_path / "whole.pt")
    assert loaded.weight.shape == model.weight.shape
'''


def test_a_whole_object_round_trip_in_a_test_is_the_check_itself(tmp_path):
    """torchtext's prototype tests save whole objects and load them back (TR520 judged noise
    x4 on held-out 11, fixed after its first pass): in a test the failure shows itself in CI,
    medium. The same code in a module stays high."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_io.py").write_text(ROUND_TRIP)
    (tmp_path / "roundtrip.py").write_text(ROUND_TRIP.replace("def test_pickles", "def check_pickles"))
    got = {Path(f.path).name: f.confidence for f in _found(tmp_path, ("TR520",))}
    assert got == {"test_io.py": "medium", "roundtrip.py": "high"}


CLI_LOAD = '''import argparse
import torch
from huggingface_hub import hf_hub_download


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt")
    args = parser.parse_args()
    return torch.load(args.ckpt, map_location="cpu")


def from_hub(repo):
    return torch.load(hf_hub_download(repo, "pytorch_model.bin"))
'''


def test_a_checkpoint_the_operator_names_is_their_own_file(tmp_path):
    """s4 / chemprop converters and evaluation scripts: `torch.load(args.ckpt)` on torch 2.4
    (6 TR101 judged noise on dev-16): medium, in a package module too. A file the library
    downloads from the Hub stays high where the code ships (trlx modeling_base, judged true)."""
    pkg = _package(tmp_path / "proj")
    (pkg / "convert.py").write_text(CLI_LOAD)
    got = sorted((f.line, f.confidence) for f in _found(tmp_path / "proj", ("TR101",), target_torch=(2, 4)))
    assert got == [(10, "medium"), (14, "high")]


NUMPY_OF_MODEL = '''import torch
from torch import nn


class Buffers(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("basis", torch.eye(n))

    def forward(self, x):
        return x @ self.basis


def plot(model: nn.Module, x):
    return model(x).numpy()


net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU())
pixels = net(torch.rand(1, 1, 8, 8)).numpy()
'''


def test_a_graph_claim_needs_a_model_with_visible_weights(tmp_path):
    """s4 HiPPO, pyannote conversion, neuraloperator continuation (TR502 judged false 10 of 10
    on the 2026-11-29 sweeps): a model handed in, or one of unknown content, is medium; a
    model built here from layers with weights, called outside no_grad, stays high."""
    (tmp_path / "plots.py").write_text(NUMPY_OF_MODEL)
    got = sorted((f.line, f.confidence) for p in _found(tmp_path, ("TR502",)) for f in (p.parts or (p,)))
    assert got == [(15, "medium"), (19, "high")]


def _notebook(path: Path, cells: list[str]) -> None:
    import json
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                           "source": c} for c in cells],
                                "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                                "nbformat": 4, "nbformat_minor": 5}))


LESSON_TRAIN = '''def train(model, x, y, lr=0.1):
    for epoch in range(10):
        yhat = model.forward(x)
        grad_w, grad_b = model.backward(x, yhat, y)
        model.weights += lr * grad_w
        model.bias += lr * grad_b
'''


def test_a_model_known_by_name_only_at_the_call_site_is_no_evidence(tmp_path):
    """stat453 hw2 (dev-17, TR501 judged false): the lesson's `NeuronModel` class is in a cell
    the students must complete (`grad = # <YOUR CODE>` does not parse), so `model =
    NeuronModel(...)` says nothing about what `model` is: the kind of `train`'s parameter rests
    on its name, and the finding is a guess (medium, hidden by default). A class that parses
    and is an nn.Module keeps it high."""
    _notebook(tmp_path / "hw.ipynb", [
        "import torch\n",
        "class NeuronModel():\n    def __init__(self, n):\n        self.bias = torch.zeros(1)\n"
        "    def backward(self, x, yhat, y):\n        grad = # <YOUR CODE>\n        return grad\n",
        LESSON_TRAIN,
        "model = NeuronModel(3)\ntrain(model, torch.zeros(4, 3), torch.zeros(4))\n",
    ])
    found = [f for f in _found(tmp_path, ("TR501",)) if f.code == "TR501"]
    assert found and all(f.confidence == "medium" for f in found)
    (tmp_path / "hw.ipynb").unlink()
    (tmp_path / "net.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass NeuronModel(nn.Module):\n"
        "    def __init__(self, n):\n        super().__init__()\n        self.weights = nn.Parameter(torch.zeros(n, 1))\n"
        "        self.bias = nn.Parameter(torch.zeros(1))\n\n\n" + LESSON_TRAIN +
        "\n\nmodel = NeuronModel(3)\ntrain(model, torch.zeros(4, 3), torch.zeros(4))\n")
    found = [f for f in _found(tmp_path, ("TR501",)) if f.code == "TR501"]
    assert found and all(f.confidence == "high" for f in found)


DATA_TOOL = '''import os

from datasets import load_dataset


def load_one(dataset):
    ext = os.path.splitext(dataset)[-1]
    name = os.path.basename(dataset)
    if ext == ".py" or (os.path.isdir(dataset) and os.path.exists(os.path.join(dataset, f"{name}.py"))):
        return load_dataset(dataset, trust_remote_code=True)
    return load_dataset(dataset)


def load_hub(repo):
    return load_dataset(repo, trust_remote_code=True)
'''


def test_a_local_dataset_script_is_advice_where_the_code_ships(tmp_path):
    """OpenRLHF datasets/utils.py (dev-18, TR104 judged false): the branch for a local `*.py`
    loading script (the path checked on disk) runs the user's own file: low advice, hidden by
    default. A Hub dataset name given to the same library stays a defect."""
    pkg = _package(tmp_path / "proj")
    (pkg / "data.py").write_text(DATA_TOOL)
    found = sorted((f.line, f.kind, f.confidence) for f in _found(tmp_path / "proj", ("TR104",)))
    assert found == [(10, "advice", "medium"), (15, "defect", "high")]


HUB_DEMO = '''import torch
from huggingface_hub import hf_hub_download

CKPT_REPO = "{owner}/GroundingModel"


def load_model_hf(repo_id, filename):
    cache_file = hf_hub_download(repo_id=repo_id, filename=filename)
    return torch.load(cache_file, map_location="cpu")


model = load_model_hf(CKPT_REPO, "model.pth")
'''


def test_a_checkpoint_the_project_publishes_itself_is_first_party(tmp_path):
    """GroundingDINO's demo (held-out 20, TR101 judged noise): the checkpoint comes from
    `ShilongLiu/...`, the namespace of the demo Space its README presents as its own, so the
    download is the project's own artifact. A checkpoint of another namespace stays reported."""
    for owner in ("shilongliu", "someone-else"):
        root = tmp_path / owner
        root.mkdir()
        (root / "README.md").write_text(
            "# Grounding model\n[Demo](https://huggingface.co/spaces/ShilongLiu/Grounding_demo)\n")
        (root / "demo.py").write_text(HUB_DEMO.format(owner=owner))
    found = {owner: [f.line for f in _found(tmp_path / owner, ("TR101",), target_torch=(2, 0))]
             for owner in ("shilongliu", "someone-else")}
    assert found == {"shilongliu": [], "someone-else": [9]}


TIMED = '''import time

import torch
from torch import nn


def bench_attention(layer: nn.Module, length):
    optimizer = torch.optim.Adam(layer.parameters(), 1e-4)
    hidden = torch.ones(4, length, 512).to("cuda")
    fake_gt = torch.zeros(4, length, 512).to("cuda")
    start = time.time()
    for i in range(1000):
        result = layer(hidden)
        loss = ((fake_gt - result) ** 2).mean()
        loss.backward()
        optimizer.step()
    print("average time", (time.time() - start) / 1000)


def fit(x, y):
    model = nn.Linear(512, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(500):
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    return model


def timed_fit(loader):
    model = nn.Linear(512, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    start = time.perf_counter()
    for epoch in range(5):
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
    print(time.perf_counter() - start)
    return model
'''


def test_a_timing_loop_over_fake_inputs_is_medium(tmp_path):
    """Pyraformer's attention benchmark, vendored in PatchTST and LTSF-Linear (TR401 judged noise
    twice): a range loop between two clock reads that feeds the layer torch.ones/zeros built
    before it measures time and memory. Full-batch training on real arguments, and a timed loop
    over a loader, keep the finding. (The file is not named for measuring: any loop of a
    `bench.py` or `timing.py` is medium since the twelfth session.)"""
    (tmp_path / "layers.py").write_text(TIMED)
    found = sorted((p.line, p.confidence) for f in _found(tmp_path, ("TR401",)) for p in (f.parts or (f,)))
    assert found == [(12, "medium"), (23, "high"), (35, "high")]


STUB_MODULE = '''import torch.nn as nn


class Regularizer(nn.Module):
    def __init__(self):
        pass
'''


def test_a_module_class_nothing_names_is_medium(tmp_path):
    """torchcfm's runner (held-out 14, TR510 judged noise twice): a `Regularizer` stub defined
    in two files and built nowhere -- its crash needs code that does not exist: medium. Once
    another file builds it, or in an installable package (its users import it), high."""
    runner = tmp_path / "runner"
    runner.mkdir()
    (runner / "augmentation.py").write_text(STUB_MODULE)
    (runner / "regularizers.py").write_text(STUB_MODULE)
    found = sorted((Path(p.path).name, p.confidence) for f in _found(runner, ("TR510",)) for p in f.parts or (f,))
    assert found == [("augmentation.py", "medium"), ("regularizers.py", "medium")]
    (runner / "train.py").write_text("from regularizers import Regularizer\n\nreg = Regularizer()\n")
    found = sorted((Path(p.path).name, p.confidence) for f in _found(runner, ("TR510",)) for p in f.parts or (f,))
    # augmentation.py's copy: nothing imports that module (2026-11-29, fifth session: a stray
    # copy is low confidence, tests/test_residue_classes_2026_11_29e.py)
    assert found == [("augmentation.py", "low"), ("regularizers.py", "high")]
    pkg = _package(tmp_path / "lib", "reglib")
    (pkg / "layers.py").write_text(STUB_MODULE)
    found = [(Path(f.path).name, f.confidence) for f in _found(tmp_path / "lib", ("TR510",))]
    assert found == [("layers.py", "high")]


def test_a_notebook_that_pins_an_old_lightning_is_reviewed_for_its_torch(tmp_path):
    """dl-pytorch-lightning's SimCLR notebook (held-out 15, TR520 judged noise): `!pip install
    pytorch-lightning==1.5.2` runs on a torch of that era, which loads whole modules by
    default; without the pin the load crashes on torch >= 2.6 and stays reported."""
    cells = ["import torch\nfrom torch import nn\nnet = nn.Linear(2, 2)\ntorch.save(net, 'net.pt')\n",
             "restored = torch.load('net.pt')\nrestored.eval()\n"]
    for name, first in (("pinned", ["!pip install pytorch-lightning==1.5.2\n"]), ("unpinned", [])):
        (tmp_path / name).mkdir()
        _notebook(tmp_path / name / "simclr.ipynb", first + cells)
    found = {name: [f.code for f in _found(tmp_path / name, ("TR520",))] for name in ("pinned", "unpinned")}
    assert found == {"pinned": [], "unpinned": ["TR520"]}


def test_a_reset_commented_out_on_purpose_is_medium():
    """intro-to-dl-hse (held-out 25, TR401 judged noise): the lesson comments out
    `optimizer.zero_grad()` to show what happens; the other loops of the fixture stay high."""
    path = Path(__file__).parent / "fixtures" / "quality" / "TR401_missing_zero_grad.py"
    found = {f.line: f.confidence for f in _found(path, ("TR401",))}
    assert found[104] == "medium" and found[10] == "high"


PLAIN_TO = '''import torch
from torch.utils.data import DataLoader


def to(xs, device):
    return [x.to(device) for x in xs]


def train(model, dataset, optimizer, device):
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    for batch in loader:
        batch = to(batch, device)
        loss = model(*batch).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''


def test_a_project_function_named_to_is_no_move_and_no_crash(tmp_path):
    """trajectory-transformer's utils/training.py (held-out 27): `def to(xs, device)` called as
    `to(batch, device)` crashed TR403's placement question (a call named `to` without a
    receiver): no internal error, the file is reviewed."""
    (tmp_path / "training.py").write_text(PLAIN_TO)
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR403",), jobs=1, min_confidence="low"))
    assert report.errors == []


def test_the_projects_own_checkpoint_in_a_demo_service_is_medium_for_tr102(tmp_path):
    """GroundingDINO's Gradio demo (held-out 20): with the checkpoint first-party, TR101 is
    silent and the plain missing `weights_only` (torch 2.0 pinned) is a hardening nit -- medium,
    hidden by default -- even in a served demo."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "README.md").write_text("[Demo](https://huggingface.co/spaces/ShilongLiu/Grounding_demo)\n")
    (root / "app.py").write_text("import gradio as gr\n" + HUB_DEMO.format(owner="ShilongLiu"))
    found = [(f.code, f.confidence) for f in _found(root, ("TR101", "TR102"), target_torch=(2, 0))]
    assert found == [("TR102", "medium")]
