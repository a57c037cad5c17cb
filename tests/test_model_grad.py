"""Model concept: grad contexts (where autograd is off), and what may carry a graph."""

from __future__ import annotations

import ast

from model_snippets import ctx_of, node


def test_with_blocks_and_decorators_disable_grad():
    ctx = ctx_of("""
        import torch
        model = torch.nn.Linear(2, 2)
        x = torch.zeros(2)
        with torch.no_grad():
            a = model(x)
        with torch.inference_mode():
            b = model(x)
        @torch.no_grad()
        def predict(m, v):
            return m(v)
        c = model(x)
    """)
    assert ctx.in_grad_disabled(node(ctx, "a = model(x)"))
    assert ctx.in_grad_disabled(node(ctx, "b = model(x)"))
    assert ctx.in_grad_disabled(node(ctx, "m(v)"))
    assert not ctx.in_grad_disabled(node(ctx, "c = model(x)"))
    assert ctx.flow.function_grad_disabled(ctx.model.functions["predict"][0])


def test_set_grad_enabled_false_and_a_near_miss_enable_grad():
    ctx = ctx_of("""
        import torch
        model = torch.nn.Linear(2, 2)
        x = torch.zeros(2)
        with torch.set_grad_enabled(False):
            a = model(x)
        with torch.no_grad():
            with torch.enable_grad():
                b = model(x)
    """)
    withs = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.With)]
    assert ctx.flow.disables_grad(withs[0])
    assert ctx.in_grad_disabled(node(ctx, "a = model(x)"))
    assert not ctx.in_grad_disabled(node(ctx, "b = model(x)"))


def test_a_caller_that_disables_grad_reaches_its_helper():
    ctx = ctx_of("""
        import torch
        def helper(m, v):
            return m(v)
        def evaluate(m, v):
            with torch.no_grad():
                return helper(m, v)
    """)
    assert ctx.in_grad_disabled(node(ctx, "m(v)", index=0))


def test_grad_leaves_and_graphs():
    ctx = ctx_of("""
        import torch
        w = torch.zeros(3, requires_grad=True)
        p = torch.nn.Parameter(torch.zeros(3))
        d = torch.zeros(3)
        model = torch.nn.Linear(3, 1)
        out = model(d)
        w, p, d, out
    """)
    w, p, d, out = node(ctx, "w, p, d, out", ast.Tuple).elts
    assert ctx.autograd.is_grad_leaf(w) and ctx.autograd.is_grad_leaf(p)
    assert not ctx.autograd.is_grad_leaf(d)
    assert ctx.autograd.may_require_grad(out)
    assert not ctx.autograd.may_require_grad(d)
