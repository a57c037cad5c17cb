"""Kinds from evidence across functions of one file: parameters typed from
call sites, return values of local helpers (issue 10, points 2-3)."""

from __future__ import annotations

import ast
import textwrap

from torchreview.engine.context import FileContext
from torchreview.engine.source import SourceFile


def ctx_of(code: str) -> FileContext:
    text = textwrap.dedent(code)
    return FileContext(SourceFile(path="m.py", text=text), ast.parse(text), target_torch=None, has_torch=True)


def first_name(ctx, ident, func=None):
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Name) and node.id == ident and (
                func is None or getattr(ctx.enclosing_function(node), "name", None) == func):
            return node
    raise AssertionError(ident)


def test_parameters_take_the_kind_the_call_sites_pass():
    ctx = ctx_of("""
        import torch
        from torch import nn

        def validate(val_loader, encoder, decoder, criterion):
            decoder.eval()
            return encoder, decoder, criterion, val_loader

        enc = nn.Sequential(nn.Flatten(), nn.Linear(48, 12)).to("cpu")
        validate(torch.utils.data.DataLoader([]), enc, nn.Linear(2, 2), criterion=nn.CrossEntropyLoss())
    """)
    assert ctx.kind_of(first_name(ctx, "encoder", "validate")) == "model"
    assert ctx.kind_of(first_name(ctx, "decoder", "validate")) == "model"
    assert ctx.kind_of(first_name(ctx, "criterion", "validate")) == "loss_fn"
    assert ctx.kind_of(first_name(ctx, "val_loader", "validate")) == "loader"
    assert not ctx.known_by_name_only(first_name(ctx, "encoder", "validate"))
    eval_call = next(c for c in ctx.model.calls if isinstance(c.func, ast.Attribute) and c.func.attr == "eval")
    assert ctx.flow.classify(eval_call) == "eval"


def test_call_sites_that_disagree_or_splat_leave_the_name_to_decide():
    ctx = ctx_of("""
        import torch
        from torch import nn

        def run(thing, other):
            return thing, other

        run(nn.Linear(2, 2), torch.optim.SGD([], lr=0.1))
        run(torch.optim.SGD([], lr=0.1), *extra)
    """)
    assert ctx.kind_of(first_name(ctx, "thing", "run")) is None  # model at one site, optimizer at the other
    assert ctx.kind_of(first_name(ctx, "other", "run")) is None  # hidden behind *extra at one site
    assert ctx.known_by_name_only(first_name(ctx, "thing", "run"))


def test_evidence_wins_over_a_conventional_name():
    ctx = ctx_of("""
        from torch import nn

        def score(model):
            return model

        score(nn.CrossEntropyLoss())
    """)
    assert ctx.kind_of(first_name(ctx, "model", "score")) == "loss_fn"


def test_return_values_of_local_helpers():
    ctx = ctx_of("""
        import torch
        from torch import nn

        def build_net():
            return nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))

        def build_opt(params):
            if params is None:
                return torch.optim.SGD([], lr=0.1)
            return torch.optim.Adam(params)

        def either(flag):
            if flag:
                return nn.Linear(2, 2)
            return torch.optim.Adam([])

        def recurse(n):
            return recurse(n - 1)

        net = build_net().to("cpu")
        opt = build_opt(net.parameters())
        mixed = either(True)
        loop = recurse(3)
    """)
    assert ctx.kind_of(first_name(ctx, "net")) == "model"
    assert ctx.kind_of(first_name(ctx, "opt")) == "optimizer"
    assert ctx.kind_of(first_name(ctx, "mixed")) is None
    assert ctx.kind_of(first_name(ctx, "loop")) is None


def test_unpacked_returns_and_zip_targets():
    ctx = ctx_of("""
        import torch
        from torch import nn

        def build(cfg):
            net = nn.Linear(2, 2)
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            if cfg:
                return net, opt, None
            return net, opt, 3

        def step(model, optimizer, extra):
            return model, optimizer, extra

        first, second, third = build(True)
        train_dl = torch.utils.data.DataLoader([])
        aux_dl = torch.utils.data.DataLoader([])
        for (xa, ya), (xb, yb), idx in zip(train_dl, aux_dl, range(3)):
            pass
    """)
    assert ctx.kind_of(first_name(ctx, "first")) == "model"
    assert ctx.kind_of(first_name(ctx, "second")) == "optimizer"
    assert ctx.kind_of(first_name(ctx, "third")) is None
    assert ctx.kind_of(first_name(ctx, "xa")) == "tensor"
    assert ctx.kind_of(first_name(ctx, "yb")) == "tensor"
    assert ctx.kind_of(first_name(ctx, "idx")) is None


def test_tr207_confidence_follows_the_evidence(tmp_path):
    from torchreview.engine.runner import Settings, run_review

    (tmp_path / "infer.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        def predict(net, x):
            with torch.no_grad():
                return net(x)

        def predict_typed(net, x):
            with torch.no_grad():
                return net(x)

        predict_typed(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1)), torch.rand(1, 2))
    """))
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR207",), jobs=1))
    got = {f.context: f.confidence for f in report.findings}
    # `predict`: a parameter no call path shows in training mode is left to its callers;
    # `predict_typed`: this file builds the dropout model and hands it in (direct evidence)
    assert got == {"predict_typed": "high"}
    assert "module-level code at infer.py:13 passes" in report.findings[0].message
