"""Model concept: modes (train/eval reached where a model runs)."""

from __future__ import annotations

import ast

from model_snippets import ctx_of, node


def test_mode_at_and_eval_reaches():
    ctx = ctx_of("""
        import torch
        model = torch.nn.Linear(2, 2)
        def evaluate(x):
            model.eval()
            a = model(x)
            model.train()
            b = model(x)
        def plain(x):
            c = model(x)
    """)
    assert ctx.flow.mode_at(node(ctx, "a = model(x)")) == "eval"
    assert ctx.flow.mode_at(node(ctx, "b = model(x)")) == "train"
    assert ctx.flow.mode_at(node(ctx, "c = model(x)")) is None
    assert ctx.flow.eval_reaches(node(ctx, "model(x)", index=0))
    # near-miss: no eval() anywhere before this call (its function is called by nobody)
    assert not ctx.flow.eval_reaches(node(ctx, "model(x)", index=2))


CALLED_AFTER_EVAL = """
import torch
def predict(net, x):
    return net(x)
def main():
    net = torch.nn.Linear(2, 2)
    net.eval()
    predict(net, torch.zeros(2))
"""


def test_eval_set_by_every_caller_reaches_the_helper():
    ctx = ctx_of(CALLED_AFTER_EVAL)
    assert ctx.flow.mode_calls_before(node(ctx, "net(x)"), "eval")


def test_near_miss_one_caller_without_eval():
    ctx = ctx_of(CALLED_AFTER_EVAL + """
def other():
    predict(torch.nn.Linear(2, 2), torch.zeros(2))
""")
    assert not ctx.flow.mode_calls_before(node(ctx, "net(x)"), "eval")


# --- the concept alone: ``Modes`` over the call graph, events and values ------------------

def test_modes_alone_eval_targets_and_values_built_after_eval():
    from torchreview.engine.model.modes import Modes

    ctx = ctx_of("""
        import torch
        class Runner:
            def __init__(self):
                net = torch.nn.Linear(2, 2)
                net.eval()
                self.model = net.to("cpu")
            def predict(self, x):
                return self.model(x)
        def plain():
            other = torch.nn.Linear(2, 2)
            return other(torch.zeros(2))
    """)
    f = ctx.flow
    modes = Modes(ctx.model, calls=f.call_graph, loops=f.loops, values=f.values)
    assert modes.eval_targets == {"net"}
    assert modes.eval_reaches(node(ctx, "self.model(x)"))  # stored after eval()
    assert not modes.eval_reaches(node(ctx, "other(torch.zeros(2))"))  # near-miss: never eval()-ed
    assert modes.called_model(node(ctx, "self.model(x)")) is node(ctx, "self.model", ast.Attribute)
    assert modes.mode_at(node(ctx, 'self.model = net.to("cpu")')) == "eval"
    assert modes.is_model_call(node(ctx, "other(torch.zeros(2))"))
