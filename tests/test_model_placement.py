"""Model concept: placement (moved off the CPU; Python scalars that live on no
device; tensors combined with other values), asked of a ``Placement`` built on
the semantic model and values alone."""

from __future__ import annotations

import ast

from model_snippets import ctx_of, node
from torchreview.engine.model.calls import CallGraph
from torchreview.engine.model.placement import Placement
from torchreview.engine.model.values import Values


def _placement(ctx) -> Placement:
    return Placement(ctx.model, values=Values(ctx.model, calls=CallGraph(ctx.model)))


def test_moved_to_device_through_statements_and_assignments():
    ctx = ctx_of("""
        import torch
        device = torch.device("cuda")
        net = torch.nn.Linear(2, 2)
        net.to(device)
        moved = torch.zeros(2).cuda()
        kept = torch.zeros(2).to("cpu")
        plain = torch.zeros(2)
        net, moved, kept, plain
    """)
    net, moved, kept, plain = node(ctx, "net, moved, kept, plain", ast.Tuple).elts
    p = _placement(ctx)
    assert p.moved_to_device(net) and p.moved_to_device(moved)
    assert not p.moved_to_device(kept) and not p.moved_to_device(plain)  # near-misses


def test_a_placement_after_the_use_at_module_level_does_not_reach_it():
    ctx = ctx_of("""
        import torch
        net = torch.nn.Linear(2, 2)
        y = net(torch.zeros(2))
        net.cuda()
    """)
    assert not _placement(ctx).moved_to_device(node(ctx, "net", ast.Name, index=1))


def test_python_scalars_and_tensors_that_meet_others():
    ctx = ctx_of("""
        import torch
        t = torch.zeros(2)
        n = t.shape[0]
        k = int(t.sum().item()) * 2
        a = t + torch.ones(2)
        b = t * 2
        c = torch.cat([t, torch.ones(2)])
        d = t.unsqueeze(0).to("cuda")
        e = n
    """)
    p = _placement(ctx)
    assert p.python_scalar(node(ctx, "t.shape[0]")) and p.python_scalar(node(ctx, "int(t.sum().item()) * 2"))
    assert p.python_scalar(node(ctx, "n", ast.Name))  # a name assigned one (read in ``e = n``)
    assert not p.python_scalar(node(ctx, "torch.ones(2)", index=0))
    t_uses = {ctx.text(parent_stmt): t for t, parent_stmt in (
        (t, next(a for a in ctx.ancestors(t) if isinstance(a, ast.Assign)))
        for t in ctx.tree.body[2:] for t in ast.walk(t) if isinstance(t, ast.Name) and t.id == "t")}
    assert p.meets_other_tensors(t_uses["a = t + torch.ones(2)"])
    assert not p.meets_other_tensors(t_uses["b = t * 2"])  # near-miss: a Python scalar
    assert p.meets_other_tensors(t_uses["c = torch.cat([t, torch.ones(2)])"])
    assert not p.meets_other_tensors(t_uses['d = t.unsqueeze(0).to("cuda")'])  # moved, not combined
    assert ctx.flow.python_scalar == ctx.flow.placement.python_scalar
