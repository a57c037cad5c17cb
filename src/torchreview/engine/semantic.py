"""The semantic model of one module: names, scopes, grad contexts, what names hold.

Built in one walk over the tree; rules ask it questions instead of re-walking.
Everything here is static: the reviewed code is never imported or executed.
"""

from __future__ import annotations

import ast
from functools import cached_property

from torchreview.engine import names as N
from torchreview.engine.semantic_common import (  # noqa: F401  (re-exported)
    ancestors, call_name, dotted, FunctionNode, LoopNode, parent, position, _BUILTINS,
    _CHILD_FIELDS, _child_fields, _COMPAT_ERRORS, _CONFLICT, _CONTAINER_TYPES, _INDEXED,
    _INERT_VALUES, _is_cuda_literal, _LEAF_TOKENS, _LEAF_TYPES, _MISSING, _NESTED_SCOPES,
    _probes_version, _SCALAR_FIELDS, _SCOPE_TYPES, _subclasses, _TOKEN_TYPES, _VERSION_WORDS,
)
from torchreview.engine.model.devices import Devices, ScopesMixin
from torchreview.engine.semantic_kinds import KindsMixin


class SemanticModel(KindsMixin, ScopesMixin):
    def __init__(self, tree: ast.Module, project=None) -> None:
        self.tree = tree
        # the project index view (engine/project_index.py) for names imported from
        # the project's own modules; None: this module alone
        self.project = project
        self.aliases: dict[str, str] = {}  # local name -> qualified name
        self.star_imports: list[str] = []
        self.imported_modules: set[str] = set()
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, list[ast.AST]] = {}
        self.calls_by_name: dict[str, list[ast.Call]] = {}
        self.calls: list[ast.Call] = []
        self.loops: list[ast.AST] = []
        self.attribute_names: set[str] = set()
        # scope node -> name -> kind ("?" when assignments disagree)
        self._bindings: dict[ast.AST, dict[str, str]] = {}
        self._pending: list[tuple[ast.AST, str, ast.AST | None, str | None]] = []
        self._class_attrs: dict[ast.ClassDef, dict[str, str]] = {}
        # every node, by type, in one walk: the rule dispatcher reads this
        self.nodes_by_type: dict[type, list[ast.AST]] = {}
        self._qualnames: dict[int, str | None] = {}
        self._subtrees: dict[int, list[ast.AST]] = {}
        self._order: list[ast.AST] = []
        self._call_results: set[tuple[int, str]] = set()
        self._not_call_results: set[tuple[int, str]] = set()
        self._spans: dict[int, tuple[int, int]] = {}
        # (id(function), parameter) whose kind comes from same-module call sites
        self.param_evidence: set[tuple[int, str]] = set()
        # functions whose return kind is being computed (recursion guard)
        self._returning: set[int] = set()
        # the devices concept, composed: it asks names, kinds and scopes through these
        self.devices = Devices(qualname=self.qualname, kind_of=self.kind_of, assignments=self.assignments,
                               enclosing_class=self.enclosing_class, class_attrs=self._class_attrs,
                               calls=self.calls, pending=self._pending)
        self.device_kind = self.devices.device_kind
        self.to_call_device = self.devices.to_call_device
        self._build()

    @property
    def cuda_evidence(self) -> ast.AST | None:
        """The first call showing this module runs on CUDA (``Devices.cuda_evidence``)."""
        return self.devices.cuda_evidence

    # ------------------------------------------------------------------ build
    def _build(self) -> None:
        """One iterative walk: parent links, nodes by type, name/scope indices."""
        by_type = self.nodes_by_type
        skip, leaves, scopes, indexed = _TOKEN_TYPES, _LEAF_TYPES, _SCOPE_TYPES, _INDEXED
        child_fields = _CHILD_FIELDS
        stack: list[tuple[ast.AST, ast.AST | None]] = [(self.tree, self.tree)]
        push, pop = stack.append, stack.pop
        by_type[ast.Module] = [self.tree]
        # Depth-first order: every container's subtree is one contiguous run of
        # ``order`` (its end is recorded when the marker pushed below its children pops).
        order = self._order
        record, spans, containers = order.append, self._spans, _CONTAINER_TYPES
        record(self.tree)
        while stack:
            node, scope = pop()
            if scope is None:  # end marker of a container
                spans[id(node)] = (spans[id(node)][0], len(order))
                continue
            if node is not self.tree:
                record(node)
            if type(node) in indexed:
                self._index(node, scope)
            if type(node) in containers:
                spans[id(node)] = (len(order) - 1, 0)
                push((node, None))
            child_scope = node if type(node) in scopes else scope
            fields = child_fields.get(type(node))
            if fields is None:
                fields = child_fields[type(node)] = _child_fields(type(node))
            for field in fields:
                value = getattr(node, field, None)
                items = value if type(value) is list else (value,)
                for item in items:
                    t = type(item)
                    if t in skip or item is None or not isinstance(item, ast.AST):
                        continue
                    item._tr_parent = node  # type: ignore[attr-defined]
                    bucket = by_type.get(t)
                    if bucket is None:
                        bucket = by_type[t] = []
                    bucket.append(item)
                    if t in leaves:
                        record(item)
                    else:
                        push((item, child_scope))
        if self.star_imports and self.project is not None:
            # `from common import *` where common.py imported torch names: they are ours too
            for module in self.star_imports:
                for name, q in self.project.star_torch_aliases(module).items():
                    if name not in self.classes and name not in self.functions and name not in self.aliases:
                        self.aliases[name] = q
                        self.imported_modules.add(q)
        # The walk visits statements in reverse order, so module-level aliases such as
        # ``HALF = torch.float16`` were tried before ``import torch`` was seen: redo them
        # now that every import is known, and drop qualnames cached during the walk.
        self._qualnames.clear()
        for scope, name, value, how in sorted(
                (p for p in self._pending if p[0] is self.tree and p[2] is not None and p[3] is None
                 and p[1] != "for" and not p[1].startswith("self.")), key=lambda p: position(p[2])):
            self._maybe_alias(name, value)
        self._qualnames.clear()
        self._resolve_pending()

    def _index(self, node: ast.AST, scope: ast.AST) -> None:
        if isinstance(node, ast.Call):
            self.calls.append(node)
            name = call_name(node)
            if name:
                self.calls_by_name.setdefault(name, []).append(node)
        elif isinstance(node, ast.Attribute):
            self.attribute_names.add(node.attr)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                self.imported_modules.add(alias.name)
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    self.aliases.setdefault(root, root)
        elif isinstance(node, ast.ImportFrom):
            module = ("." * node.level) + (node.module or "")
            self.imported_modules.add(module)
            for alias in node.names:
                if alias.name == "*":
                    self.star_imports.append(module)
                    continue
                self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
        elif isinstance(node, ast.ClassDef):
            self.classes.setdefault(node.name, node)
        elif isinstance(node, FunctionNode):
            self.functions.setdefault(node.name, []).append(node)
            self._bind_parameters(node)
        elif isinstance(node, LoopNode):
            self.loops.append(node)
            if isinstance(node, (ast.For, ast.AsyncFor)):
                self._pending.append((scope, "for", node, None))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            for target in targets:
                if isinstance(target, ast.Name):
                    self._pending.append((scope, target.id, value, None))
                    if scope is self.tree and value is not None:
                        self._maybe_alias(target.id, value)
                elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                      and target.value.id == "self"):
                    self._pending.append((scope, "self." + target.attr, value, None))
                elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                    for t, v in zip(target.elts, value.elts):
                        if isinstance(t, ast.Name):
                            self._pending.append((scope, t.id, v, None))

    def _bind_parameters(self, func: ast.AST) -> None:
        args = func.args  # type: ignore[attr-defined]
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            if arg.arg in ("self", "cls"):
                continue
            self._pending.append((func, arg.arg, None, "param"))

    def _maybe_alias(self, name: str, value: ast.AST) -> None:
        if isinstance(value, (ast.Name, ast.Attribute)):
            q = self.qualname(value)
            if q and q.split(".")[0] in ("torch", "torchvision", "numpy", "pickle", "os"):
                self.aliases[name] = q

    def _resolve_pending(self) -> None:
        # Round one binds every name; round two revisits only the entries that
        # learned nothing yet (names bound from names that settle later).
        unresolved = []
        for entry in self._pending:
            scope, name, value, how = entry
            if name == "for":
                if not self._bind_for(scope, value):  # type: ignore[arg-type]
                    unresolved.append(entry)
                continue
            if how == "param":
                kind = self._param_kind(scope, name)
                if kind:
                    self._bindings.setdefault(scope, {})[name] = kind
                else:
                    self._bindings.setdefault(scope, {}).setdefault(name, "")
                continue
            if not name.startswith("self."):
                self._note_value(scope, name, value)
            if value is None or isinstance(value, _INERT_VALUES):
                self._bind(scope, name, "")
                continue
            kind = self.kind_of(value, scope)
            self._bind(scope, name, kind or "")
            if not kind:
                unresolved.append(entry)
        for scope, name, value, how in unresolved:
            if name == "for":
                self._bind_for(scope, value)  # type: ignore[arg-type]
            else:
                self._bind(scope, name, self.kind_of(value, scope) or "")
        self._bind_unpacked_returns()
        # Round three: parameters learn their kind from the arguments of the
        # same-module call sites (evidence before names), then names bound from
        # them are revisited once.
        if self._params_from_call_sites():
            for scope, name, value, how in unresolved:
                if name != "for" and how is None and value is not None:
                    kind = self.kind_of(value, scope)
                    if kind:
                        self._bind(scope, name, kind)

    def _bind_unpacked_returns(self) -> None:
        """``model, opt = build()`` where every ``return`` of the local helper
        ``build`` is a tuple of that length: each name takes the kind its
        position agrees on across the returns."""
        for node in self.nodes_by_type.get(ast.Assign, ()):
            value = node.value  # type: ignore[attr-defined]
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
                continue
            for target in node.targets:  # type: ignore[attr-defined]
                if not (isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts)):
                    continue
                kinds = self.returned_item_kinds(value.func.id, len(target.elts))
                scope = self.scope_of(node)
                for elt, kind in zip(target.elts, kinds):
                    if kind:
                        self._bind(scope, elt.id, kind)

    def returned_item_kinds(self, name: str, size: int) -> list[str | None]:
        """Per position, the kind every ``return a, b, ...`` of the local function
        ``name`` agrees on (None where they differ or it returns something else)."""
        defs = self.functions.get(name, ())
        if len(defs) != 1 or isinstance(parent(defs[0]), ast.ClassDef) or name in self.classes:
            return [None] * size
        returns = [n.value for n in self.own_nodes(defs[0]) if isinstance(n, ast.Return)]
        if not returns or not all(isinstance(r, ast.Tuple) and len(r.elts) == size for r in returns):
            return [None] * size
        out: list[str | None] = []
        for position_ in range(size):
            kinds = {self.kind_of(r.elts[position_], defs[0]) for r in returns}  # type: ignore[union-attr]
            out.append(kinds.pop() if len(kinds) == 1 else None)
        return out

    def _params_from_call_sites(self) -> bool:
        """Bind each unannotated parameter of a module-level or nested function
        (not a method) to the kind every same-module call site's argument agrees
        on (``evaluate(model, val_loader)`` -> ``net`` holds a model). One level:
        arguments are judged with the kinds of round one and two. True when a
        parameter changed."""
        changed = False
        for name, defs in self.functions.items():
            sites = [c for c in self.calls_by_name.get(name, ()) if isinstance(c.func, ast.Name)]
            if len(defs) != 1 or not sites or isinstance(parent(defs[0]), ast.ClassDef):
                continue
            func = defs[0]
            args = func.args  # type: ignore[attr-defined]
            positional = [*args.posonlyargs, *args.args]
            table = self._bindings.setdefault(func, {})
            for index, arg in enumerate([*positional, *args.kwonlyargs]):
                if arg.annotation is not None and table.get(arg.arg):
                    continue
                kinds = set()
                for site in sites:
                    value = _argument(site, arg.arg, index if index < len(positional) else None)
                    if value is _UNKNOWN_ARG:
                        kinds = set()
                        break
                    if value is not None:
                        kinds.add(self.kind_of(value, self.scope_of(value)))
                kinds.discard(None)
                if len(kinds) == 1:
                    kind = kinds.pop()
                    self.param_evidence.add((id(func), arg.arg))
                    if table.get(arg.arg) != kind:
                        table[arg.arg] = kind
                        changed = True
        return changed

    def _note_value(self, scope: ast.AST, name: str, value: ast.AST | None) -> None:
        """Remember names bound only to results of unresolved calls (see ``_lookup``)."""
        key = (id(scope), name)
        if key in self._not_call_results:
            return
        if isinstance(value, ast.Call) and self.qualname(value.func) is None and not (
                isinstance(value.func, ast.Name) and (value.func.id in self.classes or
                                                      value.func.id in self.functions)):
            self._call_results.add(key)
        else:
            self._not_call_results.add(key)
            self._call_results.discard(key)

    def _bind(self, scope: ast.AST, name: str, kind: str) -> None:
        if name.startswith("self."):
            cls = self.enclosing_class(scope)
            if cls is None:
                return
            table = self._class_attrs.setdefault(cls, {})
            attr = name[5:]
        else:
            table = self._bindings.setdefault(scope, {})
            attr = name
        old = table.get(attr)
        if old is None or old == "" or old == kind:
            table[attr] = kind
        elif kind and old != kind:
            table[attr] = _CONFLICT

    def _bind_for(self, scope: ast.AST, loop: ast.For) -> bool:
        """Bind a for-loop's targets; True when the iterable's kind was known."""
        iter_kind = self.kind_of(loop.iter, scope)
        iterable = loop.iter
        target = loop.target
        if isinstance(iterable, ast.Call) and self.qualname(iterable.func) == "builtins.enumerate" \
                and iterable.args:
            iter_kind = self.kind_of(iterable.args[0], scope)
            if isinstance(target, ast.Tuple) and len(target.elts) == 2:
                target = target.elts[1]
        if isinstance(iterable, ast.Call) and self.qualname(iterable.func) == "builtins.zip" and \
                isinstance(target, ast.Tuple) and len(target.elts) == len(iterable.args) and \
                not any(isinstance(a, ast.Starred) for a in iterable.args):
            # `for (x, y), (u, v) in zip(train_loader, aux_loader)`: each target from its iterable
            known = False
            for sub_target, sub_iter in zip(target.elts, iterable.args):
                sub_kind = self.kind_of(sub_iter, scope)
                known = known or bool(sub_kind)
                for node in ast.walk(sub_target):
                    if isinstance(node, ast.Name):
                        self._not_call_results.add((id(scope), node.id))
                        self._call_results.discard((id(scope), node.id))
                        self._bind(scope, node.id, "tensor" if sub_kind == "loader" else "")
            return known
        kind = "tensor" if iter_kind == "loader" else ""
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self._not_call_results.add((id(scope), node.id))
                self._call_results.discard((id(scope), node.id))
                self._bind(scope, node.id, kind)
        return bool(iter_kind)

    def _param_kind(self, func: ast.AST, name: str) -> str | None:
        args = func.args  # type: ignore[attr-defined]
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            if arg.arg == name and arg.annotation is not None:
                kind = N.kind_from_annotation(self.qualname(arg.annotation))
                if kind:
                    return kind
                if isinstance(arg.annotation, ast.Name) and self.is_module_class(arg.annotation.id):
                    return "model"
        kind = N.kind_from_name(name)
        if kind == "model" and _defaults_to_none(args, name):
            # an untyped optional `teacher=None` / `model_ema=None`: anything with a
            # `.forward` may come in (EMA wrappers, sessions, callbacks), not a module for sure
            return None
        return kind

    # ------------------------------------------------------------ names
    def qualname(self, node: ast.AST | None) -> str | None:
        """Fully qualified, canonical name of a Name/Attribute chain, or None."""
        key = id(node)
        cached = self._qualnames.get(key, _MISSING)
        if cached is not _MISSING:
            return cached  # type: ignore[return-value]
        result = self._qualname(node)
        self._qualnames[key] = result
        return result

    def _qualname(self, node: ast.AST | None) -> str | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id)
        if base is None:
            if node.id in _BUILTINS and node.id not in self.classes and node.id not in self.functions:
                base = "builtins." + node.id
            else:
                return None
        parts.append(base)
        return N.canonical(".".join(reversed(parts)))

    def call_qualname(self, call: ast.AST) -> str | None:
        return self.qualname(call.func) if isinstance(call, ast.Call) else None

    def imports_module(self, prefix: str) -> bool:
        return any(m == prefix or m.startswith(prefix + ".") for m in self.imported_modules)

    def module_alias(self, module: str) -> str | None:
        """The local name bound to the module ``module`` itself (``import torch`` ->
        "torch", ``import torch as T`` -> "T"), for fixes that must spell a new
        qualified name. None when the module is only reached through from-imports."""
        if self.aliases.get(module) == module:
            return module
        names = sorted(k for k, v in self.aliases.items() if v == module)
        return names[0] if names else None

    def in_compat_branch(self, node: ast.AST) -> bool:
        """``node`` runs only on some library versions: inside either branch of an
        ``if``/ternary whose test probes a version (``torch.__version__``,
        ``version.parse``, ``TORCH_GE_2_4``, ``is_torch_greater...``) or an API
        (``hasattr``/``getattr``), or inside a ``try`` whose handlers catch
        ``ImportError``/``AttributeError``/``TypeError`` (fallback imports)."""
        for anc in ancestors(node):
            if isinstance(anc, (ast.If, ast.IfExp)) and _probes_version(anc.test):
                return True
            if isinstance(anc, ast.Try):
                for handler in anc.handlers:
                    for sub in ast.walk(handler.type) if handler.type is not None else ():
                        if isinstance(sub, ast.Name) and sub.id in _COMPAT_ERRORS:
                            return True
        return False

    # ------------------------------------------------------------ scopes
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

    def scope_of(self, node: ast.AST) -> ast.AST:
        for anc in ancestors(node):
            if isinstance(anc, (*FunctionNode, ast.Lambda)):
                return anc
        return self.tree

    # ------------------------------------------------------------ classes
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
        for base in cls.bases:
            q = self.qualname(base)
            if q and (q in bases or (bases is N.MODULE_BASES and q.startswith("torch.nn.")
                                     and q.rsplit(".", 1)[-1][:1].isupper()
                                     and not q.endswith("Parameter"))):
                return True
            if isinstance(base, ast.Name) and self._class_is(base.id, bases, seen):
                return True
        return False

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
        if cls is not None and cls.name in self.module_classes:
            return cls
        return None

    def own_nodes(self, owner: ast.AST) -> list[ast.AST]:
        """Nodes of ``owner.body`` (a function, class or loop) that run there:
        nested functions, lambdas and classes appear, their insides do not (the
        nodes ``_walk_same_function(owner.body)`` yields, from recorded slices)."""
        order, spans, out = self._order, self._spans, []
        nested = _NESTED_SCOPES
        for stmt in owner.body:  # type: ignore[attr-defined]
            span = spans.get(id(stmt))
            if span is None:
                return [n for s in owner.body for n in ast.walk(s)]  # type: ignore[attr-defined]
            i, end = span
            while i < end:
                node = order[i]
                out.append(node)
                # a nested function, lambda or class: keep the node, skip its inside
                i = spans[id(node)][1] if type(node) in nested else i + 1
        return out

    def subtree(self, node: ast.AST) -> list[ast.AST]:
        """Every node under ``node``, itself included (the nodes of ``ast.walk``,
        in depth-first order). Classes, functions, loops and other blocks are a
        slice of the walk order recorded while building; anything else is walked."""
        span = self._spans.get(id(node))
        if span is not None:
            return self._order[span[0]:span[1]]
        key = id(node)
        nodes = self._subtrees.get(key)
        if nodes is None:
            nodes = self._subtrees[key] = list(ast.walk(node))
        return nodes


_UNKNOWN_ARG = object()


def _argument(site: ast.Call, name: str, index: int | None):
    """The expression a call passes for parameter ``name`` (position ``index``):
    None when it passes none (the default applies), ``_UNKNOWN_ARG`` when a
    ``*args``/``**kwargs`` splat may hide it."""
    for kw in site.keywords:
        if kw.arg == name:
            return kw.value
        if kw.arg is None:
            return _UNKNOWN_ARG
    if index is None:
        return None
    for position_, value in enumerate(site.args):
        if isinstance(value, ast.Starred):
            return _UNKNOWN_ARG
        if position_ == index:
            return value
    return None


def _defaults_to_none(args: ast.arguments, name: str) -> bool:
    """The parameter ``name`` has no annotation and defaults to ``None``."""
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return any(a.arg == name and a.annotation is None and isinstance(d, ast.Constant) and d.value is None
               for a, d in pairs)

