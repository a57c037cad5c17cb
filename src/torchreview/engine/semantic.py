"""The semantic model of one module: names, scopes, grad contexts, what names hold.

Built in one walk over the tree; rules ask it questions instead of re-walking.
Everything here is static: the reviewed code is never imported or executed.
"""

from __future__ import annotations

import ast
import builtins
from functools import cached_property

from torchreview.engine import names as N

FunctionNode = (ast.FunctionDef, ast.AsyncFunctionDef)
LoopNode = (ast.For, ast.While, ast.AsyncFor)
_BUILTINS = frozenset(dir(builtins))
_CONFLICT = "?"
_MISSING = object()
# Shared singleton tokens (Load, Store, Add, ...): no parent, not dispatched.
_LEAF_TOKENS = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def _subclasses(bases) -> frozenset[type]:
    out: set[type] = set()
    todo = list(bases)
    while todo:
        cls = todo.pop()
        out.add(cls)
        todo.extend(cls.__subclasses__())
    return frozenset(out)


_TOKEN_TYPES = _subclasses(_LEAF_TOKENS) | {str, int, float, complex, bytes, bool, type(None), type(...)}
# Fields that never hold child nodes (names, operators, flags): not visited.
_SCALAR_FIELDS = frozenset({"ctx", "op", "id", "attr", "name", "arg", "asname", "module", "level",
                            "type_comment", "kind", "conversion", "is_async", "simple", "ops"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(node_type: type) -> tuple[str, ...]:
    return tuple(f for f in node_type._fields if f not in _SCALAR_FIELDS)


# Nodes with no AST children worth visiting: recorded, never pushed.
_LEAF_TYPES = frozenset({ast.Name, ast.Constant})
# Statements (and lambdas): their run in the depth-first walk order is recorded,
# so ``subtree``/``own_nodes`` are slices instead of new walks.
_CONTAINER_TYPES = frozenset({ast.Module, ast.Lambda, *(
    cls for cls in vars(ast).values() if isinstance(cls, type) and issubclass(cls, ast.stmt) and cls is not ast.stmt)})
_NESTED_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef})
_SCOPE_TYPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef})
# Values whose kind never depends on other bindings (and is never a tensor).
_INERT_VALUES = (ast.Constant, ast.JoinedStr, ast.Dict, ast.Set, ast.Compare, ast.BoolOp, ast.Lambda,
                 ast.DictComp, ast.SetComp)
_INDEXED = frozenset({
    ast.Call, ast.Attribute, ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef,
    ast.AsyncFunctionDef, ast.For, ast.While, ast.AsyncFor, ast.Assign, ast.AnnAssign, ast.NamedExpr,
})


def parent(node: ast.AST) -> ast.AST | None:
    return getattr(node, "_tr_parent", None)


def ancestors(node: ast.AST):
    node = parent(node)
    while node is not None:
        yield node
        node = parent(node)


def position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def call_name(call: ast.Call) -> str | None:
    """The last name of what is called: ``a.b.c()`` -> ``c``, ``f()`` -> ``f``."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _is_cuda_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and \
        node.value.split(":")[0] == "cuda"


_COMPAT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "TypeError"})
_VERSION_WORDS = ("version", "torch_ge", "torch_gt", "torch_lt", "torch_le", "is_torch_greater",
                  "is_torch_less", "_greater_or_equal", "_less_than", "at_least")


def _probes_version(test: ast.AST) -> bool:
    """An ``if`` test that asks which library version or API is present."""
    for sub in ast.walk(test):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in ("hasattr", "getattr"):
            return True
        name = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else None
        if name is None:
            continue
        low = name.lower()
        if any(word in low for word in _VERSION_WORDS) or (name.isupper() and "TORCH" in name):
            return True
    return False


def dotted(node: ast.AST) -> str | None:
    """``self.model.fc`` -> "self.model.fc" (purely syntactic)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class SemanticModel:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
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
        self._build()

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
        return N.kind_from_name(name)

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
        if isinstance(func, ast.Name):
            if func.id in self.module_classes:
                return "model"
            if func.id in self.dataset_classes:
                return "dataset"
            if func.id in self.classes or func.id in self.functions:
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

    def holds(self, node: ast.AST, kind: str) -> bool:
        return self.kind_of(node) == kind

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

    # ------------------------------------------------------------ devices
    def device_kind(self, node: ast.AST | None, scope: ast.AST | None = None, _depth: int = 0) -> str | None:
        """What a device-like argument (``.to(X)``, ``device=X``) names:
        ``"accelerator"`` (literal cuda/mps/xpu, ``torch.device("cuda")``, an int
        ordinal), ``"cpu"``, ``"follows"`` (another tensor's placement: ``x.device``,
        ``next(self.parameters()).device``, or a tensor as in ``.to(other)``),
        ``"variable"`` (a configured device: ``device``, ``args.device``, a
        ``self.device`` the class assigns, ``"cuda" if ... else "cpu"``),
        ``"dtype"`` -- or None when it cannot tell."""
        if node is None or _depth > 4:
            return None
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                head = node.value.split(":")[0].strip().lower()
                return "accelerator" if head in N.ACCELERATOR_DEVICE_TYPES else "cpu" if head == "cpu" else None
            if isinstance(node.value, int) and not isinstance(node.value, bool):
                return "accelerator"
            return None
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            if isinstance(first, ast.Constant) and str(first.value).split(":")[0] in N.ACCELERATOR_DEVICE_TYPES:
                return "accelerator"
            return None
        if isinstance(node, ast.IfExp):
            kinds = {self.device_kind(node.body, scope, _depth + 1), self.device_kind(node.orelse, scope, _depth + 1)}
            if len(kinds) == 1:
                return kinds.pop()
            # `"cuda" if ok else "cpu"` is a configured device; a mix with an input's
            # device (`self.device if self.device else x.device`) is left unknown
            return "variable" if None not in kinds and "follows" not in kinds and "dtype" not in kinds else None
        q = self.qualname(node.func if isinstance(node, ast.Call) else node)
        if q and q.startswith("torch.") and q.count(".") == 1 and q[6:] in N.DTYPE_NAMES \
                and not isinstance(node, ast.Call):
            return "dtype"
        if isinstance(node, ast.Call):
            if q == "torch.device":
                first = node.args[0] if node.args else next(
                    (kw.value for kw in node.keywords if kw.arg == "type"), None)
                kind = self.device_kind(first, scope, _depth + 1)
                return kind if kind in ("accelerator", "cpu", "follows") else "variable"
            if q in ("torch.cuda.current_device", "torch.accelerator.current_accelerator"):
                return "accelerator"
            return None
        if isinstance(node, ast.Attribute):
            if node.attr == "dtype":
                return "dtype"
            if node.attr == "device" or N.DEVICE_NAME.match(node.attr):
                base = node.value
                if isinstance(base, ast.Name) and base.id == "self":
                    cls = self.enclosing_class(scope or node)
                    assigned = cls is not None and node.attr in self._class_attrs.get(cls, {})
                    return "variable" if assigned else "follows"
                last = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""
                if N.CONFIG_HOLDER.match(last) or node.attr != "device":
                    return "variable"
                return "follows"
            return None
        if isinstance(node, ast.Name):
            values = [v for v in self.assignments(node)[0] if not isinstance(v, ast.Name)]
            kinds = {self.device_kind(v, scope, _depth + 1) for v in values}
            if kinds in ({"follows"}, {"dtype"}):
                return kinds.pop()  # `device = x.device`, `dt = torch.float16`
            if "follows" in kinds or any(isinstance(v, ast.IfExp) and self.device_kind(v, scope, _depth + 1) is None
                                         for v in values):
                return None  # sometimes the input's device: cannot tell
            kind = self.kind_of(node, scope)
            if kind == "device" or N.DEVICE_NAME.match(node.id):
                return "variable"
            if kind in ("tensor", "parameter"):
                return "follows"
            if node.id.lower() in N.DTYPE_NAMES or node.id.lower().endswith("dtype"):
                return "dtype"
        return None

    def is_forward_input(self, node: ast.AST) -> bool:
        """A Name that is a parameter of the ``forward`` of an ``nn.Module`` it is used in
        (inputs of ``forward`` are tensors unless annotated otherwise or defaulting to
        a literal such as ``k=3``)."""
        if not isinstance(node, ast.Name):
            return False
        func = self.enclosing_function(node)
        if func is None or func.name != "forward" or not isinstance(parent(func), ast.ClassDef) \
                or parent(func).name not in self.module_classes:
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

    def to_call_device(self, call: ast.Call) -> ast.expr | None:
        """The device a ``t.to(...)`` call moves to: the ``device=`` keyword or the
        first positional argument unless that names a dtype. None otherwise."""
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "to"):
            return None
        for kw in call.keywords:
            if kw.arg == "device":
                return kw.value
        if call.args and not isinstance(call.args[0], ast.Starred) and \
                self.device_kind(call.args[0]) != "dtype":
            return call.args[0]
        return None

    @cached_property
    def cuda_evidence(self) -> ast.AST | None:
        """The first call showing this module runs on CUDA: ``x.cuda()``,
        ``.to("cuda")``, ``torch.device("cuda")``, ``device="cuda"``,
        ``torch.cuda.is_available()``/``set_device``/``device_count``,
        ``torch.accelerator.*``. None for modules with no such sign."""
        for call in sorted(self.calls, key=position):
            q = self.qualname(call.func) or ""
            if q in N.CUDA_QUERIES or q.startswith("torch.accelerator."):
                return call
            if isinstance(call.func, ast.Attribute) and call.func.attr == "cuda" and not q.startswith("torch."):
                return call
            is_to = isinstance(call.func, ast.Attribute) and call.func.attr == "to"
            candidates = list(call.args[:1]) if (is_to or q == "torch.device") else []
            candidates += [kw.value for kw in call.keywords if kw.arg == "device"]
            if any(_is_cuda_literal(c) for c in candidates):
                return call
        for scope, name, value, _ in self._pending:
            if value is not None and "dev" in name.lower() and _is_cuda_literal(value):
                return value
        return None

    # ------------------------------------------------------------ assignments
    @cached_property
    def _assigned(self) -> dict[tuple[ast.AST, str], list[tuple[ast.AST | None, str | None]]]:
        table: dict[tuple[ast.AST, str], list[tuple[ast.AST | None, str | None]]] = {}
        for scope, name, value, how in self._pending:
            if name != "for":
                table.setdefault((scope, name), []).append((value, how))
        return table

    def assignments(self, node: ast.AST) -> tuple[list[ast.AST], ast.AST | None]:
        """What a Name (or ``self.attr``) is assigned in the scope that binds it:
        ``(assigned expressions, function)`` where ``function`` is set when the
        name is a parameter of that function. Unknown names give ``([], None)``."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            cls = self.enclosing_class(node)
            out = [v for (scope, name), entries in self._assigned.items()
                   if name == "self." + node.attr and self.enclosing_class(scope) is cls
                   for v, _ in entries if v is not None]
            return out, None
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
