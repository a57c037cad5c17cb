"""Model concept: the call graph (what a call reaches, who calls a function).

``CallGraph`` answers, within one module, which function a call reaches
(``resolve_local_call``) and which calls reach a function (``call_sites``);
what a call of another project module's function does to the modes of its
arguments (``imported_mode_calls``, from the project index); which code runs
when the module is imported (``runs_at_import``); and which methods a base
class defined elsewhere drives (``run_by_base_class``). It receives the
semantic model (names, scopes, definitions; its project index view) in its
constructor and asks no other flow concept.
"""

from __future__ import annotations

import ast

from torchreview.engine.semantic_common import FunctionNode, ancestors, parent


class CallGraph:
    def __init__(self, model) -> None:
        self.m = model
        self._imported_modes: dict[int, list] = {}

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

    def run_by_base_class(self, func: ast.AST) -> bool:
        """A method of a class with base classes that nothing in this module calls:
        a base class defined elsewhere drives it (``validation_step`` of a trainer
        subclass), together with whatever mode or grad setup surrounds it."""
        cls = parent(func)
        return isinstance(cls, ast.ClassDef) and bool(cls.bases) and not self.call_sites(func)

    # -------------------------------------------------------- calls into other files
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
            found = project.function(self.m.qualname(call.func))  # a FunctionSummary, or None
            if found is not None:
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
