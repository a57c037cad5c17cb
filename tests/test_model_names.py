"""Model concept: names and imports (qualified names through every import form)."""

from __future__ import annotations

import ast

from model_snippets import ctx_of, node


def test_aliases_and_from_imports_resolve_to_canonical_names():
    ctx = ctx_of("""
        import torch as T
        from torch import nn
        from torch.nn import functional as F
        import torch.distributed as dist
        a = T.load("m.pt")
        b = nn.Linear(2, 2)
        c = F.relu(b)
        dist.init_process_group("nccl")
    """)
    assert ctx.call_qualname(node(ctx, 'T.load("m.pt")')) == "torch.load"
    assert ctx.call_qualname(node(ctx, "nn.Linear(2, 2)")) == "torch.nn.Linear"
    assert ctx.call_qualname(node(ctx, "F.relu(b)")) == "torch.nn.functional.relu"
    assert ctx.call_qualname(node(ctx, 'dist.init_process_group("nccl")')) == \
        "torch.distributed.init_process_group"


def test_a_module_level_alias_of_a_torch_name_is_followed():
    ctx = ctx_of("""
        import torch
        load = torch.load
        x = load("m.pt")
    """)
    assert ctx.call_qualname(node(ctx, 'load("m.pt")')) == "torch.load"


def test_near_miss_a_local_name_that_shadows_nothing_stays_local():
    ctx = ctx_of("""
        import torch
        def load(path):
            return open(path).read()
        x = load("m.pt")
        y = torch.nn
    """)
    assert ctx.call_qualname(node(ctx, 'load("m.pt")')) != "torch.load"
    assert ctx.qualname(node(ctx, "torch.nn", ast.Attribute)) == "torch.nn"


def test_imports_and_module_aliases():
    ctx = ctx_of("""
        import torch as T
        import lightning.pytorch as pl
        from torch.utils.data import DataLoader
    """)
    assert ctx.model.imports_module("lightning")
    assert not ctx.model.imports_module("accelerate")
    assert ctx.model.module_alias("torch") == "T"
    assert ctx.model.aliases["DataLoader"].endswith("torch.utils.data.DataLoader")


def test_calls_are_indexed_by_their_last_name():
    ctx = ctx_of("""
        import torch
        opt = torch.optim.SGD([], lr=0.1)
        opt.step()
        opt.zero_grad()
        opt.step()
    """)
    assert len(ctx.model.calls_by_name["step"]) == 2
    assert len(ctx.model.calls_by_name["zero_grad"]) == 1
    assert "step" in ctx.model.attribute_names


# --- the concept alone: ``Names`` fed by the tree index's walk ---------------------

def _names_of(code: str, project=None):
    import textwrap

    from torchreview.engine.model.names import Names
    from torchreview.engine.model.tree import TreeIndex

    tree = ast.parse(textwrap.dedent(code))
    index = TreeIndex(tree)
    names = Names(tree, classes=index.classes, functions=index.functions)
    index.walk(names)
    names.settle(index.binding_sites, project)
    return tree, names


def test_names_alone_module_aliases_settle_whatever_the_walk_order():
    tree, names = _names_of("""
        import torch
        HALF = torch.float16
        load = torch.load
        x = load("m.pt")
    """)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert names.aliases["HALF"] == "torch.float16"
    assert names.call_qualname(calls[0]) == "torch.load"
    assert names.qualname(ast.parse("HALF", mode="eval").body) == "torch.float16"


def test_names_alone_a_local_definition_shadows_a_builtin():
    tree, names = _names_of("""
        def len(x):
            return 0
        print(len([1]))
    """)
    calls = {n.func.id: n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert names.call_qualname(calls["print"]) == "builtins.print"
    assert names.call_qualname(calls["len"]) is None  # the module's own len, not the builtin


def test_names_alone_star_imports_are_recorded_and_asked_of_the_project():
    class Project:  # an honest stand-in for the project index view: one module re-exports torch.nn as nn
        def star_torch_aliases(self, module):
            return {"nn": "torch.nn"} if module == "common" else {}

        def star_definitions(self, module):  # ... and defines a public helper
            return ("build_head",) if module == "common" else ()

    tree, names = _names_of("""
        from common import *
        layer = nn.Linear(2, 2)
        head = build_head(layer)
    """, project=Project())
    assert names.star_imports == ["common"]
    calls = {ast.unparse(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert names.call_qualname(calls["nn.Linear"]) == "torch.nn.Linear"
    assert names.call_qualname(calls["build_head"]) == "common.build_head"  # as `from common import build_head`
    _, alone = _names_of("from common import *\nlayer = nn.Linear(2, 2)\n")
    assert "nn" not in alone.aliases  # near-miss: no project, nothing known about the star import
