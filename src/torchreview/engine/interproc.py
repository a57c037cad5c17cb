"""Interprocedural questions that reach across functions and files.

The per-function facts live in the project index (``engine/project_index.py``:
``FunctionSummary`` / ``ClassSummary``, made from a module's source alone).
This module answers the questions the model asks with them, within bounds
documented in docs/WRITING_RULES.md ("Across functions and files"):

* a callee's summary is one level deep: what the function itself does to its
  parameters and returns (a helper it calls in turn counts as "unknown effect");
* callers in other files are seen one hop away: the direct callers' first-pass
  reviews record each call of a project function (``CallSite``), and the callee
  is reviewed again with them (``engine/runner.py``); a caller's own callers in a
  third file are not followed.
"""

from __future__ import annotations

import ast
import json
from dataclasses import asdict, dataclass

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


# ---------------------------------------------------------------- callers in other files
@dataclass(frozen=True)
class CallSite:
    """One call of a project function, seen in the caller's file: what it passes and
    in which state (facts, plain data: cached with the caller's results)."""
    target: str  # the callee's module file (absolute path)
    function: str  # its name there
    kinds: tuple[tuple[str, str], ...]  # (parameter name, kind of the argument passed)
    mode: str | None  # "eval"/"train": the last mode switch before the call, else None
    grad_disabled: bool  # the call runs with autograd off
    unknown_args: bool = False  # `*args`/`**kwargs` at the call: parameters cannot be matched


def call_sites_of(ctx) -> tuple[CallSite, ...]:
    """Every call in this file of a function defined in another project module."""
    project = ctx.project
    if project is None or project.path is None:
        return ()
    model, flow = ctx.model, ctx.flow
    out = []
    for call in model.calls:
        func = call.func
        if not (isinstance(func, ast.Name) or (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name))):
            continue
        q = model.qualname(func)
        if not q or q.startswith(("torch.", "builtins.")):
            continue
        found = project.function(q)
        if found is None:
            continue
        target = project.defining_file(q)
        if target is None:
            continue
        unknown = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
        kinds = []
        if not unknown:
            for index, param in enumerate(found.params):
                arg = next((k.value for k in call.keywords if k.arg == param), None)
                if arg is None and index < len(call.args):
                    arg = call.args[index]
                if arg is not None:
                    kinds.append((param, model.kind_of(arg) or ""))
        out.append(CallSite(target, found.name, tuple(kinds), flow.mode_at(call), flow.grad_disabled(call),
                            unknown))
    return tuple(out)


def encode(sites) -> str:
    return json.dumps([asdict(s) for s in sites], sort_keys=True)


def decode(text: str) -> tuple[CallSite, ...]:
    if not text:
        return ()
    return tuple(CallSite(**{**d, "kinds": tuple(tuple(k) for k in d["kinds"])}) for d in json.loads(text))
