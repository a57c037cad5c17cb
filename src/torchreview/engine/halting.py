"""Where a script stops for certain: the first module-level read of a name nothing binds.

Notes kept as a ``.py`` file sometimes read like code and are not: a tutorial's
``torch.save(arg, PATH)`` where neither ``arg`` nor ``PATH`` exists anywhere in the file.
Running (or importing) such a module raises ``NameError`` at that statement, so nothing after
it ever runs. :func:`first_unbound_read` finds that statement, statically, under strict
conditions, so that a name bound some way the analysis does not see never counts:

* only statements of the module body that always run: not inside ``if``/``try``/loops, not a
  function or class body (a ``with`` block's body runs);
* in those, only reads that are always evaluated: not under a lambda, a nested definition, a
  conditional expression's arms, the later operands of ``and``/``or``, or an annotation;
* a name is bound if the module assigns, imports, defines, deletes, declares ``global`` or
  otherwise binds it anywhere (any scope: a function may bind it with ``global``), or it is a
  builtin or a module attribute Python provides (``__file__``);
* a module with a star import, or that reaches its namespace through ``globals()``,
  ``vars()``, ``locals()``, ``exec``/``eval``, ``__builtins__`` or ``sys.modules``, has no
  such statement (it may bind anything).

Notebooks are not asked (IPython provides names, and cells run in any order).
"""

from __future__ import annotations

import ast
import builtins

_PROVIDED = frozenset(dir(builtins)) | frozenset({
    "__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__", "__path__",
    "__builtins__", "__cached__", "__annotations__", "__dict__", "__debug__",
    # what IPython provides to a script it runs (a notebook exported to `.py`)
    "get_ipython", "display", "In", "Out"})
_OPEN_NAMESPACE = frozenset({"globals", "vars", "locals", "exec", "eval", "__builtins__", "__import__"})


def first_unbound_read(tree: ast.Module) -> ast.Name | None:
    """The first always-evaluated module-level read of a name the module never binds, or None.
    A cheap pass first: names the module-level statements bind (most modules read nothing
    else at their top level); the whole tree is read only when a read is left over."""
    top = _bound_at_top_level(tree.body)
    if top is None or not any(_unbound_in(stmt, top) is not None for stmt in _always_run(tree.body)):
        return None
    return _first_unbound_read(tree)


def _bound_at_top_level(body: list[ast.stmt], out: set[str] | None = None) -> set[str] | None:
    """Names bound by module-level statements (compound statements' bodies included, not
    definitions' bodies); None for a star import (anything may be bound)."""
    out = set() if out is None else out
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                if alias.name == "*":
                    return None
                out.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(stmt.name)
            continue
        for sub in _targets(stmt):
            out.update(n.id for n in ast.walk(sub) if isinstance(n, ast.Name))
        for block in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, block, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                if _bound_at_top_level(inner, out) is None:
                    return None
        for handler in getattr(stmt, "handlers", ()):
            if handler.name:
                out.add(handler.name)
            if _bound_at_top_level(handler.body, out) is None:
                return None
    return out


def _targets(stmt: ast.stmt) -> list[ast.AST]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        return [stmt.target]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    return []


def _first_unbound_read(tree: ast.Module) -> ast.Name | None:
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
            elif node.id in _OPEN_NAMESPACE:
                return None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.Attribute) and node.attr == "modules" and \
                isinstance(node.value, ast.Name) and node.value.id == "sys":
            return None
    for stmt in _always_run(tree.body):
        found = _unbound_in(stmt, bound)
        if found is not None:
            return found
    return None


def _always_run(body: list[ast.stmt]):
    for stmt in body:
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from (item.context_expr for item in stmt.items)
            yield from _always_run(stmt.body)
        elif isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match,
                               ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if isinstance(stmt, ast.If):
                yield stmt.test
            elif isinstance(stmt, (ast.For, ast.AsyncFor)):
                yield stmt.iter
            elif isinstance(stmt, ast.Match):
                yield stmt.subject
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                # decorators, defaults and bases are evaluated where the definition runs
                yield from stmt.decorator_list
                if isinstance(stmt, ast.ClassDef):
                    yield from stmt.bases
                else:
                    yield from (d for d in stmt.args.defaults)
                    yield from (d for d in stmt.args.kw_defaults if d is not None)
            # (a `while` test, a `try` body: left out -- the first may be a loop's own guard,
            # the second's error is caught)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                yield stmt.value
        else:
            yield stmt


def _unbound_in(node: ast.AST, bound: set[str]) -> ast.Name | None:
    """The first (source order) always-evaluated read in ``node`` of a name not in ``bound``."""
    if isinstance(node, ast.Name):
        return node if isinstance(node.ctx, ast.Load) and node.id not in bound and node.id not in _PROVIDED \
            else None
    if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return None
    if isinstance(node, ast.IfExp):
        return _unbound_in(node.test, bound)
    if isinstance(node, ast.BoolOp):
        return _unbound_in(node.values[0], bound)
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        return _unbound_in(node.generators[0].iter, bound)  # the rest may run zero times
    if isinstance(node, ast.Assign):
        return _unbound_in(node.value, bound) or _first(node.targets, bound)
    if isinstance(node, ast.AugAssign):
        return _unbound_in(node.value, bound)
    children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, (ast.expr_context, ast.operator))]
    return _first(children, bound)


def _first(nodes, bound: set[str]) -> ast.Name | None:
    for child in nodes:
        found = _unbound_in(child, bound)
        if found is not None:
            return found
    return None
