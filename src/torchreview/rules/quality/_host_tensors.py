"""Host-made tensors that meet device tensors in plain functions (TR403).

A light, function-local placement model: which names hold tensors known to be on
an accelerator (moved with ``.to(device)``/``.cuda()``, or the outputs of calls fed
with such tensors), and which tensors a factory made on the default device (the
CPU). Used for the shapes real fixes keep correcting: per-item result lists
pre-filled with host placeholders, lists that receive host fillers and device
tensors alike, and host targets/masks combined with a device tensor.
"""

from __future__ import annotations

import ast

from torchreview.engine.context import FunctionNode, parent, position

# calls whose result is a Python value or a host copy, never a device tensor
_TO_HOST = frozenset({"cpu", "numpy", "item", "tolist", "size", "dim", "numel", "detach_", "__len__"})
_SCALAR_CALLS = frozenset({"len", "int", "float", "bool", "str", "range", "print", "isinstance", "round",
                           "min", "max", "sum", "abs", "list", "tuple", "dict", "set", "sorted", "type"})
_DEVICE_WORDS = ("device", "cuda", "gpu", "rank")


def moves_to_device(call: ast.AST) -> bool:
    """``x.cuda(...)`` or ``x.to(<something naming a device>)``."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return False
    if call.func.attr == "cuda":
        return True
    if call.func.attr != "to":
        return False
    args = [*call.args, *(k.value for k in call.keywords if k.arg == "device")]
    return any(any(w in ast.unparse(a).lower() for w in _DEVICE_WORDS) for a in args)


class DeviceNames:
    """Names of one function that hold device tensors, in statement order."""

    def __init__(self, ctx, func, seeds=frozenset(), memo: "FileMemo | None" = None) -> None:
        self.func = func
        self.names: dict[str, tuple[int, int]] = {p: (0, 0) for p in seeds}
        self.at = (1 << 30, 0)  # only bindings made before this position count
        memo = memo or FileMemo(ctx)
        if not seeds and not memo.may_move(func):
            return  # nothing there moves a tensor to a device: no name can hold one
        for node in memo.ordered(func):
            self.at = position(node)
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    self._bind(t, node.value, node)
            elif isinstance(node, (ast.For, ast.comprehension)) and self.on_device(node.iter):
                for n in ast.walk(node.target):
                    if isinstance(n, ast.Name):
                        self.names.setdefault(n.id, position(node))
        self.at = (1 << 30, 0)

    def _bind(self, target, value, at) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and \
                len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self._bind(t, v, at)
            return
        if isinstance(target, ast.Name):
            if self.on_device(value):
                self.names.setdefault(target.id, (at.end_lineno, at.end_col_offset))
        elif isinstance(target, (ast.Tuple, ast.List)) and self.on_device(value):
            for n in ast.walk(target):
                if isinstance(n, ast.Name):
                    self.names.setdefault(n.id, (at.end_lineno, at.end_col_offset))

    def on_device(self, expr) -> bool:
        """Does ``expr`` hold a tensor known to be on an accelerator?"""
        if expr is None:
            return False
        if isinstance(expr, ast.Name):
            return expr.id in self.names and self.names[expr.id] < self.at
        if isinstance(expr, ast.Subscript):
            return self.on_device(expr.value)
        if isinstance(expr, ast.Attribute):
            return expr.attr not in ("shape", "device", "dtype", "is_cuda") and self.on_device(expr.value)
        if isinstance(expr, (ast.Tuple, ast.List)):
            return any(self.on_device(e) for e in expr.elts)
        if isinstance(expr, ast.BinOp):
            return self.on_device(expr.left) or self.on_device(expr.right)
        if isinstance(expr, ast.Call):
            if moves_to_device(expr):
                return True
            func = expr.func
            if isinstance(func, ast.Attribute):
                if func.attr in _TO_HOST or func.attr == "to":
                    return False
                if self.on_device(func.value):
                    return True  # a method of a device tensor (``x.max(1)``, ``x.view(...)``)
            if isinstance(func, ast.Name) and func.id in _SCALAR_CALLS:
                return False
            return any(self.on_device(a) for a in expr.args)  # a model or torch op fed a device tensor
        return False


# Factories whose positional arguments (or ``size=``) give the shape.
SHAPED = frozenset(f"torch.{name}" for name in ("rand", "randn", "zeros", "ones", "empty", "full"))


def zero_dim_size(call: ast.Call) -> bool:
    """The shape given is empty: ``torch.rand([])``, ``torch.zeros(())``, ``size=[]``."""
    size = next((kw.value for kw in call.keywords if kw.arg == "size"), None)
    if size is None and call.args:
        size = call.args[0]
    return isinstance(size, (ast.List, ast.Tuple)) and not size.elts


def host_factory(ctx, call, factories) -> bool:
    """A tensor factory call that allocates on the default device."""
    if not isinstance(call, ast.Call) or ctx.qualname(call.func) not in factories:
        return False
    if ctx.arg(call, "device") is not None or ctx.has_kwargs_splat(call):
        return False
    if ctx.qualname(call.func) in ("torch.tensor", "torch.as_tensor") and (
            not call.args or not isinstance(call.args[0], (ast.List, ast.Tuple, ast.ListComp))):
        return False
    if ctx.qualname(call.func) in SHAPED and zero_dim_size(call):
        return False  # a 0-dim tensor (torch.rand([]), torch.zeros(())) mixes with any device
    above = parent(call)
    while isinstance(above, ast.Attribute) and isinstance(parent(above), ast.Call):
        if above.attr in ("to", "cuda", "type_as"):
            return False
        above = parent(parent(above))
    return True


def _factories_in(ctx, expr, factories):
    return [n for n in ast.walk(expr) if host_factory(ctx, n, factories)]


class FileMemo:
    """What the functions of one file share while TR403 looks at each of them: the
    functions that contain a move to a device (``.cuda``/``.to``, a superset), each
    function's own nodes in source order, and the seedless ``DeviceNames`` of callers."""

    def __init__(self, ctx) -> None:
        self.model = ctx.model
        self._movers: set[int] | None = None
        self._makers: dict[object, set[int]] = {}  # factories -> functions holding one of their calls
        self._ordered: dict[int, list[ast.AST]] = {}
        self._names: dict[int, DeviceNames] = {}

    def may_move(self, func) -> bool:
        if self._movers is None:
            model = self.model
            self._movers = {id(model.scope_of(c)) for name in ("cuda", "to")
                            for c in model.calls_by_name.get(name, ())}
        return id(func) in self._movers

    def makes_factory(self, func, factories) -> bool:
        """A call of one of ``factories`` lies in ``func`` (a function or a class; nested
        functions and classes included): everything ``host_mixes`` yields is such a call,
        so without one it yields nothing."""
        makers = self._makers.get(id(factories))
        if makers is None:
            makers = self._makers[id(factories)] = set()
            qualname = self.model.qualname
            for call in self.model.calls if not self.model.called_qualnames.isdisjoint(factories) else ():
                if qualname(call.func) in factories:
                    probe = parent(call)
                    while probe is not None:
                        if isinstance(probe, FunctionNode) or type(probe) is ast.ClassDef:
                            if id(probe) in makers:
                                break  # its enclosing functions and classes are in already
                            makers.add(id(probe))
                        probe = parent(probe)
        return id(func) in makers

    def ordered(self, func) -> list[ast.AST]:
        hit = self._ordered.get(id(func))
        if hit is None:
            hit = self._ordered[id(func)] = sorted(self.model.own_nodes(func), key=position)
        return hit

    def names_of(self, ctx, func) -> "DeviceNames":
        hit = self._names.get(id(func))
        if hit is None:
            hit = self._names[id(func)] = DeviceNames(ctx, func, memo=self)
        return hit


def _device_seeds(ctx, func, memo: FileMemo | None = None) -> set[str]:
    """Parameters of ``func`` that a same-module caller passes a device tensor."""
    memo = memo or FileMemo(ctx)
    seeds: set[str] = set()
    if func.name not in ctx.model.functions or len(ctx.model.functions[func.name]) != 1:
        return seeds
    params = [a.arg for a in func.args.posonlyargs + func.args.args]
    for call in ctx.model.calls_by_name.get(func.name, []):
        if not isinstance(call.func, ast.Name):
            continue
        caller = ctx.model.scope_of(call)
        if not isinstance(caller, FunctionNode) or caller is func:
            continue
        names = memo.names_of(ctx, caller)
        for i, a in enumerate(call.args):
            if i < len(params) and names.on_device(a):
                seeds.add(params[i])
        for k in call.keywords:
            if k.arg in params and names.on_device(k.value):
                seeds.add(k.arg)
    return seeds


def host_mixes(ctx, func, factories, memo: FileMemo | None = None):
    """(factory call, what it meets) pairs in ``func`` (``memo``: one per file,
    shared by its functions)."""
    memo = memo or FileMemo(ctx)
    if not memo.makes_factory(func, factories):
        return  # every pair below is a call of ``factories`` inside ``func``
    names = DeviceNames(ctx, func, _device_seeds(ctx, func, memo), memo)
    if not names.names:
        return
    lists: dict[str, list] = {}  # list name -> host factories put in it
    device_lists: set[str] = set()
    for node in memo.ordered(func):
        names.at = position(node)
        # results = [torch.zeros(0, 6)] * n   /   [torch.zeros(0, 6) for _ in ...]
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
                value = value.left if isinstance(value.left, ast.List) else value.right
            if isinstance(value, (ast.List, ast.ListComp)):
                elts = value.elts if isinstance(value, ast.List) else [value.elt]
                made = [f for e in elts for f in _factories_in(ctx, e, factories)]
                if made:
                    lists.setdefault(node.targets[0].id, []).extend(made)
        # results[i] = <device tensor>
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                                                for t in node.targets) and names.on_device(node.value):
            device_lists.update(t.value.id for t in node.targets if isinstance(t, ast.Subscript)
                                and isinstance(t.value, ast.Name))
        # stats.append(<host filler>) / stats.append(<device tensors>)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("append", "extend") and isinstance(node.func.value, ast.Name) and node.args:
            made = _factories_in(ctx, node.args[0], factories)
            if made:
                lists.setdefault(node.func.value.id, []).extend(made)
            elif names.on_device(node.args[0]):
                device_lists.add(node.func.value.id)
        # host target / mask combined with a device tensor
        if isinstance(node, (ast.BinOp, ast.Compare)):
            sides = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.left, *node.comparators]
            for side in sides:
                if host_factory(ctx, side, factories) and any(names.on_device(o) for o in sides if o is not side):
                    yield side, "a device tensor"
        if isinstance(node, ast.Call) and ctx.qualname(node.func) in ("torch.cat", "torch.stack") and node.args \
                and isinstance(node.args[0], (ast.List, ast.Tuple)):
            elts = node.args[0].elts
            for e in elts:
                if host_factory(ctx, e, factories) and any(names.on_device(o) for o in elts if o is not e):
                    yield e, "device tensors"
    for name, made in lists.items():
        if name in device_lists:
            for call in made:
                yield call, f"device tensors in the same list `{name}`"


def cuda_after_is_cuda(ctx):
    """``y.cuda()`` (no index) guarded by ``if x.is_cuda:`` on another tensor ``x``:
    ``y`` goes to the current default GPU, not to ``x``'s; yields (call, x text)."""
    for call in ctx.model.calls_by_name.get("cuda", []):
        if call.args or call.keywords or not isinstance(call.func, ast.Attribute):
            continue
        guard = parent(call)
        while guard is not None and not isinstance(guard, (ast.If, FunctionNode, ast.ClassDef)):
            guard = parent(guard)
        if not isinstance(guard, ast.If) or not any(call in ast.walk(s) for s in guard.body):
            continue
        tested = [n.value for n in ast.walk(guard.test) if isinstance(n, ast.Attribute) and n.attr == "is_cuda"]
        receiver = ast.unparse(call.func.value)
        others = [t for t in tested if ast.unparse(t) != receiver]
        if others and len(tested) == len(others):
            yield call, ast.unparse(others[0])


def _moved_names(stmts) -> dict:
    """name -> the statement of ``name = name.cuda()/.to(<device>)`` directly in ``stmts``.
    A move onto another tensor's device (``x = x.to(y.device)``) aligns the two, it
    places nothing on "the" device: not a one-sided move (distiller's saturation values,
    each moved to the other's device when only it was a scalar)."""
    out = {}
    for stmt in stmts:
        if isinstance(stmt, ast.Assign):
            for t, v in _pairs(stmt):
                if isinstance(t, ast.Name) and moves_to_device(v) and isinstance(v.func.value, ast.Name) and \
                        v.func.value.id == t.id and not _to_another_tensors_device(v):
                    out[t.id] = stmt
    return out


def _to_another_tensors_device(call: ast.Call) -> bool:
    """``x.to(y.device)``: onto another tensor's placement."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "to" and call.args):
        return False
    first = call.args[0]
    return isinstance(first, ast.Attribute) and first.attr == "device" and not (
        isinstance(first.value, ast.Name) and first.value.id in ("self", "args", "cfg", "config", "opt"))


def _pairs(stmt):
    t, v = stmt.targets[0], stmt.value
    if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts):
        return list(zip(t.elts, v.elts))
    return [(t, v)] if len(stmt.targets) == 1 else []


def one_sided_moves(ctx):
    """``if a: x = x.cuda()  elif b: y = y.cuda()``: each branch moves a different
    tensor, so on every path one of them stays on the host; yields (move statement,
    name, the names the other branch moves) when both names are used together
    after the ``if`` (as arguments of one call)."""
    for node in ctx.model.nodes_by_type.get(ast.If, []):
        if not node.orelse or isinstance(parent(node), ast.If) and node in parent(node).orelse:
            continue
        branches, rest = [node.body], node
        while len(rest.orelse) == 1 and isinstance(rest.orelse[0], ast.If):
            rest = rest.orelse[0]
            branches.append(rest.body)
        if rest.orelse:
            branches.append(rest.orelse)
        moved = [_moved_names(b) for b in branches]
        if len(moved) < 2 or not all(moved):
            continue
        every = set.intersection(*(set(m) for m in moved))
        scope = ctx.model.scope_of(node)
        end = (node.end_lineno, node.end_col_offset)
        calls = [c for c in ctx.model.own_nodes(scope) if isinstance(c, ast.Call) and position(c) > end]
        for i, m in enumerate(moved):
            for name, stmt in m.items():
                if name in every:
                    continue
                others = {n for j, o in enumerate(moved) if j != i for n in o if n not in m}
                test = ast.unparse(node.test) if len(branches) == 2 else None
                if any(_uses(c, name, test) and any(_uses(c, o, test) or _uses_result_of(ctx, c, o, scope)
                                                    for o in others)
                       for c in calls):
                    yield stmt, name, sorted(others)


def _uses(call, name, test: str | None = None) -> bool:
    """``name`` is an argument of ``call`` (anywhere inside one) -- not as one side of a
    choice made by the branch's own test (``sp_adj if sparse else adj`` after ``if sparse:
    sp_adj = sp_adj.cuda() else: adj = adj.cuda()``: GraphCL), which picks the tensor that
    branch moved."""
    for a in [*call.args, *(k.value for k in call.keywords)]:
        for n in ast.walk(a):
            if isinstance(n, ast.Name) and n.id == name and not (test is not None and _chosen_by(n, a, test)):
                return True
    return False


def _chosen_by(name: ast.Name, top: ast.AST, test: str) -> bool:
    """``name`` is the body or the alternative of a conditional expression (inside ``top``)
    whose test reads exactly ``test``."""
    node = name
    while node is not top:
        up = parent(node)
        if isinstance(up, ast.IfExp) and node is not up.test and ast.unparse(up.test) == test:
            return True
        node = up
    return False


def _uses_result_of(ctx, call, name, scope) -> bool:
    """An argument of ``call`` is a name assigned from a call fed ``name`` (``output = model(images)``)."""
    for a in call.args:
        if isinstance(a, ast.Name):
            value = ctx.flow.reaching_value(a)
            if isinstance(value, ast.Call) and _uses(value, name):
                return True
    return False
