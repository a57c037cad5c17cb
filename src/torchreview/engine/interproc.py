"""Interprocedural questions that reach across functions and files.

The per-function facts live in the project index (``engine/project_index.py``:
``FunctionSummary`` / ``ClassSummary``, made from a module's source alone).
This module answers the questions the model asks with them, within bounds
documented in docs/WRITING_RULES.md ("Across functions and files"):

* a callee's summary is one level deep: what the function itself does to its
  parameters and returns (a helper it calls in turn counts as "unknown effect");
* callers in other files are found by ``engine/call_paths.py`` (``ctx.call_paths``).
"""

from __future__ import annotations

import ast

# How many values a name may hold for `loaded_object` to judge them all.
_MAX_VALUES = 8


def loaded_object(name: ast.AST, *, values_of, model) -> bool:
    """``name`` holds only whole objects read by ``torch.load`` (directly, or returned
    by a project helper that returns one): when the code calls it, it is a pickled
    module (a tensor or a dict cannot be called). ``values_of`` is the values
    question (``Values.values_of``), ``model`` the semantic model."""
    values = [v for v in values_of(name) if v is not name]
    if not values or len(values) > _MAX_VALUES:
        return False
    for value in values:
        if not isinstance(value, ast.Call):
            return False
        q = model.qualname(value.func)
        if q == "torch.load":
            continue
        project = model.project
        found = project.function(q) if project is not None else None
        if found is None or found.returns_ctor != "torch.load":
            return False
    return True


def caller_arguments(flow, name: ast.AST) -> list[ast.AST] | None:
    """For a parameter read as ``name`` (never reassigned in its function): the
    argument each same-module call site passes for it (``boxes_as_array(
    outputs["boxes"])`` for ``def boxes_as_array(boxes)``). None when it is not
    such a parameter, the function is a method or has no call site here, or a
    site cannot be matched (``*args``, the parameter left to its default). One
    level: the arguments are judged where the callers are."""
    if not isinstance(name, ast.Name):
        return None
    values, func = flow.m.assignments(name)
    if values or func is None or not isinstance(getattr(func, "args", None), ast.arguments):
        return None
    from torchreview.engine.semantic_common import parent

    if isinstance(parent(func), ast.ClassDef):
        return None
    args = func.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    if name.id not in positional and name.id not in [a.arg for a in args.kwonlyargs]:
        return None
    sites = flow.call_sites(func)
    if not sites:
        return None
    out = []
    for site in sites:
        if any(isinstance(a, ast.Starred) for a in site.args) or any(k.arg is None for k in site.keywords):
            return None
        arg = next((k.value for k in site.keywords if k.arg == name.id), None)
        if arg is None and name.id in positional and positional.index(name.id) < len(site.args):
            arg = site.args[positional.index(name.id)]
        if arg is None:
            return None
        out.append(arg)
    return out
