from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import FunctionNode, dotted, parent
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text

_COLLECTING = frozenset({"append", "extend", "insert"})


class GraphKeptAlive(Rule):
    """
    ## What it does
    Flags training loops that keep tensors still attached to the autograd
    graph beyond the step: `total += loss`, `losses.append(loss)`,
    `history.append(outputs)` into an accumulator that lives across
    iterations, without `.item()` or `.detach()`.

    ## Why is this bad?
    A tensor that requires grad holds its whole computation graph -- and the
    activations saved for backward -- alive. Summing losses into a running
    total chains every step's graph onto the next one; appending outputs keeps
    each batch's activations in memory. Memory grows step after step until the
    run dies with an out-of-memory error, usually hours in.

    ## Example
    ```python
    import torch

    running = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running += loss
    ```

    ## Use instead
    ```python
    import torch

    running = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running += loss.item()
    ```

    ## Heuristics
    A list the loss goes into before `loss.backward()` frees its saved
    activations, and that nothing in the file ever reads (every other use of
    the name appends to it), keeps small autograd nodes for nothing: advice.
    The value must visibly carry a graph (a model/loss call with grad enabled,
    a parameter, arithmetic on those, with no `.item()`/`.detach()`) and the
    accumulator must outlive one iteration: it is not reset by an
    unconditional assignment earlier in the same iteration (a per-step sum of
    several losses is fine; one element of a tuple assignment counts:
    `probs, values = [], []` at the top of each minibatch, MAPPO; so does an
    assignment inside a `with` block that runs every iteration, `with
    autocast(): loss = criterion(...)`, DER) and is not
    itself `.backward()`-ed, in the loop or after it in the same function (a
    meta-learning objective summed over a task loop and backpropagated once the
    loop ends keeps those graphs on purpose). Code under
    `torch.no_grad()` is never reported, nor is a `+=` onto a name the same
    iteration binds afresh before it (also on both branches of an `if`/`else`:
    `logits = torch.stack(...)` then `logits += model.bias`). Lists must be known lists, and
    collections that cannot grow without bound are silent (`deque(maxlen=...)`,
    a list the loop trims with `pop`/`popleft`/`clear`/`del lst[...]`).

    Context: the memory really grows when the graph is kept every step. A
    value kept only under a sampling condition (`if epoch % 10 == 0:`,
    `if not step % k:`, the usual logging cadence) keeps one graph every k
    iterations, a few dozen in a typical run: that is advice, hidden by
    default and shown when TR507 is selected. So is a value whose graph a
    `backward()` of the same iteration has already freed (`loss`, or the
    `outputs` `loss` was computed from; not with `retain_graph=True`) kept in
    an accumulator that starts over every epoch (reset at the top of the
    epoch loop, or a local of a function making one pass over a loader): only
    the small autograd nodes of one epoch are kept (`epoch_loss += loss /
    len(train_loader)` in a tutorial loop). It stays a defect when the graph
    is not freed, or when the accumulator lives for the whole run (set before
    the epoch loop, a `self` attribute, a loop over `range(total_steps)`). The
    suggested fix puts `.item()` on the tensor operand (`loss.item() /
    len(train_loader)`).

    At runtime (`torchreview run`, `torchreview.watch`) the graphs are seen
    directly: the graph node of each outermost forward output carries a tiny
    marker, and a rising count of live markers from earlier steps is
    reported with the list or tensor that holds them. A value rebuilt every
    step from its own previous value with autograd on (an EMA copy
    `shadow = shadow * d + p * (1 - d)`, a running statistic of a parameter)
    holds no forward output: every 5 optimizer steps the tensors with a
    `grad_fn` held by the user's frames, `__main__` and the attributes of the
    objects there (one level, 64 values per container) are tagged, and a
    holder whose new node reaches back (500 nodes at most) to the node it held
    at the previous scan, two scans in a row, is reported at the line that
    assigns it. One accumulator name in one file is one finding, its other
    places related locations (`totalloss` summed the same way in the training
    and validation functions of one script). Values computed once and reused, a kept last loss (a fresh
    graph) and updates under `torch.no_grad()` stay silent.
    """

    code = "TR507"
    name = "graph-kept-alive"
    severity = Severity.HIGH
    severity_reason = "Memory grows every step until the run crashes out of memory."
    summary = "Training loop accumulates tensors that keep their autograd graph alive"
    scope = ("file", "runtime")
    # one accumulator name of one file, one habit: MultiBench's `totalloss += loss*len(j[0])`
    # and `totalloss += blendloss*len(j[0])` in two functions of one script (the second judged a
    # repeat in holdout250) are one comment with related locations
    summarize = "project"

    @classmethod
    def repeat_key(cls, finding) -> str:
        return f"{finding.path}|{finding.cell}|{finding.subject}|{finding.kind}|{finding.severity.label}"

    def check_file(self, ctx) -> None:
        for tl in ctx.training_loops:
            for node in _walk(tl.node.body):
                if not isinstance(node, (ast.AugAssign, ast.Assign, ast.Call)) or ctx.in_grad_disabled(node):
                    continue
                if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
                    self._accumulate(node, node.target, node.value, tl, ctx)
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                        isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add) and \
                        dotted(node.value.left) is not None and dotted(node.value.left) == dotted(node.targets[0]):
                    self._accumulate(node, node.targets[0], node.value.right, tl, ctx)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in _COLLECTING and node.args:
                    self._collect(node, tl, ctx)

    def _accumulate(self, node, target, value, tl, ctx) -> None:
        name = dotted(target)
        if name is None or not ctx.autograd.may_require_grad(value):
            return
        if _reset_each_iteration(node, name, tl.node) or _backwarded(tl.node, name):
            return
        outer = ctx.enclosing_function(tl.node)
        if outer is not None and _backwarded_after(outer, name, tl.node):
            # the sum is backpropagated once the loop is done (a MAML meta-objective: each
            # task's query loss summed over the task loop, `meta_loss.backward()` after it,
            # damsl, judged false): keeping every step's graph is what that backward needs
            return
        every = _periodic(node, tl.node, ctx)
        per_pass = _freed_and_bounded(node, name, value, tl, ctx)
        when = f"each time `{every}` holds" if every else "every step"
        if per_pass and not every:
            when = f"every step of {per_pass} (saved activations freed by `backward()`, the nodes kept)"
        ctx.report(node, f"`{name}` accumulates `{short_text(ctx, value)}` across iterations while it "
                         f"still carries its autograd graph: the graph of {when} stays in memory; "
                         f"add `{_item_text(ctx, value)}` (or `.detach()`) instead",
                   kind="advice" if every or per_pass else None, subject=name)

    def _collect(self, node, tl, ctx) -> None:
        receiver = node.func.value
        name = dotted(receiver)
        value = node.args[-1]
        if name is None or not ctx.autograd.may_require_grad(value) or not _is_list(receiver, ctx):
            return
        if _reset_each_iteration(node, name, tl.node) or _backwarded(tl.node, name) or \
                _bounded(receiver, name, tl.node, ctx):
            return
        every = _periodic(node, tl.node, ctx)
        per_pass = _freed_and_bounded(node, name, value, tl, ctx)
        if not every and not per_pass and _freed_by_backward(value, tl.node) and _never_read(receiver, ctx):
            # `LOSS.append(loss)` before `loss.backward()`, and nothing ever reads `LOSS` (a course
            # lab's leftover, judged noise): small autograd nodes kept for nothing -- advice
            per_pass = "the loop, into a list nothing reads"
        when = (f"each time `{every}` holds, so memory grows over the run" if every
                else f"for every step of {per_pass} (saved activations freed by `backward()`, the nodes "
                     f"kept)" if per_pass
                else "for every step of the loop, so memory grows each iteration")
        ctx.report(node, f"`{name}.{node.func.attr}(...)` keeps `{short_text(ctx, value)}` with its "
                         f"autograd graph {when}; store `.item()` for scalars or `.detach()` tensors",
                   kind="advice" if every or per_pass else None, subject=name)


def _walk(body):
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*FunctionNode, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _is_list(receiver, ctx) -> bool:
    values, _ = ctx.model.assignments(receiver)
    return any(isinstance(v, (ast.List, ast.ListComp)) or
               (isinstance(v, ast.Call) and ctx.qualname(v.func) in ("builtins.list", "collections.deque"))
               for v in values)


def _periodic(node, loop, ctx) -> str | None:
    """The text of a sampling condition (``epoch % 10 == 0``, ``not step % k``)
    that guards ``node`` inside the loop: the value is kept once every k
    iterations (periodic logging), a fraction of the graphs of an every-step
    append."""
    for anc in _ancestors_until(node, loop):
        if isinstance(anc, ast.If) and node in set(_walk(anc.body)):
            test = anc.test
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test = test.operand
            elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
                test = test.left if isinstance(test.comparators[0], ast.Constant) else None
            else:
                test = None
            if isinstance(test, ast.BinOp) and isinstance(test.op, ast.Mod) and not (
                    isinstance(test.right, ast.Constant) and test.right.value in (0, 1)):
                return ctx.text(anc.test)
    return None


def _bounded(receiver, name: str, loop, ctx) -> bool:
    """The collection cannot grow without bound: a ``deque(maxlen=...)``, or the
    loop trims it (``name.pop(...)``/``popleft()``/``clear()``, ``del name[...]``)."""
    values, _ = ctx.model.assignments(receiver)
    if any(isinstance(v, ast.Call) and ctx.qualname(v.func) == "collections.deque" and
           (len(v.args) > 1 or any(k.arg == "maxlen" for k in v.keywords)) for v in values):
        return True
    for sub in _walk(loop.body):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                sub.func.attr in ("pop", "popleft", "clear") and dotted(sub.func.value) == name:
            return True
        if isinstance(sub, ast.Delete) and any(isinstance(t, ast.Subscript) and dotted(t.value) == name
                                               for t in sub.targets):
            return True
    return False


def _reset_each_iteration(node, name: str, loop) -> bool:
    """An unconditional ``name = ...`` before ``node`` in the loop's iteration, or one under the
    same test as ``node`` (``if args.APITLoss: fakeHRs = []`` ... ``if args.APITLoss:
    fakeHRs.append(fakeHR)``: iSeeBetter starts the list over whenever it fills it)."""
    guards = {ast.unparse(a.test) for a in _ancestors_until(node, loop)
              if isinstance(a, ast.If) and any(node is d for s in a.body for d in ast.walk(s))}
    child = node
    for anc in _ancestors_until(node, loop):
        block = next((b for b in (getattr(anc, f, None) for f in ("body", "orelse", "finalbody"))
                      if isinstance(b, list) and child in b), None)
        if block is not None:
            for stmt in block[: block.index(child)]:
                if _binds(stmt, name) or (isinstance(stmt, ast.If) and ast.unparse(stmt.test) in guards and
                                          any(_binds(b, name) for b in stmt.body)):
                    return True
        if anc is loop:
            return False
        child = anc
    return False


def _binds(stmt, name: str) -> bool:
    """``stmt`` binds ``name`` on every path: a plain assignment, or an ``if``/``else`` whose
    two branches both do (GeDi: ``if args.threeway: logits = torch.stack(...) else: logits =
    torch.stack(...)``, then ``logits += model.bias``: a fresh tensor each step)."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        # also one element of a tuple target (`probs_now, values_now = [], []`: MAPPO resets
        # both per-timestep lists at the top of every minibatch)
        return any(dotted(t) == name or (isinstance(t, (ast.Tuple, ast.List)) and
                                         any(dotted(e) == name for e in t.elts))
                   for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]))
    if isinstance(stmt, ast.If) and stmt.orelse:
        return any(_binds(s, name) for s in stmt.body) and any(_binds(s, name) for s in stmt.orelse)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        # `with autocast(enabled=amp): loss = criterion(out, y)`, then `loss += alpha * kd`: the block
        # runs every time (DER's distillation term, judged false in blind test 58)
        return any(_binds(s, name) for s in stmt.body)
    return False


def _ancestors_until(node, loop):
    from torchreview.engine.context import ancestors

    for anc in ancestors(node):
        yield anc
        if anc is loop:
            return


def _backwarded(loop, name: str) -> bool:
    for sub in _walk(loop.body):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                sub.func.attr == "backward" and dotted(sub.func.value) == name:
            return True
    return False


def _backwarded_after(func, name: str, loop) -> bool:
    """``name.backward()`` runs in ``func`` after ``loop`` ends (later in the function, or
    later in the body of a loop around ``loop``)."""
    end = getattr(loop, "end_lineno", loop.lineno)
    return any(isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "backward"
               and dotted(sub.func.value) == name and sub.lineno > end for sub in ast.walk(func))


_ENDLESS = frozenset({"builtins.range", "itertools.count", "itertools.cycle", "itertools.repeat"})
_PASS_THROUGH = frozenset({"builtins.enumerate", "builtins.zip", "tqdm.tqdm", "tqdm.auto.tqdm",
                           "tqdm.notebook.tqdm", "builtins.iter"})


def _never_read(receiver, ctx) -> bool:
    """``receiver`` is a plain name the file only ever appends to (every other use of the
    name binds it or is the receiver of ``.append``/``.extend``): the kept values are dead."""
    if not isinstance(receiver, ast.Name):
        return False
    for use in ctx.model.nodes_by_type.get(ast.Name, ()):
        if use.id != receiver.id or not isinstance(use.ctx, ast.Load):
            continue
        holder = parent(use)
        if not (isinstance(holder, ast.Attribute) and holder.attr in ("append", "extend")
                and isinstance(parent(holder), ast.Call) and parent(holder).func is holder):
            return False
    return True


def _freed_and_bounded(node, name: str, value, tl, ctx) -> str | None:
    """Where the kept graphs cost little: ``backward()`` in the same iteration has
    already freed the saved activations of ``value``'s graph (only small autograd
    nodes stay), and the accumulator starts over at every epoch -- reset at the top
    of the enclosing epoch loop, or a local of a function that makes one pass over
    the data (``def train_epoch(...): total = 0; for x, y in loader: ...``). Returns
    what bounds it ("one epoch", "one pass over the data"), or None when the graph
    is not freed or the accumulator grows over the whole run (initialised before the
    epoch loop, a ``self`` attribute, a loop over ``range(steps)``)."""
    if not _freed_by_backward(value, tl.node):
        return None
    outer = tl.epoch_loop or next((a for a in _ancestors_until(tl.node, tl.function)
                                   if isinstance(a, (ast.For, ast.AsyncFor, ast.While)) and a is not tl.node),
                                  None)
    if outer is not None:
        return "one epoch" if _reset_each_iteration(tl.node, name, outer) else None
    if tl.function is None or "." in name or not isinstance(tl.node, (ast.For, ast.AsyncFor)):
        return None
    it = tl.node.iter
    while isinstance(it, ast.Call) and ctx.qualname(it.func) in _PASS_THROUGH and it.args:
        it = it.args[0]
    if isinstance(it, ast.Call) and ctx.qualname(it.func) in _ENDLESS:
        return None  # `for step in range(total_steps)`: the whole run
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in ast.walk(tl.function)):
        return None
    local = any(isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.lineno < tl.node.lineno and any(
        isinstance(t, ast.Name) and t.id == name for target in (stmt.targets if isinstance(stmt, ast.Assign)
                                                                else [stmt.target]) for t in ast.walk(target))
        for stmt in _walk(tl.function.body))
    return "one pass over the data" if local else None


def _freed_by_backward(value, loop) -> bool:
    """``value`` is (or is computed from) a tensor whose graph a ``backward()`` in the
    same iteration frees: ``loss.backward()`` with ``loss`` or what ``loss`` was
    computed from (``outputs`` in ``loss = criterion(outputs, y)``) in ``value``;
    ``retain_graph=True`` keeps the graph and does not count."""
    roots: set[str] = set()
    for sub in _walk(loop.body):
        if isinstance(sub, ast.Call) and (isinstance(sub.func, ast.Attribute) and sub.func.attr == "backward"
                                          or dotted(sub.func) == "torch.autograd.backward"):
            if any(k.arg == "retain_graph" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                   for k in sub.keywords):
                continue
            target = sub.func.value if dotted(sub.func) != "torch.autograd.backward" else None
            for part in ([target] if target is not None else []) + list(sub.args[:1]):
                roots |= {n.id for n in ast.walk(part) if isinstance(n, ast.Name)}
    if not roots:
        return False
    for sub in _walk(loop.body):  # one step back: what the backwarded tensor was computed from
        if isinstance(sub, ast.Assign) and any(isinstance(t, ast.Name) and t.id in roots for t in sub.targets):
            called = {id(c.func) for c in ast.walk(sub.value) if isinstance(c, ast.Call)}
            roots = roots | {n.id for n in ast.walk(sub.value) if isinstance(n, ast.Name) and id(n) not in called}
    return any(isinstance(n, ast.Name) and n.id in roots for n in ast.walk(value))


def _item_text(ctx, value) -> str:
    """``value`` with ``.item()`` on its tensor operand: ``loss.item() / len(loader)``,
    not ``loss / len(loader).item()`` (an int has no ``.item()``)."""
    text = short_text(ctx, value)
    if not isinstance(value, ast.BinOp):
        return f"{text}.item()" if not isinstance(value, (ast.UnaryOp, ast.BoolOp, ast.IfExp, ast.Compare)) \
            else f"({text}).item()"
    grads = [side for side in (value.left, value.right) if ctx.autograd.may_require_grad(side)]
    whole = ctx.text(value)
    if len(grads) != 1 or value.lineno != value.end_lineno or "\n" in whole or not whole.isascii():
        return f"({text}).item()"
    side = grads[0]
    start, end = side.col_offset - value.col_offset, side.end_col_offset - value.col_offset
    if start > 0 and whole[start - 1] == "(" and whole[end:end + 1] == ")":  # `(a + b) / 2`
        start, end = start - 1, end + 1
        inner = f"{whole[start:end]}.item()"
    elif isinstance(side, ast.BinOp):
        inner = _item_text(ctx, side)
    else:
        inner = f"{whole[start:end]}.item()" if isinstance(
            side, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)) else f"({whole[start:end]}).item()"
    return whole[:start] + inner + whole[end:]
