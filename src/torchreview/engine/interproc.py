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


def loaded_object(flow, name: ast.AST) -> bool:
    """``name`` holds only whole objects read by ``torch.load`` (directly, or returned
    by a project helper that returns one): when the code calls it, it is a pickled
    module (a tensor or a dict cannot be called)."""
    values = [v for v in flow.values_of(name) if v is not name]
    if not values or len(values) > _MAX_VALUES:
        return False
    for value in values:
        if not isinstance(value, ast.Call):
            return False
        q = flow.m.qualname(value.func)
        if q == "torch.load":
            continue
        project = flow.m.project
        found = project.function(q) if project is not None else None
        if found is None or found.returns_ctor != "torch.load":
            return False
    return True
