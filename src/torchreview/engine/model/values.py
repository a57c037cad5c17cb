"""Model concept: values (what a name may hold, where a value comes from).

``Values`` follows names to what they hold: ``values_of`` (every expression a
name or ``self.attr`` may hold, through same-module call sites' arguments and,
asked, local helpers' returns), ``reaching_value`` / ``reaching_value_strict``
(the one assignment that reaches a read), ``origin`` (what produced a value),
and, built on them, the module a call runs (``module_constructor``), what a
tensor holds (``activation_of``, ``known_tensor``), which loss a call computes
(``loss_call``), which loaders a loop iterates (``iterated_loaders``) and what
wraps a model (``wrapping_call``). It receives the semantic model and the call
graph (``CallGraph``) in its constructor and asks no other flow concept.
"""

from __future__ import annotations

import ast
from functools import cached_property

from torchreview.engine import names as N
from torchreview.engine.flow_common import _field_of
from torchreview.engine.semantic_common import (
    FunctionNode, LoopNode, ancestors, call_name, dotted, parameter_default, parent, position,
)

_NOT_PROJECT = ("torch.", "builtins.")  # qualified names no project module defines
# methods and calls that convert numbers without changing where they came from
_CASTS = frozenset({"astype", "float", "double", "half", "long", "int", "to", "cuda", "cpu", "numpy", "reshape",
                    "view", "clone"})
_CONVERSIONS = frozenset({"torch.from_numpy", "torch.tensor", "torch.as_tensor", "numpy.asarray", "numpy.array",
                          "torch.FloatTensor", "torch.LongTensor"})


# launchers that call the function they are given with a tuple of arguments (after how many
# arguments of their own): Accelerate's notebook launcher, torch.multiprocessing's spawn (rank first)
_LAUNCHERS = {"accelerate.notebook_launcher": 0, "accelerate.launchers.notebook_launcher": 0,
              "torch.multiprocessing.spawn": 1, "torch.multiprocessing.spawn.spawn": 1}


class Values:
    def __init__(self, model, *, calls) -> None:
        self.m = model
        self.call_sites = calls.call_sites
        self.resolve_local_call = calls.resolve_local_call
        self._is_main_guard = calls.is_main_guard
        self._loss_calls: dict[int, tuple[str, ast.Call | None] | None] = {}

    def values_of(self, expr: ast.AST, depth: int = 3, *, follow_returns: bool = False) -> list[ast.AST]:
        """Expressions ``expr`` may hold: assignments of a Name / ``self.attr``
        followed through other names, and for a parameter the arguments passed
        at same-module call sites (and by launchers: ``notebook_launcher(f, args)``,
        ``mp.spawn(f, args=...)``); ``config.x`` of an instance of a module class built
        without arguments, the class body's ``x = ...``. With ``follow_returns``, a call of a function of
        this module stands for what it returns. Anything unresolvable is returned as is."""
        if depth > 0 and follow_returns and isinstance(expr, ast.Call):
            callee = self.resolve_local_call(expr)
            values = [n.value for n in self.m.own_nodes(callee)
                      if isinstance(n, ast.Return) and n.value is not None] if callee is not None else []
        elif depth <= 0 or not isinstance(expr, (ast.Name, ast.Attribute)):
            return [expr]
        else:
            values, func = self.m.assignments(expr)
            if func is not None and isinstance(expr, ast.Name):
                values = values + self.arguments_for(func, expr.id)
            if not values and isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and \
                    expr.value.id != "self":
                values = self._class_default(expr, depth)
        if not values:
            return [expr]
        out: list[ast.AST] = []
        for value in values:
            for v in self.values_of(value, depth - 1, follow_returns=follow_returns):
                if v not in out:
                    out.append(v)
        return out

    def _class_default(self, expr: ast.Attribute, depth: int) -> list[ast.AST]:
        """``config.steps`` where ``config`` holds only ``Config()`` of a class of this module built
        without arguments, whose body gives ``steps = 1`` (a notebook's ``@dataclass class
        TrainingConfig``) and nothing in the module stores ``.steps`` on anything: that value."""
        attr = expr.attr
        cls_defs = []
        for base in self.values_of(expr.value, depth - 1):
            cls = self.m.classes.get(base.func.id) if isinstance(base, ast.Call) and \
                isinstance(base.func, ast.Name) and not base.args and not base.keywords else None
            if not isinstance(cls, ast.ClassDef):
                return []
            cls_defs.append(cls)
        if not cls_defs or any(c is not cls_defs[0] for c in cls_defs):
            return []
        if any(n.attr == attr and isinstance(n.ctx, ast.Store) for n in self.m.nodes_by_type.get(ast.Attribute, ())):
            return []  # set on an instance somewhere (`self.steps = ...`, `config.steps = 4`)
        found = [s.value for s in cls_defs[0].body if s.__class__ in (ast.Assign, ast.AnnAssign) and
                 getattr(s, "value", None) is not None and
                 any(isinstance(t, ast.Name) and t.id == attr
                     for t in (s.targets if isinstance(s, ast.Assign) else [s.target]))]
        return found if len(found) == 1 else []

    def iterated_loaders(self, loop: ast.AST) -> list[ast.Call]:
        """The ``DataLoader(...)`` calls a ``for`` loop iterates (through ``enumerate``,
        ``tqdm``, ``iter``, ``zip``, names, ``self`` attributes and parameters)."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return []
        return self.loaders_of(loop.iter)

    def loaders_of(self, expr: ast.AST) -> list[ast.Call]:
        """The ``DataLoader(...)`` calls iterating ``expr`` iterates (``iterated_loaders`` of
        one expression: one argument of a ``zip`` a loop iterates). A name whose binding there
        wraps the loader in something iterating on its own terms (``_batch_wrapper``) leads to
        none."""
        out: list[ast.Call] = []
        stack: list[tuple[ast.AST, int]] = [(expr, 0)]
        while stack:
            expr, hops = stack.pop()
            if hops > 4:
                continue
            if isinstance(expr, ast.Call):
                q = self.m.qualname(expr.func)
                if q == "torch.utils.data.DataLoader":
                    if expr not in out:
                        out.append(expr)
                elif q in ("builtins.enumerate", "builtins.iter", "builtins.zip", "tqdm.tqdm",
                           "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.trange") or \
                        (isinstance(expr.func, ast.Name) and expr.func.id == "tqdm"):
                    stack.extend((a, hops + 1) for a in expr.args[:1 if q != "builtins.zip" else None])
                else:  # a loader-building function of this module
                    stack.extend((v, hops + 1) for v in self.values_of(expr, follow_returns=True)
                                 if v is not expr)
            elif isinstance(expr, (ast.Name, ast.Attribute)):
                held = self.reaching_value_strict(expr) if isinstance(expr, ast.Name) else None
                if held is not None and self._batch_wrapper(held):
                    continue  # the loop iterates a class of this module that yields batches of its own
                stack.extend((v, hops + 1) for v in self.values_of(expr, follow_returns=True)
                             if v is not expr)
        return out

    def _batch_wrapper(self, value: ast.AST) -> bool:
        """``value`` wraps a loader in something whose iteration is its own: an instance of a class
        of this module defining ``__iter__`` (no ``DataLoader``), or a call of a project or library
        callable handed a ``DataLoader`` (``WrappedDataLoader(dl, to_device, device)`` imported from
        the project's dataset module, whose ``__iter__`` yields ``self.func(*b)``;
        ``accelerator.prepare(dl)``): what it yields is not known to be the loader's CPU batches
        (renal-vessel-seg, judged false in blind test 93). ``enumerate``/``iter``/``tqdm`` and
        ``itertools`` pass batches through."""
        if not isinstance(value, ast.Call):
            return False
        q = self.m.qualname(value.func) or ""
        if q == "torch.utils.data.DataLoader" or q.startswith(("builtins.", "itertools.", "tqdm.")) or \
                (isinstance(value.func, ast.Name) and value.func.id == "tqdm"):
            return False
        cls = self.m.classes.get(value.func.id) if isinstance(value.func, ast.Name) else None
        if cls is not None:
            if any("DataLoader" in (dotted(b) or "") for b in cls.bases):
                return False
            return any(isinstance(b, FunctionNode) and b.name == "__iter__" for b in cls.body)
        return any(isinstance(v, ast.Call) and self.m.qualname(v.func) == "torch.utils.data.DataLoader"
                   for a in value.args[:1] for v in self.values_of(a))

    def dataset_in_memory(self, expr: ast.AST | None, depth: int = 3) -> bool:
        """True when every value ``expr`` may hold is a dataset already in memory
        whose items need no I/O or transform: ``TensorDataset``/``StackDataset``,
        tensors, literal sequences, ``Subset``/``ConcatDataset`` of those, or a
        same-module ``Dataset`` whose ``__getitem__`` only indexes and converts."""
        if expr is None or depth <= 0:
            return False
        values = self.values_of(expr, follow_returns=True)
        return bool(values) and all(self._value_in_memory(v, depth) for v in values)

    def _value_in_memory(self, v: ast.AST, depth: int) -> bool:
        if isinstance(v, (ast.List, ast.Tuple, ast.ListComp)):
            return True
        if isinstance(v, ast.Subscript):  # random_split(...)[0]
            return self.dataset_in_memory(v.value, depth - 1)
        if not isinstance(v, ast.Call):
            return self.m.kind_of(v) == "tensor"
        q = self.m.qualname(v.func) or ""
        if q in N.IN_MEMORY_DATASETS or q == "builtins.range" or self.m.kind_of(v) == "tensor":
            return True
        if q in N.DATASET_WRAPPERS:
            parts = _wrapped_datasets(v, q)
            return bool(parts) and all(self.dataset_in_memory(p, depth - 1) for p in parts)
        if isinstance(v.func, ast.Name) and v.func.id in self.m.classes:
            return self._getitem_only_indexes(self.m.classes[v.func.id])
        return False

    def random_dataset(self, expr: ast.AST | None, depth: int = 3) -> bool:
        """True when every value ``expr`` may hold is a dataset of random numbers: a
        ``TensorDataset`` of tensors the random factories build (``torch.randn``,
        ``np.random.rand``, through names and casts), a ``Subset``/``ConcatDataset`` of such,
        or a same-module ``Dataset`` class whose constructor fills its attributes only from
        random generators (and constants) and whose body reads no file."""
        if expr is None or depth <= 0:
            return False
        values = self.values_of(expr, follow_returns=True)
        return bool(values) and all(self._random_value(v, depth) for v in values)

    def _random_value(self, v: ast.AST, depth: int) -> bool:
        if isinstance(v, ast.Subscript):  # random_split(...)[0]
            return self.random_dataset(v.value, depth - 1)
        if not isinstance(v, ast.Call):
            return False
        q = self.m.qualname(v.func) or ""
        if q == "torch.utils.data.TensorDataset":
            return bool(v.args) and all(self._random_numbers(a, depth) for a in v.args)
        if q in N.DATASET_WRAPPERS:
            parts = _wrapped_datasets(v, q)
            return bool(parts) and all(self.random_dataset(p, depth - 1) for p in parts)
        if isinstance(v.func, ast.Name) and v.func.id in self.m.classes:
            return self._random_class(self.m.classes[v.func.id])
        return False

    def random_numbers(self, expr: ast.AST) -> bool:
        """``expr`` holds numbers a random factory built (``torch.randn(200, 100)``, through
        casts, conversions and names)."""
        return self._random_numbers(expr)

    def _random_numbers(self, expr: ast.AST, depth: int = 2) -> bool:
        """``expr`` is built by a random factory (through casts, conversions and names)."""
        while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
                self.m.qualname(expr.func) is None and expr.func.attr in _CASTS:
            expr = expr.func.value  # `np.random.randn(...).astype(np.float32)`, `.float()`
        if isinstance(expr, ast.Call):
            q = self.m.qualname(expr.func) or ""
            if q in _CONVERSIONS and expr.args:
                return self._random_numbers(expr.args[0], depth)
            return q in N.RANDOM_FACTORIES
        if isinstance(expr, ast.Name) and depth > 0:
            values = self.m.assignments(expr)[0]
            return bool(values) and all(self._random_numbers(v, depth - 1) for v in values)
        return False

    def _random_class(self, cls: ast.ClassDef) -> bool:
        init = next((s for s in cls.body if isinstance(s, FunctionNode) and s.name == "__init__"), None)
        if init is None:
            return False
        randoms = 0
        for node in ast.walk(init):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) for t in node.targets):
                if self._random_numbers(node.value, 0):
                    randoms += 1
                elif any(isinstance(sub, ast.Call) for sub in ast.walk(node.value)):
                    return False  # built from something else (a file, a download, a transform)
        if not randoms:
            return False
        for node in ast.walk(cls):  # no file read anywhere in the class
            if isinstance(node, ast.Call) and ((self.m.qualname(node.func) or "") in N.FILE_READERS or
                                               isinstance(node.func, ast.Name) and node.func.id == "open"):
                return False
        return True

    def _getitem_only_indexes(self, cls: ast.ClassDef) -> bool:
        getitem = next((s for s in cls.body if isinstance(s, FunctionNode) and s.name == "__getitem__"), None)
        if getitem is None:
            return False
        for sub in ast.walk(getitem):
            if not isinstance(sub, ast.Call):
                continue
            q = self.m.qualname(sub.func) or ""
            if q in N.CHEAP_ITEM_CALLS or q in N.TENSOR_FACTORIES:
                continue
            if isinstance(sub.func, ast.Attribute) and q == "" and sub.func.attr in N.CHEAP_ITEM_METHODS:
                continue
            return False
        return True

    def parameter_constant(self, node: ast.AST, called_only_here=None) -> tuple[bool, object]:
        """``(True, value)`` when ``node`` reads a parameter of its function that every
        same-module call site gives the same constant (an omitted argument counts as its
        constant default): ``amp`` in ``def train(net, amp=True)`` called only as
        ``train(net, amp=False)``. Only in an entry script (a ``__main__`` guard), whose
        functions no other file calls, or for a function ``called_only_here(func)`` says
        no other file names (the project's word index, asked by the caller);
        ``(False, None)`` otherwise."""
        if not isinstance(node, ast.Name):
            return False, None
        values, func = self.m.assignments(node)
        if values or func is None or not (self._entry_script() or (
                called_only_here is not None and called_only_here(func))):
            return False, None
        args = func.args  # type: ignore[attr-defined]
        positional = [*args.posonlyargs, *args.args]
        if not any(a.arg == node.id for a in [*positional, *args.kwonlyargs]):
            return False, None
        sites = self.call_sites(func)
        if not sites:
            return False, None
        default = parameter_default(args, node.id)
        given = self.arguments_for(func, node.id)
        omitted = len(sites) - len(given)
        if any(not isinstance(g, ast.Constant) for g in given) or \
                (omitted and not isinstance(default, ast.Constant)):
            return False, None
        found = {repr(g.value) for g in given} | ({repr(default.value)} if omitted else set())
        if len(found) != 1:
            return False, None
        return True, (given[0] if given else default).value

    def _entry_script(self) -> bool:
        tree = self.m.tree
        return any(isinstance(s, ast.If) and self._is_main_guard(s.test) for s in tree.body)

    def arguments_for(self, func: ast.AST, name: str) -> list[ast.AST]:
        args = func.args  # type: ignore[attr-defined]
        positional = [a.arg for a in [*args.posonlyargs, *args.args]]
        if isinstance(parent(func), ast.ClassDef) and positional and positional[0] in ("self", "cls"):
            positional = positional[1:]
        index = positional.index(name) if name in positional else None
        out = []
        if index is not None:
            out.extend(self._launched_with(func, index))
        for site in self.call_sites(func):
            for kw in site.keywords:
                if kw.arg == name:
                    out.append(kw.value)
                    break
            else:
                if index is not None and index < len(site.args) and \
                        not any(isinstance(a, ast.Starred) for a in site.args[: index + 1]):
                    out.append(site.args[index])
        return out

    def _launched_with(self, func: ast.AST, index: int) -> list[ast.AST]:
        """The arguments a launcher hands ``func`` at ``index``: ``notebook_launcher(train_loop,
        args)`` calls ``train_loop(*args)``, ``mp.spawn(worker, args=(cfg,))`` calls
        ``worker(rank, *args)`` (the tuple written out, directly or through a name)."""
        name = getattr(func, "name", None)
        out: list[ast.AST] = []
        by_name = self.m.calls_by_name
        for call in (*by_name.get("notebook_launcher", ()), *by_name.get("spawn", ())):
            q = self.m.qualname(call.func) or ""
            shift = _LAUNCHERS.get(q)
            if shift is None or not call.args or not (isinstance(call.args[0], ast.Name) and call.args[0].id == name):
                continue
            packed = next((k.value for k in call.keywords if k.arg == "args"), None)
            if packed is None and len(call.args) > 1:
                packed = call.args[1]
            if isinstance(packed, ast.Name):
                held = self.values_of(packed, 1)
                packed = held[0] if len(held) == 1 else None
            at = index - shift
            if isinstance(packed, ast.Tuple) and 0 <= at < len(packed.elts) and \
                    not any(isinstance(e, ast.Starred) for e in packed.elts[: at + 1]):
                out.append(packed.elts[at])
        return out

    # -------------------------------------------------------- producers
    @cached_property
    def _unpacked_stores(self) -> dict[tuple[int, str], list[tuple[int, int]]]:
        """Where each scope's names are bound by unpacking (an element of a tuple or list
        target: `a, b = f()`, `for i, x in ...`), by (scope id, name): one pass, asked by
        ``reaching_value``."""
        out: dict[tuple[int, str], list[tuple[int, int]]] = {}
        for n in self.m.nodes_by_type.get(ast.Name, ()):
            if isinstance(n.ctx, ast.Store) and isinstance(getattr(n, "_tr_parent", None), (ast.Tuple, ast.List, ast.Starred)):
                out.setdefault((id(self.m.scope_of(n)), n.id), []).append(position(n))
        return out

    def reaching_value(self, node: ast.AST) -> ast.AST | None:
        """The one expression a Name / ``self.attr`` holds where ``node`` reads it:
        the last assignment that ends before ``node`` in the same scope; a name of
        an outer scope or a ``self`` attribute with a single assignment; for a
        parameter with no local assignment, the argument of the only same-module
        call site. None when unknown or ambiguous."""
        if not (isinstance(node, ast.Name) or (isinstance(node, ast.Attribute) and
                                               isinstance(node.value, ast.Name) and node.value.id == "self")):
            return None
        values, func = self.m.assignments(node)
        if isinstance(node, ast.Name):
            scope = self.m.scope_of(node)
            here = [v for v in values if self.m.scope_of(v) is scope]
            if here:
                pos = position(node)
                before = [v for v in here if (getattr(v, "end_lineno", 0), getattr(v, "end_col_offset", 0)) < pos]
                if before and self._dead_branches:
                    before = [v for v in before if not self._never_runs_here(v, node)]
                best = max(before, key=position) if before else None
                if best is not None:
                    # rebound in between by unpacking (`out1, out2 = model(x)` after an earlier
                    # `out1 = F.softmax(out1, 1)`): what the name holds there is not known (a multi-task
                    # script's validation loss, judged false as cross-entropy on softmax in blind test 134)
                    done = (getattr(best, "end_lineno", 0), getattr(best, "end_col_offset", 0))
                    if any(done < at < pos for at in self._unpacked_stores.get((id(scope), node.id), ())):
                        return None
                return best
            if func is not None:
                args = self.arguments_for(func, node.id)
                return args[0] if len(args) == 1 and len(self.call_sites(func)) == 1 else None
        return values[0] if len(values) == 1 else None

    @cached_property
    def _script_stores(self) -> dict[str, list[tuple[ast.AST, ast.AST | None]]]:
        """For each name or dotted attribute (``cfg.exp_set.gpu_start``) the module stores to:
        (target, the value stored there, or None when unknown -- an unpacked call, a loop
        target, an augmented assignment), anywhere in the module."""
        out: dict[str, list[tuple[ast.AST, ast.AST | None]]] = {}

        def add(target: ast.AST, value: ast.AST | None) -> None:
            if isinstance(target, (ast.Tuple, ast.List)):
                paired = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
                for i, elt in enumerate(target.elts):
                    add(elt, value.elts[i] if paired else None)
                return
            if isinstance(target, ast.Starred):
                add(target.value, None)
                return
            text = dotted(target) if isinstance(target, (ast.Name, ast.Attribute)) else None
            if text:
                out.setdefault(text, []).append((target, value))

        for node in self.m.subtree(self.m.tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    add(target, node.value)
            elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
                add(node.target, None)
            elif isinstance(node, ast.AnnAssign):
                add(node.target, node.value)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        add(item.optional_vars, None)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.setdefault(node.name, []).append((node, None))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    out.setdefault((alias.asname or alias.name).split(".")[0], []).append((node, None))
        return out

    def fixed_test(self, test: ast.AST) -> bool | None:
        """What a module-level test always evaluates to, folded from literals and from names
        or dotted attributes the module stores exactly once, at module level, before the test,
        with a literal (``cfg.exp_set.gpu_start, cfg.exp_set.gpu_finish = 0, 0``, then ``if
        (cfg.exp_set.gpu_finish - cfg.exp_set.gpu_start) >= 1:``: never taken); None when it
        reads anything else or sits in a function or class."""
        import operator

        from torchreview.engine.semantic_common import COMPARE_OPS

        if any(isinstance(a, (*FunctionNode, ast.Lambda, ast.ClassDef)) for a in ancestors(test)):
            return None
        unknown = object()
        binops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                  ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}

        def value(expr: ast.AST, depth: int = 0):
            if depth > 12:
                return unknown
            if isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float, bool, str, type(None))):
                return expr.value
            if isinstance(expr, (ast.Name, ast.Attribute)):
                text = dotted(expr)
                stores = self._script_stores.get(text or "", [])
                # every prefix of a dotted read must not be rebound either (`cfg = load(...)` later)
                if not text or len(stores) != 1:
                    return unknown
                target, stored = stores[0]
                if stored is None or any(isinstance(a, (*FunctionNode, ast.Lambda, ast.ClassDef))
                                         for a in ancestors(target)) or position(target) >= position(expr):
                    return unknown
                parts = text.split(".")
                for i in range(1, len(parts)):  # `cfg = load(...)` between the store and the read
                    if any(position(target) < position(t) < position(expr)
                           for t, _ in self._script_stores.get(".".join(parts[:i]), ())):
                        return unknown
                return value(stored, depth + 1) if isinstance(stored, ast.Constant) else unknown
            if isinstance(expr, ast.UnaryOp):
                inner = value(expr.operand, depth + 1)
                if inner is unknown:
                    return unknown
                return (not inner) if isinstance(expr.op, ast.Not) else (-inner) \
                    if isinstance(expr.op, ast.USub) and isinstance(inner, (int, float)) else unknown
            if isinstance(expr, ast.BinOp) and type(expr.op) in binops:
                left, right = value(expr.left, depth + 1), value(expr.right, depth + 1)
                if left is unknown or right is unknown or not all(
                        isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
                    return unknown
                try:
                    return binops[type(expr.op)](left, right)
                except ArithmeticError:
                    return unknown
            if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and type(expr.ops[0]) in COMPARE_OPS:
                left, right = value(expr.left, depth + 1), value(expr.comparators[0], depth + 1)
                if left is unknown or right is unknown:
                    return unknown
                try:
                    return bool(COMPARE_OPS[type(expr.ops[0])](left, right))
                except TypeError:
                    return unknown
            if isinstance(expr, ast.BoolOp):
                parts = [value(v, depth + 1) for v in expr.values]
                if isinstance(expr.op, ast.And):
                    if any(p is not unknown and not p for p in parts):
                        return False
                    return unknown if unknown in parts else True
                if any(p is not unknown and p for p in parts):
                    return True
                return unknown if unknown in parts else False
            return unknown

        result = value(test)
        return None if result is unknown else bool(result)

    @cached_property
    def _dead_branches(self) -> dict[int, str]:
        """``if`` statements of the module one of whose branches never runs: the test is a
        name every assignment of which (none a parameter) is a literal -- ``mse_loss =
        False`` set once, then ``if mse_loss: pred = torch.sigmoid(pred)`` -- or ``not``
        such a name. id(if) -> "body" or "orelse", the branch that never runs."""
        out: dict[int, str] = {}
        for node in self.m.nodes_by_type.get(ast.If, ()):
            test, negated = node.test, False
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, negated = test.operand, True
            if not isinstance(test, ast.Name):
                continue
            values, func = self.m.assignments(test)
            if func is not None or not values or not all(isinstance(v, ast.Constant) for v in values):
                continue
            truth = {bool(v.value) for v in values}
            if len(truth) != 1:
                continue
            taken = truth.pop() != negated
            out[id(node)] = "orelse" if taken else "body"
        return out

    def _never_runs_here(self, value: ast.AST, use: ast.AST) -> bool:
        """``value`` is assigned in the branch of an ``if`` that never runs
        (``_dead_branches``) and ``use`` is not inside that branch."""
        dead = self._dead_branches
        child = value
        for anc in ancestors(value):
            if isinstance(anc, (*FunctionNode, ast.Lambda, ast.ClassDef)):
                return False
            side = dead.get(id(anc))
            if side is not None and _field_of(anc, child) == side and \
                    not any(a is anc for a in ancestors(use)):
                return True
            child = anc
        return False

    def reaching_values(self, node: ast.Name) -> list[ast.AST]:
        """Every expression a local name may hold where ``node`` reads it: the last
        assignment before ``node`` in the same scope and, while that assignment sits
        in a branch or loop that does not also hold ``node`` (``if apply_softmax:
        out = F.softmax(out)``), the assignment before it too. Empty when unknown."""
        values, _ = self.m.assignments(node)
        scope = self.m.scope_of(node)
        pos = position(node)
        before = sorted((v for v in values if self.m.scope_of(v) is scope and
                         (getattr(v, "end_lineno", 0), getattr(v, "end_col_offset", 0)) < pos), key=position)
        out: list[ast.AST] = []
        mine = {id(a) for a in ancestors(node)}
        while before:
            value = before.pop()
            out.append(value)
            guards = [a for a in ancestors(value) if isinstance(a, (ast.If, ast.For, ast.While, ast.Try,
                                                                    ast.AsyncFor, ast.IfExp))
                      and id(a) not in mine and self.m.scope_of(a) is scope]
            if not guards:
                break
        return out

    def origin(self, expr: ast.AST, *, peel: bool = True, hops: int = 8) -> ast.AST:
        """What produced the value of ``expr``: names and ``self`` attributes are
        followed to their assigned expression (``reaching_value``); with ``peel``,
        value-preserving tensor methods (``.view``, ``.to``, ``.squeeze`` ...) and
        subscripts are looked through. Returns the last expression reached."""
        for _ in range(hops):
            if peel and isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
                    expr.func.attr in N.VALUE_PRESERVING_METHODS:
                expr = expr.func.value
            elif peel and isinstance(expr, ast.Subscript):
                expr = expr.value
            elif isinstance(expr, (ast.Name, ast.Attribute)):
                value = self.reaching_value(expr)
                if value is None:
                    return expr
                expr = value
            else:
                return expr
        return expr

    def module_constructor(self, callee: ast.AST) -> ast.Call | None:
        """The call that built the module ``callee`` refers to (``nn.Softmax(dim=1)``,
        ``Net()``, ``nn.Sequential(...)``), through names, ``self`` attributes,
        ``.to()``/``.cuda()`` and wrappers (DataParallel, DDP, ``torch.compile``)."""
        node = callee
        for _ in range(6):
            node = self.origin(node)
            if not isinstance(node, ast.Call):
                return None
            if self.m.qualname(node.func) in N.MODULE_WRAPPERS and node.args:
                node = node.args[0]
                continue
            return node
        return None

    def activation_of(self, expr: ast.AST, _depth: int = 0) -> str | None:
        """What the tensor ``expr`` holds, by what produced it: ``"softmax"``,
        ``"log_softmax"``, ``"sigmoid"``, ``"logsigmoid"`` or ``"logits"`` (the
        output of a final ``Linear``/``Conv`` layer). Follows assignments, value-
        preserving methods, activation modules (``self.softmax = nn.Softmax()``),
        ``nn.Sequential`` (its last layer) and same-module ``nn.Module`` classes
        (what every ``return`` of their ``forward`` holds). None when unknown."""
        if _depth > 5:
            return None
        node = self.origin(expr)
        if not isinstance(node, ast.Call):
            return None
        q = self.m.qualname(node.func)
        if q in N.ACTIVATION_FUNCTIONS:
            return N.ACTIVATION_FUNCTIONS[q]
        func = node.func
        if q is None and isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        elif q is None and isinstance(func, ast.Attribute) and func.attr in N.ACTIVATION_METHODS and not (
                isinstance(func.value, ast.Name) and func.value.id == "self") and \
                self.m.kind_of(func.value) not in ("model", "loss_fn"):
            return N.ACTIVATION_METHODS[func.attr]
        if isinstance(func, ast.Subscript):
            # `self.token[0](x)`: one layer of a container, not the container's output
            # (glue-factory's `nn.Sequential(nn.Linear(d, 1), nn.Sigmoid())` read without
            # its sigmoid): the indexed layer's output when the index is a literal
            return self._indexed_layer_output(func, _depth + 1)
        ctor = self.module_constructor(func)
        return self._module_output(ctor, _depth + 1) if ctor is not None else None

    def _indexed_layer_output(self, func: ast.Subscript, depth: int) -> str | None:
        container = self.module_constructor(func.value)
        index = func.slice.value if isinstance(func.slice, ast.Constant) else \
            -func.slice.operand.value if isinstance(func.slice, ast.UnaryOp) and \
            isinstance(func.slice.op, ast.USub) and isinstance(func.slice.operand, ast.Constant) else None
        if container is None or self.m.qualname(container.func) != "torch.nn.Sequential" or \
                not isinstance(index, int) or any(isinstance(a, ast.Starred) for a in container.args):
            return None
        try:
            layer = container.args[index]
        except IndexError:
            return None
        inner = self.module_constructor(layer)
        return self._module_output(inner, depth + 1) if inner is not None and depth < 6 else None

    def _module_output(self, ctor: ast.Call, depth: int) -> str | None:
        q = self.m.qualname(ctor.func)
        if q in N.ACTIVATION_MODULES:
            return N.ACTIVATION_MODULES[q]
        if q == "torch.nn.Sequential":
            last = ctor.args[-1] if ctor.args and not isinstance(ctor.args[-1], ast.Starred) else None
            inner = self.module_constructor(last) if last is not None else None
            return self._module_output(inner, depth + 1) if inner is not None and depth < 6 else None
        if isinstance(ctor.func, ast.Name) and ctor.func.id in self.m.module_classes:
            return self._forward_output(self.m.class_reaching(ctor.func.id, ctor), depth)
        if self.m.project is not None:  # a model class of another project module
            return getattr(self.m.project.class_summary(q), "output", None)
        return None

    def _forward_output(self, cls: ast.ClassDef, depth: int) -> str | None:
        forward = next((s for s in cls.body if isinstance(s, FunctionNode) and s.name == "forward"), None)
        if forward is None:
            local = [b.id for b in cls.bases if isinstance(b, ast.Name) and b.id in self.m.module_classes]
            return self._forward_output(self.m.classes[local[0]], depth + 1) \
                if len(local) == 1 and depth < 6 else None
        labels = set()
        for r in self.m.own_nodes(forward):
            if not isinstance(r, ast.Return):
                continue
            if isinstance(r.value, ast.Name):  # a name set on a branch may hold either value
                held = self.reaching_values(r.value) or [r.value]
                labels |= {self.activation_of(v, depth + 1) for v in held}
            else:
                labels.add(self.activation_of(r.value, depth + 1) if r.value is not None else None)
        return labels.pop() if len(labels) == 1 else None

    def loss_call(self, call: ast.Call) -> tuple[str, ast.Call | None] | None:
        """``(functional name, constructor)`` when ``call`` computes one of the
        losses of ``N.LOSS_MODULES``: ``F.cross_entropy(...)`` gives
        ``("cross_entropy", None)``; ``criterion(...)`` with ``criterion =
        nn.CrossEntropyLoss(...)`` gives ``("cross_entropy", <that call>)``."""
        q = self.m.qualname(call.func)
        if q is not None and not q.startswith("torch.nn.functional."):
            return None  # a named callee other than a functional loss: ``_loss_call`` says None
        cache = self._loss_calls  # several rules ask about every call
        if id(call) not in cache:
            cache[id(call)] = self._loss_call(call)
        return cache[id(call)]

    def builds_loss_modules(self) -> bool:
        """The module builds a torch loss module (``nn.CrossEntropyLoss()``) or calls a
        project function returning one: without it, ``loss_call`` of a call with no
        qualified name is None."""
        return self._builds_loss_modules

    @cached_property
    def _builds_loss_modules(self) -> bool:
        qualname, losses = self.m.qualname, N.LOSS_MODULES
        for c in self.m.calls:
            q = qualname(c.func)
            if q in losses:
                return True
            # ``_project_loss`` answers None for these without asking: not called
            if q is not None and not q.startswith(_NOT_PROJECT) and self._project_loss(c) is not None:
                return True
        return False

    def _project_loss(self, call: ast.Call) -> tuple[str, ast.Call] | None:
        """``make_criterion()`` of another project module that returns a torch loss it
        builds: (loss name, a stand-in for its constructor call)."""
        project = self.m.project
        if project is None or not isinstance(call.func, (ast.Name, ast.Attribute)):
            return None
        q = self.m.qualname(call.func)
        if q is None or q.startswith(_NOT_PROJECT):
            return None
        found = project.returned_constructor(call, q)
        if found is None or found[0] not in N.LOSS_MODULES:
            return None
        return N.LOSS_MODULES[found[0]], found[1]

    def _loss_call(self, call: ast.Call) -> tuple[str, ast.Call | None] | None:
        q = self.m.qualname(call.func)
        if q and q.startswith("torch.nn.functional.") and q[20:] in N.LOSS_FUNCTIONALS:
            return q[20:], None
        if q is not None or not self._builds_loss_modules:
            return None
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        if not isinstance(func, ast.Call) and self.m.kind_of(func) not in ("loss_fn", None):
            return None
        ctor = self.module_constructor(func) if isinstance(func, (ast.Name, ast.Attribute, ast.Call)) else None
        name = N.LOSS_MODULES.get(self.m.qualname(ctor.func) or "") if ctor is not None else None
        if name is None and ctor is not None:
            return self._project_loss(ctor)
        return (name, ctor) if name else None

    def unpacked_from(self, name: ast.AST) -> ast.Call | None:
        """The call a tuple assignment of ``name``'s scope unpacks the read ``name`` from (``train_set,
        val_set = random_split(dataset, [n, m])``): the last such statement before the read,
        when no plain assignment of the name comes between; None otherwise."""
        if not isinstance(name, ast.Name):
            return None
        scope = self.m.scope_of(name)
        best = None
        for stmt in self.m.own_nodes(scope) if scope is not None else ():
            if not isinstance(stmt, ast.Assign) or (stmt.lineno, stmt.col_offset) >= (name.lineno, name.col_offset):
                continue
            if any(isinstance(t, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name.id for e in t.elts)
                   for t in stmt.targets):
                best = stmt.value if isinstance(stmt.value, ast.Call) else None
            elif any(isinstance(t, ast.Name) and t.id == name.id for t in stmt.targets):
                best = None
        return best

    def discarded(self, node: ast.AST) -> bool:
        """The value of ``node`` is dropped: it is assigned (``v = node``) or added (``v +=
        node``) to a local name of a function that nothing in that function reads, ``global``
        and ``nonlocal`` names aside (a validation loss summed into a total never printed,
        returned or compared)."""
        holder = parent(node)
        if isinstance(holder, ast.Assign) and holder.value is node and len(holder.targets) == 1:
            target = holder.targets[0]
        elif isinstance(holder, ast.AugAssign) and holder.value is node:
            target = holder.target
        else:
            return False
        if not isinstance(target, ast.Name):
            return False
        scope = self.m.scope_of(target)
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False  # a module-level name: other modules and later cells may read it
        if any(isinstance(n, (ast.Global, ast.Nonlocal)) and target.id in n.names
               for n in self.m.own_nodes(scope)):
            return False
        return not any(isinstance(n, ast.Name) and n.id == target.id and isinstance(n.ctx, ast.Load)
                       for n in self.m.subtree(scope))

    def reaching_value_strict(self, node: ast.AST) -> ast.AST | None:
        """``reaching_value`` only when that assignment always runs before ``node``:
        it is not inside an ``if``/``try``/loop/``with`` block that ``node`` is
        outside of (``x = a`` in the ``if`` branch does not reach a use in the
        ``else`` branch or after the ``if``)."""
        value = self.reaching_value(node)
        if value is None or not isinstance(node, ast.Name):
            return value
        use = set(ancestors(node))
        child = value
        for anc in ancestors(value):
            if isinstance(anc, (*FunctionNode, ast.Lambda, ast.Module, ast.ClassDef)):
                return value
            if isinstance(anc, (ast.If, ast.Try, *LoopNode, ast.With, ast.AsyncWith, ast.Match)):
                if anc not in use:
                    return None
                use_child = next(a for a in [node, *ancestors(node)] if parent(a) is anc)
                if _field_of(anc, child) != _field_of(anc, use_child):
                    return None
            child = anc
        return value

    def known_tensor(self, expr: ast.AST | None, _depth: int = 0) -> bool:
        """``expr`` is certainly a tensor by construction, never by a name guess:
        a torch factory or ``torch.*``/``F.*`` op, a tensor method of a known
        tensor, indexing/arithmetic/``.T`` of one, a parameter annotated
        ``torch.Tensor``, or a name whose reaching assignment is one of those.
        Tuple-returning ops (``split``, ``topk``, ``max(dim)`` ...) and model
        outputs (may be tuples or dicts) do not count."""
        if expr is None or _depth > 6:
            return False
        nxt = _depth + 1
        if isinstance(expr, ast.Name):
            value = self.reaching_value_strict(expr)
            if value is not None:
                return self.known_tensor(value, nxt)
            values, func = self.m.assignments(expr)
            if func is not None and not values:
                for arg in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]:
                    if arg.arg == expr.id and arg.annotation is not None:
                        return self.m.qualname(arg.annotation) == "torch.Tensor"
            return False
        if isinstance(expr, ast.Attribute):
            return expr.attr in ("T", "mT", "H", "mH", "data", "real", "imag") and self.known_tensor(expr.value, nxt)
        if isinstance(expr, ast.Subscript):
            inner = expr.value
            if isinstance(inner, ast.Call) and call_name(inner) in N.TUPLE_RETURNING_OPS:
                q = self.m.qualname(inner.func)
                return (q is not None and q.startswith("torch.")) or (
                    isinstance(inner.func, ast.Attribute) and self.known_tensor(inner.func.value, nxt))
            return self.known_tensor(inner, nxt)
        if isinstance(expr, ast.BinOp):
            return self.known_tensor(expr.left, nxt) or self.known_tensor(expr.right, nxt)
        if isinstance(expr, ast.UnaryOp):
            return not isinstance(expr.op, ast.Not) and self.known_tensor(expr.operand, nxt)
        if not isinstance(expr, ast.Call):
            return False
        name = call_name(expr)
        if name in N.TUPLE_RETURNING_OPS:
            return False
        q = self.m.qualname(expr.func)
        if q is not None:
            return N.kind_from_call_qualname(q) == "tensor" and q.startswith("torch.")
        if isinstance(expr.func, ast.Attribute):
            return name not in N.TENSOR_NON_TENSOR_METHODS and self.known_tensor(expr.func.value, nxt)
        return False

    def wrapping_call(self, expr: ast.AST, qualnames, hops: int = 6) -> ast.Call | None:
        """The call of one of ``qualnames`` (e.g. ``DistributedDataParallel``) that
        built what ``expr`` may hold, or None: followed through names, ``self``
        attributes, ``.to()``/``.cuda()``, parameters (arguments at same-module call
        sites, and of ``Cls(...)`` for the parameters of ``Cls.__init__``)."""
        stack: list[tuple[ast.AST, int]] = [(expr, 0)]
        seen: set[int] = set()
        while stack:
            value, depth = stack.pop()
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                    value.func.attr in N.MODEL_RETURNING_METHODS:
                value = value.func.value
            if id(value) in seen or depth > hops:
                continue
            seen.add(id(value))
            if isinstance(value, ast.Call):
                if self.m.qualname(value.func) in qualnames:
                    return value
            elif isinstance(value, (ast.Name, ast.Attribute)):
                found = [v for v in self.values_of(value, depth=1) if v is not value]
                if not found and isinstance(value, ast.Name):
                    found = self._constructor_arguments(value)
                stack.extend((v, depth + 1) for v in found)
        return None

    def _constructor_arguments(self, name: ast.Name) -> list[ast.AST]:
        """What ``Cls(...)`` calls of this module pass for a parameter of ``Cls.__init__``."""
        values, func = self.m.assignments(name)
        cls = parent(func) if func is not None else None
        if values or not isinstance(cls, ast.ClassDef) or func.name != "__init__":
            return []
        params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]][1:]
        out = []
        for site in self.m.calls_by_name.get(cls.name, ()):
            if not (isinstance(site.func, ast.Name) and site.func.id == cls.name):
                continue
            kw = next((k.value for k in site.keywords if k.arg == name.id), None)
            if kw is not None:
                out.append(kw)
            elif name.id in params and params.index(name.id) < len(site.args) and \
                    not any(isinstance(a, ast.Starred) for a in site.args):
                out.append(site.args[params.index(name.id)])
        return out


def _wrapped_datasets(call: ast.Call, qualname: str) -> list[ast.AST]:
    """The datasets a ``Subset``/``ConcatDataset``-style wrapper call (``N.DATASET_WRAPPERS``) reads."""
    if qualname != "torch.utils.data.ConcatDataset":
        return list(call.args[:1])
    return list(call.args[0].elts) if call.args and isinstance(call.args[0], (ast.List, ast.Tuple)) else []
