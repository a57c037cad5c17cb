"""What a name or expression holds (model, optimizer, loader, tensor, ...)."""

from __future__ import annotations

import ast

from torchreview.engine import names as N
from torchreview.engine.semantic_common import (  # noqa: F401  (re-exported)
    ancestors, call_name, dotted, FunctionNode, LoopNode, parent, position, _BUILTINS,
    _CHILD_FIELDS, _child_fields, _COMPAT_ERRORS, _CONFLICT, _CONTAINER_TYPES, _INDEXED,
    _INERT_VALUES, _is_cuda_literal, _LEAF_TOKENS, _LEAF_TYPES, _MISSING, _NESTED_SCOPES,
    _probes_version, _SCALAR_FIELDS, _SCOPE_TYPES, _subclasses, _TOKEN_TYPES, _VERSION_WORDS,
)


class KindsMixin:
    """Part of :class:`torchreview.engine.semantic.SemanticModel`."""

    # ------------------------------------------------------------ kinds
    def kind_of(self, node: ast.AST | None, scope: ast.AST | None = None) -> str | None:
        """What an expression holds: model, optimizer, loader, scheduler, scaler,
        loss_fn, tensor, parameter, dataset, sampler, device -- or None."""
        if node is None:
            return None
        if scope is None:
            scope = self.scope_of(node)
        if isinstance(node, ast.Name):
            return self._lookup(node.id, scope)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                cls = self.enclosing_class(scope)
                if cls is not None:
                    kind = self._class_attrs.get(cls, {}).get(node.attr)
                    if kind is not None:
                        return kind or None if kind != _CONFLICT else None
                    if any(isinstance(s, FunctionNode) and s.name == node.attr for s in cls.body):
                        return None  # ``self.build_model`` is a method, not a model
                return N.kind_from_name(node.attr)
            base = self.kind_of(node.value, scope)
            if base in ("tensor", "parameter") and node.attr in ("T", "mT", "H", "data", "grad", "real", "imag"):
                return "tensor"
            if base == "model" and node.attr == "module":
                return "model"
            return None
        if isinstance(node, ast.Call):
            return self._call_kind(node, scope)
        if isinstance(node, ast.BinOp):
            # walk down left-nested chains (a + b + c + ...) without deep recursion
            right_kinds = []
            probe: ast.AST = node
            while isinstance(probe, ast.BinOp) and len(right_kinds) < 64:
                right_kinds.append(probe.right)
                probe = probe.left
            if isinstance(probe, ast.BinOp):
                return None
            left = self.kind_of(probe, scope)
            right = next((k for k in (self.kind_of(r, scope) for r in right_kinds)
                          if k in ("tensor", "parameter")), None)
            if "tensor" in (left, right) or "parameter" in (left, right):
                return "tensor"
            return None
        if isinstance(node, ast.UnaryOp):
            depth = 0
            while isinstance(node, ast.UnaryOp) and depth < 64:
                node, depth = node.operand, depth + 1
            if isinstance(node, ast.UnaryOp):
                return None
            return "tensor" if self.kind_of(node, scope) in ("tensor", "parameter") else None
        if isinstance(node, ast.Subscript):
            return "tensor" if self.kind_of(node.value, scope) in ("tensor", "parameter") else None
        if isinstance(node, ast.Compare) and len(node.comparators) == 1 and \
                isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
            # ``preds == y`` / ``x > 0`` on a tensor is an element-wise (bool) tensor
            sides = (self.kind_of(node.left, scope), self.kind_of(node.comparators[0], scope))
            return "tensor" if "tensor" in sides or "parameter" in sides else None
        if isinstance(node, ast.Await):
            return None
        return None

    def _lookup(self, name: str, scope: ast.AST) -> str | None:
        probe: ast.AST | None = scope
        while probe is not None:
            table = self._bindings.get(probe)
            if table is not None and name in table:
                kind = table[name]
                if kind == "" and (id(probe), name) in self._call_results:
                    # only ever assigned the result of a call we cannot resolve
                    # (`optimizer = model.configure_optimizers()`): trust the name
                    return N.kind_from_name(name)
                return kind if kind and kind != _CONFLICT else None
            if probe is self.tree:
                break
            probe = self.scope_of(probe)
        if name in self.aliases or name in self.classes or name in self.functions:
            return None
        return N.kind_from_name(name)

    def _call_kind(self, call: ast.Call, scope: ast.AST) -> str | None:
        func = call.func
        q = self.qualname(func)
        first = call.args[0] if call.args else None
        if q:
            if q in ("torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel",
                     "torch.compile", "torch.jit.script", "torch.jit.trace",
                     "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "builtins.iter"):
                return self.kind_of(first, scope) if first is not None else None
            kind = N.kind_from_call_qualname(q)
            if kind:
                return kind
            if self.project is not None:
                found = self.project.lookup_qualname(q)
                if found is not None:  # a class or function of another project module
                    return getattr(found, "kind", None) or getattr(found, "returns", None)
        if isinstance(func, ast.Name):
            if func.id in self.module_classes:
                return "loss_fn" if self.is_loss_class(func.id) else "model"
            if func.id in self.dataset_classes:
                return "dataset"
            if func.id in self.functions and func.id not in self.classes:
                return self.returned_kind(func.id)
            if func.id in self.classes:
                return None
        elif isinstance(func, ast.Attribute):
            receiver = self.kind_of(func.value, scope)
            if receiver == "model":
                if func.attr in N.MODEL_RETURNING_METHODS:
                    return "model"
                return "tensor" if func.attr == "forward" else None
            if receiver in ("tensor", "parameter"):
                return None if func.attr in N.TENSOR_NON_TENSOR_METHODS else "tensor"
            if receiver == "loss_fn" and func.attr == "forward":
                return "tensor"
            if receiver == "scaler" and func.attr == "scale":
                return "tensor"
            if func.attr == "from_pretrained" and q is None and N.PRETRAINED_MODEL_CLASS.match(
                    func.value.id if isinstance(func.value, ast.Name) else ""):
                return "model"  # SomeModelForX.from_pretrained(...) of a class we cannot resolve
        if q is None and isinstance(func, ast.Name) and self.star_imports and func.id not in self.classes \
                and func.id not in self.functions and func.id not in self.aliases:
            # a name that can only come from `from m import *`: ask each such module
            for module in self.star_imports:
                kind = N.kind_from_call_qualname(N.canonical(f"{module}.{func.id}"))
                if kind in ("optimizer", "scheduler", "loader", "scaler", "loss_fn"):
                    return kind
        # Calling a model or a loss function returns a tensor.
        if q is None and self.kind_of(func, scope) in ("model", "loss_fn"):
            return "tensor"
        return None

    def returned_kind(self, name: str) -> str | None:
        """What a module-level/nested function of this module returns, when every
        ``return <value>`` of its own body agrees (``def build(): return
        torch.optim.Adam(...)`` -> optimizer). Recursion is cut (a function
        being judged returns None) and so is ambiguity (two definitions)."""
        defs = self.functions.get(name, ())
        if len(defs) != 1 or isinstance(parent(defs[0]), ast.ClassDef):
            return None
        func = defs[0]
        if id(func) in self._returning:
            return None
        self._returning.add(id(func))
        try:
            kinds = set()
            for node in self.own_nodes(func):
                if isinstance(node, ast.Return) and node.value is not None:
                    kinds.add(self.kind_of(node.value, func))
            return kinds.pop() if len(kinds) == 1 else None
        finally:
            self._returning.discard(id(func))

    def is_loss_class(self, name: str) -> bool:
        """An ``nn.Module`` subclass that computes a loss rather than being the
        model: named like one (``DINOLoss``, ``FocalCriterion``), deriving from a
        torch loss class, or whose ``forward`` returns a loss (``return loss``,
        ``return F.cross_entropy(...)``)."""
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
        for node in self.subtree(forward):  # the nodes of ast.walk(forward), from the one walk
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value.elts[0] if isinstance(node.value, ast.Tuple) and node.value.elts \
                    else node.value
                if isinstance(value, ast.Name) and N.LOSS_VALUE_NAME.match(value.id):
                    return True
                if isinstance(value, ast.Call) and N.is_functional_loss(self.qualname(value.func) or ""):
                    return True
        return False

    def holds(self, node: ast.AST, kind: str) -> bool:
        return self.kind_of(node) == kind
