"""The project index: summaries of the project's own modules, import resolution,
and what a file's review learns from them (issue 10, points 1-2)."""

from __future__ import annotations

import ast
import dataclasses
import json

from torchreview.engine import project_index as P
from torchreview.engine.context import FileContext
from torchreview.engine.source import SourceFile
from model_snippets import ctx_for, write




MODEL = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(3)
            self.drop = nn.Dropout(0.1)

    class FocalLoss(nn.Module):
        def forward(self, x, y):
            return torch.nn.functional.cross_entropy(x, y)

    class Frames(torch.utils.data.Dataset):
        pass

    def build_optimizer(net):
        return torch.optim.AdamW(net.parameters())

    def evaluate(loader, net, ema=None):
        net.eval()
        out = [net(x) for x in loader]
        net.train()
        ema.train(False)
        return out
"""


def test_summary_says_what_classes_and_functions_are(tmp_path):
    write(tmp_path, {"model.py": MODEL})
    summary = P.module_summary(str(tmp_path / "model.py"))
    assert summary.classes["Net"] == P.ClassSummary("Net", "model", ("batchnorm", "dropout"),
                                                    bases=("torch.nn.Module",), methods=("__init__",))
    assert summary.classes["FocalLoss"].methods == ("forward",)
    assert summary.classes["Frames"].methods == ()
    assert summary.classes["FocalLoss"].kind == "loss_fn"
    assert summary.classes["Frames"].kind == "dataset"
    assert summary.functions["build_optimizer"].returns == "optimizer"
    evaluate = summary.functions["evaluate"]
    assert evaluate.params == ("loader", "net", "ema")
    assert evaluate.modes == ((1, "eval"), (1, "train"), (2, "eval"))
    # plain data: survives JSON
    assert json.loads(json.dumps(dataclasses.asdict(summary)))["classes"]["Net"]["kind"] == "model"


def test_imports_resolve_between_project_modules(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "from .nets import Net\nfrom .helpers import *\n",
        "pkg/nets.py": MODEL,
        "pkg/helpers.py": "import torch\n\ndef make_loader(ds):\n    return torch.utils.data.DataLoader(ds)\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/user.py": "from ..nets import Net\n",
        "scripts/train.py": "",
    })
    user = str(tmp_path / "pkg/sub/user.py")
    assert P.resolve(user, "..nets") == str(tmp_path / "pkg/nets.py")
    assert P.resolve(str(tmp_path / "scripts/train.py"), "pkg") == str(tmp_path / "pkg/__init__.py")
    assert P.resolve(str(tmp_path / "scripts/train.py"), "torch") is None  # not a project module
    init = str(tmp_path / "pkg/__init__.py")
    assert P.lookup_in(init, "Net").kind == "model"  # re-exported by name
    assert P.lookup_in(init, "make_loader").returns == "loader"  # re-exported by `import *`
    assert P.lookup_in(init, "Missing") is None


def test_a_file_asks_the_project_about_imported_names(tmp_path):
    write(tmp_path, {
        "model.py": MODEL,
        "train.py": """
            import model
            from model import Net, build_optimizer, evaluate

            net = Net()
            opt = build_optimizer(net)
            other = model.Net()
            for epoch in range(3):
                evaluate(loader, net)
        """,
    })
    ctx = ctx_for(tmp_path / "train.py")
    assigned = {n.targets[0].id: n.value for n in ast.walk(ctx.tree) if isinstance(n, ast.Assign)}
    assert ctx.kind_of(assigned["net"]) == "model"
    assert ctx.kind_of(assigned["opt"]) == "optimizer"
    assert ctx.kind_of(assigned["other"]) == "model"
    assert ctx.project.lookup("model", "Net").layers == ("batchnorm", "dropout")
    call = next(c for c in ctx.model.calls if isinstance(c.func, ast.Name) and c.func.id == "evaluate")
    switched = ctx.flow.imported_mode_calls(call)
    assert [(ctx.text(made.func.value), mode) for made, mode in switched] == [("net", "eval"), ("net", "train")]
    assert ctx.flow.imported_mode(call) == "train"


def test_without_a_file_on_disk_the_project_is_silent():
    text = "from model import Net\nnet = Net()\n"
    ctx = FileContext(SourceFile(path="<stdin>", text=text), ast.parse(text), target_torch=None, has_torch=True)
    assert ctx.project.lookup("model", "Net") is None
    assert ctx.kind_of(ctx.tree.body[1].value) is None


def test_dependencies_cover_every_file_the_index_may_read(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "from .nets import *\n",
        "pkg/nets.py": "from .layers import Block\n",
        "pkg/layers.py": "import torch\n",
        "train.py": "import torch\nfrom pkg import Net\nimport os\n",
    })
    train = tmp_path / "train.py"
    deps = [p for p, _ in P.dependencies(str(train), train.read_bytes())]
    assert deps == sorted(str(tmp_path / f) for f in ("pkg/__init__.py", "pkg/nets.py", "pkg/layers.py"))
    before = dict(P.dependencies(str(train), train.read_bytes()))
    (tmp_path / "pkg/layers.py").write_text("import torch\n\nclass Block:\n    pass\n")
    P.forget_files(force=True)  # a new review (run_review does this)
    after = dict(P.dependencies(str(train), train.read_bytes()))
    assert before[str(tmp_path / "pkg/layers.py")] != after[str(tmp_path / "pkg/layers.py")]


def test_cached_review_follows_an_edit_of_an_imported_module(tmp_path, monkeypatch, capsys):
    from torchreview.cli import main

    write(tmp_path, {
        "evaluation.py": "def evaluate(net, loader):\n    net.eval()\n    return [net(x) for x in loader]\n",
        "train.py": """
            import torch
            import torch.nn.functional as F
            from evaluation import evaluate

            def fit(net, data):
                opt = torch.optim.SGD(net.parameters(), lr=0.1)
                for epoch in range(3):
                    for x, y in data:
                        loss = F.mse_loss(net(x), y)
                        opt.zero_grad()
                        loss.backward()
                        opt.step()
                    evaluate(net, data)
        """,
    })
    monkeypatch.chdir(tmp_path)

    def codes() -> set[str]:
        main(["check", "train.py", "--format", "json", "--select", "TR504"])
        return {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}

    assert codes() == {"TR504"}
    assert codes() == {"TR504"}  # served from the cache
    from torchreview.cache import CACHE_DIR_NAME

    assert any((tmp_path / CACHE_DIR_NAME).rglob("*.json")), "the cache is in use"
    (tmp_path / "evaluation.py").write_text(
        "def evaluate(net, loader):\n    net.eval()\n    out = [net(x) for x in loader]\n    net.train()\n"
        "    return out\n")
    assert codes() == set()  # train.py itself did not change; its key did


def test_summary_says_which_classes_have_a_metaclass(tmp_path):
    """A metaclass is inherited: a class of the same module deriving from one that names
    it has it too; `abc.ABCMeta` does not count (it does not run `__init__`)."""
    write(tmp_path, {"core.py": "import abc\nfrom torch import nn\n\n\nclass Meta(type):\n    pass\n\n\n"
                                "class Module(nn.Module, metaclass=Meta):\n    pass\n\n\n"
                                "class Child(Module):\n    pass\n\n\n"
                                "class Abstract(nn.Module, metaclass=abc.ABCMeta):\n    pass\n"})
    classes = P.module_summary(str(tmp_path / "core.py")).classes
    assert [name for name, c in classes.items() if c.metaclass] == ["Module", "Child"]
