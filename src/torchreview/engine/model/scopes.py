"""Model concept: scopes (which scope binds a name, and what it is assigned there).

``Scopes`` answers where a node sits (``enclosing_function``,
``enclosing_class``, ``scope_of``, ``in_compat_branch``) and what a Name or
``self.attr`` is assigned in the scope that binds it (``assignments``). It reads
the tree index's ``binding_sites`` and, for which names a scope binds, the
table the kinds concept fills (``bindings``: scope -> name -> kind; a ``for``
target or an unpacked helper return binds a name too). It asks no other concept.
"""

from __future__ import annotations

import ast
from functools import cached_property

from torchreview.engine.semantic_common import (
    FunctionNode, NearestAbove, ancestors, parent, _COMPAT_ERRORS, _probes_version,
)


def _scope_finder(tree: ast.Module):
    """``scope_of`` of one tree: the innermost function or lambda around a node, else the
    module (a closure over the tree, not over ``Scopes``: no cycle)."""
    def scope_of(node: ast.AST) -> ast.AST:
        for anc in ancestors(node):
            if isinstance(anc, (*FunctionNode, ast.Lambda)):
                return anc
        return tree
    return scope_of


_SCOPE_NODES = (*FunctionNode, ast.Lambda)


class Scopes:
    def __init__(self, tree: ast.Module, *, binding_sites: list, bindings: dict) -> None:
        self.tree = tree
        # where a node sits never changes once the tree is walked: each answer is kept
        # (``NodeMemo``: a known node costs no Python call; rules ask these of the same
        # nodes many times), and so are those of the ancestors climbed to find it
        # (the same answers as the definitions below)
        self.enclosing_function = NearestAbove(FunctionNode, None, itself=False).__getitem__
        self.enclosing_class = NearestAbove((ast.ClassDef,), None, itself=True).__getitem__
        self.scope_of = NearestAbove(_SCOPE_NODES, tree, itself=False).__getitem__
        self._binding_sites = binding_sites
        self._bindings = bindings

    @staticmethod
    def enclosing_function(node: ast.AST) -> ast.AST | None:
        for anc in ancestors(node):
            if isinstance(anc, FunctionNode):
                return anc
        return None

    @staticmethod
    def enclosing_class(node: ast.AST) -> ast.ClassDef | None:
        probe: ast.AST | None = node
        while probe is not None:
            if isinstance(probe, ast.ClassDef):
                return probe
            probe = parent(probe)
        return None

    def scope_of(self, node: ast.AST) -> ast.AST:  # replaced per instance (``__init__``)
        return _scope_finder(self.tree)(node)

    @staticmethod
    def in_compat_branch(node: ast.AST) -> bool:
        """``node`` runs only on some library versions: inside either branch of an
        ``if``/ternary whose test probes a version (``torch.__version__``,
        ``version.parse``, ``TORCH_GE_2_4``, ``is_torch_greater...``) or an API
        (``hasattr``/``getattr``), or inside a ``try`` whose handlers catch
        ``ImportError``/``AttributeError``/``TypeError``, ``Exception`` or everything
        (a bare ``except:``) (fallback imports)."""
        for anc in ancestors(node):
            if isinstance(anc, (ast.If, ast.IfExp)) and _probes_version(anc.test):
                return True
            if isinstance(anc, ast.Try):
                for handler in anc.handlers:
                    if handler.type is None:
                        return True  # a bare `except:` catches the ImportError of a fallback too
                    for sub in ast.walk(handler.type):
                        if isinstance(sub, ast.Name) and sub.id in _COMPAT_ERRORS:
                            return True
        return False

    # ------------------------------------------------------------ assignments
    @cached_property
    def _assigned(self) -> dict[tuple[ast.AST, str], list[tuple[ast.AST | None, str | None]]]:
        table: dict[tuple[ast.AST, str], list[tuple[ast.AST | None, str | None]]] = {}
        for scope, name, value, how in self._binding_sites:
            if name != "for":
                table.setdefault((scope, name), []).append((value, how))
        return table

    @cached_property
    def _assigned_self(self) -> dict[tuple[int, str], list[ast.AST]]:
        """``self.attr`` assignments by (enclosing class, attr), in table order: one
        lookup per question instead of a scan of every assignment (large files)."""
        table: dict[tuple[int, str], list[ast.AST]] = {}
        for (scope, name), entries in self._assigned.items():
            if name.startswith("self."):
                values = table.setdefault((id(self.enclosing_class(scope)), name[5:]), [])
                values.extend(v for v, _ in entries if v is not None)
        return table

    def assignments(self, node: ast.AST) -> tuple[list[ast.AST], ast.AST | None]:
        """What a Name (or ``self.attr``) is assigned in the scope that binds it:
        ``(assigned expressions, function)`` where ``function`` is set when the
        name is a parameter of that function. Unknown names give ``([], None)``."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            cls = self.enclosing_class(node)
            return list(self._assigned_self.get((id(cls), node.attr), ())), None
        if not isinstance(node, ast.Name):
            return [], None
        probe: ast.AST | None = self.scope_of(node)
        while probe is not None:
            entries = self._assigned.get((probe, node.id))
            if entries or node.id in self._bindings.get(probe, {}):
                entries = entries or []
                func = probe if any(how == "param" for _, how in entries) else None
                return [v for v, _ in entries if v is not None], func
            if probe is self.tree:
                break
            probe = self.scope_of(probe)
        return [], None
