"""Model concept: kinds (what a name holds), from evidence first, names last."""

from __future__ import annotations

import ast

from model_snippets import ctx_of, node


def test_kinds_from_what_built_the_value():
    ctx = ctx_of("""
        import torch
        from torch import nn, optim
        from torch.utils.data import DataLoader
        net = nn.Sequential(nn.Linear(2, 2))
        opt = optim.Adam(net.parameters())
        loader = DataLoader([1, 2])
        sched = optim.lr_scheduler.StepLR(opt, 1)
        crit = nn.CrossEntropyLoss()
        t = torch.zeros(3)
        net, opt, loader, sched, crit, t
    """)
    got = {n.id: ctx.kind_of(n) for n in node(ctx, "net, opt, loader, sched, crit, t", ast.Tuple).elts}
    assert got == {"net": "model", "opt": "optimizer", "loader": "loader", "sched": "scheduler",
                   "crit": "loss_fn", "t": "tensor"}


def test_evidence_beats_a_conventional_name():
    ctx = ctx_of("""
        import torch
        optimizer = torch.zeros(3)
        model = [1, 2, 3]
        optimizer, model
    """)
    pair = node(ctx, "optimizer, model", ast.Tuple).elts
    assert ctx.kind_of(pair[0]) == "tensor"
    assert ctx.kind_of(pair[1]) != "model"


def test_a_local_helper_return_and_a_call_site_argument_carry_the_kind():
    ctx = ctx_of("""
        import torch
        def make_opt(params):
            return torch.optim.SGD(params, lr=0.1)
        def step(o):
            o.step()
        net = torch.nn.Linear(2, 2)
        g = make_opt(net.parameters())
        step(g)
        g
    """)
    assert ctx.kind_of(node(ctx, "g", ast.Name)) == "optimizer"
    o = node(ctx, "o", ast.Name)
    assert ctx.kind_of(o) == "optimizer"
    assert not ctx.known_by_name_only(o)  # the call site says so, not the name


def test_a_name_alone_is_a_low_confidence_guess():
    ctx = ctx_of("""
        def train(model, optimizer):
            optimizer.step()
    """)
    opt = node(ctx, "optimizer", ast.Name)
    assert ctx.kind_of(opt) == "optimizer"
    assert ctx.known_by_name_only(opt)


def test_near_miss_unknown_stays_unknown():
    ctx = ctx_of("""
        import json
        cfg = json.load(open("c.json"))
        cfg
    """)
    assert ctx.kind_of(node(ctx, "cfg", ast.Name)) is None
