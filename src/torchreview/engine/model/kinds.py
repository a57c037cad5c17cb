"""Model concept: kinds (what a name or an expression holds).

``Kinds`` answers ``kind_of`` -- model, optimizer, loader, scheduler, scaler,
loss_fn, tensor, parameter, dataset, sampler, device, or None -- from evidence
first (what built the value, what a local helper returns, what same-module call
sites pass, annotations) and from a name's convention last. ``resolve`` binds
every name the walk saw, once, in rounds (``bindings``: scope -> name -> kind,
shared with the scopes concept, which reads which names a scope binds;
``class_attrs``: class -> ``self`` attribute -> kind). It receives the tree
index (definitions, calls, slices), the names, scopes and classes concepts and
the project index view in its constructor, and calls none through ``self``.
"""

from __future__ import annotations

import ast

from torchreview.engine import names as N
from torchreview.engine.semantic_common import FunctionNode, parent, _CONFLICT, _INERT_VALUES


class Kinds:
    def __init__(self, tree: ast.Module, *, index, names, scopes, hierarchy, bindings: dict,
                 project=None) -> None:
        self.tree = tree
        # the project index view (engine/project_index.py) for names imported from
        # the project's own modules; None: this module alone
        self.project = project
        # a call's kind came from the project and differs from the module's own answer
        # (engine/project_index.py ``summary_from_review``)
        self.project_changed = False
        self.qualname = names.qualname
        self.aliases = names.aliases
        self.star_imports = names.star_imports
        self.classes = index.classes
        self.functions = index.functions
        self.calls_by_name = index.calls_by_name
        self.nodes_by_type = index.nodes_by_type
        self.own_returns = index.own_returns
        self._binding_sites = index.binding_sites
        self.scope_of = scopes.scope_of
        self.enclosing_class = scopes.enclosing_class
        self.enclosing_function = scopes.enclosing_function
        self.assignments = scopes.assignments
        self._hierarchy = hierarchy
        # scope node -> name -> kind ("?" when assignments disagree)
        self.bindings: dict[ast.AST, dict[str, str]] = bindings
        # class -> self attribute -> kind
        self.class_attrs: dict[ast.ClassDef, dict[str, str]] = {}
        # (id(function), parameter) whose kind comes from same-module call sites
        self.param_evidence: set[tuple[int, str]] = set()
        self._call_results: set[tuple[int, str]] = set()
        self._not_call_results: set[tuple[int, str]] = set()
        # functions whose return kind is being computed (recursion guard)
        self._returning: set[int] = set()
        # list/tuple-literal names being asked whether they hold models (recursion guard:
        # ``outputs = (outputs[0], *outputs[2:])`` reads the name it rebinds)
        self._literal_names: set[tuple[int, str]] = set()
        # class -> the names of the methods of its body (keyed by the node: it stays alive)
        self._method_names: dict[ast.ClassDef, frozenset[str]] = {}
        # function -> its annotated parameters by name
        self._annotated: dict[ast.AST, dict[str, list[ast.arg]]] = {}

    # ------------------------------------------------------------ binding, once
    def resolve(self) -> None:
        """Bind every name the walk saw to its kind (called once, after the walk)."""
        # Round one binds every name; round two revisits only the entries that
        # learned nothing yet (names bound from names that settle later).
        unresolved = []
        for entry in self._binding_sites:
            scope, name, value, how = entry
            if name == "for":
                if not self._bind_for(scope, value):  # type: ignore[arg-type]
                    unresolved.append(entry)
                continue
            if how == "param":
                kind = self._param_kind(scope, name)
                if kind:
                    self.bindings.setdefault(scope, {})[name] = kind
                else:
                    self.bindings.setdefault(scope, {}).setdefault(name, "")
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
        returns = [n.value for n in self.own_returns(defs[0])]
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
            table = self.bindings.setdefault(func, {})
            for index, arg in enumerate([*positional, *args.kwonlyargs]):
                if arg.annotation is not None and table.get(arg.arg):
                    continue
                kinds = set()
                named = False
                for site in sites:
                    value = _argument(site, arg.arg, index if index < len(positional) else None)
                    if value is _UNKNOWN_ARG:
                        kinds = set()
                        break
                    if value is not None:
                        kinds.add(self.kind_of(value, self.scope_of(value)))
                        named = named or (isinstance(value, ast.Name) and
                                          self._named_only(value.id, self.scope_of(value)))
                kinds.discard(None)
                if len(kinds) == 1:
                    kind = kinds.pop()
                    if not named:  # an argument known by its name alone shows nothing
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
            table = self.class_attrs.setdefault(cls, {})
            attr = name[5:]
        else:
            table = self.bindings.setdefault(scope, {})
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
        if not kind and type(target) is ast.Name and self._models_listed(iterable, scope):
            # `for sub_net in [clf, att]: sub_net.eval()` (or over a name bound once to that list):
            # each pass holds one of the models (IBMIL's `milnets`)
            kind, iter_kind = "model", "model"
        # (a plain name: the one Name ``ast.walk`` would meet)
        for node in (target,) if type(target) is ast.Name else ast.walk(target):
            if isinstance(node, ast.Name):
                self._not_call_results.add((id(scope), node.id))
                self._call_results.discard((id(scope), node.id))
                self._bind(scope, node.id, kind)
        return bool(iter_kind)

    def _models_listed(self, iterable: ast.AST, scope: ast.AST) -> bool:
        """``iterable`` is a list or tuple literal of two or more models, written in the loop
        or bound once to a name of the same scope (``nets = [clf, att]``)."""
        if type(iterable) is ast.Name:
            values, func = self.assignments(iterable)
            if func is not None or len(values) != 1 or self.scope_of(values[0]) is not scope:
                return False
            iterable = values[0]
        if type(iterable) not in (ast.List, ast.Tuple) or len(iterable.elts) < 2:
            return False
        return all(type(e) is not ast.Starred and self.kind_of(e, scope) == "model" for e in iterable.elts)

    def _param_kind(self, func: ast.AST, name: str) -> str | None:
        args = func.args  # type: ignore[attr-defined]
        annotated = self._annotated.get(func)
        if annotated is None:  # once per function, not once per parameter
            annotated = self._annotated[func] = {}
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if a.annotation is not None:  # (the parser lets a name repeat: in order)
                    annotated.setdefault(a.arg, []).append(a)
        for arg in annotated.get(name, ()):
            kind = N.kind_from_annotation(self.qualname(arg.annotation))
            if kind:
                return kind
            if isinstance(arg.annotation, ast.Name) and self._hierarchy.is_module_class(arg.annotation.id):
                return "model"
            if isinstance(arg.annotation, ast.Name) and arg.annotation.id in _SCALAR_ANNOTATIONS:
                return None  # `loss_fn: str` names a loss, it holds none: the annotation outweighs the name
        kind = N.kind_from_name(name)
        if kind == "model" and _defaults_to_none(args, name):
            # an untyped optional `teacher=None` / `model_ema=None`: anything with a
            # `.forward` may come in (EMA wrappers, sessions, callbacks), not a module for sure
            return None
        return kind

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
                    kind = self.class_attrs.get(cls, {}).get(node.attr)
                    if kind is not None:
                        return kind or None if kind != _CONFLICT else None
                    methods = self._method_names.get(cls)
                    if methods is None:
                        methods = self._method_names[cls] = frozenset(
                            s.name for s in cls.body if isinstance(s, FunctionNode))
                    if node.attr in methods:
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
            if self.kind_of(node.value, scope) in ("tensor", "parameter"):
                return "tensor"
            return "model" if self._models_literal(node.value, scope) else None
        if isinstance(node, ast.Compare) and len(node.comparators) == 1 and \
                isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
            # ``preds == y`` / ``x > 0`` on a tensor is an element-wise (bool) tensor
            sides = (self.kind_of(node.left, scope), self.kind_of(node.comparators[0], scope))
            return "tensor" if "tensor" in sides or "parameter" in sides else None
        if isinstance(node, (ast.BoolOp, ast.IfExp)) and (not isinstance(node, ast.BoolOp) or
                                                          isinstance(node.op, ast.Or)):
            # `optimizer or torch.optim.Adam(...)`, `a if c else b`: what the alternatives hold, when
            # those known agree (a default built by a factory says what the argument is)
            options = node.values if isinstance(node, ast.BoolOp) else (node.body, node.orelse)
            kinds = {k for k in (self.kind_of(o, scope) for o in options if not
                                 (isinstance(o, ast.Constant) and o.value is None)) if k}
            return kinds.pop() if len(kinds) == 1 else None
        if isinstance(node, ast.Await):
            return None
        return None

    def _models_literal(self, node: ast.AST, scope: ast.AST) -> bool:
        """``node`` is a name every assignment of which is a list or tuple literal of models
        (``models = [model1, model2]``): an element of it is a model (``models[i].eval()``;
        gaofen2021-cd's ensembles). Writes into it (``models[i] = models[i].cuda()``) keep
        the elements models."""
        if not isinstance(node, ast.Name):
            return False
        key = (id(scope), node.id)
        if key in self._literal_names:
            return False  # a literal built from the name itself: no evidence of models
        values, func = self.assignments(node)
        if not values or func is not None or not all(
                isinstance(v, (ast.List, ast.Tuple)) and v.elts and
                not any(isinstance(e, ast.Starred) for e in v.elts) for v in values):
            return False
        self._literal_names.add(key)
        try:
            return all(self.kind_of(e, scope) == "model" for v in values for e in v.elts)
        finally:
            self._literal_names.discard(key)

    def _named_only(self, name: str, scope: ast.AST) -> bool:
        """The kind ``_lookup`` gives ``name`` rests on the name alone: never bound here,
        or only ever bound to results of calls nothing resolves (``model = NeuronModel()``
        with the class in a notebook cell that does not parse)."""
        probe: ast.AST | None = scope
        while probe is not None:
            table = self.bindings.get(probe)
            if table is not None and name in table:
                return table[name] == "" and (id(probe), name) in self._call_results
            if probe is self.tree:
                break
            probe = self.scope_of(probe)
        return not (name in self.aliases or name in self.classes or name in self.functions)

    def _lookup(self, name: str, scope: ast.AST) -> str | None:
        probe: ast.AST | None = scope
        while probe is not None:
            table = self.bindings.get(probe)
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
            if q in N.MODULE_WRAPPERS or q in ("tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "builtins.iter",
                                                "copy.deepcopy"):
                return self.kind_of(first, scope) if first is not None else None
            kind = N.kind_from_call_qualname(q)
            if kind:
                return kind
            if self.project is not None:
                found = self.project.lookup_qualname(q)
                if found is not None:  # a class or function of another project module
                    kind = getattr(found, "kind", None) or getattr(found, "returns", None)
                    if not self.project_changed and (
                            kind is not None or self._local_call_kind(func, q, scope) is not None):
                        self.project_changed = True  # the module alone would say otherwise
                    return kind
        return self._local_call_kind(func, q, scope)

    def _local_call_kind(self, func: ast.AST, q: str | None, scope: ast.AST) -> str | None:
        """``_call_kind`` from this module alone (no project answer)."""
        if isinstance(func, ast.Name):
            if func.id in self._hierarchy.module_classes:
                return "loss_fn" if self._hierarchy.is_loss_class(func.id) else "model"
            if func.id in self._hierarchy.dataset_classes:
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
        # Calling a model or a loss function returns a tensor. (For `x.attr(...)` the kind of
        # `x.attr` follows from the receiver's kind found above: asking `kind_of(func)` again
        # would walk the receiver a second time, 2**n work on a chain of n calls --
        # `t.replace(..).replace(..)...` forty deep in R2GenGPT's report cleaner.)
        if q is None:
            if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "self"):
                called = "model" if receiver == "model" and func.attr == "module" else None
            else:
                called = self.kind_of(func, scope)
            if called in ("model", "loss_fn"):
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
            for node in self.own_returns(func):
                if node.value is not None:
                    kinds.add(self.kind_of(node.value, func))
            return kinds.pop() if len(kinds) == 1 else None
        finally:
            self._returning.discard(id(func))

    def holds(self, node: ast.AST, kind: str) -> bool:
        return self.kind_of(node) == kind

    # ------------------------------------------------------------ tensors by evidence
    def is_forward_input(self, node: ast.AST) -> bool:
        """A Name that is a parameter of the ``forward`` of an ``nn.Module`` it is used in
        (inputs of ``forward`` are tensors unless annotated otherwise or defaulting to
        a literal such as ``k=3``)."""
        if not isinstance(node, ast.Name):
            return False
        func = self.enclosing_function(node)
        if func is None or func.name != "forward" or not isinstance(parent(func), ast.ClassDef) \
                or parent(func).name not in self._hierarchy.module_classes:
            return False
        args = func.args
        positional = [*args.posonlyargs, *args.args]
        defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
        defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
        for arg in [*positional, *args.kwonlyargs][1:]:
            if arg.arg == node.id:
                default = defaults.get(arg.arg)
                if isinstance(default, ast.Constant) and default.value is not None:
                    return False  # `k=3`, `return_all=False`: an option, not an input tensor
                ann = self.qualname(arg.annotation) if arg.annotation is not None else None
                return arg.annotation is None or ann == "torch.Tensor"
        return False

    def tensor_by_evidence(self, expr: ast.AST) -> bool:
        """A tensor by evidence, not by its name alone (a parameter called ``target``
        may well be a list): a ``forward`` input, an ``nn.Parameter``, an expression
        derived from a tensor, a name assigned a tensor, or a ``torch.Tensor``-annotated
        parameter."""
        if self.is_forward_input(expr) or self.kind_of(expr) == "parameter":
            return True
        if self.kind_of(expr) != "tensor":
            return False
        if not isinstance(expr, (ast.Name, ast.Attribute)):
            return True
        values, func = self.assignments(expr)
        if values:
            return any(self.kind_of(v) in ("tensor", "parameter") for v in values)
        if func is not None and isinstance(expr, ast.Name):
            args = func.args  # type: ignore[attr-defined]
            arg = next((a for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.arg == expr.id), None)
            return arg is not None and arg.annotation is not None and \
                self.qualname(arg.annotation) == "torch.Tensor"
        return False


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


# builtin scalar annotations: a parameter so annotated holds no module, whatever its name
_SCALAR_ANNOTATIONS = frozenset({"str", "int", "float", "bool", "bytes"})


def _defaults_to_none(args: ast.arguments, name: str) -> bool:
    """The parameter ``name`` has no annotation and defaults to ``None``."""
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return any(a.arg == name and a.annotation is None and isinstance(d, ast.Constant) and d.value is None
               for a, d in pairs)

