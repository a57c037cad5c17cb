"""Model concept: names and imports (qualified names through every import form)."""

from __future__ import annotations

import ast

from model_snippets import ctx_of, node


def test_aliases_and_from_imports_resolve_to_canonical_names():
    ctx = ctx_of("""
        import torch as T
        from torch import nn
        from torch.nn import functional as F
        import torch.distributed as dist
        a = T.load("m.pt")
        b = nn.Linear(2, 2)
        c = F.relu(b)
        dist.init_process_group("nccl")
    """)
    assert ctx.call_qualname(node(ctx, 'T.load("m.pt")')) == "torch.load"
    assert ctx.call_qualname(node(ctx, "nn.Linear(2, 2)")) == "torch.nn.Linear"
    assert ctx.call_qualname(node(ctx, "F.relu(b)")) == "torch.nn.functional.relu"
    assert ctx.call_qualname(node(ctx, 'dist.init_process_group("nccl")')) == \
        "torch.distributed.init_process_group"


def test_a_module_level_alias_of_a_torch_name_is_followed():
    ctx = ctx_of("""
        import torch
        load = torch.load
        x = load("m.pt")
    """)
    assert ctx.call_qualname(node(ctx, 'load("m.pt")')) == "torch.load"


def test_near_miss_a_local_name_that_shadows_nothing_stays_local():
    ctx = ctx_of("""
        import torch
        def load(path):
            return open(path).read()
        x = load("m.pt")
        y = torch.nn
    """)
    assert ctx.call_qualname(node(ctx, 'load("m.pt")')) != "torch.load"
    assert ctx.qualname(node(ctx, "torch.nn", ast.Attribute)) == "torch.nn"


def test_imports_and_module_aliases():
    ctx = ctx_of("""
        import torch as T
        import lightning.pytorch as pl
        from torch.utils.data import DataLoader
    """)
    assert ctx.model.imports_module("lightning")
    assert not ctx.model.imports_module("accelerate")
    assert ctx.model.module_alias("torch") == "T"
    assert ctx.model.aliases["DataLoader"].endswith("torch.utils.data.DataLoader")


def test_calls_are_indexed_by_their_last_name():
    ctx = ctx_of("""
        import torch
        opt = torch.optim.SGD([], lr=0.1)
        opt.step()
        opt.zero_grad()
        opt.step()
    """)
    assert len(ctx.model.calls_by_name["step"]) == 2
    assert len(ctx.model.calls_by_name["zero_grad"]) == 1
    assert "step" in ctx.model.attribute_names
