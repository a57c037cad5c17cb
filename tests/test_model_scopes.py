"""Model concept: scopes (which scope binds a name, what it is assigned there,
enclosing functions and classes, nodes that run in a body itself)."""

from __future__ import annotations

import ast

from model_snippets import ctx_of, node


CODE = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        h = self.fc(x)
        def inner(y):
            z = y * 2
            return z
        return inner(h)

def train(model):
    x = torch.zeros(2)
    return model(x)
"""


def test_enclosing_function_and_class():
    ctx = ctx_of(CODE)
    z = node(ctx, "z", ast.Name, index=0)
    assert ctx.enclosing_function(z).name == "inner"
    assert ctx.enclosing_class(node(ctx, "self.fc(x)")).name == "Net"
    assert ctx.in_module_class(node(ctx, "self.fc(x)"))
    assert not ctx.in_module_class(node(ctx, "model(x)"))


def test_scope_of_and_assignments():
    ctx = ctx_of(CODE)
    x_in_train = node(ctx, "x", ast.Name)  # the last x: model(x) in train
    assert ctx.model.scope_of(x_in_train).name == "train"
    values, func = ctx.model.assignments(x_in_train)
    assert [ctx.text(v) for v in values] == ["torch.zeros(2)"] and func is None
    # a parameter: no assignment, the function that receives it
    model = node(ctx, "model", ast.Name)
    values, func = ctx.model.assignments(model)
    assert values == [] and func.name == "train"


def test_own_nodes_leave_out_nested_bodies():
    ctx = ctx_of(CODE)
    forward = ctx.model.functions["forward"][0]
    own = {ctx.text(n) for n in ctx.model.own_nodes(forward) if isinstance(n, ast.Assign)}
    assert own == {"h = self.fc(x)"}  # z = y * 2 belongs to inner
    every = {ctx.text(n) for n in ctx.model.subtree(forward) if isinstance(n, ast.Assign)}
    assert every == {"h = self.fc(x)", "z = y * 2"}


def test_module_classes_resolve_bases_indirectly():
    ctx = ctx_of("""
        import torch.nn as nn
        class Base(nn.Module):
            pass
        class Child(Base):
            pass
        class Plain:
            pass
    """)
    assert {"Base", "Child"} <= set(ctx.model.module_classes)
    assert "Plain" not in ctx.model.module_classes


# --- the concept alone: ``Scopes`` over the walk's binding sites -------------------

def test_scopes_alone_read_binding_sites_and_the_shared_bindings_table():
    from torchreview.engine.model.scopes import Scopes

    ctx = ctx_of(CODE)
    index = ctx.model.index
    bindings: dict = {}
    scopes = Scopes(ctx.tree, binding_sites=index.binding_sites, bindings=bindings)
    h_read = node(ctx, "h", ast.Name)  # inner(h)
    values, func = scopes.assignments(h_read)
    assert [ctx.text(v) for v in values] == ["self.fc(x)"] and func is None
    fc = node(ctx, "self.fc", ast.Attribute, index=-1)
    assert [ctx.text(v) for v in scopes.assignments(fc)[0]] == ["nn.Linear(2, 2)"]
    # a name no binding site assigns is bound only when the kinds' table says its scope binds it
    # (a ``for`` target, an unpacked helper return): the shared table decides
    loose = ctx_of("""
        a = 1
        def f(pairs):
            for a, b in pairs:
                print(a)
    """)
    a_read = node(loose, "a", ast.Name)
    table: dict = {}
    alone = Scopes(loose.tree, binding_sites=loose.model.index.binding_sites, bindings=table)
    assert [loose.text(v) for v in alone.assignments(a_read)[0]] == ["1"]  # not known bound in f: the global
    table[alone.scope_of(a_read)] = {"a": ""}
    assert alone.assignments(a_read) == ([], None)  # bound in f (the loop target): nothing followable
    assert loose.model.assignments(a_read) == ([], None)  # the model's kinds filled its table so
    assert alone.scope_of(a_read).name == "f"
    assert Scopes.enclosing_function(a_read).name == "f" and Scopes.enclosing_class(a_read) is None


def test_in_compat_branch():
    ctx = ctx_of("""
        import torch
        if torch.__version__ >= "2.0":
            a = torch.compile
        try:
            from torch.amp import GradScaler
        except ImportError:
            GradScaler = None
        b = torch.zeros(1)
    """)
    assert ctx.model.in_compat_branch(node(ctx, "torch.compile", ast.Attribute))
    assert ctx.model.in_compat_branch(node(ctx, "from torch.amp import GradScaler"))
    assert not ctx.model.in_compat_branch(node(ctx, "torch.zeros(1)"))
