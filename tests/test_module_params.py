"""The parameter fact (engine/module_params.py) through ctx.autograd.parameter_free:
which module constructions hold no parameters."""

from __future__ import annotations

import ast
import textwrap

from torchreview.engine.context import FileContext
from torchreview.engine.source import SourceFile

CODE = """
import torch
from torch import nn

class Act(nn.Module):
    def forward(self, x):
        return torch.tanh(x)

class Holder(nn.Module):
    def __init__(self, inner, scale=1.0):
        super().__init__()
        self.inner = inner
        self.scale = scale * 2

class Weighted(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

class Learned(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(1))

class Registered(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_parameter("w", None)

class Dynamic(nn.Module):
    def __init__(self, name, layer):
        super().__init__()
        setattr(self, name, layer)

class Grad(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = torch.ones(1, requires_grad=True)

class SubAct(Act):
    pass

class Table:
    def __init__(self):
        self.colors = torch.rand(3, 4)

class FromLibrary(SomeLibraryModule):
    pass

a = Act()
b = Holder(nn.ReLU())
c = Holder(nn.Linear(2, 2))
d = Holder(Table(), scale=3)
e = Weighted()
f = Learned()
g = Registered()
h = Dynamic("x", nn.ReLU())
i = Grad()
j = SubAct()
k = FromLibrary()
l = nn.Dropout(0.1)
m = nn.Conv2d(1, 1, 3)
n = Holder(inner=nn.GELU())
o = Holder(*layers)
"""


def _free() -> dict[str, bool]:
    text = textwrap.dedent(CODE)
    ctx = FileContext(SourceFile(path="m.py", text=text), ast.parse(text), target_torch=None, has_torch=True)
    out = {}
    for node in ctx.tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            out[node.targets[0].id] = ctx.autograd.parameter_free(node.value)
    return out


def test_parameter_free_constructions():
    free = _free()
    assert {name for name, is_free in free.items() if is_free} == {"a", "b", "d", "j", "l", "n"}
    # held parameters, parameterised submodules, unknown bases, dynamic registration, splats
    assert not any(free[name] for name in "cefghikmo")
