"""Flow.wrapping_call: which wrapper call (DistributedDataParallel here) built what a model expression holds."""

from __future__ import annotations

import ast

from test_semantic import ctx_of

DDP = frozenset({"torch.nn.parallel.DistributedDataParallel"})


def called(ctx, text):
    """The callee of the first call whose callee reads ``text``."""
    return next(n.func for n in ast.walk(ctx.tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == text)


def test_names_moves_and_aliases():
    ctx = ctx_of("""
        from torch.nn.parallel import DistributedDataParallel as DDP
        net = DDP(Net()).cuda()
        plain = Net().cuda()
        net(x); plain(x)
    """)
    wrap = ctx.flow.wrapping_call(called(ctx, "net"), DDP)
    assert wrap is not None and ast.unparse(wrap.func) == "DDP"
    assert ctx.flow.wrapping_call(called(ctx, "plain"), DDP) is None


def test_parameters_self_attributes_and_constructor_arguments():
    ctx = ctx_of("""
        import torch

        def step(model, x):
            return model(x)

        class Trainer:
            def __init__(self, network):
                self.network = network

            def run(self, x):
                return self.network(x)

        class Other:
            def setup(self, m):
                self.m = torch.nn.parallel.DistributedDataParallel(m)

            def run(self, x):
                return self.m(x)

        ddp = torch.nn.parallel.DistributedDataParallel(Net())
        step(ddp, 1)
        Trainer(network=ddp)
    """)
    assert ctx.flow.wrapping_call(called(ctx, "model"), DDP) is not None
    assert ctx.flow.wrapping_call(called(ctx, "self.network"), DDP) is not None
    assert ctx.flow.wrapping_call(called(ctx, "self.m"), DDP) is not None


def test_unresolved_and_other_wrappers_give_none():
    ctx = ctx_of("""
        import torch

        def step(model, x):
            return model(x)

        compiled = torch.compile(Net())
        compiled(1)
        step(load_model(), 2)
    """)
    assert ctx.flow.wrapping_call(called(ctx, "model"), DDP) is None
    assert ctx.flow.wrapping_call(called(ctx, "compiled"), DDP) is None
    assert ctx.flow.wrapping_call(called(ctx, "compiled"), frozenset({"torch.compile"})) is not None
