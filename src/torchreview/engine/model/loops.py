"""Model concept: loops (training loops, their events, batch and epoch loops).

``Loops`` tells what a statement does in training (``classify``: backward,
step, zero_grad, clip, eval, forward ...), reads a block's events in source
order with the conditions they run under (``events_in``; a test true on every
iteration, ``(i + 1) % 1 == 0``, is no condition; through same-module
helpers ``MAX_INLINE_DEPTH`` deep and project functions that switch modes), and
finds the training loops (the innermost loop whose iteration runs a backward
pass and an optimizer step), one-step functions, batch and epoch loops, the
loaders that feed training and the names still holding a batch as yielded.
It receives the semantic model, the call graph (``CallGraph``), values
(``Values``), grad contexts (``GradContexts``) and, optionally, the kind callers
in other project files pass for a parameter (``external_param_kind``) in its
constructor.
"""

from __future__ import annotations

import ast
import builtins
import re
from functools import cached_property
from typing import Callable

from torchreview.engine import names as N
from torchreview.engine.flow_common import (
    MAX_INLINE_DEPTH, _ITER_WRAPPERS, Event, TrainingLoop, _alive, _root_name,
)
from torchreview.engine.interproc import loaded_object
from torchreview.engine.semantic_common import (
    FunctionNode, LoopNode, ancestors, argument_for, call_name, mode_switched_to, parent, position,
)


# Free functions that reset the gradients of the parameters they are given
# (fp16 training utilities: ``zero_grad(model_params)``), named after the optimizer method.
_ZERO_GRAD_HELPERS = frozenset({"zero_grad", "zero_grads", "zero_gradients"})

class Loops:
    def __init__(self, model, *, calls, values, grad, external_param_kind: Callable | None = None,
                 called_only_here: Callable | None = None) -> None:
        self.m = model
        self.parameter_constant = values.parameter_constant
        # no other project file can call the function (its same-module call sites are all)
        self.called_only_here = called_only_here
        self.call_sites = calls.call_sites
        self.resolve_local_call = calls.resolve_local_call
        self.imported_mode_calls = calls.imported_mode_calls
        self.values_of = values.values_of
        self.reaching_value_strict = values.reaching_value_strict
        self.iterated_loaders = values.iterated_loaders
        self.grad_disabled = grad.grad_disabled
        # a parameter whose kind only callers in other project files show (ctx.call_paths)
        self.external_param_kind = external_param_kind
        self._classified: dict[int, str | None] = {}
        self._batch_timelines: dict[int, list] = {}

    # -------------------------------------------------------- events
    def classify(self, node: ast.AST) -> str | None:
        key = id(node)
        if key in self._classified:
            return self._classified[key]
        kind = self._classify(node)
        self._classified[key] = kind
        return kind

    def _classify(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "grad":
                    if isinstance(node.value, ast.Constant) and node.value.value is None:
                        if all(_submodule_parameter(t) for t in node.targets):
                            # `model.pooler.dense.weight.grad = model.pooler.dense.bias.grad = None`:
                            # named parameters of one layer dropped from the update (a partial freeze),
                            # not the model's gradients reset (judged false in blind test 135)
                            return None
                        return "zero_grad"
                    # `zeta.grad = torch.autograd.grad(loss, zeta)[0]`: the gradient set by hand
                    # (replacing whatever was there), the `backward()` of such a loop
                    return "grad_set"
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
            if isinstance(func, ast.Name) and (q or func.id).rsplit(".", 1)[-1] in _ZERO_GRAD_HELPERS \
                    and node.args:
                return "zero_grad"  # `zero_grad(self.model_params)`: a helper resetting given parameters
            kind = self.m.kind_of(func) if isinstance(func, ast.Name) else None
            if kind is None and isinstance(func, ast.Name) and loaded_object(func, values_of=self.values_of, model=self.m):
                return "forward"  # a whole object from torch.load, called: a pickled module
            hook = self.external_param_kind
            if kind is None and isinstance(func, ast.Name) and hook is not None:
                kind = hook(func)  # a parameter typed by callers in other project files
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
            return "eval" if mode_switched_to(node) == "eval" else "train"
        if receiver == "model" and attr == "forward":
            return "forward"
        if receiver == "model" and isinstance(func.value, ast.Attribute) is False and attr in ("__call__",):
            return "forward"
        kind = self.m.kind_of(func)
        if kind == "model":
            return "forward"
        return None

    def events_in(self, body: list[ast.stmt], *, depth: int = 0, conditions=(), anchor=None,
                  inline: int = 0, seen: frozenset = frozenset(), dead: frozenset = frozenset()) -> list[Event]:
        """The events of ``body``; ``dead``: parameters of an inlined helper its call leaves
        at their ``None`` default (the blocks of ``if <p> is not None:`` never run there)."""
        out: list[Event] = []
        for stmt in body:
            out.extend(self._events_stmt(stmt, depth, conditions, anchor, inline, seen, dead))
        return out

    def _events_stmt(self, stmt, depth, conditions, anchor, inline, seen, dead=frozenset()) -> list[Event]:
        if isinstance(stmt, (*FunctionNode, ast.ClassDef)):
            return []
        if isinstance(stmt, ast.If) and dead and _tests_present(stmt.test, dead):
            # `if optimizer is not None: optimizer.step()` in a helper called without an optimizer
            return self.events_in(stmt.orelse, depth=depth, conditions=conditions, anchor=anchor,
                                  inline=inline, seen=seen, dead=dead)
        if isinstance(stmt, ast.If) and self._flag_never_set(stmt.test):
            # `if is_training: loss.backward(); optimizer.step()` in `evaluate(loader, model,
            # is_training=False)`, which every call leaves at its default
            return self.events_in(stmt.orelse, depth=depth, conditions=conditions, anchor=anchor,
                                  inline=inline, seen=seen, dead=dead)
        if isinstance(stmt, ast.If) and self._autocast_test_outside(stmt):
            # `if torch.is_autocast_enabled():` after the function's own autocast block: False there
            return self.events_in(stmt.orelse, depth=depth, conditions=conditions, anchor=anchor,
                                  inline=inline, seen=seen, dead=dead)
        if isinstance(stmt, ast.If) and _every_time(stmt.test):
            # `if (i + 1) % 1 == 0:` -- a schedule of period one: the body runs every time
            return self.events_in(stmt.body, depth=depth, conditions=conditions, anchor=anchor,
                                  inline=inline, seen=seen, dead=dead)
        if isinstance(stmt, ast.If):
            return (self.events_in(stmt.body, depth=depth, conditions=conditions + (stmt.test,),
                                   anchor=anchor, inline=inline, seen=seen, dead=dead)
                    + self.events_in(stmt.orelse, depth=depth,
                                     conditions=conditions + (ast.UnaryOp(ast.Not(), stmt.test),),
                                     anchor=anchor, inline=inline, seen=seen))
        if isinstance(stmt, LoopNode):
            head = [stmt.iter] if isinstance(stmt, (ast.For, ast.AsyncFor)) else [stmt.test]
            return (self._events_exprs(head, depth, conditions, anchor, inline, seen, dead)
                    + self.events_in(stmt.body, depth=depth + 1, conditions=conditions,
                                     anchor=anchor, inline=inline, seen=seen, dead=dead))
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            heads = [item.context_expr for item in stmt.items]
            return (self._events_exprs(heads, depth, conditions, anchor, inline, seen, dead)
                    + self.events_in(stmt.body, depth=depth, conditions=conditions, anchor=anchor,
                                     inline=inline, seen=seen, dead=dead))
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            out = self.events_in(stmt.body, depth=depth, conditions=conditions, anchor=anchor,
                                 inline=inline, seen=seen, dead=dead)
            for handler in stmt.handlers:
                out += self.events_in(handler.body, depth=depth, conditions=conditions + (handler,),
                                      anchor=anchor, inline=inline, seen=seen, dead=dead)
            out += self.events_in(stmt.orelse + stmt.finalbody, depth=depth, conditions=conditions,
                                  anchor=anchor, inline=inline, seen=seen, dead=dead)
            return out
        if isinstance(stmt, ast.Match):
            out = []
            for case in stmt.cases:
                out += self.events_in(case.body, depth=depth, conditions=conditions + (case.pattern,),
                                      anchor=anchor, inline=inline, seen=seen, dead=dead)
            return out
        events = []
        kind = self.classify(stmt)
        if kind:
            events.append(Event(kind, stmt, anchor or stmt, conditions, depth))
        return events + self._events_exprs([stmt], depth, conditions, anchor, inline, seen, dead)

    def _flag_never_set(self, test: ast.AST) -> bool:
        """``test`` is a bare parameter of its function that every call of it gives the same
        falsy constant (an omitted argument: its default), where those calls are all of them
        (an entry script's function, a notebook's, one no other project file names:
        ``Values.parameter_constant``): the block it guards never runs."""
        if type(test) is not ast.Name:
            return False
        known, value = self.parameter_constant(test, called_only_here=self.called_only_here)
        return known and not value

    def _autocast_test_outside(self, stmt: ast.If) -> bool:
        """``if torch.is_autocast_enabled():`` outside any ``with ...autocast(...)`` block, in a
        function that enters autocast itself (``with autocast("cuda"): loss = ...`` just above):
        the test is False where it runs, so its body never does (a SimCLR DDP trainer whose
        scaler branch sits after the autocast block)."""
        test = stmt.test
        if not (isinstance(test, ast.Call) and not test.args and
                (self.m.qualname(test.func) or "").startswith("torch.") and
                (self.m.qualname(test.func) or "").endswith("is_autocast_enabled")):
            return False

        def autocast_with(node: ast.AST) -> bool:
            return isinstance(node, (ast.With, ast.AsyncWith)) and any(
                isinstance(i.context_expr, ast.Call) and
                (self.m.qualname(i.context_expr.func) or "").endswith("autocast") for i in node.items)

        if any(autocast_with(a) for a in ancestors(stmt)):
            return False
        func = self.m.enclosing_function(stmt)
        return func is not None and any(autocast_with(n) for n in self.m.own_nodes(func))

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

    def _events_exprs(self, roots, depth, conditions, anchor, inline, seen, dead=frozenset()) -> list[Event]:
        calls = self._calls_in(roots)
        out: list[Event] = []
        for call in calls:
            kind = self.classify(call)
            if kind:
                out.append(Event(kind, call, anchor or call, conditions, depth))
                continue
            if call in self.step_wrapper_calls:
                out += [Event(k, call, anchor or call, conditions, depth) for k in ("backward", "step")]
                continue
            if inline < MAX_INLINE_DEPTH:
                callee = self.resolve_local_call(call)
                if callee is not None and callee not in seen:
                    inner = self.events_in(callee.body, depth=depth, conditions=conditions,
                                           anchor=anchor or call, inline=inline + 1,
                                           seen=seen | {callee}, dead=_left_none(callee, call))
                    copies = self._copies_in(callee, call)
                    if copies:
                        # `model = deepcopy(self.student).to(d); self._evaluate_model(model)`: the
                        # switch of a copy leaves the trained module's mode alone (KD_Lib's evaluate)
                        inner = [e for e in inner if e.kind not in ("eval", "train") or
                                 _switched_root(e.node) not in copies or
                                 self.m.enclosing_function(e.node) is not callee]
                    out += inner
                elif callee is None:
                    out += [Event(mode, node, anchor or call, conditions, depth)
                            for node, mode in self.imported_mode_calls(call)]
        return out

    def _copies_in(self, callee: ast.AST, call: ast.Call) -> set[str]:
        """The names that hold a deep copy of a module in ``callee`` when ``call`` runs it:
        its locals bound only to ``copy.deepcopy(...)``, and its parameters to which ``call``
        passes such a copy (a copy, or a name of the caller bound only to one)."""
        out = set()
        for node in self.m.own_nodes(callee):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                values, func = self.m.assignments(node.targets[0])
                if func is None and values and all(_a_copy(v, self.m.qualname) for v in values):
                    out.add(node.targets[0].id)
        args = getattr(callee, "args", None)
        if isinstance(args, ast.arguments):
            given = [(a.arg, argument_for(call, callee, a.arg)) for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
            for name, value in given:
                if value is None:
                    continue
                if _a_copy(value, self.m.qualname):
                    out.add(name)
                elif isinstance(value, ast.Name):
                    values, func = self.m.assignments(value)
                    if func is None and values and all(_a_copy(v, self.m.qualname) for v in values):
                        out.add(name)
        return out

    # -------------------------------------------------------- training loops
    @cached_property
    def step_wrapper_calls(self) -> frozenset[ast.Call]:
        """Calls that run backward and the optimizer step inside a callable we
        cannot read: given the loss and the optimizer, e.g. timm/MAE
        ``loss_scaler(loss, optimizer, parameters=model.parameters())``."""
        out = set()
        for call in self.m.calls:
            # (the argument list is built only for a call that passes a loss first)
            if not call.args or len(call.args) + len(call.keywords) < 2 or not _loss_value(call.args[0]):
                continue  # the loss comes first: `loss_scaler(loss, optimizer, ...)`
            args = [*call.args, *(k.value for k in call.keywords)]
            name = call_name(call) or ""
            if _NOT_A_STEP.search(name) or name in _BUILTIN_NAMES:
                continue
            if not any(self.m.kind_of(a) == "optimizer" for a in args[1:]):
                continue
            if self.classify(call) is not None or self.resolve_local_call(call) is not None:
                continue
            if isinstance(call.func, ast.Name) and call.func.id in self.m.classes:
                continue  # `Trainer(loss, metric, optimizer)`: builds an object of this file, runs no step
            if self._partial_of_local(call):
                continue  # `backwards = partial(loss_backwards, fp16)`: a function of this file we can read
            out.add(call)
        return frozenset(out)

    def _partial_of_local(self, call: ast.Call) -> bool:
        """``call`` calls a name every value of which is ``functools.partial(f, ...)`` of a
        function ``f`` of this module (med-ddpm's ``backwards = partial(loss_backwards,
        self.fp16)``): what it runs can be read, it is not a callable we cannot see into."""
        if not isinstance(call.func, ast.Name):
            return False
        values = self.values_of(call.func)
        return bool(values) and all(
            isinstance(v, ast.Call) and self.m.qualname(v.func) == "functools.partial" and v.args and
            isinstance(v.args[0], ast.Name) and any(not isinstance(parent(d), ast.ClassDef)
                                                    for d in self.m.functions.get(v.args[0].id, ()))
            for v in values)

    @cached_property
    def training_loops(self) -> list[TrainingLoop]:
        if "backward" not in self.m.attribute_names and "manual_backward" not in self.m.attribute_names \
                and "backward" not in self.m.calls_by_name and not self.step_wrapper_calls:
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
                                   *self.m.calls_by_name.get("manual_backward", ()),
                                   *self.step_wrapper_calls]
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
                                   *self.m.calls_by_name.get("manual_backward", ()),
                                   *self.step_wrapper_calls]
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
    def _training_runners(self) -> frozenset[ast.AST]:
        """Functions of this module that run training when called: they hold a training
        loop or the epoch loop around one, or call (same module, any depth) one that does."""
        found = set(self.training_functions)
        for tl in self.training_loops:
            for loop in (tl.node, tl.epoch_loop):
                fn = self.m.enclosing_function(loop) if loop is not None else None
                if fn is not None:
                    found.add(fn)
        frontier = list(found)
        while frontier:
            for site in self.call_sites(frontier.pop()):
                caller = self.m.enclosing_function(site)
                if caller is not None and caller not in found:
                    found.add(caller)
                    frontier.append(caller)
        return frozenset(found)

    def after_training(self, node: ast.AST) -> bool:
        """``node`` runs once the training of its function (or script) is over: that
        function trains (a training loop or its epoch loop, or a call of a same-module
        function that trains, ``_training_runners``), every such place ends on a line
        before ``node``'s, and no loop around ``node`` holds one (no later iteration
        trains again). What ``node`` builds there (the test loaders of a final scoring
        pass after ``train(...)`` returned) feeds no training. False when the function
        trains nowhere: nothing says when ``node`` runs."""
        owner = self.m.enclosing_function(node) or self.m.tree
        loops = {id(loop) for tl in self.training_loops for loop in (tl.node, tl.epoch_loop) if loop is not None}
        runners = self._training_runners
        places = [n for n in self.m.own_nodes(owner)
                  if id(n) in loops or (isinstance(n, ast.Call) and self.resolve_local_call(n) in runners)]
        if not places:
            return False
        line = getattr(node, "lineno", 0)
        if any((getattr(n, "end_lineno", None) or n.lineno) >= line for n in places):
            return False
        around = [a for a in ancestors(node) if isinstance(a, LoopNode)]
        inside = {id(a) for a in around}
        return not any(id(a) in inside for n in places for a in ancestors(n))

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

    @cached_property
    def loss_builders(self) -> frozenset[ast.AST]:
        """Functions of this module whose return value is backpropagated: the
        receiver of a ``.backward()`` is, or is computed from (``loss = a +
        self.eta * b``, two name hops), what a call of the function returned
        (SAC's ``alpha_loss = self._alpha_loss(state); alpha_loss.backward()``).
        They are part of the training step even without a backward call of their
        own: their ``no_grad`` blocks compute targets, not predictions."""
        out: set[ast.AST] = set()
        for call in self.m.calls_by_name.get("backward", ()):
            func = call.func
            if not isinstance(func, ast.Attribute):
                continue
            frontier: list[ast.AST] = [func.value]
            for _ in range(3):
                following: list[ast.AST] = []
                for expr in frontier:
                    for node in ast.walk(expr):
                        if isinstance(node, ast.Call):
                            target = self.resolve_local_call(node)
                            if target is not None:
                                out.add(target)
                        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                            following.extend(v for v in self.values_of(node, 1) if v is not node)
                frontier = following
                if not frontier:
                    break
        return frozenset(out)

    # -------------------------------------------------------- loaders
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

    def runs_once(self, loop: ast.AST) -> bool:
        """``for epoch in range(n)`` (or ``range(0, n)``) where every value ``n`` may hold --
        followed through assignments and same-module call sites -- is the literal 1, or
        ``range(a, b)`` whose bounds fold to integers one apart (``range(1, epochs + 1)`` after
        ``epochs = 1``): the loop body runs a single time."""
        if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call) or \
                self.m.qualname(loop.iter.func) not in ("range", "builtins.range") or loop.iter.keywords:
            return False
        args = loop.iter.args
        if len(args) == 2 and isinstance(args[0], ast.Constant) and args[0].value == 0:
            args = args[1:]
        if len(args) == 1:
            values = [args[0]] if isinstance(args[0], ast.Constant) else self.values_of(args[0])
            if bool(values) and all(isinstance(v, ast.Constant) and type(v.value) is int and v.value == 1
                                    for v in values):
                return True
            return self._small_int(args[0], loop) == 1
        if len(args) == 2:
            # `range(1, epochs + 1)` after `epochs = 1` (a notebook cell's setting, the cell before
            # it set another): one iteration
            start, stop = self._small_int(args[0], loop), self._small_int(args[1], loop)
            return start is not None and stop is not None and stop - start == 1
        return False

    def _small_int(self, expr: ast.AST, at: ast.AST, depth: int = 0) -> int | None:
        """An integer ``expr`` holds where ``at`` runs: a literal, a sum or difference of such, or a
        name every value of which folds to one integer -- for a module-level name (a script or a
        notebook run top to bottom), the assignment that reaches ``at``."""
        if depth > 3:
            return None
        if isinstance(expr, ast.Constant):
            return expr.value if type(expr.value) is int else None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
            left, right = self._small_int(expr.left, at, depth + 1), self._small_int(expr.right, at, depth + 1)
            if left is None or right is None:
                return None
            return left + right if isinstance(expr.op, ast.Add) else left - right
        if not isinstance(expr, ast.Name):
            return None
        if self.m.enclosing_function(at) is None:
            value = self.reaching_value_strict(expr)
            return self._small_int(value, at, depth + 1) if value is not None and value is not expr else None
        values = [v for v in self.values_of(expr) if v is not expr]
        found = {self._small_int(v, at, depth + 1) for v in values}
        return found.pop() if len(found) == 1 else None

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

    def raw_batch_names(self, loop: ast.AST, at: ast.AST) -> set[str]:
        """Names that, where ``at`` runs in the body of the ``for`` loop ``loop``, still
        hold what the loop iterates exactly as it was yielded: the loop target (the
        item of ``enumerate``), and names unpacked or indexed from it without any call
        (``x, y = batch``, ``ids = batch["ids"]``). A reassignment from anything else
        (``x = x.to(device)``), an item assignment (``batch[k] = ...``) or a call made for
        its effect that is handed the name and a device (``dict_all_to_device(batch,
        device)``) ends it."""
        timeline = self._batch_timelines.get(id(loop))
        if timeline is None:
            timeline = self._batch_timeline(loop)
            self._batch_timelines[id(loop)] = timeline
        return _alive(timeline, position(at))

    def _without_cuda(self, node: ast.AST) -> bool:
        """``node`` runs only when CUDA is absent: the ``else`` of ``if torch.cuda.is_available():``
        (or the body of ``if not torch.cuda.is_available():``). A batch unpacked there stays on
        the CPU beside a model moved under the same test (FEAT's ``else: data, label = batch``)."""
        child = node
        for anc in ancestors(node):
            if isinstance(anc, ast.If):
                test, negated = anc.test, False
                if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                    test, negated = test.operand, True
                if isinstance(test, ast.Call) and self.m.qualname(test.func) == "torch.cuda.is_available":
                    in_else = any(child is s for s in anc.orelse)
                    return in_else != negated
            child = anc
        return False

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
                _root_name(value) in _alive(timeline, position(node)) and not self._without_cuda(node)
            done = (node.end_lineno, node.end_col_offset)  # the value is computed first
            for t in targets:
                timeline += [(done, n.id, unpacks) for n in ast.walk(t)
                             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
                if isinstance(t, (ast.Subscript, ast.Attribute)) and _root_name(t):
                    timeline.append((done, _root_name(t), False))
        # a helper handed the batch and a device, called for its effect
        # (`dict_all_to_device(batch, device)`: RPMNet moves the dict's tensors in place)
        for node in self.m.own_nodes(loop):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                call = node.value
                args = [*call.args, *(k.value for k in call.keywords)]
                if any(self.m.device_kind(a) in ("accelerator", "variable") for a in args):
                    alive = _alive(timeline, position(node))
                    done = (node.end_lineno, node.end_col_offset)
                    timeline += [(done, a.id, False) for a in args if isinstance(a, ast.Name) and a.id in alive]
        timeline.sort(key=lambda entry: entry[0])
        return timeline


_NOT_A_STEP = re.compile(r"(?i)log|print|record|write|save|track|report|show|display|format")
_BUILTIN_NAMES = frozenset(dir(builtins))


def _switched_root(node: ast.AST) -> str | None:
    """The name at the root of what a mode call switches (``model`` of ``model.eval()``,
    ``model.encoder.train()``)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    return _root_name(node.func.value)


def _a_copy(expr: ast.AST, qualname) -> bool:
    """``copy.deepcopy(x)``, also moved or switched on the way (``deepcopy(m).to(d)``)."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
            expr.func.attr in ("to", "cuda", "cpu", "eval", "train", "half", "float"):
        expr = expr.func.value
    return isinstance(expr, ast.Call) and qualname(expr.func) == "copy.deepcopy"


def _left_none(func: ast.AST, call: ast.Call) -> frozenset:
    """Parameters of ``func`` that ``call`` does not pass and that default to ``None``
    (none when the call spreads ``*args``/``**kwargs``)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return frozenset()
    args = func.args  # type: ignore[attr-defined]
    positional = [*args.posonlyargs, *args.args]
    offset = 1 if positional and positional[0].arg in ("self", "cls") and isinstance(call.func, ast.Attribute) else 0
    given = {a.arg for a in positional[offset:offset + len(call.args)]} | {k.arg for k in call.keywords}
    defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return frozenset(name for name, d in defaults.items()
                     if name not in given and isinstance(d, ast.Constant) and d.value is None)


def _tests_present(test: ast.AST, dead: frozenset) -> bool:
    """``if p is not None:`` / ``if p:`` (also joined by ``and``) for a ``p`` in ``dead``: the
    block runs only when the parameter was given."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_tests_present(v, dead) for v in test.values)
    if isinstance(test, ast.Name):
        return test.id in dead
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id in dead and \
        len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) and \
        isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None


def _loss_value(expr: ast.AST) -> bool:
    """``loss``, ``total_loss``, ``loss / accum_iter``: a loss value by its name."""
    while isinstance(expr, ast.BinOp):
        expr = expr.left
    return isinstance(expr, ast.Name) and bool(N.LOSS_VALUE_NAME.match(expr.id))


def _every_time(test: ast.AST) -> bool:
    """``x % 1 == 0`` (either side): a modulo schedule of period one, true on every iteration."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    for mod, zero in (sides, sides[::-1]):
        if isinstance(mod, ast.BinOp) and isinstance(mod.op, ast.Mod) and isinstance(mod.right, ast.Constant) \
                and type(mod.right.value) is int and mod.right.value == 1 and isinstance(zero, ast.Constant) \
                and type(zero.value) is int and zero.value == 0:
            return True
    return False


def _submodule_parameter(target: ast.AST) -> bool:
    """``target`` is the ``.grad`` of a parameter named through a submodule
    (``model.pooler.dense.weight.grad``): three attribute levels or more below a name."""
    if not (isinstance(target, ast.Attribute) and target.attr == "grad"):
        return False
    depth, node = 0, target.value
    while isinstance(node, ast.Attribute):
        depth, node = depth + 1, node.value
    return isinstance(node, ast.Name) and depth >= 3
