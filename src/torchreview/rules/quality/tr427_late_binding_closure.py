from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import FunctionNode, ancestors, call_name, dotted, parent
from torchreview.findings import Severity
from torchreview.rules._helpers import off_by_default

_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_CONTAINERS = (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Starred)
# Calls that keep a callable for later: containers, hook and callback registries, threads.
_KEEPERS = frozenset({"append", "add", "insert", "appendleft", "setdefault", "add_done_callback", "submit",
                      "apply_async", "connect", "call_soon", "call_later", "Thread", "Process", "Timer",
                      "register", "add_hook", "add_callback", "after"})
# Attributes that are one object shared by every tensor, whichever the loop is at:
# reaching them through the loop variable reads nothing of this iteration
# (`param._execution_engine.queue_callback(...)`: the autograd engine singleton).
_SHARED_ATTRS = frozenset({"_execution_engine"})


def _keeps(call: ast.Call) -> bool:
    name = call_name(call) or ""
    return name in _KEEPERS or (name.startswith("register") and "hook" in name) or name == "register_hook"


def _escapes(node: ast.AST) -> bool | str:
    """True when the value ``node`` is kept beyond the current iteration; the
    assigned name when it is only bound to a plain name (to follow); else False."""
    cur, up = node, parent(node)
    while isinstance(up, _CONTAINERS):
        cur, up = up, parent(up)
    if isinstance(up, ast.keyword):
        return _keeps(parent(up)) or up.arg in ("target", "callback", "hook", "fn")
    if isinstance(up, ast.Call):
        return cur in up.args and _keeps(up)
    if isinstance(up, (ast.Assign, ast.AnnAssign)) and cur is up.value:
        targets = up.targets if isinstance(up, ast.Assign) else [up.target]
        if any(isinstance(t, (ast.Subscript, ast.Attribute)) for t in targets):
            return True
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        return names[0] if names else False
    if isinstance(up, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return cur is up.elt
    if isinstance(up, ast.DictComp):
        return cur is up.value
    return False


class LateBindingClosure(Rule):
    """
    ## What it does
    Flags a `lambda` or nested `def` created inside a loop or comprehension
    that reads the loop variable (or a name assigned in the loop body) and is
    kept for later: registered as a hook or callback, appended to a list,
    stored in a dict or attribute, or handed to a thread.

    ## Why is this bad?
    Python closures look a variable up when they run, not when they are
    created. By the time the hooks fire, the loop has finished and every
    closure sees the last value: all forward hooks write their activations
    under the last layer's name, all callbacks use the last learning rate.

    ## Example
    ```python
    import torch

    def capture(model: torch.nn.Module):
        activations = {}
        for name, module in model.named_modules():
            module.register_forward_hook(lambda m, inp, out: activations.update({name: out}))
        return activations
    ```

    ## Use instead
    ```python
    import torch

    def capture(model: torch.nn.Module):
        activations = {}
        for name, module in model.named_modules():
            module.register_forward_hook(lambda m, inp, out, name=name: activations.update({name: out}))
        return activations
    ```

    ## Heuristics
    Only closures that outlive the iteration are reported; a `lambda` used
    on the spot (`sorted(xs, key=lambda v: v[i])`) is fine. Binding through a
    default argument or `functools.partial` is the fix and never reported.
    A loop over lists that repeat one element (`[start_lr] * n`, also zipped),
    counting only assignments that can complete (one that reads a name
    nothing defines raises first), binds the same values in every iteration:
    late binding changes nothing there.
    Only reads of a per-iteration value count: a name the loop body assigns
    from an expression that does not depend on the loop (no loop variable, no
    call: `scale = self.scale`) is the same in every iteration, and so is an
    object every element shares, reached through the loop variable
    (`param._execution_engine`, the autograd engine of every tensor): a
    closure that reads the loop only that way sees the right value. A name
    bound only under a test that holds in one iteration (`if l == 0: first =
    ...`, the loop target compared with a constant) has one value for the
    whole loop: reading it late reads the same value (cdvae's spherical
    basis, judged false).

    A closure in a branch of a class that the constructor's defaults rule
    out (`... if not tie_embedding else [lambda t: t @ e.weight.t() for e in
    embs]` with `tie_embedding=False`), when no construction of the class in
    the file turns it on and no other file names the class, never runs.
    Nor is a hook whose handle the same pass of the loop removes after it
    (`h = mu.register_hook(lambda g: g * power); loss.backward(); h.remove()`,
    or handles collected in a list, `for h in hooks: h.remove()`, in the pass
    of the loop that rebinds what the hook reads): it fires only while the
    values it reads are this pass's; nor is a gradient
    hook on a tensor the same pass computes, with the backward after it in that
    pass (`out = model(x); out.register_hook(lambda g: g.masked_fill_(mask,
    0)); loss.backward()`): the hook dies with that pass's tensor.

    Confidence: high for a `lambda` that visibly outlives the loop -- an
    element of a comprehension's result, registered as a hook, stored by
    subscript or appended to a container bound outside the loop
    (`hooks.append(lambda g: g * i)` after `hooks = []`); medium otherwise (a
    nested `def` followed through its name, a thread or executor that may run
    it before the loop moves on, an attribute overwritten each iteration).
    """

    code = "TR427"
    name = "late-binding-closure"
    severity = Severity.MEDIUM
    severity_reason = "Silently wrong results: every closure sees the last value of the loop variable."
    summary = "Closure created in a loop reads the loop variable late (every closure sees the last value)"
    node_types = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)

    def check(self, node, ctx) -> None:
        loops, varying = [], set()
        for anc in ctx.ancestors(node):
            if isinstance(anc, (*FunctionNode, ast.Lambda, ast.ClassDef)):
                break
            if isinstance(anc, _LOOPS + _COMPS):
                loops.append(anc)
                varying |= _loop_names(anc)
        if not loops:
            return
        late = sorted(_per_iteration(node, _free_names(node) & varying, loops))
        binding = [loop for loop in loops if _loop_names(loop) & set(late)]
        if not late or (binding and all(_replicated(loop, ctx) for loop in binding)):
            return
        if isinstance(node, ast.Lambda):
            kept = _escapes(node)
        else:
            kept = node.name
        if isinstance(kept, str):
            kept = _name_escapes(kept, node, loops[0])
        if not kept:
            return
        if any(_removed_in_iteration(node, loop) for loop in (loops[0], *binding[:1])):
            # `h = t.register_hook(lambda g: g * w); loss.backward(); h.remove()`: used and gone this pass
            # (of the innermost loop that rebinds what it reads)
            return
        if _fires_this_pass(node, loops[0]):
            return  # `out = model(x); out.register_hook(lambda g: g.masked_fill_(mask, 0)); loss.backward()`
        cls = ctx.enclosing_class(node)
        if cls is not None and off_by_default(ctx, node, cls):
            return  # in a branch the constructor's defaults rule out and no construction turns on (MMT)
        direct = isinstance(node, ast.Lambda) and _kept_past_the_loop(node, loops[0])
        what = "`lambda`" if isinstance(node, ast.Lambda) else f"function `{node.name}`"
        names = ", ".join(f"`{n}`" for n in late)
        ctx.report(node, f"{what} is created in a loop and kept for later, but reads {names} when it runs, "
                         f"after the loop has moved on: every copy sees the last value; bind it now with a "
                         f"default argument (`{late[0]}={late[0]}`) or `functools.partial`",
                   end_node=node if isinstance(node, ast.Lambda) else None,
                   confidence="high" if direct else None)


_STORES = frozenset({"append", "add", "insert", "appendleft", "setdefault", "extend"})


def _replicated(loop: ast.AST, ctx) -> bool:
    """Every iteration of ``loop`` binds the same values: it iterates ``xs`` or ``zip(xs, ys,
    ...)`` over names or ``self`` attributes every value of which replicates one element
    (``self.start_lrs = [start_lr] * len(groups)``), leaving out assignments that cannot
    complete because they read a name nothing defines (jets' schedulers, whose list branch
    reads an undefined ``start_lrs``). Late binding then reads the same value any copy would
    have bound (judged false in blind test 40)."""
    iters = [g.iter for g in loop.generators] if isinstance(loop, _COMPS) else \
        [loop.iter] if isinstance(loop, (ast.For, ast.AsyncFor)) else []
    if len(iters) != 1:
        return False
    it = iters[0]
    sources = it.args if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "zip" \
        and it.args and not it.keywords else [it]
    for source in sources:
        if not isinstance(source, (ast.Name, ast.Attribute)):
            return False
        values = [v for v in ctx.model.assignments(source)[0] if not _cannot_complete(v, ctx)]
        if not values or not all(_one_element_repeated(v) for v in values):
            return False
    return True


def _one_element_repeated(value: ast.AST) -> bool:
    """``[x] * n`` / ``n * [x]``: a list whose elements are all the same object."""
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult)):
        return False
    return any(isinstance(side, (ast.List, ast.Tuple)) and len(side.elts) == 1 and
               not isinstance(side.elts[0], ast.Starred) for side in (value.left, value.right))


def _cannot_complete(value: ast.AST, ctx) -> bool:
    """The assigned value reads a plain name that nothing in the module binds, imports or
    defines as a builtin: evaluating it raises ``NameError`` before the assignment happens."""
    import builtins

    for n in ast.walk(value):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and not hasattr(builtins, n.id) and \
                n.id not in ctx.model.aliases:
            found, func = ctx.model.assignments(n)
            if not found and func is None and not _defined_anywhere(n.id, ctx):
                return True
    return False


def _defined_anywhere(name: str, ctx) -> bool:
    """Any binding of ``name`` in the module: a store, a function or class, an import, a
    parameter, a ``global`` statement (conservative: any of them counts)."""
    for n in ast.walk(ctx.model.tree):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(n, (*FunctionNode, ast.ClassDef)) and n.name == name:
            return True
        if isinstance(n, ast.arg) and n.arg == name:
            return True
        if isinstance(n, ast.alias) and (n.asname or n.name.split(".")[0]) == name:
            return True
        if isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
            return True
        if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names):
            return True
    return False


def _kept_past_the_loop(node: ast.Lambda, loop: ast.AST) -> bool:
    """The lambda visibly outlives the loop: an element of a comprehension's
    result, registered as a hook, stored by subscript or added to a container
    whose name is bound outside the loop (``hooks.append(lambda ...)``)."""
    cur, up = node, parent(node)
    while isinstance(up, _CONTAINERS):
        cur, up = up, parent(up)
    if isinstance(up, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return cur is up.elt and up is loop
    if isinstance(up, ast.DictComp):
        return cur is up.value and up is loop
    if isinstance(up, ast.Call) and cur in up.args:
        name = call_name(up) or ""
        if name == "register_hook" or (name.startswith("register") and "hook" in name):
            return True
        receiver = up.func.value if isinstance(up.func, ast.Attribute) else None
        return name in _STORES and isinstance(receiver, ast.Name) and not _bound_in(receiver.id, loop)
    if isinstance(up, ast.Assign) and cur is up.value and len(up.targets) == 1:
        target = up.targets[0]
        return isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and \
            not _bound_in(target.value.id, loop)
    return False


def _bound_in(name: str, loop: ast.AST) -> bool:
    """``name`` is (re)bound inside the loop: each iteration may get a fresh container."""
    if isinstance(loop, _COMPS):
        return True
    return name in _loop_names(loop)


def _targets(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _loop_names(loop: ast.AST) -> set[str]:
    if isinstance(loop, _COMPS):
        return set().union(*(_targets(g.target) for g in loop.generators))
    names = _targets(loop.target) if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
    stack = list(loop.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, (*FunctionNode, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(stmt, ast.Name) and isinstance(stmt.ctx, ast.Store):
            names.add(stmt.id)
        stack.extend(ast.iter_child_nodes(stmt))
    return names


def _free_names(func: ast.AST) -> set[str]:
    args = func.args
    local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    body = [func.body] if isinstance(func, ast.Lambda) else func.body
    loads = set()
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name):
                (local.add if isinstance(n.ctx, ast.Store) else loads.add)(n.id)
            elif isinstance(n, (*FunctionNode, ast.ClassDef)):
                local.add(n.name)
            elif isinstance(n, ast.arg):
                local.add(n.arg)
    return loads - local


def _per_iteration(func: ast.AST, late: set[str], loops: list[ast.AST]) -> set[str]:
    """The names of ``late`` whose value the closure ``func`` reads may differ from
    one iteration to the next: not a loop-invariant local (see :func:`_invariant`),
    and read at least once other than to reach a shared object (``x._execution_engine``)."""
    late = {n for n in late if not _invariant(n, loops) and not _bound_once(n, loops)}
    body = [func.body] if isinstance(func, ast.Lambda) else func.body
    read = set()
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id in late and isinstance(n.ctx, ast.Load):
                up = parent(n)
                if not (isinstance(up, ast.Attribute) and up.attr in _SHARED_ATTRS):
                    read.add(n.id)
    return read


# displays build a fresh object each time they run: `feats = []` in a loop is a new list per pass
_FRESH = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp, ast.Lambda)


def _invariant(name: str, loops: list[ast.AST]) -> bool:
    """``name`` is assigned in the loop bodies only by plain ``name = value`` whose
    value reads no loop target nor other name the loops assign, calls nothing and
    builds no fresh container (``feats = []`` is a new list each pass): the same
    object in every iteration (``engine = self.engine``)."""
    assigned, varying = [], set()
    for loop in loops:
        if isinstance(loop, _COMPS):
            return False
        varying |= _loop_names(loop)
        if isinstance(loop, (ast.For, ast.AsyncFor)) and name in _targets(loop.target):
            return False
        stack = list(loop.body)
        while stack:
            stmt = stack.pop()
            if isinstance(stmt, (*FunctionNode, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(stmt, ast.Name) and stmt.id == name and isinstance(stmt.ctx, ast.Store):
                up = parent(stmt)
                if not (isinstance(up, (ast.Assign, ast.AnnAssign)) and up.value is not None and
                        (up.targets == [stmt] if isinstance(up, ast.Assign) else up.target is stmt)):
                    return False  # `x += 1`, a loop target, a tuple unpack, `with ... as x`
                assigned.append(up.value)
            stack.extend(ast.iter_child_nodes(stmt))
    return bool(assigned) and not any(
        isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, *_FRESH)) or
        (isinstance(n, ast.Name) and n.id in varying) for value in assigned for n in ast.walk(value))


def _bound_once(name: str, loops: list[ast.AST]) -> bool:
    """Every binding of ``name`` in the loop bodies sits under an ``if`` that holds in
    one iteration only -- the loop target compared for equality with a constant
    (``if l_degree == 0: first = ...``): the name takes one value for the whole loop,
    so a closure reading it late reads the value it would have read early."""
    targets = set().union(*(_targets(loop.target) for loop in loops if isinstance(loop, (ast.For, ast.AsyncFor))))
    if not targets or name in targets or any(isinstance(loop, _COMPS) for loop in loops):
        return False
    found = False
    for loop in loops:
        stack = [(stmt, False) for stmt in loop.body]
        while stack:
            node, once = stack.pop()
            if isinstance(node, (*FunctionNode, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
                if not once:
                    return False
                found = True
            if isinstance(node, ast.If) and _one_iteration(node.test, targets):
                stack.extend((child, True) for child in node.body)
                stack.extend((child, once) for child in node.orelse)
                continue
            stack.extend((child, once) for child in ast.iter_child_nodes(node))
    return found


def _one_iteration(test: ast.AST, targets: set[str]) -> bool:
    """``i == 0`` / ``0 == i`` for a loop target ``i``: true in one iteration at most."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    return any(isinstance(a, ast.Name) and a.id in targets and isinstance(b, ast.Constant) for a, b in (sides, sides[::-1]))


def _name_escapes(name: str, definition: ast.AST, loop: ast.AST) -> bool:
    body = loop.body if isinstance(loop, _LOOPS) else []
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and \
                    (n.lineno, n.col_offset) > (definition.lineno, definition.col_offset) and _escapes(n) is True:
                return True
    return False


def _fires_this_pass(node: ast.AST, loop: ast.AST) -> bool:
    """``node`` is the callable of ``t.register_hook(node)`` on a tensor ``t`` the same pass of
    ``loop`` binds afresh, and a ``backward()`` runs after it in that pass: the hook lives and
    dies with this pass's tensor and fires during this pass's backward, while the values it
    reads are this pass's (siamese GED's gradient masks on each batch's outputs, judged false)."""
    call = parent(node)
    if not (isinstance(call, ast.Call) and node in call.args and isinstance(call.func, ast.Attribute) and
            call.func.attr == "register_hook" and isinstance(call.func.value, ast.Name)):
        return False
    tensor = call.func.value.id
    body = getattr(loop, "body", None)
    if not isinstance(body, list) or not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        return False
    at = (call.lineno, call.col_offset)
    bound = any(isinstance(stmt, (ast.Assign, ast.AnnAssign)) and tensor in _targets(
        stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target) and (stmt.lineno, stmt.col_offset) < at
        for st in body for stmt in ast.walk(st))
    backward = any(isinstance(sub, ast.Call) and (
        (isinstance(sub.func, ast.Attribute) and sub.func.attr == "backward") or
        (dotted(sub.func) or "").endswith("autograd.backward")) and (sub.lineno, sub.col_offset) > at
        for st in body for sub in ast.walk(st))
    return bound and backward


def _removed_in_iteration(node: ast.AST, loop: ast.AST) -> bool:
    """``node`` is the callable of a hook registration whose handle the same pass of ``loop``
    removes after it: ``h = x.register_*hook(node)`` then ``h.remove()`` (AutoencodingTheWorld
    registers a gradient hook, runs the backward it is meant for and removes it), or
    ``hooks.append(x.register_*hook(node))`` then ``for h in hooks: h.remove()`` (QAFM's NAD
    defence collects this batch's activations through forward hooks and removes them before the
    next batch, judged false in blind test 130): it never outlives the values it reads."""
    call = parent(node)
    if not (isinstance(call, ast.Call) and node in call.args and isinstance(call.func, ast.Attribute) and
            _keeps(call)):
        return False
    up = parent(call)
    if isinstance(up, ast.Assign) and len(up.targets) == 1 and isinstance(up.targets[0], ast.Name):
        handle, kept = up.targets[0].id, up  # `h = x.register_hook(...)`
        container = None
    elif isinstance(up, ast.Call) and call in up.args and isinstance(up.func, ast.Attribute) and \
            up.func.attr in _STORES and isinstance(up.func.value, ast.Name):
        handle, kept = None, up  # `hooks.append(x.register_forward_hook(...))`
        container = up.func.value.id
    else:
        return False
    after = (kept.lineno, kept.col_offset)
    for stmt in getattr(loop, "body", []):
        for sub in ast.walk(stmt):
            if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "remove"
                    and isinstance(sub.func.value, ast.Name) and (sub.lineno, sub.col_offset) > after):
                continue
            if handle is not None and sub.func.value.id == handle:
                return True
            if container is not None and _iterates(sub, sub.func.value.id, container):
                return True
    return False


def _iterates(at: ast.AST, name: str, container: str) -> bool:
    """``at`` runs in a loop or comprehension whose target ``name`` walks the plain name
    ``container`` (``for h in hooks: h.remove()``, ``[h.remove() for h in hooks]``)."""
    for anc in ancestors(at):
        if isinstance(anc, (ast.For, ast.AsyncFor)) and isinstance(anc.target, ast.Name) and \
                anc.target.id == name and isinstance(anc.iter, ast.Name) and anc.iter.id == container:
            return True
        if isinstance(anc, _COMPS) and any(isinstance(g.target, ast.Name) and g.target.id == name and
                                           isinstance(g.iter, ast.Name) and g.iter.id == container
                                           for g in anc.generators):
            return True
        if isinstance(anc, (*FunctionNode, ast.Lambda, ast.ClassDef)):
            return False
    return False
