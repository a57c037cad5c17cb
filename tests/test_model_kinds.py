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


# --- the concept alone: ``Kinds`` with explicit collaborators, resolved once ---------

def _kinds_of(ctx):
    from torchreview.engine.model.kinds import Kinds
    from torchreview.engine.model.scopes import Scopes

    m = ctx.model
    bindings: dict = {}
    scopes = Scopes(ctx.tree, binding_sites=m.index.binding_sites, bindings=bindings)
    return Kinds(ctx.tree, index=m.index, names=m.names, scopes=scopes, hierarchy=m.hierarchy,
                 bindings=bindings, project=None)


def test_kinds_alone_bind_names_only_when_resolved():
    ctx = ctx_of("""
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.head = torch.nn.Linear(2, 2)
        def evaluate(thing, data):
            return thing(data)
        built = Net()
        evaluate(built, torch.zeros(2))
        built
    """)
    kinds = _kinds_of(ctx)
    read = node(ctx, "built", ast.Name)
    thing = node(ctx, "thing", ast.Name)
    assert kinds.kind_of(read) is None and kinds.kind_of(thing) is None  # nothing bound before resolve
    assert kinds.kind_of(node(ctx, "Net()")) == "model"  # a call needs no binding
    kinds.resolve()
    assert kinds.kind_of(read) == "model"
    assert kinds.kind_of(thing) == "model"  # from the call site evaluate(built, ...)
    func = ctx.model.functions["evaluate"][0]
    assert (id(func), "thing") in kinds.param_evidence and (id(func), "data") in kinds.param_evidence
    assert kinds.class_attrs[ctx.model.classes["Net"]] == {"head": "model"}
    # the model's own Kinds gave the same answers
    assert ctx.model.kinds.kind_of(thing) == "model" and ctx.model.kind_of == ctx.model.kinds.kind_of
