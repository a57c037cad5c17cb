"""Model concept: grad contexts (where autograd is off).

``GradContexts`` is composed into :class:`torchreview.engine.flow.Flow`
(``flow.grad``; ``flow.grad_disabled``/``function_grad_disabled``/``disables_grad``
answer through it): with-blocks (``no_grad``, ``inference_mode``,
``set_grad_enabled``, ``enable_grad``), decorators, and same-module callers that
all run a function with autograd off. It receives the names question
(``qualname``) and the call graph (``call_sites``) in its constructor.
"""

from __future__ import annotations

import ast
from typing import Callable

from torchreview.engine import names as N
from torchreview.engine.semantic_common import FunctionNode, ancestors


class GradContexts:
    def __init__(self, *, qualname: Callable, call_sites: Callable) -> None:
        self.qualname = qualname
        self.call_sites = call_sites
        self._fn_disabled: dict[ast.AST, bool] = {}
        self._module_off: dict[ast.AST, int | None] = {}
        self._ctor_off: dict[ast.AST, bool] = {}  # method -> its class's constructor turned autograd off

    def _context_state(self, expr: ast.AST) -> str | None:
        target = expr.func if isinstance(expr, ast.Call) else expr
        q = self.qualname(target)
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

    def disables_grad_expr(self, expr: ast.AST) -> bool:
        """Does this context manager or decorator expression turn autograd off?"""
        return self._context_state(expr) == "disabled"

    def disables_grad(self, with_node: ast.AST) -> bool:
        """Does this ``with`` statement itself turn autograd off (``no_grad()``,
        ``inference_mode()``, ``set_grad_enabled(False)``)?"""
        return isinstance(with_node, (ast.With, ast.AsyncWith)) and any(
            self._context_state(item.context_expr) == "disabled" for item in with_node.items)

    def grad_disabled(self, node: ast.AST) -> bool:
        """True when ``node`` runs with autograd off (with-blocks, decorators, a
        same-module function whose every caller runs it with autograd off, or a
        module that switches autograd off for the whole process when it runs:
        a top-level ``torch.set_grad_enabled(False)`` that nothing turns back on, the same
        statement earlier in the function's own body, or a method of a class whose
        constructor switches it off that way)."""
        for anc in ancestors(node):
            if isinstance(anc, (ast.With, ast.AsyncWith)):
                for item in anc.items:
                    state = self._context_state(item.context_expr)
                    if state:
                        return state == "disabled"
            elif isinstance(anc, FunctionNode):
                return self.function_grad_disabled(anc) or self._switched_off(node, inside_function=True) or \
                    self._constructor_switched_off(anc) or self._switched_off_before(node, anc)
            elif isinstance(anc, ast.Lambda):
                return False
        return self._switched_off(node, inside_function=False)

    def _switched_off(self, node: ast.AST, *, inside_function: bool) -> bool:
        """The module turns autograd off at its top level (``torch.set_grad_enabled(False)``
        as a statement of its own, the way conversion and export scripts do) and never
        turns it on again: its functions run after that, and so does the module-level
        code that follows the switch."""
        module = next((a for a in ancestors(node) if isinstance(a, ast.Module)), None)
        if module is None:
            return False
        if module not in self._module_off:
            self._module_off[module] = self._switch_line(module)
        line = self._module_off[module]
        return line is not None and (inside_function or getattr(node, "lineno", 0) > line)

    def _switched_off_before(self, node: ast.AST, func: ast.AST) -> bool:
        """A statement of ``func``'s own body before ``node`` turns autograd off for the process
        (``model.eval(); torch.set_grad_enabled(False)`` at the top of an evaluation function) and
        nothing in ``func`` turns it on again: the rest of the function runs with autograd off."""
        line = getattr(node, "lineno", 0)
        if not any(self._switches_off(stmt) and stmt.lineno < line for stmt in func.body):  # type: ignore[attr-defined]
            return False
        return not self._turned_on_again(func)

    def _constructor_switched_off(self, func: ast.AST) -> bool:
        """``func`` is a method (not ``__init__``) of a class whose constructor turns autograd
        off for the process with a statement of its own (``torch.autograd.set_grad_enabled(False)``
        at the end of an inference wrapper's ``__init__``), and nothing in the module turns it
        on again: the methods run on a constructed instance, after the switch."""
        memo = self._ctor_off
        if func in memo:
            return memo[func]
        memo[func] = False
        cls = next((a for a in ancestors(func) if isinstance(a, ast.ClassDef)), None)
        if cls is None or func not in cls.body or getattr(func, "name", "") == "__init__":
            return False
        init = next((m for m in cls.body if isinstance(m, FunctionNode) and m.name == "__init__"), None)
        if init is None or not any(self._switches_off(stmt) for stmt in init.body):
            return False
        module = next((a for a in ancestors(cls) if isinstance(a, ast.Module)), None)
        memo[func] = module is not None and not self._turned_on_again(module)
        return memo[func]

    def _switches_off(self, stmt: ast.AST) -> bool:
        return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
            self.qualname(stmt.value.func) == N.SET_GRAD and bool(stmt.value.args) and \
            isinstance(stmt.value.args[0], ast.Constant) and stmt.value.args[0].value is False

    def _turned_on_again(self, module: ast.AST) -> bool:
        """A ``set_grad_enabled(...)`` call of the module (or function) that is not ``False`` and not a
        ``with`` item (which restores the state it found)."""
        return any(isinstance(sub, ast.Call) and self.qualname(sub.func) == N.SET_GRAD and sub.args and
                   not (isinstance(sub.args[0], ast.Constant) and sub.args[0].value is False) and
                   not any(isinstance(a, ast.withitem) for a in ancestors(sub)) for sub in ast.walk(module))

    def _switch_line(self, module: ast.Module) -> int | None:
        off = None
        for stmt in module.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                    self.qualname(stmt.value.func) == N.SET_GRAD and stmt.value.args and \
                    isinstance(stmt.value.args[0], ast.Constant) and stmt.value.args[0].value is False:
                off = stmt.lineno if off is None else off
        if off is None:
            return None
        for sub in ast.walk(module):  # turned on again anywhere (a call that is not a `with` item): unknown
            if isinstance(sub, ast.Call) and self.qualname(sub.func) == N.SET_GRAD and sub.args and \
                    not (isinstance(sub.args[0], ast.Constant) and sub.args[0].value is False) and \
                    not any(isinstance(a, ast.withitem) for a in ancestors(sub)):
                return None
        return off

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
