"""Model concept: loops (training loops, their ordered events, batch/epoch loops)."""

from __future__ import annotations

from model_snippets import ctx_of, node

TRAIN = """
import torch
from torch.utils.data import DataLoader
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader([1, 2], shuffle=True)
for epoch in range(10):
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
"""


def test_a_training_loop_with_ordered_events_and_its_epoch_loop():
    ctx = ctx_of(TRAIN)
    [loop] = ctx.training_loops
    kinds = [e.kind for e in loop.events if e.kind in ("zero_grad", "backward", "step")]
    assert kinds == ["zero_grad", "backward", "step"]
    assert loop.epoch_loop is not None and ctx.text(loop.epoch_loop.iter) == "range(10)"
    assert ctx.flow.training_loop_of(node(ctx, "loss.backward()")) is loop
    assert ctx.flow.is_batch_loop(loop.node)
    assert ctx.flow.is_epoch_loop(loop.epoch_loop)
    assert [ctx.text(c) for c in ctx.flow.iterated_loaders(loop.node)] == ["DataLoader([1, 2], shuffle=True)"]


def test_events_through_a_same_file_helper():
    ctx = ctx_of("""
        import torch
        def step(loss, opt):
            loss.backward()
            opt.step()
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in range(3):
            opt.zero_grad()
            step(model(x).sum(), opt)
    """)
    [loop] = ctx.training_loops
    assert [e.kind for e in loop.events if e.kind in ("zero_grad", "backward", "step")] == \
        ["zero_grad", "backward", "step"]


def test_near_miss_an_evaluation_loop_is_no_training_loop():
    ctx = ctx_of("""
        import torch
        model = torch.nn.Linear(2, 2)
        with torch.no_grad():
            for x in range(3):
                print(model(x))
    """)
    assert ctx.training_loops == []


def test_repeating_loop_through_a_caller():
    ctx = ctx_of("""
        import torch
        def log(v):
            return v.item()
        for epoch in range(100):
            log(torch.zeros(1))
    """)
    loop = ctx.flow.repeating_loop(node(ctx, "v.item()"))
    assert loop is not None and ctx.text(loop.iter) == "range(100)"
    once = ctx_of("""
        import torch
        def log(v):
            return v.item()
        log(torch.zeros(1))
    """)
    assert once.flow.repeating_loop(node(once, "v.item()")) is None  # near-miss: runs once


def test_after_training_through_a_training_call():
    ctx = ctx_of("""
        import torch
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        def fit(data):
            for epoch in range(10):
                for x, y in data:
                    opt.zero_grad()
                    torch.nn.functional.mse_loss(model(x), y).backward()
                    opt.step()
        def main(data):
            before = sorted(data)
            fit(data)
            after = reversed(data)
        def rounds(data):
            for round in range(3):
                fit(data)
                again = tuple(data)
        def other(data):
            alone = set(data)
    """)
    after = ctx.flow.after_training
    assert after(node(ctx, "reversed(data)"))
    assert not after(node(ctx, "sorted(data)"))  # before the training call
    assert not after(node(ctx, "tuple(data)"))  # a loop around it trains again
    assert not after(node(ctx, "set(data)"))  # a function that trains nowhere: unknown


def test_runs_once_follows_the_bound_to_the_literal_one():
    import ast

    ctx = ctx_of("""
        EPOCHS = 1
        def train(n_epochs=1):
            for a in range(n_epochs):
                pass
        train()
        for b in range(EPOCHS):
            pass
        for c in range(0, 1):
            pass
        for d in range(2):
            pass
        for e in range(n):
            pass
        for f in [1]:
            pass
    """)
    loops = {loop.target.id: loop for loop in ast.walk(ctx.tree) if isinstance(loop, ast.For)}
    once = {name for name, loop in loops.items() if ctx.flow.runs_once(loop)}
    # `a`: a parameter's default is not one of the values its call sites pass (`train()` passes none)
    assert once == {"b", "c"}, once
    assert not ctx.flow.runs_once(loops["d"]) and not ctx.flow.runs_once(loops["e"])


# --- the concept alone: ``Loops`` with its collaborators and the cross-file hook ---------

def _loops_of(ctx, external_param_kind=None):
    from torchreview.engine.model.loops import Loops

    f = ctx.flow
    return Loops(ctx.model, calls=f.call_graph, values=f.values, grad=f.grad,
                 external_param_kind=external_param_kind)


def test_loops_alone_ask_the_external_kind_only_of_what_this_file_cannot_tell():
    ctx = ctx_of("""
        def score(predictor, batches):
            for b in batches:
                predictor(b)
    """)
    call = node(ctx, "predictor(b)")
    asked = []

    def callers_pass(name):  # an honest stand-in for ctx.call_paths: main.py passes a model
        asked.append(name.id)
        return "model"

    assert _loops_of(ctx).classify(call) is None  # this file alone: unknown callable
    assert _loops_of(ctx, callers_pass).classify(call) == "forward"
    assert asked == ["predictor"]


def test_loops_alone_training_loop_batch_and_epoch_loops():
    ctx = ctx_of(TRAIN)
    loops = _loops_of(ctx)
    [loop] = loops.training_loops
    assert loops.is_batch_loop(loop.node) and loops.is_epoch_loop(loop.epoch_loop)
    assert not loops.is_batch_loop(loop.epoch_loop)
    assert [ctx.text(i) for i in loops.iterables_of(loop.node)] == ["loader"]
    assert loops.is_training_loader(node(ctx, "DataLoader([1, 2], shuffle=True)"))
    assert loops.raw_batch_names(loop.node, node(ctx, "opt.step()")) == {"x", "y"}
    assert loops.training_loop_of(node(ctx, "loss.backward()")) is loop
    assert ctx.flow.training_loops == ctx.flow.loops.training_loops
