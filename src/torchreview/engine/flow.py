"""Control facts on top of the semantic model: grad contexts, training loops, modes.

A *training loop* is the innermost loop whose iteration runs a backward pass and
an optimizer step (directly, in nested blocks, or through functions of the same
module). Its *events* (zero_grad, backward, step, clip, ...) are kept in source
order with the conditions they run under, so ordering rules read them instead
of re-walking the tree.
"""

from __future__ import annotations

import ast
from functools import cached_property

from torchreview.engine import names as N
from torchreview.engine.semantic import (  # noqa: F401
    FunctionNode, LoopNode, SemanticModel, ancestors, call_name, dotted, parent, position,
)
from torchreview.engine.flow_common import (  # noqa: F401  (re-exported for rules)
    MAX_INLINE_DEPTH, _ITER_WRAPPERS, Event, TrainingLoop, _alive, _field_of, _root_name,
    _walk_same_function, names_accumulation,
)
from torchreview.engine.flow_loops import LoopsMixin
from torchreview.engine.flow_modes import ModesMixin
from torchreview.engine.model.grad import GradContexts
from torchreview.engine.model.splits import Splits
from torchreview.engine.project_index import FunctionSummary
from torchreview.engine.flow_values import ValuesMixin


class Flow(LoopsMixin, ValuesMixin, ModesMixin):
    """Call sites and import-time facts here; grad contexts (``model/grad.py``) and data
    splits (``model/splits.py``) composed; loops, values and modes still in the mixins."""

    def __init__(self, model: SemanticModel) -> None:
        self.m = model
        self._kinds: dict[int, str | None] = {}
        self._imported_modes: dict[int, list] = {}
        self._own_modes: dict[int, str | None] = {}
        # the splits concept, composed: it asks values and the call graph through these
        self.splits = Splits(model, reaching_value=self.reaching_value, values_of=self.values_of,
                             resolve_local_call=self.resolve_local_call)
        self.data_split = self.splits.data_split
        self.metric_split = self.splits.metric_split
        # the grad-context concept, composed: it asks names and the call graph
        self.grad = GradContexts(qualname=model.qualname, call_sites=self.call_sites)
        self.grad_disabled = self.grad.grad_disabled
        self.function_grad_disabled = self.grad.function_grad_disabled
        self.disables_grad = self.grad.disables_grad

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

    def imported_mode_calls(self, call: ast.Call) -> list[tuple[ast.Call, str]]:
        """A call of a function of another project module (the project index) that
        switches modes of its parameters: one ``(<argument>.eval()/.train() call, mode)``
        pair per switch, in order. The calls are made up for events (they sit at
        the position of ``call``, whose child they claim to be) and stable per call."""
        memo = self._imported_modes
        key = id(call)
        if key in memo:
            return memo[key]
        out: list[tuple[ast.Call, str]] = []
        project = self.m.project
        func = call.func
        if project is not None and (isinstance(func, ast.Name) or (
                isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name))):
            found = project.lookup_qualname(self.m.qualname(call.func))
            if isinstance(found, FunctionSummary):
                for arg, mode in found.mode_calls(call):
                    made = ast.Call(func=ast.Attribute(value=arg, attr=mode, ctx=ast.Load()), args=[],
                                    keywords=[])
                    ast.copy_location(made, call)
                    ast.copy_location(made.func, call)
                    made._tr_parent = call  # type: ignore[attr-defined]
                    made.func._tr_parent = made  # type: ignore[attr-defined]
                    out.append((made, mode))
        memo[key] = out
        return out

    def imported_mode(self, call: ast.Call) -> str | None:
        """The mode a call of another project module's function leaves its last
        switched argument in (``"eval"``/``"train"``), or None."""
        calls = self.imported_mode_calls(call) if isinstance(call, ast.Call) else []
        return calls[-1][1] if calls else None

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


