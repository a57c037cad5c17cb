"""Model concept: the module's classes (nn.Module and Dataset subclasses, loss
classes), asked of a ``ClassHierarchy`` built with only the questions it needs."""

from __future__ import annotations

import ast

from model_snippets import ctx_of, node
from torchreview.engine.model.classes import ClassHierarchy

CODE = """
import torch
from torch import nn
from torch.utils.data import Dataset

class Block(nn.Module):
    def forward(self, x):
        return x

class Net(Block):
    def forward(self, x):
        return self.head(x)

class FocalCriterion(nn.Module):
    def forward(self, p, y):
        return p

class Scored(nn.Module):
    def forward(self, p, y):
        loss = (p - y).abs().mean()
        return loss, p

class Smooth(nn.CrossEntropyLoss):
    pass

class Pairs(Dataset):
    def __getitem__(self, i):
        return i

class Plain:
    pass
"""


def _hierarchy(ctx) -> ClassHierarchy:
    m = ctx.model
    return ClassHierarchy(classes=m.classes, qualname=m.qualname, enclosing_class=m.enclosing_class,
                          subtree=m.subtree)


def test_module_and_dataset_classes_through_local_bases():
    h = _hierarchy(ctx_of(CODE))
    assert h.module_classes == {"Block", "Net", "FocalCriterion", "Scored", "Smooth"}
    assert h.dataset_classes == {"Pairs"}
    assert h.is_module_class("Net") and not h.is_module_class("Plain")


def test_loss_classes_by_name_base_or_what_forward_returns():
    h = _hierarchy(ctx_of(CODE))
    assert h.is_loss_class("FocalCriterion")  # named like one
    assert h.is_loss_class("Smooth")  # derives from a torch loss
    assert h.is_loss_class("Scored")  # forward returns ``loss`` first
    assert not h.is_loss_class("Net") and not h.is_loss_class("Block")  # near-misses: models


def test_in_module_class_and_base_qualnames():
    ctx = ctx_of(CODE)
    h = _hierarchy(ctx)
    assert h.in_module_class(node(ctx, "self.head(x)")).name == "Net"
    assert h.in_module_class(node(ctx, "i", ast.Name)) is None  # a Dataset is no nn.Module
    assert h.base_qualnames(ctx.model.classes["Smooth"]) == ["torch.nn.CrossEntropyLoss"]
    assert h.base_qualnames(ctx.model.classes["Net"]) == []  # a local base has no qualified name


def test_the_semantic_model_answers_through_its_hierarchy():
    ctx = ctx_of(CODE)
    assert ctx.model.module_classes is ctx.model.hierarchy.module_classes
    assert ctx.model.is_loss_class("Scored")


REDEFINED = """
from torch import nn

class A(nn.Module):
    def __init__(self):
        ...
    def forward(self, x):
        ...

class A(nn.Module):
    def __init__(self):
        self.x = 1

class B:
    pass

b = B()

class B:
    def __init__(self):
        pass

class C:
    @staticmethod
    def make(x=B):
        return x

class C:
    pass
"""


def test_replaced_later_and_outline():
    ctx = ctx_of(REDEFINED)  # the model links each node to its parent
    a1, a2, b1, b2, c1, c2 = [n for n in ctx.tree.body if isinstance(n, ast.ClassDef)]
    assert ctx.model.class_replaced_later(a1) and ctx.model.is_outline_class(a1)
    assert ClassHierarchy.replaced_later(a1) and not ClassHierarchy.replaced_later(a2)
    assert not ClassHierarchy.replaced_later(b1)  # `b = B()` uses the first definition
    assert ClassHierarchy.replaced_later(c1)  # a default naming B is not a use of C
    assert ClassHierarchy.is_outline(a1) and not ClassHierarchy.is_outline(a2)
    assert not ClassHierarchy.is_outline(b2)  # one stub constructor: an empty constructor, not an outline


BUILT = """
import torch
from torch import nn
from trainer import TrainerModel
from configlib import Config

class Upsample(nn.Module):
    def forward(self, x):
        return x

class Vocoder(TrainerModel):
    def __init__(self, config):
        super().__init__()
        self.upsample = Upsample()
        self.rnn = nn.GRU(4, 4)

    def forward(self, x):
        return self.rnn(self.upsample(x))

class Settings(Config):
    def __init__(self):
        super().__init__()
        self.layers = 4

    def forward(self, x):
        return x

class Holder(TrainerModel):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(2, 2)
"""


def test_a_class_of_an_unknown_base_is_a_module_by_what_it_builds():
    """coqui TTS: `Wavernn(BaseVocoder)` -> `BaseTrainerModel(TrainerModel)` of the `trainer`
    library (bases out of sight): `forward` plus `torch.nn` layers (or module classes of the
    file) stored in `__init__` make it a module (TR207 on its `inference` judged false);
    a config class with `forward` but no layers, or layers without `forward`, is not."""
    h = _hierarchy(ctx_of(BUILT))
    assert h.module_classes == {"Upsample", "Vocoder"}
