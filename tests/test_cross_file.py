"""Across functions and files (issue 10): what project summaries carry, how the
project view answers with them, library knowledge as data, and the model's use
of both. Multi-file behaviour end to end is in tests/fixtures/project/*_xfile_*."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchreview.engine import library
from torchreview.engine import project_index as P
from torchreview.engine.context import FileContext
from torchreview.engine.source import SourceFile


def summary(code: str) -> P.ModuleSummary:
    return P.summarize(ast.parse(textwrap.dedent(code)))


def write(tmp_path, files: dict[str, str]) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    for name, code in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))
    P.forget_files(force=True)


def ctx_for(path) -> FileContext:
    text = path.read_text()
    return FileContext(SourceFile(path=str(path), text=text), ast.parse(text), target_torch=None,
                       has_torch=True, real_path=str(path))


def test_function_summary_effects_on_parameters():
    s = summary("""
        import torch

        def reset(opt, model):
            opt.zero_grad(set_to_none=True)
            model.eval()
            log(opt)

        def read(opt, step):
            print(step, opt.param_groups[0]["lr"])

        def torch_only(x):
            return torch.relu(x)
    """)
    assert s.functions["reset"].param_calls == ((0, "zero_grad"), (1, "eval"), (0, "*"))
    assert s.functions["read"].param_calls == ()  # print is a builtin: no unknown effect
    assert s.functions["torch_only"].param_calls == ()
    call = ast.parse("reset(o, m)").body[0].value
    assert [(ast.unparse(a), m) for a, m in s.functions["reset"].argument_calls(call)] == \
        [("o", "zero_grad"), ("m", "eval"), ("o", "*")]
    assert s.functions["reset"].argument_calls(ast.parse("reset(*xs)").body[0].value) is None


def test_function_summary_returns():
    s = summary("""
        import torch
        import torchvision
        from torch import nn

        def teacher():
            net = torchvision.models.resnet50()
            net.eval()
            return net

        def moved():
            return torchvision.models.resnet18().to("cuda").eval()

        def fresh():
            return torchvision.models.resnet18()

        def crit(s):
            c = nn.CrossEntropyLoss(label_smoothing=s, **extra)
            return c

        def either(flag):
            if flag:
                return nn.MSELoss()
            return nn.L1Loss()

        def run(net, x):
            return net(x)

        def run_detached(net, x):
            return net(x).detach()

        def run_quiet(net, x):
            with torch.no_grad():
                return net(x)

        @torch.no_grad()
        def run_decorated(net, x):
            return net(x)

        def loader(data):
            sampler = torch.utils.data.DistributedSampler(data)
            return torch.utils.data.DataLoader(data, sampler=sampler)

        def ordered(data):
            sampler = torch.utils.data.DistributedSampler(data, shuffle=False)
            return torch.utils.data.DataLoader(data, sampler=sampler)
    """)
    f = s.functions
    assert (f["teacher"].returns_mode, f["moved"].returns_mode, f["fresh"].returns_mode) == ("eval", "eval", None)
    assert f["teacher"].returns_ctor == "torchvision.models.resnet50"
    assert f["moved"].returns_ctor == "torchvision.models.resnet18"  # through .to().eval()
    assert (f["crit"].returns_ctor, f["crit"].returns_ctor_args) == ("torch.nn.CrossEntropyLoss",
                                                                     ("label_smoothing", "**"))
    assert f["either"].returns_ctor is None  # the returns disagree
    assert (f["run"].returns_grad, f["run"].returns_called_param) == (False, 0)
    assert f["run_detached"].returns_called_param is None
    assert f["run_quiet"].returns_called_param is None
    assert f["run_decorated"].grad_disabled and f["run_decorated"].returns_called_param is None
    assert f["loader"].builds == ("distributed_sampler",) and f["ordered"].builds == ()


def test_class_summary_forward_facts():
    s = summary("""
        import torch
        import torch.nn.functional as F
        from torch import nn as _private_nn

        class Mover(_private_nn.Module):
            def forward(self, x, mask=None):
                x = x.to(self.fc.weight.device)
                return F.softmax(self.fc(x), dim=1)

        class Keeper(_private_nn.Module):
            def forward(self, x):
                y = self.table.to(x.device)
                return (x + y).log_softmax(-1)

        class Copier(_private_nn.Module):
            def forward(self, x):
                y = x.to("cuda")
                return y.log_softmax(-1)
    """)
    assert (s.classes["Mover"].moves_input, s.classes["Mover"].output) == (True, "softmax")
    # moving something else to the input's device leaves the input where it is
    assert (s.classes["Keeper"].moves_input, s.classes["Keeper"].output) == (False, "log_softmax")
    # a moved copy of the input is what forward computes on (a wrapper unpacking its batch too)
    assert s.classes["Copier"].moves_input


def test_project_view_follows_packages_and_star_imports(tmp_path):
    write(tmp_path, {
        "common.py": "from base import *\nimport torch.nn as nn\nfrom torch import optim as _private\n",
        "base.py": "import torch.nn.functional as F\n",
        "pkg/__init__.py": "from .impl import make_criterion, Net\n",
        "pkg/impl.py": """
            from torch import nn

            def make_criterion():
                return nn.CrossEntropyLoss(ignore_index=0)

            class Net(nn.Module):
                def forward(self, x):
                    x = x.cuda()
                    return x
        """,
        "train.py": "from common import *\nfrom pkg import make_criterion, Net\n",
    })
    view = P.ProjectView(str(tmp_path / "train.py"))
    assert view.star_torch_aliases("common") == {"nn": "torch.nn", "F": "torch.nn.functional"}
    assert view.defining_file("pkg.make_criterion") == str(tmp_path / "pkg" / "impl.py")
    call = ast.parse("make_criterion()").body[0].value
    qualname, made = view.returned_constructor(call, "pkg.make_criterion")
    assert qualname == "torch.nn.CrossEntropyLoss"
    assert [k.arg for k in made.keywords] == ["ignore_index"] and made.lineno == call.lineno
    assert view.forward_moves_input("pkg.Net")
    assert not view.forward_moves_input("pkg.Missing")
    ctx = ctx_for(tmp_path / "train.py")
    assert ctx.qualname(ast.parse("F.softmax").body[0].value) == "torch.nn.functional.softmax"


def test_returns_graph_depends_on_what_the_caller_passes(tmp_path):
    write(tmp_path, {"utils.py": "def run(net, x):\n    return net(x)\n", "main.py": "from utils import run\n"})
    view = P.ProjectView(str(tmp_path / "main.py"))
    call = ast.parse("run(model, batch)").body[0].value
    assert view.returns_graph(call, "utils.run", lambda a: "model" if ast.unparse(a) == "model" else None)
    assert not view.returns_graph(call, "utils.run", lambda a: None)  # a plain function passed


def test_uses_torch_through_project(tmp_path):
    write(tmp_path, {
        "nets/__init__.py": "from .layers import Classifier\n",
        "nets/layers.py": "from torch import nn\n\nclass Classifier(nn.Module):\n    pass\n",
        "plain.py": "def f():\n    return 1\n",
    })
    from torchreview.engine.facts import has_torch_signal

    assert P.uses_torch_through_project(str(tmp_path / "serve.py"), b"from nets import Classifier\n",
                                        has_torch_signal)
    assert not P.uses_torch_through_project(str(tmp_path / "serve.py"), b"from plain import f\n",
                                            has_torch_signal)


def test_library_constructors_are_data():
    assert library.constructor("torchvision.models.vit_b_16").contains == {"batchnorm", "dropout"}
    # ResNets: BatchNorm only, replaceable through `norm_layer=`
    resnet = library.constructor("torchvision.models.resnet18")
    assert resnet.contains == {"batchnorm"} and resnet.norm_argument == "norm_layer"
    assert library.constructor("torchvision.models.detection.fasterrcnn_resnet50_fpn").match == \
        "torchvision.models.detection.*"  # the most specific pattern wins
    assert library.returns_in_mode("transformers.AutoModelForCausalLM.from_pretrained") == "eval"
    assert library.constructor("transformers.AutoTokenizer.from_pretrained") is None  # not a model class
    assert library.returns_in_mode("timm.create_model") == "train"
    assert library.constructor("numpy.array") is None


def test_frameworks_count_by_evidence_not_by_import():
    def frameworks(code):
        text = textwrap.dedent(code)
        return FileContext(SourceFile(path="m.py", text=text), ast.parse(text), target_torch=None,
                           has_torch=True).library

    plain = frameworks("from transformers import AutoModel\nm = AutoModel.from_pretrained('x')\n")
    assert plain.frameworks == () and not plain.takes_over("set_epoch")
    trainer = frameworks("from transformers import Trainer\nTrainer(model=m).train()\n")
    assert trainer.frameworks == ("Hugging Face Trainer",) and trainer.takes_over("zero_grad")
    lit = frameworks("import lightning as L\nclass M(L.LightningModule):\n    pass\n")
    assert lit.takes_over("eval")
    acc = frameworks("from accelerate import Accelerator\na = Accelerator()\n")
    assert acc.takes_over("scaling") and not acc.takes_over("zero_grad")
    with pytest.raises(ValueError):
        acc.takes_over("teleport")


def test_a_called_torch_load_result_is_a_model(tmp_path):
    write(tmp_path, {
        "loading.py": "import torch\n\ndef restore(p):\n    return torch.load(p, weights_only=False)\n",
        "infer.py": """
            import torch
            from loading import restore

            def infer(x):
                predictor = restore("m.pt")
                state = torch.load("s.pt")
                return predictor(x), state["w"]
        """,
    })
    ctx = ctx_for(tmp_path / "infer.py")
    calls = {ast.unparse(c.func): c for c in ctx.model.calls}
    assert ctx.flow.classify(calls["predictor"]) == "forward"
    assert ctx.flow.classify(calls["restore"]) is None


def test_out_loss_of_a_model_call_carries_its_graph():
    text = textwrap.dedent("""
        import torch
        from torch import nn

        net = nn.Linear(2, 2)
        out = net(torch.rand(1, 2))
        with torch.no_grad():
            quiet = net(torch.rand(1, 2))
        a = out.loss
        b = quiet.loss
        c = out._cache
        d = out.ndim
    """)
    ctx = FileContext(SourceFile(path="m.py", text=text), ast.parse(text), target_torch=None, has_torch=True)
    values = {t.targets[0].id: t.value for t in ctx.tree.body if isinstance(t, ast.Assign)}
    assert ctx.autograd.may_require_grad(values["a"])
    assert not ctx.autograd.may_require_grad(values["b"])  # computed under no_grad
    assert not ctx.autograd.may_require_grad(values["c"])  # private fields are not outputs
    assert not ctx.autograd.may_require_grad(values["d"])  # a tensor's number of dimensions
