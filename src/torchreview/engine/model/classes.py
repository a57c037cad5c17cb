"""Model concept: the module's classes (which are ``nn.Module``s, datasets, losses).

``ClassHierarchy`` resolves the bases of the module's classes -- also through
other classes of the module, and through classes of other project files by the
project index (``project_class_kind``, one hop), and for a class whose bases cannot be
followed by what it builds (``forward`` plus ``torch.nn`` layers stored in ``__init__``)
-- to tell the ``nn.Module`` subclasses
(``module_classes``), the ``Dataset`` subclasses (``dataset_classes``) and the
modules that compute a loss rather than being the model (``is_loss_class``).
It receives the classes by name (the tree index's table), the names question
(``qualname``) and the tree questions it asks (``enclosing_class``,
``subtree``) in its constructor.
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import Callable

from torchreview.engine import names as N
from torchreview.engine.semantic_common import FunctionNode, parent


PLAIN_ROOTS = frozenset({"builtins.object", "object", "abc.ABC"})


class ClassHierarchy:
    def __init__(self, *, classes: dict, qualname: Callable, enclosing_class: Callable,
                 subtree: Callable, project_class_kind: Callable[[str], str | None] | None = None,
                 project_plain_class: Callable[[str], bool] | None = None) -> None:
        self.classes = classes
        self.qualname = qualname
        self.enclosing_class = enclosing_class
        self.subtree = subtree
        # what a class of another project file is ("model", "loss_fn", "dataset"), by the
        # project index (one hop: that file's own summary); None outside a project
        self.project_class_kind = project_class_kind
        # a class of another project file known to be plain: no kind, and its own bases are
        # only ``object``/``abc.ABC`` (a pix2pix-style ``BaseModel(ABC)``); None outside a project
        self.project_plain_class = project_plain_class
        # a project class of a known kind was met (engine/project_index.py ``summary_from_review``)
        self.project_changed = False
        # class name -> ``is_loss_class`` (asked for each call of a module class while kinds resolve)
        self._losses: dict[str, bool] = {}

    def _project_kind(self, q: str) -> str | None:
        kind = self.project_class_kind(q)  # type: ignore[misc]
        if kind is not None:
            self.project_changed = True
        return kind

    def base_qualnames(self, cls: ast.ClassDef) -> list[str]:
        out = []
        for base in cls.bases:
            q = self.qualname(base)
            if q:
                out.append(q)
        return out

    def _class_is(self, name: str, bases: frozenset[str], seen: set[str] | None = None) -> bool:
        cls = self.classes.get(name)
        if cls is None:
            return False
        seen = seen or set()
        if name in seen:
            return False
        seen.add(name)
        return self._def_is(cls, bases, seen)

    def _def_is(self, cls: ast.ClassDef, bases: frozenset[str], seen: set[str]) -> bool:
        """Is this class definition one of ``bases`` (through its own bases)?"""
        for base in cls.bases:
            q = self.qualname(base)
            if q and (q in bases or (bases is N.MODULE_BASES and q.startswith("torch.nn.")
                                     and q.rsplit(".", 1)[-1][:1].isupper()
                                     and not q.endswith("Parameter"))):
                return True
            if isinstance(base, ast.Name) and self._class_is(base.id, bases, seen):
                return True
            if q and self.project_class_kind is not None and not q.startswith(("torch.", "builtins.")) and \
                    not (isinstance(base, ast.Name) and base.id in self.classes):
                kind = self._project_kind(q)  # `class MoCoTask(BaseTask)`, BaseTask in base.py
                if kind in (("model", "loss_fn") if bases is N.MODULE_BASES else ("dataset",)):
                    return True
        return bases is N.MODULE_BASES and self._built_like_a_module(cls, seen)

    def _built_like_a_module(self, cls: ast.ClassDef, seen: set[str]) -> bool:
        """A class whose bases cannot be followed (a library's trainer model, a chain of
        project bases) but that defines ``forward`` and stores ``torch.nn`` layers (or
        module classes of this file) on ``self`` in its ``__init__``: only an
        ``nn.Module`` can register them."""
        if not cls.bases or all(isinstance(b, ast.Name) and b.id in ("object",) for b in cls.bases):
            return False
        if any((self.qualname(b) or "").startswith("torch.") for b in cls.bases):
            # a base torch defines outside torch.nn (`torch.autograd.Function`: an old-style
            # `Detect(Function)` holding an `nn.Softmax`, pytorch_advanced's SSD) is known, and no Module
            return False
        if any(self._plain_base(b) for b in cls.bases):
            # `class Distiller(BaseModel)` with `class BaseModel(ABC)`: the wrapper of the
            # pix2pix/CycleGAN family keeps networks as attributes and defines `forward`, but
            # derives from a plain class (gan-compression, judged false on held-out 49)
            return False
        body = {s.name: s for s in cls.body if isinstance(s, FunctionNode)}
        init = body.get("__init__")
        if "forward" not in body or init is None:
            return False
        for node in self.subtree(init):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                    isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                    for t in node.targets):
                func = node.value.func
                q = self.qualname(func) or ""
                if q.startswith("torch.nn.") and not q.startswith(("torch.nn.functional.", "torch.nn.init.")) \
                        and q.rsplit(".", 1)[-1][:1].isupper() and not q.endswith("Parameter"):
                    return True
                if isinstance(func, ast.Name) and func.id in self.classes and \
                        self._class_is(func.id, N.MODULE_BASES, seen):
                    return True  # `self.upsample = UpsampleNetwork(...)`, a module class of this file
                if q and not q.startswith(("torch.", "builtins.")) and self.project_class_kind is not None and \
                        not (isinstance(func, ast.Name) and func.id in self.classes) and \
                        self._project_kind(q) == "model":
                    return True  # `self.encoder = Encoder(...)`, a module class of another project file
        return False

    def _plain_base(self, base: ast.AST) -> bool:
        """``base`` is a class known to be plain: one of this file whose own bases are only
        ``object``/``abc.ABC`` (followed through such classes of this file), or such a class
        of another project file (``project_plain_class``)."""
        if isinstance(base, ast.Name) and base.id in self.classes:
            local = self.classes[base.id]
            return all((self.qualname(b) or "") in PLAIN_ROOTS or
                       (isinstance(b, ast.Name) and b.id in self.classes and b.id != base.id and
                        self._plain_base(b)) for b in local.bases)
        q = self.qualname(base)
        return bool(q) and not q.startswith(("torch.", "builtins.")) and self.project_plain_class is not None \
            and self.project_plain_class(q)

    @cached_property
    def module_classes(self) -> frozenset[str]:
        return frozenset(n for n in self.classes if self._class_is(n, N.MODULE_BASES))

    @cached_property
    def dataset_classes(self) -> frozenset[str]:
        return frozenset(n for n in self.classes if self._class_is(n, N.DATASET_BASES))

    def is_module_class(self, name: str) -> bool:
        return name in self.module_classes

    def in_module_class(self, node: ast.AST) -> ast.ClassDef | None:
        cls = self.enclosing_class(node)
        if cls is None:
            return None
        if self.classes.get(cls.name) is not cls:
            # a class defined again under the same name (a notebook's plain `class Model():`
            # in one cell, `class Model(nn.Module)` in another): judge this definition itself
            return cls if self._def_is(cls, N.MODULE_BASES, {cls.name}) else None
        return cls if cls.name in self.module_classes else None

    def is_loss_class(self, name: str) -> bool:
        """An ``nn.Module`` subclass that computes a loss rather than being the
        model: named like one (``DINOLoss``, ``FocalCriterion``), deriving from a
        torch loss class, or whose ``forward`` returns a loss (``return loss``,
        ``return F.cross_entropy(...)``) on every path -- a ``forward`` that returns
        ``loss, prob`` with labels and ``prob`` without is a model computing its loss."""
        hit = self._losses.get(name)
        if hit is None:
            hit = self._losses[name] = self._is_loss_class(name)
        return hit

    def _is_loss_class(self, name: str) -> bool:
        if N.LOSS_CLASS_NAME.search(name):
            return True
        cls = self.classes.get(name)
        if cls is None:
            return False
        for base in cls.bases:
            q = self.qualname(base) or ""
            if q.endswith("Loss") or (isinstance(base, ast.Name) and base.id != name
                                      and base.id in self.module_classes and self.is_loss_class(base.id)):
                return True
        forward = next((s for s in cls.body if isinstance(s, FunctionNode) and s.name == "forward"), None)
        if forward is None:
            return False
        found = False
        for node in self.subtree(forward):  # the nodes of ast.walk(forward), from the one walk
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value.elts[0] if isinstance(node.value, ast.Tuple) and node.value.elts \
                    else node.value
                if (isinstance(value, ast.Name) and N.LOSS_VALUE_NAME.match(value.id)) or \
                        (isinstance(value, ast.Call) and N.is_functional_loss(self.qualname(value.func) or "")):
                    found = True
                else:
                    # another path returns something else (`if labels is not None: return loss, prob
                    # else: return prob`): a model that also computes its loss (CodeXGLUE), not a loss
                    return False
        return found

    @staticmethod
    def replaced_later(cls: ast.ClassDef) -> bool:
        """A class defined at module level (a script or notebook top level) that a
        later module-level ``class`` of the same name replaces before any
        module-level statement in between uses the name: the later definition is
        the one that runs, so the class is judged by it (a tutorial notebook that
        shows a class, then defines it again in full)."""
        module = parent(cls)
        if not isinstance(module, ast.Module):
            return False
        body = module.body
        at = next((i for i, stmt in enumerate(body) if stmt is cls), None)
        if at is None:
            return False
        later = body[at + 1:]
        # only a later class of the same name can replace it: without one, no walk
        if not any(isinstance(stmt, ast.ClassDef) and stmt.name == cls.name for stmt in later):
            return False
        for stmt in later:
            if isinstance(stmt, ast.ClassDef) and stmt.name == cls.name:
                return True
            if _uses_name(stmt, cls.name):
                return False
        return False

    @staticmethod
    def is_outline(cls: ast.ClassDef) -> bool:
        """The class shows an interface -- several methods -- each of them a stub (its
        body only a docstring, ``...``, ``pass``): an outline shown before the real
        code, not code that runs. A lone stub constructor is code (an empty one)."""
        methods = [s for s in cls.body if isinstance(s, FunctionNode)]
        return len(methods) >= 2 and all(_is_stub(m.body) for m in methods) and \
            all(isinstance(s, (*FunctionNode, ast.Pass)) or _is_stub([s]) for s in cls.body)


def _is_stub(body: list[ast.stmt]) -> bool:
    return all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                           and (s.value.value is Ellipsis or isinstance(s.value.value, str)))
               for s in body)


def _uses_name(stmt: ast.stmt, name: str) -> bool:
    """Does running ``stmt`` read ``name`` (function bodies run later: not counted,
    their decorators and defaults are)?"""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, (*FunctionNode, ast.Lambda)):
            args = node.args
            stack.extend([*args.defaults, *(d for d in args.kw_defaults if d is not None)])
            stack.extend(getattr(node, "decorator_list", ()))
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False
