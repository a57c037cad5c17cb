"""Model concept: values (what a name holds where it is read, what produced it)."""

from __future__ import annotations

import ast

from model_snippets import ctx_of, node


def test_reaching_value_is_the_last_assignment_before_the_read():
    ctx = ctx_of("""
        import torch
        def f():
            x = torch.zeros(2)
            x = x.cuda()
            return x
    """)
    read = node(ctx, "x", ast.Name)  # the one returned
    assert ctx.text(ctx.flow.reaching_value(read)) == "x.cuda()"


def test_strict_reaching_value_ignores_a_conditional_assignment():
    ctx = ctx_of("""
        import torch
        def f(flag):
            x = torch.zeros(2)
            if flag:
                x = torch.ones(2)
            return x
    """)
    read = node(ctx, "x", ast.Name)
    assert ctx.flow.reaching_value_strict(read) is None
    assert {ctx.text(v) for v in ctx.flow.values_of(read)} >= {"torch.ones(2)"}


def test_origin_peels_value_preserving_calls():
    ctx = ctx_of("""
        import torch
        net = torch.nn.Linear(2, 2)
        moved = net.to("cuda")
        moved
    """)
    origin = ctx.flow.origin(node(ctx, "moved", ast.Name))
    assert ctx.text(origin) == "torch.nn.Linear(2, 2)"
    assert ctx.text(ctx.flow.origin(node(ctx, "moved", ast.Name), peel=False)) == 'net.to("cuda")'


def test_values_of_a_parameter_come_from_its_call_sites():
    ctx = ctx_of("""
        import torch
        def use(t):
            return t
        use(torch.zeros(1))
        use(torch.ones(1))
    """)
    t = node(ctx, "t", ast.Name)
    assert {ctx.text(v) for v in ctx.flow.values_of(t)} == {"torch.zeros(1)", "torch.ones(1)"}


def test_activation_and_loss_of_a_value():
    ctx = ctx_of("""
        import torch
        import torch.nn.functional as F
        logits = torch.nn.Linear(2, 3)(torch.zeros(2))
        probs = F.softmax(logits, dim=-1)
        loss = F.cross_entropy(logits, torch.zeros(1).long())
        probs, logits
    """)
    probs, logits = node(ctx, "probs, logits", ast.Tuple).elts
    assert ctx.flow.activation_of(probs) == "softmax"
    assert ctx.flow.activation_of(logits) != "softmax"  # near-miss
    name, ctor = ctx.flow.loss_call(node(ctx, "F.cross_entropy(logits, torch.zeros(1).long())"))
    assert (name, ctor) == ("cross_entropy", None)
    assert ctx.flow.known_tensor(node(ctx, "torch.zeros(1).long()"))
