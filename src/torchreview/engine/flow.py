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
from torchreview.engine.semantic import call_name
from torchreview.engine.semantic import dotted

MAX_INLINE_DEPTH = 3

# Wrappers a for loop iterates through to reach the real iterable (Flow.iterables_of).
_ITER_WRAPPERS = frozenset({
    "builtins.enumerate", "builtins.zip", "builtins.iter", "builtins.reversed", "tqdm.tqdm",
    "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "itertools.islice", "rich.progress.track",
})


def _walk_same_function(body: list[ast.stmt]):
    """Nodes of ``body``, not descending into nested functions, lambdas or classes."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (*FunctionNode, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _root_name(expr: ast.AST) -> str | None:
    """``batch`` of ``batch["x"]`` / ``batch.x`` / ``batch``."""
    while isinstance(expr, (ast.Subscript, ast.Attribute)):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def _alive(timeline, pos) -> set[str]:
    """Names whose last (position, name, holds) entry before ``pos`` says they hold it."""
    state: dict[str, bool] = {}
    for p, name, holds in sorted(timeline, key=lambda t: t[0]):
        if p < pos:
            state[name] = holds
    return {n for n, held in state.items() if held}


def _field_of(owner: ast.AST, child: ast.AST) -> str | None:
    """Which field of ``owner`` (``body``, ``orelse``, ``test`` ...) holds ``child``."""
    for name, value in ast.iter_fields(owner):
        if value is child or (isinstance(value, list) and any(v is child for v in value)):
            return name
    return None


def names_accumulation(node: ast.AST) -> bool:
    """A name/attribute such as ``accum_steps``, ``grad_accumulation``, ``micro_batches``."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    name = name.lower()
    return "accum" in name or name.startswith("micro") or "_micro" in name


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
    # Every node of the loop (the model's recorded subtree), when known.
    nodes: list[ast.AST] | None = field(default=None, repr=False, compare=False)

    def of(self, kind: str, *, own: bool = True) -> list[Event]:
        return [e for e in self.events if e.kind == kind and (not own or e.depth == 0)]

    def has(self, kind: str) -> bool:
        return any(e.kind == kind for e in self.events)

    @cached_property
    def accumulates(self) -> bool:
        """Gradient accumulation: an optimizer step gated by a modulo/accumulation
        counter, backward in a micro-batch loop nested under the step, or an
        ``accum``-named value (``loss / accum_steps``) in the loop."""
        steps = [e for e in self.events if e.kind == "step"]
        backwards = [e for e in self.events if e.kind == "backward"]
        if steps and backwards and min(b.depth for b in backwards) > min(s.depth for s in steps):
            return True
        for e in steps:
            for cond in e.conditions:
                if any(isinstance(n, ast.Mod) or names_accumulation(n) for n in ast.walk(cond)):
                    return True
        nodes = self.nodes if self.nodes is not None else ast.walk(self.node)
        return any(names_accumulation(n) for n in nodes if type(n) in (ast.Name, ast.Attribute))


class Flow:
    def __init__(self, model: SemanticModel) -> None:
        self.m = model
        self._fn_disabled: dict[ast.AST, bool] = {}
        self._kinds: dict[int, str | None] = {}

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

    @cached_property
    def eval_targets(self) -> frozenset[str]:
        """Dotted names put in eval mode anywhere in the module (``net.eval()``,
        ``self.model.train(False)``), whatever their inferred kind: an object with
        ``.eval()`` that is also called is, in practice, an ``nn.Module``."""
        out = set()
        for name in ("eval", "train"):
            for call in self.m.calls_by_name.get(name, ()):
                func = call.func
                if not isinstance(func, ast.Attribute) or call.keywords:
                    continue
                if (name == "eval" and call.args) or (name == "train" and not (
                        len(call.args) == 1 and isinstance(call.args[0], ast.Constant)
                        and call.args[0].value is False)):
                    continue
                target = dotted(func.value)
                if target and not (self.m.qualname(func.value) or "").startswith(("torch.", "builtins.")):
                    out.add(target)
        return frozenset(out)

    def is_model_call(self, call: ast.Call) -> bool:
        """A forward call of a model: by inferred kind, or a callee put in eval mode here."""
        if self.classify(call) == "forward":
            return True
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        target = dotted(func)
        return target is not None and target in self.eval_targets

    def disables_grad(self, with_node: ast.AST) -> bool:
        """Does this ``with`` statement itself turn autograd off (``no_grad()``,
        ``inference_mode()``, ``set_grad_enabled(False)``)?"""
        return isinstance(with_node, (ast.With, ast.AsyncWith)) and any(
            self._context_state(item.context_expr) == "disabled" for item in with_node.items)

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

    # -------------------------------------------------------- import time
    @staticmethod
    def is_main_guard(test: ast.AST) -> bool:
        """``__name__ == "__main__"`` (either operand order)."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
            return False
        sides = (test.left, test.comparators[0])
        return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and \
            any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)

    def runs_at_import(self, node: ast.AST, _seen: frozenset = frozenset()) -> bool:
        """Does ``node`` run when the module is imported, i.e. also in a worker
        process that re-imports it under the spawn start method? Module-level
        code outside ``if __name__ == "__main__":``, class bodies, and functions
        of this module called (directly or through other functions) from there."""
        child = node
        for anc in ancestors(node):
            if isinstance(anc, ast.If) and self.is_main_guard(anc.test) and child in anc.body:
                return False
            if isinstance(anc, ast.Lambda):
                return False
            if isinstance(anc, FunctionNode):
                if anc in _seen:
                    return False
                return any(self.runs_at_import(site, _seen | {anc}) for site in self.call_sites(anc))
            child = anc
        return True

    def values_of(self, expr: ast.AST, depth: int = 3, *, follow_returns: bool = False) -> list[ast.AST]:
        """Expressions ``expr`` may hold: assignments of a Name / ``self.attr``
        followed through other names, and for a parameter the arguments passed
        at same-module call sites. With ``follow_returns``, a call of a function of
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
                values = values + self._arguments_for(func, expr.id)
        if not values:
            return [expr]
        out: list[ast.AST] = []
        for value in values:
            for v in self.values_of(value, depth - 1, follow_returns=follow_returns):
                if v not in out:
                    out.append(v)
        return out

    def is_training_loader(self, call: ast.Call) -> bool:
        """A ``DataLoader(...)`` that feeds training: iterated by a training loop,
        or shuffling (``shuffle=True``, a random/distributed sampler, a sampler
        named ``train...``) -- and neither named nor built for evaluation
        (``val``/``test``/``eval`` in its target, dataset or sampler) nor only
        iterated under ``no_grad``/``inference_mode``."""
        import re

        if self.m.qualname(call.func) != "torch.utils.data.DataLoader":
            return False
        stmt = next((a for a in ancestors(call) if isinstance(a, ast.stmt)), None)
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        words = [ast.unparse(t) for t in targets] + [ast.unparse(a) for a in call.args[:1]] + \
            [ast.unparse(k.value) for k in call.keywords if k.arg in ("dataset", "sampler")]
        if any(re.search(r"val|test|eval|valid|dev(?!ice)", w, re.I) for w in words):
            return False
        if any(call in self.iterated_loaders(tl.node) for tl in self.training_loops):
            return True
        if any(isinstance(loop, (ast.For, ast.AsyncFor)) and self.grad_disabled(loop)
               and call in self.iterated_loaders(loop) for loop in self.m.loops):
            return False  # only read under no_grad/inference_mode: an inference loader
        kws = {k.arg: k.value for k in call.keywords}
        shuffle = kws.get("shuffle", call.args[2] if len(call.args) > 2 else None)
        if isinstance(shuffle, ast.Constant) and shuffle.value is True:
            return True
        sampler = kws.get("sampler", call.args[3] if len(call.args) > 3 else None)
        if isinstance(sampler, ast.Call):
            q = self.m.qualname(sampler.func) or ""
            if q.endswith(("RandomSampler", "DistributedSampler")):
                return not any(k.arg == "shuffle" and isinstance(k.value, ast.Constant) and
                               k.value.value is False for k in sampler.keywords)
        return sampler is not None and "train" in ast.unparse(sampler).lower()

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
                else:  # a loader-building function of this module
                    stack.extend((v, hops + 1) for v in self.values_of(expr, follow_returns=True)
                                 if v is not expr)
            elif isinstance(expr, (ast.Name, ast.Attribute)):
                stack.extend((v, hops + 1) for v in self.values_of(expr, follow_returns=True)
                             if v is not expr)
        return out

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
        key = id(node)
        if key in self._kinds:
            return self._kinds[key]
        kind = self._classify(node)
        self._kinds[key] = kind
        return kind

    def _classify(self, node: ast.AST) -> str | None:
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
        if attr == "clip_gradients":  # Lightning / Fabric
            return "clip"
        grad_of = func.value.value if isinstance(func.value, ast.Attribute) and func.value.attr == "data" \
            else func.value
        if isinstance(grad_of, ast.Attribute) and grad_of.attr == "grad":
            if attr in ("clamp_", "clip_"):
                return "clip"  # manual clipping: p.grad.clamp_(-1, 1), p.grad.data.clamp_(...)
            if attr == "zero_":
                return "zero_grad"  # p.grad.data.zero_()
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

    @cached_property
    def _calls_by_statement(self) -> dict[ast.AST, list[ast.Call]]:
        """Calls grouped by the statement that runs them (not inside lambdas)."""
        table: dict[ast.AST, list[ast.Call]] = {}
        for call in self.m.calls:
            for anc in ancestors(call):
                if isinstance(anc, ast.Lambda):
                    break
                if isinstance(anc, ast.stmt):
                    table.setdefault(anc, []).append(call)
                    break
        for calls in table.values():
            calls.sort(key=position)
        return table

    def _calls_in(self, roots) -> list[ast.Call]:
        if len(roots) == 1 and isinstance(roots[0], ast.stmt) and \
                not isinstance(roots[0], (*LoopNode, ast.If, ast.With, ast.AsyncWith, ast.Try,
                                          *FunctionNode, ast.ClassDef)):
            return self._calls_by_statement.get(roots[0], [])
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
        return calls

    def _events_exprs(self, roots, depth, conditions, anchor, inline, seen) -> list[Event]:
        calls = self._calls_in(roots)
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
        hot = self._loops_reaching_backward()
        for loop in self.m.loops:
            if loop not in hot:
                continue
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
                                          nodes=self.m.subtree(loop),
                                          events=events))
        for tl in loops:
            tl.epoch_loop = self._epoch_loop(tl)
        return sorted(loops, key=lambda t: position(t.node))

    def _functions_reaching_backward(self) -> set[ast.AST]:
        """Functions whose body runs a backward call, directly or through
        same-module calls (the only candidates for step functions)."""
        frontier: list[ast.AST] = [*self.m.calls_by_name.get("backward", ()),
                                   *self.m.calls_by_name.get("manual_backward", ())]
        found: set[ast.AST] = set()
        while frontier:
            following: list[ast.AST] = []
            for node in frontier:
                func = self.m.enclosing_function(node)
                if func is not None and func not in found:
                    found.add(func)
                    following.extend(self.call_sites(func))
            frontier = following
        return found

    def _loops_reaching_backward(self) -> set[ast.AST]:
        """Loops that contain a backward call, directly or through same-module calls
        (a cheap upward walk from each backward call, so most loops are never scanned)."""
        frontier: list[ast.AST] = [*self.m.calls_by_name.get("backward", ()),
                                   *self.m.calls_by_name.get("manual_backward", ())]
        hot: set[ast.AST] = set()
        seen: set[ast.AST] = set()
        while frontier:
            following: list[ast.AST] = []
            for node in frontier:
                for anc in ancestors(node):
                    if isinstance(anc, LoopNode):
                        hot.add(anc)
                    elif isinstance(anc, FunctionNode):
                        if anc not in seen:
                            seen.add(anc)
                            following.extend(self.call_sites(anc))
                        break
            frontier = following
        return hot

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

    @cached_property
    def step_functions(self) -> list[TrainingLoop]:
        """Functions that run one training step -- ``backward()`` and an optimizer
        ``step()`` in their own body, outside any loop -- and are not already part
        of a training loop of this module (they are called from elsewhere, once
        per batch). Returned as ``TrainingLoop`` objects whose ``node`` is the
        function, so ordering rules can read one iteration's events the same way."""
        if not self.m.calls_by_name.get("backward") and not self.m.calls_by_name.get("manual_backward"):
            return []
        inside = self.training_functions
        reaching = self._functions_reaching_backward()
        out = []
        for defs in self.m.functions.values():
            for func in defs:
                if func in inside or func not in reaching:
                    continue
                events = self.events_in(func.body, seen=frozenset([func]))
                own = {e.kind for e in events if e.depth == 0}
                if "backward" in own and "step" in own:
                    out.append(TrainingLoop(node=func, function=func, events=events,
                                            nodes=self.m.subtree(func)))
        return sorted(out, key=lambda t: position(t.node))

    def in_forward_path(self, node: ast.AST) -> bool:
        """``node`` is in ``forward`` (or a Lightning ``*_step``) of an ``nn.Module``,
        or in a method that ``forward`` calls on ``self``: where names hold batched
        activations."""
        method = self.m.enclosing_function(node)
        cls = self.m.in_module_class(node)
        if method is None or cls is None or parent(method) is not cls:
            return False
        if method.name == "forward" or method.name.endswith("_step"):
            return True
        forward = next((s for s in cls.body if isinstance(s, FunctionNode) and s.name == "forward"), None)
        return forward is not None and any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == method.name
            and isinstance(c.func.value, ast.Name) and c.func.value.id == "self" for c in ast.walk(forward))

    def training_loop_of(self, node: ast.AST) -> TrainingLoop | None:
        by_node = self._training_loop_by_node
        if not by_node:
            return None
        for anc in ancestors(node):
            tl = by_node.get(anc)
            if tl is not None:
                return tl
        return None

    @cached_property
    def _training_loop_by_node(self) -> dict[ast.AST, TrainingLoop]:
        return {tl.node: tl for tl in self.training_loops}

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

    # -------------------------------------------------------- repetition
    def iterables_of(self, loop: ast.AST) -> list[ast.AST]:
        """What a ``for`` loop iterates, unwrapping ``enumerate``/``zip``/``iter``/``tqdm``."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return []
        out, stack = [], [loop.iter]
        while stack:
            expr = stack.pop()
            if isinstance(expr, ast.Call) and expr.args and (
                    self.m.qualname(expr.func) in _ITER_WRAPPERS or call_name(expr) in ("tqdm", "track")):
                stack.extend(expr.args if self.m.qualname(expr.func) == "builtins.zip" else expr.args[:1])
            else:
                out.append(expr)
        return out

    def is_batch_loop(self, loop: ast.AST) -> bool:
        """A training loop, or a ``for`` loop over a DataLoader (through names,
        ``self`` attributes, parameters and iteration wrappers)."""
        if any(tl.node is loop for tl in self.training_loops):
            return True
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        return bool(self.iterated_loaders(loop)) or any(
            self.m.kind_of(it) == "loader" for it in self.iterables_of(loop))

    def is_epoch_loop(self, loop: ast.AST, strict: bool = False) -> bool:
        """The epoch loop of a training loop, a loop spelled over epochs
        (``for epoch in ...``, ``range(args.epochs)``, ``while epoch < n``), or
        (unless ``strict``) a loop whose body runs a batch loop (directly or in a
        same-module callee; e.g. a loop over hyper-parameter trials)."""
        if any(tl.epoch_loop is loop for tl in self.training_loops):
            return True
        head = [loop.target, loop.iter] if isinstance(loop, (ast.For, ast.AsyncFor)) else [loop.test]
        for sub in (n for h in head for n in ast.walk(h)):
            word = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else ""
            if "epoch" in word.lower():
                return True
        if strict:
            return False
        for sub in self.m.own_nodes(loop):
            if isinstance(sub, LoopNode) and self.is_batch_loop(sub):
                return True
            if isinstance(sub, ast.Call):
                callee = self.resolve_local_call(sub)
                if callee is not None and any(isinstance(n, LoopNode) and self.is_batch_loop(n)
                                              for n in self.m.own_nodes(callee)):
                    return True
        return False

    def repeating_loop(self, node: ast.AST, depth: int = 3, strict: bool = False,
                       _caller: bool = False) -> ast.AST | None:
        """The batch or epoch loop that runs ``node`` over and over: an enclosing
        loop in its function, or (through same-module callers, up to ``depth``
        hops) a batch/epoch loop around a call site. None when it runs once.
        With ``strict``, loops around call sites must be epoch loops in the
        strict sense (``is_epoch_loop(strict=True)``) or batch loops."""
        for anc in ancestors(node):
            if isinstance(anc, LoopNode) and (self.is_batch_loop(anc) or
                                              self.is_epoch_loop(anc, strict=strict and _caller)):
                return anc
            if isinstance(anc, (ast.Lambda, ast.ClassDef)):
                return None
            if isinstance(anc, FunctionNode):
                if depth <= 0:
                    return None
                for site in self.call_sites(anc):
                    found = self.repeating_loop(site, depth - 1, strict, True)
                    if found is not None:
                        return found
                return None
        return None

    # -------------------------------------------------------- modes
    def mode_calls_before(self, node: ast.AST, mode: str) -> bool:
        """Is a ``model.eval()``/``train()`` call (``mode``) seen before ``node``
        in its function, or before every call site of that function?"""
        func = self.m.enclosing_function(node)
        scope_body = func if func is not None else self.m.tree
        target = position(node)
        for call in self.m.subtree(scope_body):
            if isinstance(call, ast.Call) and position(call) < target and self.classify(call) == mode:
                if func is None or self.m.enclosing_function(call) is func:
                    return True
        if func is None:
            return False
        sites = self.call_sites(func)
        return bool(sites) and all(self.mode_calls_before(site, mode) for site in sites)

    @staticmethod
    def called_model(call: ast.Call) -> ast.AST:
        """The model a forward call runs: ``net`` in ``net(x)`` / ``net.forward(x)``."""
        func = call.func
        return func.value if isinstance(func, ast.Attribute) and func.attr == "forward" else func

    def eval_reaches(self, call: ast.Call) -> bool:
        """Is the model of this forward call in eval mode when it runs, as far as this
        module shows? An ``eval()`` before it (function or every caller); for
        ``self.attr`` an ``eval()`` of it anywhere in the class; for a global, one at
        import time; or its value was built/stored after ``eval()`` (``net.eval();
        self.model = net.to(d)``, ``Net().eval()``), or loaded by ``from_pretrained``
        / ``torch.jit.load`` (already in eval mode)."""
        if self.mode_calls_before(call, "eval"):
            return True
        receiver = self.called_model(call)
        text = dotted(receiver)
        evals = [c for name in ("eval", "train") for c in self.m.calls_by_name.get(name, ())
                 if self.classify(c) == "eval" and isinstance(c.func, ast.Attribute)]
        if text and text.startswith("self."):
            cls = self.m.enclosing_class(call)
            if any(dotted(c.func.value) == text and self.m.enclosing_class(c) is cls for c in evals):
                return True
        if isinstance(receiver, ast.Name) and self.m.enclosing_function(call) is not None:
            if any(dotted(c.func.value) == text and self.m.enclosing_function(c) is None for c in evals):
                return True
        for value in self.values_of(receiver):
            if value is not receiver and self.mode_calls_before(value, "eval"):
                return True
            for sub in ast.walk(value):
                if not isinstance(sub, ast.Call):
                    continue
                q = self.m.qualname(sub.func) or ""
                if q.endswith(".from_pretrained") or q == "torch.jit.load" or self.classify(sub) == "eval":
                    return True
        return False

    def run_by_base_class(self, func: ast.AST) -> bool:
        """A method of a class with base classes that nothing in this module calls:
        a base class defined elsewhere drives it (``validation_step`` of a trainer
        subclass), together with whatever mode or grad setup surrounds it."""
        cls = parent(func)
        return isinstance(cls, ast.ClassDef) and bool(cls.bases) and not self.call_sites(func)

    def mode_at(self, node: ast.AST, _depth: int = 3) -> str | None:
        """``"eval"``/``"train"``: the last ``model.eval()``/``.train()`` call that
        precedes ``node`` in source order in its function (nested functions
        excluded); with none there, the mode every same-module call site agrees on.
        None when unknown."""
        func = self.m.enclosing_function(node)
        owner = func if func is not None else self.m.tree
        target, best, mode = position(node), None, None
        for sub in self.m.own_nodes(owner):
            if isinstance(sub, ast.Call) and position(sub) < target and (best is None or position(sub) > best):
                kind = self.classify(sub)
                if kind in ("eval", "train"):
                    best, mode = position(sub), kind
        if mode is not None or func is None or _depth <= 0:
            return mode
        modes = {self.mode_at(site, _depth - 1) for site in self.call_sites(func)}
        return modes.pop() if len(modes) == 1 else None

    # -------------------------------------------------------- producers
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
                return max(before, key=position) if before else None
            if func is not None:
                args = self._arguments_for(func, node.id)
                return args[0] if len(args) == 1 and len(self.call_sites(func)) == 1 else None
        return values[0] if len(values) == 1 else None

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
        ctor = self.module_constructor(func)
        return self._module_output(ctor, _depth + 1) if ctor is not None else None

    def _module_output(self, ctor: ast.Call, depth: int) -> str | None:
        q = self.m.qualname(ctor.func)
        if q in N.ACTIVATION_MODULES:
            return N.ACTIVATION_MODULES[q]
        if q == "torch.nn.Sequential":
            last = ctor.args[-1] if ctor.args and not isinstance(ctor.args[-1], ast.Starred) else None
            inner = self.module_constructor(last) if last is not None else None
            return self._module_output(inner, depth + 1) if inner is not None and depth < 6 else None
        if isinstance(ctor.func, ast.Name) and ctor.func.id in self.m.module_classes:
            return self._forward_output(self.m.classes[ctor.func.id], depth)
        return None

    def _forward_output(self, cls: ast.ClassDef, depth: int) -> str | None:
        forward = next((s for s in cls.body if isinstance(s, FunctionNode) and s.name == "forward"), None)
        if forward is None:
            local = [b.id for b in cls.bases if isinstance(b, ast.Name) and b.id in self.m.module_classes]
            return self._forward_output(self.m.classes[local[0]], depth + 1) \
                if len(local) == 1 and depth < 6 else None
        labels = {self.activation_of(r.value, depth + 1) if r.value is not None else None
                  for r in self.m.own_nodes(forward) if isinstance(r, ast.Return)}
        return labels.pop() if len(labels) == 1 else None

    def loss_call(self, call: ast.Call) -> tuple[str, ast.Call | None] | None:
        """``(functional name, constructor)`` when ``call`` computes one of the
        losses of ``N.LOSS_MODULES``: ``F.cross_entropy(...)`` gives
        ``("cross_entropy", None)``; ``criterion(...)`` with ``criterion =
        nn.CrossEntropyLoss(...)`` gives ``("cross_entropy", <that call>)``."""
        cache = self.__dict__.setdefault("_loss_calls", {})  # several rules ask about every call
        if id(call) not in cache:
            cache[id(call)] = self._loss_call(call)
        return cache[id(call)]

    @cached_property
    def _builds_loss_modules(self) -> bool:
        return any(self.m.qualname(c.func) in N.LOSS_MODULES for c in self.m.calls)

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
        return (name, ctor) if name else None

    # -------------------------------------------------------- placement
    def moved_to_device(self, expr: ast.AST, hops: int = 4) -> bool:
        """Is the object ``expr`` names (a model, a tensor) moved off the CPU?
        ``x.to(device)``/``x.cuda()`` statements in the scope that holds it (the same
        function; the same class for ``self.x``), or a ``.to()``/``.cuda()`` in the
        expression it was assigned, followed through names and one caller."""
        probe = expr
        for _ in range(hops):
            name = dotted(probe)
            if name is None:
                return False
            key = self._placement_key(probe, name)
            for call in self.m.calls_by_name.get("to", []) + self.m.calls_by_name.get("cuda", []):
                if dotted(call.func.value) == name and self._placement_key(call, name) == key and \
                        self._to_device(call):
                    return True
            value = self.reaching_value(probe)
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                moved = self._to_device(value)
                if moved is not None:
                    return moved
                value = value.func.value
            if not isinstance(value, (ast.Name, ast.Attribute)):
                return False
            probe = value
        return False

    def _placement_key(self, node: ast.AST, name: str):
        return (self.m.enclosing_class(node) if name.startswith("self.") else self.m.scope_of(node)), name

    def _to_device(self, call: ast.Call) -> bool | None:
        """True for ``.cuda()`` / ``.to(<not the CPU>)``, False for ``.to("cpu")``, None otherwise."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            return None
        if call.func.attr == "cuda":
            return True
        if call.func.attr == "to":
            device = self.m.to_call_device(call)
            return device is not None and self.m.device_kind(device) in ("accelerator", "variable")
        return None

    def meets_other_tensors(self, use: ast.AST) -> bool:
        """Is the tensor expression ``use`` combined with other values: arithmetic or a
        comparison with a non-constant, an argument of a ``torch.*`` function with other
        non-constant arguments (``torch.cat([a, b])``), of a submodule call
        (``self.layer(t)``, ``self.lstm(x, (h0, c0))``), or of a method of another
        tensor (``x.masked_fill(t, 0)``)? Method chains on ``use`` (``.unsqueeze(0)``,
        slicing) are followed; one that moves it (``.to``, ``.cuda``, ``.type_as``)
        answers False, and so does use as an index (``x[idx]``)."""
        top = use
        while True:
            above = parent(top)
            if isinstance(above, ast.Attribute) and isinstance(parent(above), ast.Call) and parent(above).func is above:
                if above.attr in ("to", "cuda", "type_as", "to_device"):
                    return False
                top = parent(above)
            elif isinstance(above, ast.Subscript) and above.value is top:
                top = above
            else:
                break
        above = parent(top)
        while isinstance(above, (ast.List, ast.Tuple, ast.Starred, ast.keyword)):
            top, above = above, parent(above)
        if isinstance(above, ast.BinOp):
            return not isinstance(above.right if above.left is top else above.left, ast.Constant)
        if isinstance(above, ast.Compare):
            return not all(isinstance(o, ast.Constant) for o in [above.left, *above.comparators] if o is not top)
        if not isinstance(above, ast.Call) or above.func is top:
            return False
        func, q = above.func, self.m.qualname(above.func) or ""
        others = [a for a in [*above.args, *(k.value for k in above.keywords)]
                  if a is not top and a is not getattr(top, "value", None)]
        if q.startswith("torch.") and not q.startswith(("torch.nn.init", "torch.Size")):
            return isinstance(top, (ast.List, ast.Tuple)) or any(not isinstance(a, ast.Constant) for a in others)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            cls = self.m.enclosing_class(above)
            methods = {s.name for s in cls.body if isinstance(s, FunctionNode)} if cls is not None else set()
            return func.attr not in methods  # a submodule, not a helper method
        if isinstance(func, ast.Attribute) and not q and isinstance(func.value, (ast.Name, ast.Attribute)) and \
                _root_name(func.value) != _root_name(use):
            return self.m.kind_of(func.value) in ("tensor", "parameter", None)
        return False

    def raw_batch_names(self, loop: ast.AST, at: ast.AST) -> set[str]:
        """Names that, where ``at`` runs in the body of the ``for`` loop ``loop``, still
        hold what the loop iterates exactly as it was yielded: the loop target (the
        item of ``enumerate``), and names unpacked or indexed from it without any call
        (``x, y = batch``, ``ids = batch["ids"]``). A reassignment from anything else
        (``x = x.to(device)``) or an item assignment (``batch[k] = ...``) ends it."""
        timeline = self.__dict__.setdefault("_batch_timelines", {}).get(id(loop))
        if timeline is None:
            timeline = self._batch_timeline(loop)
            self._batch_timelines[id(loop)] = timeline
        return _alive(timeline, position(at))

    def _batch_timeline(self, loop) -> list[tuple[tuple[int, int], str, bool]]:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return []
        target = loop.target
        if isinstance(loop.iter, ast.Call) and self.m.qualname(loop.iter.func) == "builtins.enumerate" and \
                isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target = target.elts[1]
        timeline = [(position(loop), n.id, True) for n in ast.walk(target) if isinstance(n, ast.Name)]
        stmts = sorted((n for n in self.m.own_nodes(loop)
                        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))), key=position)
        for node in stmts:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            unpacks = value is not None and not isinstance(node, ast.AugAssign) and \
                not any(isinstance(v, ast.Call) for v in ast.walk(value)) and \
                _root_name(value) in _alive(timeline, position(node))
            done = (node.end_lineno, node.end_col_offset)  # the value is computed first
            for t in targets:
                timeline += [(done, n.id, unpacks) for n in ast.walk(t)
                             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
                if isinstance(t, (ast.Subscript, ast.Attribute)) and _root_name(t):
                    timeline.append((done, _root_name(t), False))
        return timeline

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
