"""The model-content fact (engine/module_modes.py) and the call paths of a
parameter-passed model (engine/call_paths.py) that TR207 rests on."""

from __future__ import annotations

import ast
import json
import textwrap

import pytest

from torchreview.engine import module_modes as M
from torchreview.engine.context import FileContext
from model_snippets import ctx_for, write




def last_name(ctx: FileContext, name: str) -> ast.Name:
    return [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Name) and n.id == name][-1]


LAYERS = textwrap.dedent("""
    import torch
    from torch import nn
    import torch.nn.functional as F

    class Attn(nn.Module):
        def __init__(self, d, dropout=0.0):
            super().__init__()
            self.q = nn.Linear(d, d)
            self.drop = nn.Dropout(dropout)

    class Block(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.attn = Attn(cfg["emb"], dropout=cfg["drop_rate"])
            self.mlp = nn.Sequential(nn.Linear(4, 4), nn.GELU())

    class Wrap(nn.Module):
        def __init__(self, inner, dim=4):
            super().__init__()
            self.inner = inner
            self.dim = dim

        def forward(self, x):
            return self.inner(x)

    class Functional(nn.Module):
        def __init__(self, p):
            super().__init__()
            self.p = p

        def forward(self, x):
            return F.dropout(x, self.p, training=self.training)

    class FixedDrop(nn.Module):
        def forward(self, x):
            return F.dropout(x, 0.1, training=False)

    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.ReLU())

    class Tracked(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.InstanceNorm1d(4, track_running_stats=True)
""")


@pytest.mark.parametrize("build, expected", [
    ("Attn(4)", "free"),  # default-0 argument
    ("Attn(4, 0.0)", "free"),  # literal 0
    ("Attn(4, dropout=0.3)", "active"),
    ("Block({'emb': 4, 'drop_rate': 0.0})", "free"),  # a config dict literal, through a submodule
    ("Block({'emb': 4, 'drop_rate': 0.2})", "active"),
    ("Block(cfg_from_elsewhere)", "active"),  # unknown rate
    ("Wrap(Attn(4))", "free"),  # a submodule handed in and called
    ("Wrap(Attn(4, 0.5))", "active"),
    ("Wrap(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))", "active"),
    ("Functional(0.1)", "active"),  # reads self.training
    ("FixedDrop()", "free"),  # a fixed training= behaves the same in both modes
    ("Tracked()", "active"),
    ("nn.LSTM(4, 4, num_layers=2, dropout=0.0).to('cpu')", "free"),
    ("nn.LSTM(4, 4, num_layers=2, dropout=0.3)", "active"),
    ("nn.LSTM(4, 4, 2, True, False, 0.3)", "active"),  # positional
    ("nn.LSTM(4, 4, dropout=0.3)", "free"),  # one layer: the dropout acts between stacked layers only
    ("nn.GRU(4, 4, num_layers=1, dropout=0.5)", "free"),
    ("nn.RNN(4, 4, num_layers=depth, dropout=0.5)", "active"),  # depth unknown
    ("nn.GRU(4, 4)", "free"),
    ("nn.TransformerEncoderLayer(4, 2)", "active"),  # torch's default dropout is 0.1
    ("nn.TransformerEncoderLayer(4, 2, dropout=0.0)", "free"),
    # library constructors, by the constructor table of engine/library.py
    ("torchvision.models.resnet18()", "active"),  # BatchNorm/Dropout in every family
    ("torchvision.models.resnet18().to('cpu')", "active"),
    ("timm.create_model('resnet50', pretrained=True)", "active"),
    ("nn.Sequential(torchvision.models.resnet18(), nn.Linear(4, 4))", "active"),
    ("torch.jit.load('m.pt')", None),  # comes back as it was saved: layers unknown
    ("torchvision.ops.nms(a, b, 0.5)", None),  # not a model builder (no table row)
    ("torchvision.transforms.Compose([])", None),
    ("some_lib.build_net()", None),  # an unlisted library function: unknown
])
def test_content_of_a_construction(tmp_path, build, expected):
    write(tmp_path, {"m.py": LAYERS + f"\nimport torchvision\nimport timm\nimport some_lib\nmodel = {build}\nmodel\n"})
    ctx = ctx_for(tmp_path / "m.py")
    assert ctx.module_modes.content_of(last_name(ctx, "model")) == expected


def test_classes_of_other_project_files_and_annotations(tmp_path):
    write(tmp_path, {
        "nets.py": LAYERS,
        "run.py": """
            import torch
            import nets
            from nets import Attn, Block

            CFG = {"emb": 4, "drop_rate": 0.1}
            CFG.update({"emb": 8})
            NO_DROP = dict(emb=4)

            a = Attn(4)
            b = Block(CFG)

            def score(model: "nets.Plain", x):
                return model(x)

            def score_block(model: Block, x):
                return model(x)
        """,
    })
    ctx = ctx_for(tmp_path / "run.py")
    modes = ctx.module_modes
    assert modes.content_of(last_name(ctx, "a")) == "free"
    assert modes.content_of(last_name(ctx, "b")) == "active"  # the update does not touch drop_rate
    score, score_block = (f for f in ctx.tree.body if isinstance(f, ast.FunctionDef))
    assert modes.content_of(score.body[0].value.func) == "free"  # annotated with a mode-free class
    # annotated with a class whose rate depends on a construction we cannot see
    assert modes.content_of(score_block.body[0].value.func) == "active"


def test_builders_of_other_files_and_unknown_libraries(tmp_path):
    write(tmp_path, {
        "builders.py": """
            from torch import nn

            def make_mlp(d, p):
                return nn.Sequential(nn.Linear(d, d), nn.Dropout(p))

            def make_plain(d):
                return nn.Sequential(nn.Linear(d, d), nn.ReLU())
        """,
        "run.py": """
            import somelib
            from torch import nn
            import builders
            from builders import make_plain

            class UsesMlp(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mlp = builders.make_mlp(4, 0.1)

            class UsesPlain(nn.Module):
                def __init__(self):
                    super().__init__()
                    layers = make_plain(4)
                    self.body = layers

            class UsesLibrary(nn.Module):
                def __init__(self):
                    super().__init__()
                    blocks = somelib.create_blocks(4)
                    self.blocks = nn.ModuleList(blocks)
                    self.scale = somelib.scale_of(4) if somelib else 1.0

            a, b, c = UsesMlp(), UsesPlain(), UsesLibrary()
            a; b; c
        """,
    })
    ctx = ctx_for(tmp_path / "run.py")
    # an unknown library builder: not provably free, but no mode-dependent layer is known either
    assert [ctx.module_modes.content_of(last_name(ctx, n)) for n in "abc"] == ["active", "free", None]


def test_a_fact_is_computed_once_per_class(tmp_path, monkeypatch):
    write(tmp_path, {"nets.py": LAYERS, "run.py": """
        from nets import Attn
        a = Attn(4)
        b = Attn(4, 0.0)
        c = Attn(4, 0.5)
        a; b; c
    """})
    calls = []
    real = M._judge_body
    monkeypatch.setattr(M, "_judge_body", lambda unit, owner, *rest: calls.append(owner.name) or
                        real(unit, owner, *rest))
    M._units.clear()
    ctx = ctx_for(tmp_path / "run.py")
    answers = [ctx.module_modes.content_of(last_name(ctx, n)) for n in ("a", "b", "c")]
    assert answers == ["free", "free", "active"]
    assert calls.count("Attn") == 1


HELPERS = textwrap.dedent("""
    import torch

    def generate(model, idx):
        with torch.no_grad():
            return model(idx)
""")


@pytest.mark.parametrize("caller, shown", [
    ("net = Net()\ngenerate(net, x)", "passes `net` freshly built, in training mode"),
    ("net = Net()\nnet.eval()\ngenerate(net, x)", None),
    ("net = load()\nnet.train()\ngenerate(net, x)", "passes `net` right after `.train()`"),
    ("net = Net()\nnet.eval()\nnet.train()\ngenerate(net, x)", "right after `.train()`"),
    ("net = transformers.AutoModel.from_pretrained('m')\ngenerate(net, x)", None),
    ("net = Plain()\ngenerate(net, x)", None),  # mode-free: no path worth showing
    ("net = load()\ngenerate(net, x)", None),  # unknown origin
    ("net = Net()\nfor x, y in data:\n    opt.zero_grad()\n    net(x).sum().backward()\n    opt.step()\n"
     "net.eval()\ngenerate(net, x)", None),
])
def test_train_path_across_files(tmp_path, caller, shown):
    body = textwrap.indent(caller, "    ")
    write(tmp_path, {
        "helpers.py": HELPERS,
        "main.py": "import torch\nimport transformers\nfrom torch import nn\nfrom helpers import generate\n\n"
                   "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                   "        self.d = nn.Dropout(0.5)\n\n"
                   "class Plain(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                   "        self.f = nn.Linear(2, 2)\n\n"
                   f"def main(x, data, opt, load):\n{body}\n",
    })
    ctx = ctx_for(tmp_path / "helpers.py")
    func = ctx.tree.body[1]
    path = ctx.call_paths.train_path(func, "model")
    if shown is None:
        assert path is None
    else:
        assert path is not None and shown in path and "`main` at main.py" in path


def test_parameter_chain_and_callers(tmp_path):
    write(tmp_path, {
        "helpers.py": HELPERS,
        "runner.py": """
            from torch import nn
            from helpers import generate

            def sample(model, x):
                return generate(model, x)

            def run(x):
                net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))
                return sample(net, x)
        """,
        "unrelated.py": "def generate(model, idx):\n    return model(idx)\n\ngenerate(object(), 1)\n",
    })
    ctx = ctx_for(tmp_path / "helpers.py")
    func = ctx.tree.body[1]
    callers = ctx.call_paths.callers(func)
    assert [(unit.path.rsplit("/", 1)[-1], call.lineno) for unit, call in callers] == [("runner.py", 6)]
    path = ctx.call_paths.train_path(func, "model")
    assert path == ("`run` at runner.py:10 passes `net` freshly built, in training mode, "
                    "then `sample` at runner.py:6 passes it on")
    model_use = func.body[0].body[0].value.func
    assert ctx.call_paths.parameter_of(model_use) == (func, "model")


def test_callers_pass_free_through_a_package_star_import(tmp_path):
    write(tmp_path, {
        "kit/__init__.py": "from .loops import *\n",
        "kit/loops.py": """
            def generate(model, x):
                return model(x)

            def fit_then_generate(model, x):
                return generate(model, x)

            def score(model, x):
                return model(x)

            def unused(model, x):
                return model(x)
        """,
        "use_free.py": """
            from torch import nn
            from kit import fit_then_generate, score

            fit_then_generate(nn.Sequential(nn.GRU(2, 2), nn.Linear(2, 2)), 1)
            score(nn.Linear(2, 2), 1)
        """,
        "use_active.py": """
            from torch import nn
            from kit.loops import score

            score(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.2)), 1)
        """,
    })
    ctx = ctx_for(tmp_path / "kit" / "loops.py")
    generate, outer, score, unused = ctx.tree.body
    assert [u.path.rsplit("/", 1)[-1] for u, _ in ctx.call_paths.callers(outer)] == ["use_free.py"]
    assert ctx.call_paths.callers_pass_free(generate, "model")  # two levels: through fit_then_generate
    assert not ctx.call_paths.callers_pass_free(score, "model")  # one caller passes dropout
    assert not ctx.call_paths.callers_pass_free(unused, "model")  # no caller: nothing shown


def test_cached_review_follows_an_edit_of_a_caller(tmp_path, monkeypatch, capsys):
    """helpers.py does not import main.py, yet its finding rests on main.py's call:
    its cache key changes when the caller does."""
    from torchreview.cli import main

    write(tmp_path, {
        "helpers.py": HELPERS,
        "main.py": """
            from torch import nn
            from helpers import generate

            net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))
            generate(net, None)
        """,
    })
    monkeypatch.chdir(tmp_path)

    def codes() -> set[str]:
        main(["check", "helpers.py", "--format", "json", "--select", "TR207"])
        return {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}

    assert codes() == {"TR207"}
    assert codes() == {"TR207"}  # served from the cache
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        from torch import nn
        from helpers import generate

        net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))
        net.eval()
        generate(net, None)
    """))
    assert codes() == set()  # helpers.py did not change; its key did


def test_state_after_construction(tmp_path):
    """build_state: a class that switches itself to eval mode in its constructor
    (or inherits one that does), a builder that calls .eval() on what it wraps;
    a later self.train() undoes it; content_of (eval() changes something) is untouched."""
    write(tmp_path, {"nets.py": """
        from torch import nn

        class Frozen(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm1d(4)
                self.eval()

        class Child(Frozen):
            pass

        class Again(Frozen):
            def __init__(self):
                super().__init__()
                self.train()

        class Wrap(nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)
        """, "main.py": """
        from torch import nn
        from nets import Again, Child, Frozen, Wrap

        def built():
            m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.2))
            m.eval()
            return Wrap(m)

        def fresh():
            return Wrap(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.2)))

        a = Frozen()
        b = Child()
        c = Again()
        d = built()
        e = fresh()
        f = nn.Linear(4, 4)
        """})
    ctx = ctx_for(tmp_path / "main.py")
    states = {}
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                isinstance(node.targets[0], ast.Name) and node.targets[0].id in "abcdef":
            states[node.targets[0].id] = (ctx.module_modes.build_state(node.value),
                                          ctx.module_modes.build_content(node.value))
    assert states == {"a": ("eval", "active"), "b": ("eval", "active"), "c": ("active", "active"),
                      "d": ("eval", "active"), "e": ("active", "active"), "f": ("free", "free")}


def test_helpers_called_in_forward_build_no_layer(tmp_path):
    """A chain of tensor helpers deeper than the old limit, a dropped check and a
    raised exception inside forward add nothing; a helper building a layer that
    __init__ keeps still counts."""
    write(tmp_path, {"main.py": """
        from torch import nn

        class Bad(Exception):
            pass

        def check(x):
            if x.dim() != 2:
                raise Bad("2-d")

        def a(x):
            return b(x) + 1

        def b(x):
            return c(x) * 2

        def c(x):
            return x - x.mean()

        def make_drop():
            return nn.Dropout(0.3)

        class Plain(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                check(x)
                y = a(x)
                return self.fc(y)

        class Dropping(nn.Module):
            def __init__(self):
                super().__init__()
                self.drop = make_drop()

            def forward(self, x):
                return self.drop(a(x))

        p = Plain()
        q = Dropping()
        """})
    ctx = ctx_for(tmp_path / "main.py")
    assert ctx.module_modes.content_of(last_name(ctx, "p")) == "free"
    assert ctx.module_modes.content_of(last_name(ctx, "q")) == "active"
