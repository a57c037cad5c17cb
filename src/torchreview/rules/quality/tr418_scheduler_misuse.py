from __future__ import annotations

import ast
import re

from torchreview.catalog import Rule
from torchreview.engine.context import parent
from torchreview.findings import Severity
from torchreview.rules._helpers import int_value, short_text
from torchreview.rules.quality._training import only_existence_checks

_LR = "torch.optim.lr_scheduler."
# Schedulers whose horizon argument is usually counted in epochs.
_PER_EPOCH = {_LR + "StepLR": ("step_size", 1), _LR + "MultiStepLR": ("milestones", 1),
              _LR + "CosineAnnealingLR": ("T_max", 1), _LR + "CosineAnnealingWarmRestarts": ("T_0", 1)}
_STEP_WORDS = re.compile(r"len\(|step|iter|batch", re.I)


class SchedulerMisuse(Rule):
    """
    ## What it does
    Flags learning-rate schedulers stepped at the wrong time:
    `scheduler.step()` before the first `optimizer.step()` of the iteration
    (or of the epoch); a per-batch scheduler (`OneCycleLR`, `CyclicLR`,
    `transformers` warm-up schedules) stepped once per epoch; an epoch
    scheduler whose horizon is a number of epochs (`T_max=epochs`,
    `step_size=num_epochs`) stepped on every batch.

    ## Why is this bad?
    Stepping the scheduler first skips the initial learning rate (PyTorch
    warns about it). A one-cycle schedule built for `epochs *
    steps_per_epoch` steps but advanced once per epoch never leaves its
    warm-up; a cosine schedule over `epochs` steps advanced per batch ends
    its cycle after a handful of batches and then oscillates. Training "works"
    with the wrong learning-rate curve.

    ## Example
    ```python
    import torch

    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=num_epochs)
    for epoch in range(num_epochs):
        for x, y in torch.utils.data.DataLoader(dataset):
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
            scheduler.step()
    ```

    ## Use instead
    ```python
    import torch

    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=num_epochs)
    for epoch in range(num_epochs):
        for x, y in torch.utils.data.DataLoader(dataset):
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        scheduler.step()
    ```

    ## Heuristics
    The scheduler's class comes from its construction in the same module
    (names, `self` attributes, one same-module caller). The cadence checks
    need the training loop to iterate a DataLoader (so the loop around it is
    an epoch loop) and the horizon argument to be spelled in epochs (a name
    mentioning `epoch` and no `len(`, `step`, `iter`, `batch`), or in steps
    for the per-batch schedulers. `scheduler.step()` guarded by a real
    condition (e.g. warm-up only) is not an ordering finding, nor is
    `scheduler.step(metric)` (`ReduceLROnPlateau`).
    Resume: a torch scheduler built with `last_epoch=<expression>` (other
    than a literal `-1`) on an optimizer built in this file by a
    `torch.optim` constructor is reported when, between the two, nothing
    could have put `initial_lr` into the param groups: no
    `optimizer.load_state_dict(...)`, no call that is handed the optimizer
    (a `load_checkpoint(path, model, optimizer)` helper, also as one branch
    of a conditional argument: `None if lr == 0 else optimizer`), no earlier
    scheduler on it, and no `"initial_lr"` anywhere in the file. When the
    optimizer is handed to the function that builds the scheduler
    (`def train(model, optimizer, ...)`), "between" is the part of that
    function before the scheduler and the rest of the caller after the
    optimizer's constructor: a restore in either is one (thinkmatch). A
    `last_epoch` that is just a parameter of the enclosing function (a
    factory passing it through) is left to its callers, and a name every
    assignment of which is `-1` (`last_epoch = -1`, never changed) is the
    default, and so is an expression that constants decide is -1 where it is
    read (`last_epoch=epoch - 1` with `epoch` still holding the 0 an
    assignment that always runs before gave it).
    """

    code = "TR418"
    name = "scheduler-misuse"
    severity = Severity.MEDIUM
    severity_reason = "Silently wrong training: the learning-rate schedule runs at the wrong pace."
    summary = "LR scheduler stepped before the optimizer or at the wrong cadence"

    def check_file(self, ctx) -> None:
        reported: set[int] = set()
        for call, optimizer in _resumed_on_fresh_optimizer(ctx):
            value = ctx.arg(call, "last_epoch")
            ctx.report(call, f"`{short_text(ctx, call.func)}(..., last_epoch={short_text(ctx, value)})` on "
                             f"`{short_text(ctx, optimizer)}`, a freshly built optimizer: whenever `last_epoch` "
                             f"is not -1 (a resume) the scheduler requires `'initial_lr'` in every param group "
                             f"and raises `KeyError`; build it with the default `last_epoch` and then restore "
                             f"its position (`scheduler.load_state_dict(...)` or `scheduler.last_epoch = ...`)",
                       kind="defect", confidence="high")

        def report(node, message):
            if id(node) not in reported:
                reported.add(id(node))
                ctx.report(node, message)

        for loop in [*ctx.training_loops, *ctx.flow.step_functions]:
            batch_loop = _iterates_loader(ctx, loop.node)
            self._order(ctx, loop.events, report)
            epoch_events = []
            if loop.epoch_loop is not None:
                epoch_events = [e for e in ctx.flow.events_in(loop.epoch_loop.body)]
                self._order(ctx, epoch_events, report, own_only=True)
            if not batch_loop:
                continue
            in_loop = {id(e.node) for e in loop.events}
            for e in loop.events:
                if e.kind == "sched_step" and not e.node.args and not e.node.keywords:
                    self._per_batch(ctx, e.node, report)
            for e in epoch_events:
                if e.kind == "sched_step" and e.depth == 0 and id(e.node) not in in_loop:
                    self._per_epoch(ctx, e.node, report)

    @staticmethod
    def _order(ctx, events, report, own_only=False) -> None:
        first_step = next((i for i, e in enumerate(events) if e.kind == "step"), None)
        if first_step is None:
            return
        for e in events[:first_step]:
            if e.kind != "sched_step" or (own_only and e.depth != 0) or e.node.args or e.node.keywords:
                continue  # step(metric) (ReduceLROnPlateau) / step(epoch): not the warm-up ordering issue
            if only_existence_checks(ctx, e.conditions, e.node.func.value):
                report(e.node, f"`{short_text(ctx, e.node)}` runs before `optimizer.step()`: the first "
                               f"learning-rate value is skipped; step the scheduler after the optimizer")

    @staticmethod
    def _ctor(ctx, call):
        ctor = ctx.flow.origin(call.func.value, peel=False)
        return (ctor, ctx.qualname(ctor.func) or "") if isinstance(ctor, ast.Call) else (None, "")

    def _per_batch(self, ctx, call, report) -> None:
        ctor, q = self._ctor(ctx, call)
        if q not in _PER_EPOCH:
            return
        name, pos = _PER_EPOCH[q]
        horizon = ctx.arg(ctor, name, pos)
        if horizon is not None and _in_epochs(ctx, horizon):
            report(call, f"`{short_text(ctx, call)}` runs on every batch but its `{name}` "
                         f"(`{short_text(ctx, horizon)}`) counts epochs: the schedule finishes after a few "
                         f"batches; step it once per epoch or set `{name}` in optimizer steps")

    def _per_epoch(self, ctx, call, report) -> None:
        ctor, q = self._ctor(ctx, call)
        if ctor is None or not _counts_steps(ctx, ctor, q):
            return
        report(call, f"`{short_text(ctx, call)}` runs once per epoch, but `{q.rsplit('.', 1)[-1]}` "
                     f"counts optimizer steps: the learning rate barely moves; step it after every "
                     f"`optimizer.step()`")


def _minus_one(value: ast.AST) -> bool:
    return isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and \
        isinstance(value.operand, ast.Constant) and value.operand.value == 1


def _resumed_on_fresh_optimizer(ctx):
    """``(scheduler constructor, optimizer expression)`` for torch schedulers built
    with a ``last_epoch`` that may be >= 0 on an optimizer built in this file whose
    param groups nothing could have given ``initial_lr``."""
    if not any(q.startswith(_LR) for q in ctx.model.called_qualnames):
        return
    schedulers = [c for c in ctx.model.calls
                  if (ctx.qualname(c.func) or "").startswith(_LR) and ctx.arg(c, "optimizer", 0) is not None]
    if not schedulers or any(isinstance(n.value, str) and n.value == "initial_lr"
                             for n in ctx.model.nodes_by_type.get(ast.Constant, ())):
        return  # (the scan of every constant only where a scheduler is built)
    for call in schedulers:
        value = ctx.arg(call, "last_epoch")
        if value is None or _minus_one(value) or _integer(ctx, value) == -1:
            continue  # (`last_epoch=epoch - 1` where `epoch` still holds its starting 0: psla)
        if isinstance(value, ast.Name):
            held = ctx.flow.values_of(value)
            if held and all(_minus_one(v) for v in held):
                continue  # `last_epoch = -1` and never changed (Ultra-Light-Face: the resume loads weights only)
        func = ctx.enclosing_function(call)
        if isinstance(value, ast.Name) and func is not None and value.id in {
                a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}:
            continue  # passed through: the caller decides
        optimizer = ctx.arg(call, "optimizer", 0)
        ctor = ctx.flow.origin(optimizer, peel=False)
        if not (isinstance(ctor, ast.Call) and (ctx.qualname(ctor.func) or "").startswith("torch.optim.")
                and not (ctx.qualname(ctor.func) or "").startswith(_LR)):
            continue
        if not _untouched_between(ctx, optimizer, ctor, call):
            continue
        yield call, optimizer


def _integer(ctx, expr: ast.AST, depth: int = 3) -> int | None:
    """The integer ``expr`` evaluates to where it is read, when constants decide it: a
    literal, ``-n``, ``a + b``/``a - b`` of such, or a name whose assignment always runs
    before the read and holds one (``global_step, epoch = 0, 0``); None otherwise."""
    if isinstance(expr, ast.Constant):
        return expr.value if isinstance(expr.value, int) and not isinstance(expr.value, bool) else None
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        inner = _integer(ctx, expr.operand, depth)
        return -inner if inner is not None else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        left, right = _integer(ctx, expr.left, depth), _integer(ctx, expr.right, depth)
        if left is None or right is None:
            return None
        return left + right if isinstance(expr.op, ast.Add) else left - right
    if isinstance(expr, ast.Name) and depth > 0:
        held = ctx.flow.reaching_value_strict(expr)
        return _integer(ctx, held, depth - 1) if held is not None else None
    return None


def _untouched_between(ctx, optimizer, ctor, sched) -> bool:
    """Between the optimizer's constructor and ``sched``, no call restores the
    optimizer's state, receives the optimizer, or builds another scheduler on it. In one
    function that is the source between them; when the scheduler is built in a function
    the optimizer is handed to (``def train(model, optimizer, ...)``, thinkmatch), it is
    the part of that function before the scheduler and the rest of the constructor's
    function after the constructor (where the call is made)."""
    home, ctor_home = ctx.enclosing_function(sched), ctx.enclosing_function(ctor)
    if home is ctor_home:
        return _untouched(ctx, ctx.text(optimizer), (ctor.lineno, ctor.col_offset),
                          (sched.lineno, sched.col_offset), (ctor, sched))
    start = (home.lineno, 0) if home is not None else (0, 0)
    if not _untouched(ctx, ctx.text(optimizer), start, (sched.lineno, sched.col_offset), (ctor, sched)):
        return False
    up = parent(ctor)
    if isinstance(up, ast.Assign) and len(up.targets) == 1:
        end = (ctor_home.end_lineno or 0, 1 << 30) if ctor_home is not None else (1 << 30, 0)
        return _untouched(ctx, ctx.text(up.targets[0]), (ctor.lineno, ctor.col_offset), end, (ctor, sched),
                          builder=home)
    return True


def _untouched(ctx, text: str, lo, hi, skip, builder=None) -> bool:
    for call in ctx.model.calls:
        if call in skip or not lo < (call.lineno, call.col_offset) < hi:
            continue
        if isinstance(call.func, ast.Attribute) and call.func.attr == "load_state_dict" and \
                ctx.text(call.func.value) == text:
            return False
        if any(_hands(ctx, a, text) for a in [*call.args, *(k.value for k in call.keywords)]) and \
                not _calls(call, builder):
            return False
    return True


def _hands(ctx, arg: ast.AST, text: str) -> bool:
    """``arg`` passes the value spelled ``text``: itself, or one branch of a conditional
    (`None if lr == 0 else optimizer`: first-order-model hands its restoring helper the
    optimizer whenever the scheduler resumes)."""
    if isinstance(arg, ast.IfExp):
        return _hands(ctx, arg.body, text) or _hands(ctx, arg.orelse, text)
    return ctx.text(arg) == text


def _calls(call: ast.Call, func) -> bool:
    """``call`` calls ``func`` by its name (``train(...)``, ``self.train(...)``): the
    function that builds the scheduler being handed the optimizer, not a restore."""
    if func is None:
        return False
    callee = call.func
    name = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(callee, ast.Attribute) else None
    return name == func.name


def _iterates_loader(ctx, loop) -> bool:
    """A ``for`` loop over a DataLoader (so the loop around it runs once per epoch)."""
    return bool(ctx.flow.iterated_loaders(loop)) or any(
        ctx.kind_of(it) == "loader" for it in ctx.flow.iterables_of(loop))


def _in_epochs(ctx, expr) -> bool:
    values = expr.elts if isinstance(expr, (ast.List, ast.Tuple)) else [expr]
    texts = [ctx.text(v) for v in values]
    return bool(texts) and all("epoch" in t.lower() and not _STEP_WORDS.search(t) for t in texts)


def _counts_steps(ctx, ctor, q) -> bool:
    if q.startswith("transformers.") and "schedule" in q:
        horizon = ctx.arg(ctor, "num_training_steps", 2) or ctx.arg(ctor, "num_warmup_steps", 1)
    elif q == _LR + "OneCycleLR":
        per_epoch = ctx.arg(ctor, "steps_per_epoch", 4)
        if per_epoch is not None:
            return int_value(per_epoch) != 1
        horizon = ctx.arg(ctor, "total_steps", 2)
    elif q == _LR + "CyclicLR":
        horizon = ctx.arg(ctor, "step_size_up", 3)
        if horizon is None:
            return True  # default: 2000 iterations
    else:
        return False
    if horizon is None:
        return False
    text = ctx.text(horizon)
    return bool(_STEP_WORDS.search(text))
