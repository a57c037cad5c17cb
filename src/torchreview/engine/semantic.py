"""The semantic model of one module: names, scopes, classes, kinds, devices.

A composition root: each concept is a small class under ``engine/model/`` that
owns its state and receives the concepts it asks in its constructor
(docs/WRITING_RULES.md, "Where the model lives"). ``SemanticModel`` builds them
in order -- the one walk (``TreeIndex``), names and imports, scopes, classes,
kinds, devices -- and answers the public API (``ctx.model.*``) through them.
Everything here is static: the reviewed code is never imported or executed.
"""

from __future__ import annotations

import ast
from functools import cached_property

from torchreview.engine.model.classes import PLAIN_ROOTS, ClassHierarchy
from torchreview.engine.model.devices import Devices
from torchreview.engine.model.kinds import Kinds
from torchreview.engine.model.names import Names
from torchreview.engine.model.scopes import Scopes
from torchreview.engine.model.tree import TreeIndex
from torchreview.engine.semantic_common import (  # noqa: F401  (re-exported)
    FunctionNode, LoopNode, ancestors, call_name, dotted, parent, position,
)


class SemanticModel:
    def __init__(self, tree: ast.Module, project=None, walked: TreeIndex | None = None) -> None:
        self.tree = tree
        # the project index view (engine/project_index.py) for names imported from
        # the project's own modules; None: this module alone
        self.project = project
        # ---- the concepts, each built from the ones before it
        # ``walked``: the tree index of another model of this same tree (its walk
        # depends on the tree alone; its names concept is told again, ``replay``)
        index = self.index = walked if walked is not None else TreeIndex(tree)
        names = self.names = Names(tree, classes=index.classes, functions=index.functions)
        if walked is not None:
            index.replay(names)
        else:
            index.walk(names)
        names.settle(index.binding_sites, project)
        bindings: dict[ast.AST, dict[str, str]] = {}  # kinds fills it, scopes reads it
        scopes = self.scopes = Scopes(tree, binding_sites=index.binding_sites, bindings=bindings)
        hierarchy = self.hierarchy = ClassHierarchy(
            classes=index.classes, qualname=names.qualname, enclosing_class=scopes.enclosing_class,
            subtree=index.subtree,
            project_class_kind=(lambda q: getattr(project.class_summary(q), "kind", None))
            if project is not None else None,
            project_plain_class=(lambda q: _plain_summary(project.class_summary(q)))
            if project is not None else None)
        kinds = self.kinds = Kinds(tree, index=index, names=names, scopes=scopes, hierarchy=hierarchy,
                                   bindings=bindings, project=project)
        self.devices = Devices(qualname=names.qualname, kind_of=kinds.kind_of, assignments=scopes.assignments,
                               enclosing_class=scopes.enclosing_class, class_attrs=kinds.class_attrs,
                               calls=index.calls, binding_sites=index.binding_sites, tree=tree)
        # ---- the public API (ctx.model.*), answered by the concepts; bound once, so
        # the hot questions (qualname, kind_of) cost no extra call
        # the tree index
        self.nodes_by_type = index.nodes_by_type
        self.calls, self.calls_by_name = index.calls, index.calls_by_name
        self.loops, self.attribute_names = index.loops, index.attribute_names
        self.classes, self.functions = index.classes, index.functions
        self.subtree, self.own_nodes = index.subtree, index.own_nodes
        # the definition of a class a use sees (the last one above a module-level use, in a
        # module that redefines it: notebook cells); `classes[name]` otherwise
        self.class_reaching = lambda name, node: index.class_reaching(
            name, node, scopes.enclosing_function(node) is None)
        # names and imports
        self.aliases, self.star_imports, self.imported_modules = names.aliases, names.star_imports, \
            names.imported_modules
        self.qualname, self.call_qualname = names.qualname, names.call_qualname
        self.imports_module, self.module_alias = names.imports_module, names.module_alias
        # scopes
        self.enclosing_function, self.enclosing_class = scopes.enclosing_function, scopes.enclosing_class
        self.scope_of, self.assignments = scopes.scope_of, scopes.assignments
        self.in_compat_branch = scopes.in_compat_branch
        # classes
        self.base_qualnames, self.is_module_class = hierarchy.base_qualnames, hierarchy.is_module_class
        self.in_module_class, self.is_loss_class = hierarchy.in_module_class, hierarchy.is_loss_class
        self.class_replaced_later, self.is_outline_class = hierarchy.replaced_later, hierarchy.is_outline
        # kinds
        self.kind_of, self.holds = kinds.kind_of, kinds.holds
        self.returned_kind, self.returned_item_kinds = kinds.returned_kind, kinds.returned_item_kinds
        self.tensor_by_evidence, self.is_forward_input = kinds.tensor_by_evidence, kinds.is_forward_input
        self.param_evidence = kinds.param_evidence
        # devices
        self.device_kind, self.to_call_device = self.devices.device_kind, self.devices.to_call_device
        kinds.resolve()

    @cached_property
    def called_qualnames(self) -> frozenset[str]:
        """The qualified names of the module's callees (``qualname(call.func)`` of every call
        that has one), from one pass over the calls: a question about a few callees asks it
        first, and a module that calls none of them needs no pass of its own."""
        qualname = self.qualname
        return frozenset(q for q in map(qualname, [call.func for call in self.calls]) if q)

    @cached_property
    def called_methods(self) -> frozenset[str]:
        """The method names the module calls (``x.half()``: "half"), once per file."""
        return frozenset(call.func.attr for call in self.calls if isinstance(call.func, ast.Attribute))

    @cached_property
    def keyword_names(self) -> frozenset[str | None]:
        """Every keyword name of the module (a call's ``device=``, a class statement's
        ``metaclass=``; None for ``**kwargs``), from the one walk: a superset of the
        keywords its calls are given."""
        return frozenset(kw.arg for kw in self.nodes_by_type.get(ast.keyword, ()))

    @property
    def module_classes(self) -> frozenset[str]:
        """Names of the module's ``nn.Module`` subclasses (``ClassHierarchy``)."""
        return self.hierarchy.module_classes

    @property
    def dataset_classes(self) -> frozenset[str]:
        """Names of the module's ``Dataset`` subclasses (``ClassHierarchy``)."""
        return self.hierarchy.dataset_classes

    @property
    def cuda_evidence(self) -> ast.AST | None:
        """The first call showing this module runs on CUDA (``Devices.cuda_evidence``)."""
        return self.devices.cuda_evidence


def _plain_summary(summary) -> bool:
    """A project class summary of no kind whose own bases are only ``object``/``abc.ABC``."""
    return summary is not None and summary.kind is None and not summary.metaclass and \
        all(b in PLAIN_ROOTS for b in summary.bases)
