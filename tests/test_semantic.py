"""The semantic model answers the questions rules ask: names, kinds, grad contexts, loops."""

from __future__ import annotations

import ast
import textwrap

from torchreview.engine.context import FileContext
from torchreview.engine.source import SourceFile


def ctx_of(code: str) -> FileContext:
    text = textwrap.dedent(code)
    return FileContext(SourceFile(path="m.py", text=text), ast.parse(text), target_torch=None, has_torch=True)


def names(ctx, ident):
    return [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Name) and n.id == ident]


def test_qualified_names_through_every_import_form():
    ctx = ctx_of("""
        import torch as T
        import torch.nn.functional as F
        from torch import nn, optim
        from torch.utils.data import DataLoader as DL
        from torch.nn.modules.loss import CrossEntropyLoss
        load = T.load
        a = T.load; b = F.relu; c = nn.Linear; d = optim.SGD; e = DL; f = CrossEntropyLoss; g = load
    """)
    got = {t.id: ctx.qualname(v) for node in ctx.tree.body if isinstance(node, ast.Assign)
           for t, v in [(node.targets[0], node.value)] if t.id in "abcdefg"}
    assert got == {"a": "torch.load", "b": "torch.nn.functional.relu", "c": "torch.nn.Linear",
                   "d": "torch.optim.SGD", "e": "torch.utils.data.DataLoader",
                   "f": "torch.nn.CrossEntropyLoss", "g": "torch.load"}


def test_what_names_hold():
    ctx = ctx_of("""
        import torch
        from torch import nn
        class Net(nn.Module):
            def forward(self, x):
                return x
        model = Net().to("cuda")
        opt = torch.optim.AdamW(model.parameters())
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=10)
        loader = torch.utils.data.DataLoader(ds)
        crit = nn.CrossEntropyLoss()
        for x, y in loader:
            out = model(x)
            loss = crit(out, y)
        optimizer = model.configure_optimizers()
        path = "model.pt"
    """)
    kinds = {n: ctx.kind_of(names(ctx, n)[-1]) for n in
             ("model", "opt", "sched", "loader", "crit", "x", "out", "loss", "optimizer", "path")}
    assert kinds == {"model": "model", "opt": "optimizer", "sched": "scheduler", "loader": "loader",
                     "crit": "loss_fn", "x": "tensor", "out": "tensor", "loss": "tensor",
                     "optimizer": "optimizer", "path": None}


def test_grad_contexts_with_decorators_and_callers():
    ctx = ctx_of("""
        import torch
        @torch.no_grad()
        def decorated(m, x):
            return m(x)
        def helper(m, x):
            return m(x)
        def caller(m, x):
            with torch.inference_mode():
                helper(m, x)
            with torch.no_grad():
                with torch.enable_grad():
                    again = m(x)
        def train(m, x):
            return m(x)
    """)
    fns = {f.name: f for f in ast.walk(ctx.tree) if isinstance(f, ast.FunctionDef)}
    ret = lambda name: next(n for n in ast.walk(fns[name]) if isinstance(n, ast.Return)).value  # noqa: E731
    assert ctx.in_grad_disabled(ret("decorated"))
    assert ctx.in_grad_disabled(ret("helper"))  # its only caller runs it under inference_mode
    assert not ctx.in_grad_disabled(ret("train"))
    again = next(n for n in ast.walk(fns["caller"]) if isinstance(n, ast.Assign)).value
    assert not ctx.in_grad_disabled(again)  # enable_grad inside no_grad


def test_training_loop_split_across_helpers_and_event_order():
    ctx = ctx_of("""
        import torch
        def step(model, batch, optimizer):
            loss = model(batch).sum()
            loss.backward()
            optimizer.zero_grad()
            optimizer.step()
        def fit(model, loader, optimizer):
            for epoch in range(3):
                for batch in loader:
                    step(model, batch, optimizer)
    """)
    (loop,) = ctx.training_loops
    assert isinstance(loop.node, ast.For) and loop.function.name == "fit"
    assert [e.kind for e in loop.events if e.kind != "forward"] == ["backward", "zero_grad", "step"]
    assert loop.epoch_loop is not None and loop.epoch_loop.lineno == 9


def test_a_loss_module_is_a_loss_function_not_the_model():
    ctx = ctx_of("""
        import torch
        from torch import nn
        import torch.nn.functional as F

        class DINOLoss(nn.Module):
            def forward(self, s, t):
                return -(t * s).sum()

        class Smoothed(nn.Module):
            def forward(self, logits, y):
                return F.cross_entropy(logits, y, label_smoothing=0.1)

        class Weighted(nn.Module):
            def forward(self, a, b):
                loss = (a - b).abs().mean()
                return loss

        class Net(nn.Module):
            def forward(self, x):
                return x

        a = DINOLoss()
        b = Smoothed()
        c = Weighted()
        net = Net()
    """)
    kinds = {n: ctx.kind_of(names(ctx, n)[0]) for n in ("a", "b", "c", "net")}
    assert kinds == {"a": "loss_fn", "b": "loss_fn", "c": "loss_fn", "net": "model"}


def test_code_after_an_unconditional_jump_is_unreachable():
    from torchreview.engine.semantic_common import is_unreachable

    ctx = ctx_of("""
        def f(x):
            if x:
                raise ValueError(x)
                a = 1
            b = 2
            for i in x:
                continue
                c = 3
            return x
            d = 4
    """)
    got = {n.id: is_unreachable(n) for n in ast.walk(ctx.tree) if isinstance(n, ast.Name) and n.id in "abcd"}
    assert got == {"a": True, "b": False, "c": True, "d": True}


def test_a_wrapper_given_the_loss_and_the_optimizer_trains():
    ctx = ctx_of("""
        import torch

        def log_step(loss, optimizer):
            print(loss, optimizer)

        def train(model, loader, optimizer, loss_scaler):
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss_scaler(loss, optimizer, parameters=model.parameters())
                optimizer.zero_grad()

        def evaluate(model, loader, optimizer):
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(model(x), y)
                log_step(loss, optimizer)
    """)
    loops = ctx.training_loops
    assert [tl.function.name for tl in loops] == ["train"]
    assert [e.kind for e in loops[0].events] == ["forward", "backward", "step", "zero_grad"]
