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


# --- the concept alone: ``Values`` over the semantic model and the call graph ------------

def test_values_alone_follow_helpers_arguments_and_wrappers():
    from torchreview.engine.model.calls import CallGraph
    from torchreview.engine.model.values import Values

    ctx = ctx_of("""
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        def make():
            return torch.nn.Linear(2, 2)
        class Runner:
            def __init__(self, net):
                self.net = net
        def train(model, steps=3):
            return model
        wrapped = DDP(make())
        Runner(wrapped)
        train(wrapped.to("cuda"), steps=5)
        built = make()
        built
    """)
    values = Values(ctx.model, calls=CallGraph(ctx.model))
    built = node(ctx, "built", ast.Name)
    assert [ctx.text(v) for v in values.values_of(built)] == ["make()"]
    assert [ctx.text(v) for v in values.values_of(built, follow_returns=True)] == ["torch.nn.Linear(2, 2)"]
    train = ctx.model.functions["train"][0]
    assert [ctx.text(a) for a in values.arguments_for(train, "model")] == ['wrapped.to("cuda")']
    assert [ctx.text(a) for a in values.arguments_for(train, "steps")] == ["5"]
    ddp = frozenset({"torch.nn.parallel.DistributedDataParallel"})
    # through .to(), a parameter's call site, and a constructor argument of Runner(...)
    assert ctx.text(values.wrapping_call(node(ctx, "model", ast.Name), ddp)) == "DDP(make())"
    assert ctx.text(values.wrapping_call(node(ctx, "net", ast.Name), ddp)) == "DDP(make())"
    assert values.wrapping_call(built, ddp) is None  # near-miss: never wrapped
    assert ctx.flow.values_of == ctx.flow.values.values_of  # the flow answers through its Values


def test_discarded_values_go_to_names_nothing_reads():
    ctx = ctx_of("""
        import torch
        def f(xs):
            total = 0
            kept = 0
            for x in xs:
                total += x.sum()
                kept += x.mean()
            print(kept)
        shown = torch.ones(2).sum()
    """)
    calls = {ctx.text(c): c for c in ctx.model.calls}
    assert ctx.flow.discarded(calls["x.sum()"])          # summed into a total never read
    assert not ctx.flow.discarded(calls["x.mean()"])     # printed
    assert not ctx.flow.discarded(calls["torch.ones(2).sum()"])  # module level: others may read it
    assert not ctx.flow.discarded(calls["print(kept)"])  # an expression statement, not a binding


def test_unpacked_from_is_the_call_a_tuple_assignment_unpacks():
    ctx = ctx_of("""
        import torch
        def f(ds):
            a, b = torch.utils.data.random_split(ds, [8, 2])
            use(a)
            a = ds
            use(a)
            use(b)
    """)
    reads = [n for n in ctx.model.nodes_by_type[ast.Name] if n.id in ("a", "b") and isinstance(n.ctx, ast.Load)]
    first_a, second_a, b = sorted(reads, key=lambda n: n.lineno)
    assert ctx.text(ctx.flow.unpacked_from(first_a)).startswith("torch.utils.data.random_split")
    assert ctx.flow.unpacked_from(second_a) is None  # rebound plainly after the unpacking
    assert ctx.text(ctx.flow.unpacked_from(b)).startswith("torch.utils.data.random_split")
