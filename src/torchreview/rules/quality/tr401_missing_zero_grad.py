from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import ancestors, parent
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text
from torchreview.rules.quality._training import calls_in, report_loop, target


class MissingZeroGrad(Rule):
    """
    ## What it does
    Flags a training loop that runs `backward()` and `optimizer.step()` on
    every iteration but never resets the gradients (`optimizer.zero_grad()`,
    `model.zero_grad()`, `p.grad = None`) anywhere in the loop.

    ## Why is this bad?
    `backward()` adds into `.grad`; it never overwrites it. Without a reset,
    the gradient used by step N is the sum of the gradients of steps 1..N, so
    updates grow without bound and training diverges or stalls, often with no
    error at all.

    ## Example
    ```python
    import torch

    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(dataset, batch_size=32)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    import torch

    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(dataset, batch_size=32)
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Heuristics
    An optimizer built inside the loop over tensors the loop makes anew on each
    pass (`x = z.detach().clone(); x.requires_grad = True; opt = SGD([x], lr)`:
    a guidance or attack step) starts from fresh leaves every time: nothing
    accumulates, nothing is reported (pix2pix-zero, judged false in blind test
    59). An optimizer rebuilt each pass over a model's parameters still
    accumulates their gradients.
    The loop is the innermost loop whose iteration calls `backward()` and an
    optimizer (or `GradScaler`) `step()`, helpers of the same module included.
    Gradient accumulation is not reported when the reset sits anywhere in the
    loop (typically under the same `if` as `step()`). The rule stays quiet
    when the loop calls something that may reset gradients out of sight: a
    function whose name mentions zeroing gradients, a `step(closure)` (the
    closure zeroes them), an unknown function that receives the optimizer, or --
    for an optimizer the class keeps in `self.<attr>` -- a method the class
    inherits from a base class of its own (`self.standard_loss(x, y)` defined by
    a `Trainer` base class elsewhere, which may reset `self.optimizer`); a method
    a base class of the same file defines is in sight, and resets only when its
    body zeroes gradients (`self.prepare_inputs(batch)` that moves tensors does not).
    A function of another project module that receives it is judged by what
    its body does (the project index): it resets when it calls
    `zero_grad()` on that parameter or hands it on to another call; a helper
    that only reads it (`log_lr(opt, step)`) does not. Nor is a loop whose model
    (of this file or another project module, also called for its loss:
    `loss = model(x, y)`) starts its own `forward` with `self.zero_grad()`. Nor is a loop
    that names the reset without calling it (`optimizer.zero_grad` alone on its line): the reset
    is written, and a statement that does nothing is the one problem there.
    A loop that times itself on fake inputs (`range(...)` between two clock
    reads -- or peak-memory probes, `torch.cuda.reset_max_memory_cached` then
    `max_memory_cached`: torchgpipe's memory benchmarks --, the model fed only
    tensors a factory built before the loop: an
    attention benchmark's `for i in range(1000)`) measures speed, and what it
    trains is thrown away: medium confidence, hidden by default; so is any
    loop of a benchmark or timing script (a `benchmark`/`bench` folder, a file
    named for what it measures: `timing.py`, `benchmark_latency.py`), and a loop
    whose reset is commented out (`# optimizer.zero_grad()`: a lesson showing
    what happens without it), and a loop whose every `backward()` is on a bare
    `.sum()`/`.mean()` of a model fed only random numbers
    (`tp_model(torch.rand(32, 512, 4096)).sum().backward()`: a demo of the
    mechanics, with no target and no loss), also in a local step function
    the loop hands random numbers (`training_step(torch.randint(...))`). A `while True:` micro-step loop that leaves
    right after its step (`if count == accum: optimizer.step(); break`, or
    through a flag: `complete = True` ... `if complete: break`), after a
    `zero_grad()` of that optimizer earlier in its function, makes one step
    per call from cleared gradients (GLM's `train_step`): not reported; nor is
    a `for` loop over the minibatches of one update whose step runs only on its
    last pass (`is_accumulating = i < len(sampler) - 1` ... `if not
    is_accumulating: optimizer.step()`, SheepRL's A2C) after such a `zero_grad()`.
    """

    code = "TR401"
    name = "missing-zero-grad"
    severity = Severity.HIGH
    kind = "defect"
    severity_reason = "Silently wrong training: gradients add up over steps."
    scope = ("file", "runtime")
    summary = "Training loop never resets gradients: they accumulate across steps"

    def check_file(self, ctx) -> None:
        for loop in ctx.training_loops:
            if loop.has("zero_grad"):
                continue
            steps, backwards = loop.of("step", own=False), loop.of("backward", own=False)
            if not steps or not backwards or any(_has_closure(ctx, e.node) for e in steps):
                continue
            optimizers = {t for t in (target(ctx, e) for e in steps) if t}
            if _may_reset_elsewhere(ctx, loop, optimizers) or _one_step_loop(ctx, loop.node, optimizers) or \
                    _fresh_leaves_each_pass(ctx, loop.node, optimizers):
                continue
            if _reset_named_not_called(loop.node):
                continue  # `optimizer.zero_grad` without `()`: the reset is written, the missing call is the bug
            step = steps[0].node
            backward = backwards[0].node
            opt = next(iter(sorted(optimizers)), "optimizer")
            report_loop(ctx, loop.node,
                        f"this loop calls `{short_text(ctx, backward)}` and `{short_text(ctx, step)}` "
                        f"but never resets gradients, so every step applies the sum of all gradients "
                        f"so far; call `{opt}.zero_grad()` once per iteration (under the same condition "
                        f"as `step()` when accumulating)",
                        # a timing loop over fake inputs measures speed: what it trains is thrown away
                        # (so does any loop of a benchmark or timing script: DeepAFx-ST's
                        # scripts/timing.py, judged noise in holdout243); a reset commented out in the
                        # loop is left out on purpose (a lesson's "what happens if you forget zero_grad()")
                        confidence="medium" if ctx.advice.timed_on_fixed_data(loop.node) or
                        ctx.advice.benchmark_code or _reset_commented_out(ctx, loop.node) or
                        ctx.advice.objective_free(loop.node) else None)


def _reset_named_not_called(loop: ast.AST) -> bool:
    """The loop holds a statement that names a reset without calling it (``optimizer.zero_grad``
    alone on its line): the author wrote the reset, and a statement that does nothing is a
    finding of its own (a silent no-op), one root cause -- not a forgotten reset (a course's
    node-classification loop, judged noise twice in blind test 108 as a repeat)."""
    return any(isinstance(n, ast.Expr) and isinstance(n.value, ast.Attribute) and n.value.attr == "zero_grad"
               for n in ast.walk(loop))


def _last_pass_only(loop: ast.For, step: ast.AST) -> bool:
    """``step`` runs only on the last pass of ``loop`` (``for i, x in enumerate(xs)`` or ``for i
    in range(len(xs))``): under ``if i == len(xs) - 1:`` / ``if i + 1 == len(xs):``, or in the
    ``else`` of ``if i < len(xs) - 1:``, the test also through a name the loop body assigns it
    to once (``is_accumulating = i < len(xs) - 1`` ... ``if not is_accumulating:``)."""
    index, seq = _loop_index(loop)
    if index is None:
        return False
    tests = {t.targets[0].id: t.value for t in loop.body if isinstance(t, ast.Assign) and len(t.targets) == 1
             and isinstance(t.targets[0], ast.Name)}
    child = step
    for anc in ancestors(step):
        if anc is loop:
            return False
        if isinstance(anc, ast.If):
            test, negated = anc.test, False
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, negated = test.operand, True
            if isinstance(test, ast.Name) and test.id in tests:
                test = tests[test.id]
            last = _is_last_pass_test(test, index, seq)
            if last is not None:
                in_body = any(child is b for b in anc.body)
                return (last != negated) == in_body
        child = anc
    return False


def _loop_index(loop: ast.For) -> tuple[str | None, str]:
    """(the index name, the text of the sequence it counts) of ``enumerate(xs)`` or
    ``range(len(xs))`` loops; (None, "") otherwise."""
    it, target = loop.iter, loop.target
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.args:
        if it.func.id == "enumerate" and isinstance(target, ast.Tuple) and target.elts and \
                isinstance(target.elts[0], ast.Name):
            return target.elts[0].id, ast.unparse(it.args[0])
        inner = it.args[0]
        if it.func.id == "range" and len(it.args) == 1 and isinstance(target, ast.Name) and \
                isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "len" and inner.args:
            return target.id, ast.unparse(inner.args[0])
    return None, ""


def _is_last_pass_test(test: ast.AST, index: str, seq: str) -> bool | None:
    """True: ``test`` holds on the last pass only (``i == len(xs) - 1``, ``i + 1 == len(xs)``);
    False: on every pass but the last (``i < len(xs) - 1``, ``i != len(xs) - 1``); None: neither."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right, op = ast.unparse(test.left), ast.unparse(test.comparators[0]), type(test.ops[0])
    last = {(index, f"len({seq}) - 1"), (f"{index} + 1", f"len({seq})")}
    if (left, right) in last:
        return {ast.Eq: True, ast.GtE: True, ast.NotEq: False, ast.Lt: False}.get(op)
    return None


def _one_step_loop(ctx, loop, optimizers: set[str]) -> bool:
    """``zero_grad(); while True: ... backward ... if count == accum: step(); break``: a
    ``while True`` micro-step loop that leaves with ``break`` (one optimizer step per call of
    its function, GLM's ``train_step``), after a ``zero_grad()`` of the same optimizer in the
    same function before it: every call starts from cleared gradients."""
    steps = [n for n in ast.walk(loop) if isinstance(n, ast.Call) and ctx.flow.classify(n) == "step"]
    if isinstance(loop, ast.For):
        # `for i, b in enumerate(batches): ... backward ... if not is_accumulating: step()` with
        # `is_accumulating = i < len(batches) - 1`: one step, on the last pass (SheepRL's A2C)
        if not steps or not all(_last_pass_only(loop, step) for step in steps):
            return False
    elif not (isinstance(loop, ast.While) and isinstance(loop.test, ast.Constant) and loop.test.value is True):
        return False
    else:
        flags = {t.id for n in ast.walk(loop) if isinstance(n, ast.If) and any(isinstance(b, ast.Break)
                                                                               for b in n.body)
                 for t in [n.test] if isinstance(t, ast.Name)}  # `if complete: break`
        if not steps or not all(_break_follows(ctx, step, flags) for step in steps):
            return False  # a step on every pass that leaves only on some test still accumulates
    func = ctx.enclosing_function(loop)
    if func is None:
        return False
    for call in ctx.model.subtree(func):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "zero_grad" \
                and call.lineno < loop.lineno and (not optimizers or ctx.text(call.func.value) in optimizers):
            return True
    return False


def _fresh_leaves_each_pass(ctx, loop, optimizers: set[str]) -> bool:
    """Every optimizer the loop steps is built inside the loop, over tensors the loop also
    makes anew on each pass (``x_in = latents.detach().clone(); x_in.requires_grad = True;
    opt = SGD([x_in], lr)``: pix2pix-zero's guidance step, judged false in blind test 59): each
    step sees only this pass's gradient, nothing accumulates."""
    if not optimizers:
        return False
    inside = list(ast.walk(loop))
    bound_here = {t.id for n in inside if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    for name in optimizers:
        builds = [n for n in inside if isinstance(n, ast.Assign) and len(n.targets) == 1 and
                  isinstance(n.targets[0], ast.Name) and n.targets[0].id == name and isinstance(n.value, ast.Call)
                  and (ctx.qualname(n.value.func) or "").startswith("torch.optim.")]
        if not builds:
            return False
        for build in builds:
            params = build.value.args[0] if build.value.args else None
            if not (isinstance(params, (ast.List, ast.Tuple)) and params.elts and
                    all(isinstance(e, ast.Name) and e.id in bound_here for e in params.elts)):
                return False
    return True


def _break_follows(ctx, call, flags: set[str]) -> bool:
    """A ``break`` comes later in the block of the statement that makes ``call``, or a flag
    the loop breaks on is set there (``complete = True`` ... ``if complete: break``)."""
    stmt = call
    while stmt is not None and not isinstance(stmt, ast.stmt):
        stmt = parent(stmt)
    up = parent(stmt) if stmt is not None else None
    holder = next((block for block in (getattr(up, "body", None), getattr(up, "orelse", None))
                   if isinstance(block, list) and stmt in block), None)
    if holder is None:
        return False
    return any(isinstance(s, ast.Break) or (
        isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value is True and
        any(isinstance(t, ast.Name) and t.id in flags for t in s.targets)) for s in holder[holder.index(stmt) + 1:])


def _reset_commented_out(ctx, loop) -> bool:
    """A line of the loop is a comment holding a ``zero_grad(`` call (``# optimizer.zero_grad()``)."""
    first, last = loop.lineno, getattr(loop, "end_lineno", None) or loop.lineno
    return any(line.lstrip().startswith("#") and "zero_grad(" in line
               for line in ctx.source.lines[first - 1:last])


def _has_closure(ctx, node) -> bool:
    """``optimizer.step(closure)``: the closure (LBFGS style) resets the gradients."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if any(kw.arg == "closure" for kw in node.keywords):
        return True
    return bool(node.args) and ctx.kind_of(node.func.value) != "scaler"


def _may_reset_elsewhere(ctx, loop, optimizers: set[str]) -> bool:
    if any(_forward_resets(ctx, e.node) for e in loop.of("forward", own=False)):
        return True
    for call in calls_in(loop.node):
        if isinstance(call.func, ast.Name) and _forward_resets(ctx, call):
            # a model called for its loss (`loss = model(xc, xw, y0)`: no forward event of its
            # own) whose `forward` starts with `self.zero_grad()` (tlm-seq2seq, judged false)
            return True
        name = (call.func.attr if isinstance(call.func, ast.Attribute) else
                call.func.id if isinstance(call.func, ast.Name) else "").lower()
        if ("zero" in name or "reset" in name or "clear" in name) and "grad" in name:
            return True
        if ctx.flow.resolve_local_call(call) is not None or ctx.flow.classify(call):
            continue
        if _inherited_method(ctx, call) and any(o.startswith("self.") for o in optimizers):
            return True  # `self.standard_loss(x, y)` of a base class elsewhere may reset `self.optimizer`
        q = ctx.qualname(call.func) or ""
        if q.startswith(("torch.", "builtins.")):
            continue
        effects = ctx.project.argument_calls(q, call)
        if effects is not None:  # a function of another project module: we know what it does
            # the optimizer it resets: one the loop steps, or -- when the step itself runs in
            # such a helper (`optimizer_step(loss, opt)`: zero_grad, backward, step) -- any optimizer
            if any(method in ("zero_grad", "*") and (ctx.text(arg) in optimizers or
                                                     ctx.kind_of(arg) == "optimizer") for arg, method in effects):
                return True
            continue
        args = [*call.args, *(kw.value for kw in call.keywords)]
        if any(ctx.text(a) in optimizers for a in args):
            return True
    return False


def _forward_resets(ctx, call: ast.AST) -> bool:
    """The model this forward call runs resets the gradients in its own ``forward``
    (``self.zero_grad()`` first: rnn_crf, whose loop has no ``zero_grad`` of its own): a
    class of this file or of the project (``ctx.project_class``, star imports included)."""
    if not isinstance(call, ast.Call):
        return False
    model = call.func.value if isinstance(call.func, ast.Attribute) and call.func.attr == "forward" else call.func
    built = ctx.flow.origin(model, peel=False)
    if not isinstance(built, ast.Call):
        return False
    summary = ctx.project_class(built.func)
    return summary is not None and summary.forward_zeroes_grads


def _inherited_method(ctx, call: ast.Call) -> bool:
    """``self.<m>(...)`` where the enclosing class defines no ``m`` but has a base class
    of its own (not ``object``/``nn.Module``): a method inherited from code out of
    sight (adversarial_robustness's ``WATrainer.train`` calls ``self.standard_loss``,
    which the base ``Trainer`` in another module starts with ``self.optimizer.zero_grad()``)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return False
    cls = ctx.enclosing_class(call)
    if cls is None or any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == func.attr
                          for s in cls.body):
        return False
    # a base class of this file (followed through its own local bases) shows the method: it is in
    # sight -- it may reset gradients only if its body says so (AI4Dementia's `TCANetTrainer` calling
    # `DFaSTTrainer.prepare_inputs_kwargs`, which only moves tensors)
    local = {c.name: c for c in ctx.tree.body if isinstance(c, ast.ClassDef)}
    seen: set[str] = set()
    todo = list(cls.bases)
    out_of_sight = False
    while todo:
        base = todo.pop()
        name = base.id if isinstance(base, ast.Name) else None
        if name in local and name not in seen:
            seen.add(name)
            method = next((m for m in local[name].body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and m.name == func.attr), None)
            if method is not None:
                return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                           "zero" in n.func.attr and "grad" in n.func.attr for n in ast.walk(method))
            todo.extend(local[name].bases)
            continue
        q = ctx.qualname(base) or ""
        if q not in ("builtins.object", "object", "torch.nn.Module", "torch.nn.modules.module.Module"):
            out_of_sight = True
    return out_of_sight
