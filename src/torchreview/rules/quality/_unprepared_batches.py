"""Accelerate scripts that iterate a DataLoader they never prepare (TR403).

``accelerator.prepare(loader)`` is what moves batches to ``accelerator.device``.
A second loader built in the script (caching latents, computing embeddings
before training) and iterated without ``prepare`` yields CPU tensors; feeding
them (unchanged, or only cast to another dtype) to a model the script placed
on the accelerator fails with a device mismatch on a GPU.
"""

from __future__ import annotations

import ast

from torchreview.engine.context import argument_for

_CASTS = frozenset({"half", "float", "bfloat16", "double", "contiguous"})


def _names(target) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _dtype_only(call) -> bool:
    """``x.to(dtype=...)``, ``x.to(torch.float16)``, ``x.to(vae.dtype)``, ``x.half()``: no device."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return False
    if call.func.attr in _CASTS:
        return not call.args
    if call.func.attr != "to" or any(k.arg not in ("dtype", "non_blocking", "copy") for k in call.keywords):
        return False
    return all(isinstance(a, ast.Attribute) and (a.attr == "dtype" or a.attr.startswith(("float", "bfloat", "half")))
               for a in call.args)


def _root(expr):
    while isinstance(expr, (ast.Subscript, ast.Attribute, ast.Call)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def _prepared(ctx) -> set[tuple[int, str]]:
    """``(id(enclosing function), name)`` of what ``*.prepare(...)`` receives or returns."""
    out = set()
    for call in ctx.model.calls_by_name.get("prepare", []):
        scope = id(ctx.enclosing_function(call))
        names = {a.id for a in call.args if isinstance(a, ast.Name)}
        for anc in ctx.ancestors(call):
            if isinstance(anc, ast.Assign):
                for t in anc.targets:
                    names |= _names(t)
                break
        out |= {(scope, n) for n in names}
    return out


def _passed_prepared(ctx, loop, name, prepared) -> bool:
    """``name`` is a parameter of the loop's function that every same-module call hands a
    prepared loader (``trainloader, ... = accelerator.prepare(trainloader, ...)`` in ``main``,
    then ``train(trainloader, ...)``: an anomaly-distillation script, judged false)."""
    func = ctx.enclosing_function(loop)
    if func is None or name is None or name not in {a.arg for a in func.args.args + func.args.kwonlyargs}:
        return False
    sites = ctx.flow.call_sites(func)
    if not sites:
        return False
    for site in sites:
        arg = argument_for(site, func, name)
        if not (isinstance(arg, ast.Name) and (id(ctx.enclosing_function(site)), arg.id) in prepared):
            return False
    return True


def _placed_modules(ctx) -> set[str]:
    """Names moved with ``.to(<accelerator device>)``."""
    out = set()
    for call in ctx.model.calls_by_name.get("to", []):
        if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
            device = ctx.arg(call, "device", 0)
            if device is not None and "device" in ast.unparse(device) and ctx.kind_of(call.func.value) != "tensor":
                out.add(call.func.value.id)
    return out


def unprepared_batches(ctx):
    """``(argument, loop, module name)`` for batches of an unprepared loader reaching
    a module placed on the accelerator."""
    if not ctx.model.imports_module("accelerate"):
        return
    prepared, placed = _prepared(ctx), _placed_modules(ctx)
    if not placed:
        return
    for loop in ctx.model.loops:
        if not isinstance(loop, ast.For) or not ctx.flow.iterated_loaders(loop):
            continue
        source = loop.iter.args[0] if isinstance(loop.iter, ast.Call) and loop.iter.args and \
            isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "enumerate" else loop.iter
        if (id(ctx.enclosing_function(loop)), _root(source)) in prepared or any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "prepare"
                for n in ast.walk(source)) or _passed_prepared(ctx, loop, _root(source), prepared):
            continue
        live = _names(loop.target)
        for stmt in loop.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Assign):
                    value, targets = node.value, set().union(*(_names(t) for t in node.targets))
                    keeps = (_dtype_only(value) and _root(value) in live) or (
                        isinstance(value, ast.Subscript) and _root(value) in live and
                        not any(isinstance(v, ast.Call) for v in ast.walk(value)))
                    live = (live | targets) if keeps else (live - targets)
                elif isinstance(node, ast.Call) and _root(node.func) in placed and not (
                        isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda")):
                    for arg in node.args:
                        if isinstance(arg, ast.Name) and arg.id in live:
                            yield arg, loop, _root(node.func)
