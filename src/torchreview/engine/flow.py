"""Control facts on top of the semantic model: grad contexts, training loops, modes.

A *training loop* is the innermost loop whose iteration runs a backward pass and
an optimizer step (directly, in nested blocks, or through functions of the same
module). Its *events* (zero_grad, backward, step, clip, ...) are kept in source
order with the conditions they run under, so ordering rules read them instead
of re-walking the tree.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property

from torchreview.engine import names as N
from torchreview.engine.semantic import (
    FunctionNode, LoopNode, SemanticModel, ancestors, parent, position,
)

MAX_INLINE_DEPTH = 3


@dataclass(frozen=True)
class Event:
    kind: str  # backward | step | zero_grad | sched_step | clip | unscale | eval | train | forward
    node: ast.AST  # the call (or assignment) itself, possibly inside a callee
    anchor: ast.AST  # the node in the loop's own body (the call site when inlined)
    conditions: tuple[ast.expr, ...]  # If tests between the loop and the event
    depth: int  # loops between the training loop and the event (0 = directly in it)

    @property
    def pos(self) -> tuple[int, int]:
        return position(self.anchor)

    @property
    def conditional(self) -> bool:
        return bool(self.conditions)


@dataclass
class TrainingLoop:
    node: ast.AST
    function: ast.AST | None
    events: list[Event] = field(default_factory=list)
    epoch_loop: ast.AST | None = None

    def of(self, kind: str, *, own: bool = True) -> list[Event]:
        return [e for e in self.events if e.kind == kind and (not own or e.depth == 0)]

    def has(self, kind: str) -> bool:
        return any(e.kind == kind for e in self.events)


class Flow:
    def __init__(self, model: SemanticModel) -> None:
        self.m = model
        self._fn_disabled: dict[ast.AST, bool] = {}

    # -------------------------------------------------------- grad context
    def _context_state(self, expr: ast.AST) -> str | None:
        target = expr.func if isinstance(expr, ast.Call) else expr
        q = self.m.qualname(target)
        if q in N.NO_GRAD_CONTEXTS:
            if q == "torch.inference_mode" and isinstance(expr, ast.Call) and expr.args and \
                    isinstance(expr.args[0], ast.Constant) and expr.args[0].value is False:
                return None
            return "disabled"
        if q in N.ENABLE_GRAD_CONTEXTS:
            return "enabled"
        if q == N.SET_GRAD and isinstance(expr, ast.Call) and expr.args:
            arg = expr.args[0]
            if isinstance(arg, ast.Constant):
                return "disabled" if arg.value is False else "enabled"
        return None

    def grad_disabled(self, node: ast.AST) -> bool:
        """True when ``node`` runs with autograd off (with-blocks, decorators, or a
        same-module function whose every caller runs it with autograd off)."""
        for anc in ancestors(node):
            if isinstance(anc, (ast.With, ast.AsyncWith)):
                for item in anc.items:
                    state = self._context_state(item.context_expr)
                    if state:
                        return state == "disabled"
            elif isinstance(anc, FunctionNode):
                return self.function_grad_disabled(anc)
            elif isinstance(anc, ast.Lambda):
                return False
        return False

    def function_grad_disabled(self, func: ast.AST) -> bool:
        if func in self._fn_disabled:
            return self._fn_disabled[func]
        self._fn_disabled[func] = False  # recursion guard
        result = False
        for deco in func.decorator_list:  # type: ignore[attr-defined]
            state = self._context_state(deco)
            if state:
                result = state == "disabled"
                break
        else:
            sites = self.call_sites(func)
            result = bool(sites) and all(self.grad_disabled(site) for site in sites)
        self._fn_disabled[func] = result
        return result

    def call_sites(self, func: ast.AST) -> list[ast.Call]:
        """Calls in this module that reach ``func`` by its name (``f()``/``self.f()``)."""
        name = func.name  # type: ignore[attr-defined]
        is_method = isinstance(parent(func), ast.ClassDef)
        sites = []
        for call in self.m.calls_by_name.get(name, []):
            callee = call.func
            if isinstance(callee, ast.Name) and not is_method:
                sites.append(call)
            elif isinstance(callee, ast.Attribute) and is_method and \
                    isinstance(callee.value, ast.Name) and callee.value.id == "self":
                sites.append(call)
        return sites

    def resolve_local_call(self, call: ast.Call) -> ast.AST | None:
        """The same-module function a call reaches, when that is unambiguous."""
        func = call.func
        if isinstance(func, ast.Name):
            defs = [d for d in self.m.functions.get(func.id, []) if not isinstance(parent(d), ast.ClassDef)]
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            cls = self.m.enclosing_class(call)
            defs = [d for d in self.m.functions.get(func.attr, []) if parent(d) is cls]
        else:
            return None
        return defs[0] if len(defs) == 1 else None

    def values_of(self, expr: ast.AST, depth: int = 3) -> list[ast.AST]:
        """Expressions ``expr`` may hold: assignments of a Name / ``self.attr``
        followed through other names, and for a parameter the arguments passed
        at same-module call sites. Anything unresolvable is returned as is."""
        if depth <= 0 or not isinstance(expr, (ast.Name, ast.Attribute)):
            return [expr]
        values, func = self.m.assignments(expr)
        if func is not None and isinstance(expr, ast.Name):
            values = values + self._arguments_for(func, expr.id)
        if not values:
            return [expr]
        out: list[ast.AST] = []
        for value in values:
            for v in self.values_of(value, depth - 1):
                if v not in out:
                    out.append(v)
        return out

    def iterated_loaders(self, loop: ast.AST) -> list[ast.Call]:
        """The ``DataLoader(...)`` calls a ``for`` loop iterates (through ``enumerate``,
        ``tqdm``, ``iter``, ``zip``, names, ``self`` attributes and parameters)."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return []
        out: list[ast.Call] = []
        stack: list[tuple[ast.AST, int]] = [(loop.iter, 0)]
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
            elif isinstance(expr, (ast.Name, ast.Attribute)):
                stack.extend((v, hops + 1) for v in self.values_of(expr) if v is not expr)
        return out

    def dataset_in_memory(self, expr: ast.AST | None, depth: int = 3) -> bool:
        """True when every value ``expr`` may hold is a dataset already in memory
        whose items need no I/O or transform: ``TensorDataset``/``StackDataset``,
        tensors, literal sequences, ``Subset``/``ConcatDataset`` of those, or a
        same-module ``Dataset`` whose ``__getitem__`` only indexes and converts."""
        if expr is None or depth <= 0:
            return False
        values = self.values_of(expr)
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
            parts = list(v.args[:1]) if q != "torch.utils.data.ConcatDataset" else \
                (v.args[0].elts if v.args and isinstance(v.args[0], (ast.List, ast.Tuple)) else [])
            return bool(parts) and all(self.dataset_in_memory(p, depth - 1) for p in parts)
        if isinstance(v.func, ast.Name) and v.func.id in self.m.classes:
            return self._getitem_only_indexes(self.m.classes[v.func.id])
        return False

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

    def _arguments_for(self, func: ast.AST, name: str) -> list[ast.AST]:
        args = func.args  # type: ignore[attr-defined]
        positional = [a.arg for a in [*args.posonlyargs, *args.args]]
        if isinstance(parent(func), ast.ClassDef) and positional and positional[0] in ("self", "cls"):
            positional = positional[1:]
        index = positional.index(name) if name in positional else None
        out = []
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

    # -------------------------------------------------------- events
    def classify(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "grad" and \
                        isinstance(node.value, ast.Constant) and node.value.value is None:
                    return "zero_grad"
            return None
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        q = self.m.qualname(func)
        if q in ("torch.autograd.backward",):
            return "backward"
        if q and q.endswith(("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm")):
            return "clip"
        if not isinstance(func, ast.Attribute):
            kind = self.m.kind_of(func) if isinstance(func, ast.Name) else None
            return "forward" if kind == "model" else None
        attr = func.attr
        if attr in ("backward", "manual_backward"):
            return "backward"
        if attr in ("clip_grad_norm_", "clip_grad_value_"):
            return "clip"
        if attr == "zero_grad":
            return "zero_grad"
        if attr == "zero_" and isinstance(func.value, ast.Attribute) and func.value.attr == "grad":
            return "zero_grad"
        receiver = self.m.kind_of(func.value)
        if attr == "step":
            if receiver == "scheduler":
                return "sched_step"
            if receiver in ("optimizer", "scaler"):
                return "step"
            return None
        if attr == "unscale_" and receiver == "scaler":
            return "unscale"
        if attr == "eval" and not node.args and receiver == "model":
            return "eval"
        if attr == "train" and receiver == "model":
            if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is False:
                return "eval"
            return "train"
        if receiver == "model" and attr == "forward":
            return "forward"
        if receiver == "model" and isinstance(func.value, ast.Attribute) is False and attr in ("__call__",):
            return "forward"
        kind = self.m.kind_of(func)
        if kind == "model":
            return "forward"
        return None

    def events_in(self, body: list[ast.stmt], *, depth: int = 0, conditions=(), anchor=None,
                  inline: int = 0, seen: frozenset = frozenset()) -> list[Event]:
        out: list[Event] = []
        for stmt in body:
            out.extend(self._events_stmt(stmt, depth, conditions, anchor, inline, seen))
        return out

    def _events_stmt(self, stmt, depth, conditions, anchor, inline, seen) -> list[Event]:
        if isinstance(stmt, (*FunctionNode, ast.ClassDef)):
            return []
        if isinstance(stmt, ast.If):
            return (self.events_in(stmt.body, depth=depth, conditions=conditions + (stmt.test,),
                                   anchor=anchor, inline=inline, seen=seen)
                    + self.events_in(stmt.orelse, depth=depth,
                                     conditions=conditions + (ast.UnaryOp(ast.Not(), stmt.test),),
                                     anchor=anchor, inline=inline, seen=seen))
        if isinstance(stmt, LoopNode):
            head = [stmt.iter] if isinstance(stmt, (ast.For, ast.AsyncFor)) else [stmt.test]
            return (self._events_exprs(head, depth, conditions, anchor, inline, seen)
                    + self.events_in(stmt.body, depth=depth + 1, conditions=conditions,
                                     anchor=anchor, inline=inline, seen=seen))
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            heads = [item.context_expr for item in stmt.items]
            return (self._events_exprs(heads, depth, conditions, anchor, inline, seen)
                    + self.events_in(stmt.body, depth=depth, conditions=conditions, anchor=anchor,
                                     inline=inline, seen=seen))
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            out = self.events_in(stmt.body, depth=depth, conditions=conditions, anchor=anchor,
                                 inline=inline, seen=seen)
            for handler in stmt.handlers:
                out += self.events_in(handler.body, depth=depth, conditions=conditions + (handler,),
                                      anchor=anchor, inline=inline, seen=seen)
            out += self.events_in(stmt.orelse + stmt.finalbody, depth=depth, conditions=conditions,
                                  anchor=anchor, inline=inline, seen=seen)
            return out
        if isinstance(stmt, ast.Match):
            out = []
            for case in stmt.cases:
                out += self.events_in(case.body, depth=depth, conditions=conditions + (case.pattern,),
                                      anchor=anchor, inline=inline, seen=seen)
            return out
        events = []
        kind = self.classify(stmt)
        if kind:
            events.append(Event(kind, stmt, anchor or stmt, conditions, depth))
        return events + self._events_exprs([stmt], depth, conditions, anchor, inline, seen)

    def _events_exprs(self, roots, depth, conditions, anchor, inline, seen) -> list[Event]:
        calls: list[ast.Call] = []
        stack = list(roots)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.Lambda, *FunctionNode)):
                continue
            if isinstance(node, ast.Call):
                calls.append(node)
            stack.extend(ast.iter_child_nodes(node))
        calls.sort(key=position)
        out: list[Event] = []
        for call in calls:
            kind = self.classify(call)
            if kind:
                out.append(Event(kind, call, anchor or call, conditions, depth))
                continue
            if inline < MAX_INLINE_DEPTH:
                callee = self.resolve_local_call(call)
                if callee is not None and callee not in seen:
                    out += self.events_in(callee.body, depth=depth, conditions=conditions,
                                          anchor=anchor or call, inline=inline + 1,
                                          seen=seen | {callee})
        return out

    # -------------------------------------------------------- training loops
    @cached_property
    def training_loops(self) -> list[TrainingLoop]:
        if "backward" not in self.m.attribute_names and "manual_backward" not in self.m.attribute_names \
                and "backward" not in self.m.calls_by_name:
            return []
        candidates: dict[ast.AST, list[Event]] = {}
        for loop in self.m.loops:
            events = self.events_in(loop.body, seen=frozenset(
                [f for f in [self.m.enclosing_function(loop)] if f is not None]))
            kinds = {e.kind for e in events}
            if "backward" in kinds and "step" in kinds:
                candidates[loop] = events
        loops = []
        for loop, events in candidates.items():
            # innermost: no other candidate nested inside this loop
            if any(other is not loop and loop in set(ancestors(other)) for other in candidates):
                continue
            # a loop whose backward and step all happen in nested loops is an epoch loop
            if any(e.depth == 0 and e.kind in ("backward", "step") for e in events):
                loops.append(TrainingLoop(node=loop, function=self.m.enclosing_function(loop),
                                          events=events))
        for tl in loops:
            tl.epoch_loop = self._epoch_loop(tl)
        return sorted(loops, key=lambda t: position(t.node))

    def _epoch_loop(self, tl: TrainingLoop) -> ast.AST | None:
        for anc in ancestors(tl.node):
            if isinstance(anc, LoopNode):
                return anc
            if isinstance(anc, FunctionNode):
                for site in self.call_sites(anc):
                    for outer in ancestors(site):
                        if isinstance(outer, LoopNode):
                            return outer
                        if isinstance(outer, FunctionNode):
                            break
                return None
        return None

    def training_loop_of(self, node: ast.AST) -> TrainingLoop | None:
        chain = set(ancestors(node))
        for tl in self.training_loops:
            if tl.node in chain:
                return tl
        return None

    @cached_property
    def training_functions(self) -> frozenset[ast.AST]:
        """Functions that contain a training loop or are inlined into one."""
        out = set()
        for tl in self.training_loops:
            if tl.function is not None:
                out.add(tl.function)
            for e in tl.events:
                fn = self.m.enclosing_function(e.node)
                if fn is not None:
                    out.add(fn)
        return frozenset(out)

    # -------------------------------------------------------- modes
    def mode_calls_before(self, node: ast.AST, mode: str) -> bool:
        """Is a ``model.eval()``/``train()`` call (``mode``) seen before ``node``
        in its function, or before every call site of that function?"""
        func = self.m.enclosing_function(node)
        scope_body = func if func is not None else self.m.tree
        target = position(node)
        for call in ast.walk(scope_body):
            if isinstance(call, ast.Call) and position(call) < target and self.classify(call) == mode:
                if func is None or self.m.enclosing_function(call) is func:
                    return True
        if func is None:
            return False
        sites = self.call_sites(func)
        return bool(sites) and all(self.mode_calls_before(site, mode) for site in sites)
