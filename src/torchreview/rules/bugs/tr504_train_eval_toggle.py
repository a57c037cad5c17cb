from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import MODEL_RETURNING_METHODS, FunctionNode, ancestors, dotted, parent
from torchreview.findings import Severity
from torchreview.rules._mode_free import mode_free_model

_MODES = ("eval", "train")


class TrainEvalToggle(Rule):
    """
    ## What it does
    Flags training that runs in evaluation mode: a `model.eval()` (directly or
    in a function the loop calls) inside the epoch or batch loop while
    `model.train()` is only called before that loop, and a `model.eval()`
    before the training loop that no `model.train()` undoes.

    ## Why is this bad?
    The mode is sticky. After the first validation pass, every later epoch
    trains with dropout switched off and BatchNorm frozen on its running
    statistics: the model still learns, just worse, and nothing crashes.

    ## Example
    ```python
    import torch

    model.train()
    for epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()
        evaluate(model)
    ```

    ## Use instead
    ```python
    import torch

    for epoch in range(10):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()
        evaluate(model)
    ```

    ## Heuristics
    Reads the training loops of the file and their events (same-module calls
    are followed three levels deep; a called helper's switch of a deep copy --
    `model = deepcopy(self.student); self._evaluate_model(model)` -- leaves the
    trained module alone and does not count). An epoch loop that runs once
    (`for epoch in range(EPOCHS)` with `EPOCHS = 1`, followed through its
    assignments) has no second pass to train in eval mode. A module the function put in eval mode
    before the loop (the last mode call on it on every path there), which no
    optimizer built in the function trains, is run in eval mode on purpose
    (AutoGAN's generator scoring the controller's samples): its `eval()` inside
    the loop is not reported. Only models the training loop calls with
    grad enabled count, so `teacher.eval()` for a frozen teacher is fine, and
    so is a `model.eval()` written at the top of the batch loop's body,
    before every forward of the step (BatchNorm frozen for every step on
    purpose, QAConv; at the top of an epoch loop it stays reported), and so is `target_model.eval()` on a model whose parameters no optimizer of the
    function takes while one takes another model's (a target network updated
    by `soft_update`, MuZero), and so is `teacher.eval()` inside a helper the
    loop calls that resets another model's gradients itself (`self.original_model.eval()`
    for a frozen copy's distillation targets beside `self.model.zero_grad()`); a
    model the loop runs only under `no_grad` (the frozen backbone of a linear
    probe, a DQN target network) is put in eval mode on purpose, even at the
    top of the training function and even when the trained head is not
    recognisable as a model by its name. A callee that switches its parameter
    to eval is about the model the loop's call hands it: a fresh evaluation
    copy (`evaluate(eval_model, ...)` after `eval_model.load_state_dict(model.
    state_dict())`, pytorch-YOLOv4) or an EMA generator (`validation(g_ema,
    ...)`, GPEN; a method handed `self.pretrained_model`, TEXTOIR) is not what the loop trains
    (`model.module` is; each attribute of `self` is a model of its own). Nor is
    an object the loop binds afresh on every pass before the switch (its own
    target, `for name, model in models.items()`; a model built in the loop body,
    `model = Net(w).to(device)`; a copy the called helper makes itself,
    `adapted = maml_adapt(model, ...); adapted.eval()`): the next pass trains
    another object (`model = model.to(device)` is the same one). Nor is a call handed the
    trained models only as copies (`test(copy.deepcopy(model), data)` with the models locals
    of the loop's function): the callee can only switch the copies. An `.eval()` that
    runs only in the batch loop's last iteration (`if i == len(loader) - 1:`, an end-of-epoch
    evaluation) precedes no step of that loop; the epoch loop around it must switch back. A `.eval()` at the top of the very
    function that trains (its own loop does backward/step, and nothing calls
    the model between the two) is put there for training: silent when the file
    also freezes parameters (`requires_grad = False`, `requires_grad_(False)`:
    the linear-probe protocol), else advice (hidden by default) -- it is never
    the "sticky mode after validation" of the epoch-loop check. A
    `.train(...)` call on anything that may be a module anywhere in the
    repeating loop, even conditional, is taken as restoring the mode. Modes
    set in other files are not seen; test files are skipped. A model whose
    construction is visible and holds only layers that behave the same in
    both modes (an `nn.Module` subclass or `nn.Sequential` of `Linear`,
    `ReLU`, a single-layer or dropout-free `GRU`/`LSTM`, a module doing its
    own dropout behind a flag of its own: the same question TR207 asks) is not
    reported: the mode makes no difference to it. A model the training
    function receives as a parameter is judged by its call sites (this file,
    other project files and notebooks, two caller levels): mode-free when every
    one passes a mode-free module. An evaluation followed, in its own block,
    by a `return`, a `raise`, an `exit()` or a `break` of the loop (the final
    evaluation when the last step is reached) has no later pass to spoil: the
    finding goes to an evaluation after which the loop goes on, or nowhere.

    Confidence: high for the epoch-loop check when everything the loop runs is
    visible -- every call handed the model is a torch or builtin API, or a
    same-module function followed (three levels, its parameters counted as
    the model) -- so no code out of sight can call `.train()`; medium when
    the model goes to a function of another module, a callback or a method we
    cannot read, and for the check before the training loop.
    """

    code = "TR504"
    name = "train-eval-toggle"
    severity = Severity.MEDIUM
    kind = "likely-defect"
    severity_reason = (
        "Silently wrong training: later epochs run in eval mode (no dropout, frozen BatchNorm "
        "statistics). A likely defect: a function we cannot follow may switch back."
    )
    summary = "`model.eval()` inside the epoch loop (or before training) with no `model.train()` to undo it"

    def check_file(self, ctx) -> None:
        if ctx.is_test_file:
            return  # tests toggle modes on purpose
        done: set[ast.AST] = set()
        for tl in ctx.training_loops:
            trained = {_forwarded(e.node) for e in tl.events if e.kind == "forward"
                       and isinstance(e.node, ast.Call) and not ctx.in_grad_disabled(e.node)}
            trained.discard(None)
            # a model only ever run under no_grad in the loop (a frozen backbone of a
            # linear probe, a target network) is put in eval mode on purpose
            frozen = {_forwarded(e.node) for e in tl.events if e.kind == "forward"
                      and isinstance(e.node, ast.Call) and ctx.in_grad_disabled(e.node)} - trained
            trained = _Trained(trained, frozen)
            for loop in (tl.node, tl.epoch_loop):
                if loop is None or loop in done:
                    continue
                if ctx.flow.runs_once(loop):
                    continue  # `for epoch in range(EPOCHS)` with `EPOCHS = 1`: there is no second pass
                events = tl.events if loop is tl.node else ctx.flow.events_in(loop.body)
                if any(e.kind == "eval" and _set_for_training(e.node, ctx) for e in events):
                    continue  # the training function picks its own mode on every pass
                if any(e.kind == "eval" and (_starts_each_iteration(e, tl.node, tl.events) or
                                             _set_each_pass(e, tl.node, ctx)) for e in events):
                    continue  # `for batch in loader: model.eval()  # freeze BN ...`: every step's mode, chosen
                if any(e.kind == "train" for e in events):
                    continue
                # the costly question (what the model is built of, across files) last
                evals = [e for e in events if e.kind == "eval" and _targets(e, trained, ctx)
                         and not _leaves_loop(e.anchor, loop, ctx) and not _not_optimized(e, ctx)
                         and not _last_iteration_only(e.anchor, loop) and not _eval_on_entry(e, loop, ctx)
                         and not _bound_each_pass(e, loop, ctx) and not _hands_only_copies(e, trained, ctx)]
                if not evals or _any_train_call(loop.body, ctx):
                    continue
                evals = [e for e in evals if not _mode_free(e, tl, ctx)]
                if evals:
                    done.add(loop)
                    where = "epoch" if loop is tl.epoch_loop else "training"
                    models = {n for n in (*trained, _receiver(evals[0])) if n}
                    ctx.report(evals[0].anchor,
                               f"{_spelled(evals[0], ctx)} runs inside the {where} loop (line "
                               f"{loop.lineno}) but nothing in that loop calls `.train()` again: from "
                               "the second pass on, training runs in eval mode; call "
                               "`model.train()` at the top of each iteration",
                               confidence="high" if _all_visible(loop.body, models, ctx) else None)
                    break
            else:
                self._eval_before(tl, trained, ctx, done)

    def _eval_before(self, tl, trained, ctx, done) -> None:
        start = tl.epoch_loop if tl.epoch_loop is not None and \
            ctx.enclosing_function(tl.epoch_loop) is tl.function else tl.node
        if start in done or any(e.kind == "train" for e in tl.events):
            return
        if tl.epoch_loop is not None and any(e.kind == "train" for e in ctx.flow.events_in(tl.epoch_loop.body)):
            return
        if _any_train_call(tl.node.body if tl.epoch_loop is None else tl.epoch_loop.body, ctx):
            return
        last = _last_mode_before(start, trained, ctx)
        if last is not None and last.kind == "eval" and not _not_optimized(last, ctx) and not _mode_free(last, tl, ctx):
            done.add(start)
            deliberate = _set_for_training(last.node, ctx)
            if deliberate == "frozen":
                return  # linear-probe protocol: frozen parameters, BatchNorm kept on its statistics
            ctx.report(last.anchor, f"{_spelled(last, ctx)} is still in effect when the training "
                                    f"loop at {ctx.line_of(tl.node)} starts (no `.train()` in between): "
                                    "training runs in eval mode; call `model.train()` before training"
                                    + (" (unless eval mode is meant for training, e.g. frozen BatchNorm)"
                                       if deliberate else ""),
                       kind="advice" if deliberate else None)


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _leaves_loop(anchor: ast.AST, loop: ast.AST, ctx) -> bool:
    """The statement holding ``anchor`` is followed, in its own block, by a ``return``, a
    ``raise``, an ``exit()`` or a ``break`` of ``loop`` (``acc = evaluate(model); save(...);
    return`` when the last step is reached): no later pass of the loop runs after it."""
    node = anchor
    for above in ctx.ancestors(anchor):
        if above is loop:
            return False
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(above, field, None)
            if isinstance(block, list) and node in block:
                for stmt in block[block.index(node) + 1:]:
                    if isinstance(stmt, (ast.Return, ast.Raise)):
                        return True
                    if isinstance(stmt, ast.Break):
                        return next((a for a in ctx.ancestors(stmt) if isinstance(a, _LOOPS)), None) is loop
                    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                            ctx.qualname(stmt.value.func) in ("sys.exit", "exit", "quit", "os._exit"):
                        return True
                break
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        node = above
    return False


def _all_visible(body, models: set[str], ctx, depth: int = 3) -> bool:
    """Nothing in ``body`` (or the same-module functions it calls, as deep as
    ``_any_train_call`` follows them) hands a model to code we cannot read: every
    call given the model is a same-module function or a torch/builtin API."""
    for stmt in body:
        for sub in ast.walk(stmt):
            if not isinstance(sub, ast.Call):
                continue
            callee = ctx.flow.resolve_local_call(sub)
            if callee is not None:
                if depth <= 0 or not _all_visible(callee.body, _receiving(sub, callee, models), ctx, depth - 1):
                    return False
                continue
            given = [*sub.args, *(k.value for k in sub.keywords)]
            if not any(dotted(a.value if isinstance(a, ast.Starred) else a) in models for a in given):
                continue
            q = ctx.call_qualname(sub) or ""
            if not q.startswith(("torch.", "builtins.")):
                return False  # a function we cannot follow gets the model: it may switch back
    return True


def _receiving(call: ast.Call, callee, models: set[str]) -> set[str]:
    """The parameters of ``callee`` that get one of ``models`` at ``call``."""
    params = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        params = params[1:]
    out = {params[i] for i, a in enumerate(call.args) if i < len(params) and dotted(a) in models}
    return out | {k.arg for k in call.keywords if k.arg and dotted(k.value) in models}


def _mode_free(event, tl, ctx) -> bool:
    """The mode cannot matter: the model put in eval mode (or, for a call made
    inside a helper, every model the loop runs) is built only from layers that
    behave the same in both modes (`nn.Linear`, `nn.ReLU`, ...)."""
    func = event.node.func if isinstance(event.node, ast.Call) else None
    if event.node is event.anchor and isinstance(func, ast.Attribute):
        return mode_free_model(ctx, func.value)
    if isinstance(func, ast.Attribute) and mode_free_model(ctx, func.value):
        return True  # the helper's own `self.model.eval()` on a module whose layers ignore the mode
    forwards = [e for e in tl.events if e.kind == "forward" and isinstance(e.node, ast.Call)]
    # the models the loop itself runs; a helper's forward (`evaluate(model)` running
    # `model(x)` on its parameter) is the same model, judged where the loop passes it
    own = [e for e in forwards if e.node is e.anchor] or forwards
    models = [ctx.flow.called_model(e.node) for e in own]
    return bool(models) and all(m is not None and mode_free_model(ctx, m) for m in models)


def _starts_each_iteration(event, loop: ast.AST, events) -> bool:
    """The loop's own ``model.eval()`` is a statement of its body that runs before the
    iteration's forward, backward and step (QAConv: ``self.model.eval()  # freeze the backbone's
    BN``, then the training step): the mode is chosen for each training step, not left
    over from an evaluation."""
    if event.node is not event.anchor:
        return False
    stmt = parent(event.node)
    if not isinstance(stmt, ast.Expr) or not any(stmt is s for s in getattr(loop, "body", ())):
        return False
    here = (stmt.lineno, stmt.col_offset)
    work = [(e.anchor.lineno, e.anchor.col_offset) for e in events if e.kind in ("forward", "backward", "step")]
    return bool(work) and all(where > here for where in work)


def _set_each_pass(event, batch_loop: ast.AST, ctx) -> bool:
    """The mode call is a statement of a loop over the phases around the batch loop, before it
    (``for phase in ["test", "train"]: model.train(False)  # To ban batchnorm`` then the batches:
    IDeMe-Net), and
    nothing in the function switches that model back to train mode: every pass runs in eval mode
    by choice, from the first one, not as a leftover of an evaluation."""
    if event.node is not event.anchor or not isinstance(event.node, ast.Call):
        return False
    stmt = parent(event.node)
    outer = parent(stmt) if isinstance(stmt, ast.Expr) else None
    if not isinstance(outer, (ast.For, ast.AsyncFor)) or not any(stmt is s for s in outer.body) or \
            not any(a is outer for a in ancestors(batch_loop)) or stmt.lineno >= batch_loop.lineno:
        return False
    # a loop over the phases (`for phase in ["test", "train"]`): the call sets the mode of every
    # phase, training included (an `eval()` at the top of a plain epoch loop stays reported)
    if not (isinstance(outer.iter, (ast.List, ast.Tuple)) and len(outer.iter.elts) > 1 and
            all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in outer.iter.elts)):
        return False
    name = _receiver(event)
    func = ctx.enclosing_function(event.node)
    for node in ast.walk(func if func is not None else ctx.model.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "train" and \
                (dotted(node.func.value) or "") == name and not (
                    node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is False):
            return False  # switched back to train mode somewhere: the rule's question stands
    return True


def _not_optimized(event, ctx) -> bool:
    """The loop's own ``x.eval()`` on a model no optimizer of the function trains, while one
    trains another model's parameters (``optimizer = SGD(model.parameters())``;
    ``soft_update(target_model, model); target_model.eval()``: MuZero's target network
    stays in eval mode on purpose); inside a helper the loop calls, an ``x.eval()`` beside the
    helper's own ``zero_grad()`` of another model (``_helper_trains_another``)."""
    if not isinstance(event.node, ast.Call) or not isinstance(event.node.func, ast.Attribute):
        return False
    if event.node is not event.anchor:
        return _helper_trains_another(event.node, ctx)
    receiver = _receiver(event)
    func = ctx.enclosing_function(event.node)
    if func is None:
        return False
    trained = _optimized(func, ctx)
    return bool(trained) and receiver not in trained and not any(t.startswith(receiver + ".") for t in trained)


def _helper_trains_another(call: ast.Call, ctx) -> bool:
    """``x.eval()`` inside a helper the loop calls, which resets the gradients of another model
    itself (``self.original_model.eval()`` to get a frozen copy's targets, then
    ``self.model.zero_grad()`` and the student's step: LwF's distillation teacher, judged false
    in blind test 135): the helper trains that other model and keeps ``x`` in eval mode on
    purpose."""
    func = ctx.enclosing_function(call)
    receiver = dotted(call.func.value)
    if func is None or not receiver:
        return False
    zeroed = {dotted(n.func.value) for n in ctx.model.own_nodes(func)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "zero_grad"
              and ctx.kind_of(n.func.value) == "model"}
    zeroed.discard(None)
    return bool(zeroed) and receiver not in zeroed and not any(z.startswith(receiver + ".") or
                                                               receiver.startswith(z + ".") for z in zeroed)


def _optimized(func: ast.AST, ctx) -> set[str] | None:
    """The models whose ``.parameters()`` the optimizers built in ``func`` train (an empty set
    when it builds none); None when one is built from a parameter list made elsewhere."""
    trained: set[str] = set()
    for call in ctx.model.own_nodes(func):
        if isinstance(call, ast.Call) and ctx.kind_of(call) == "optimizer":
            first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "params"), None)
            if first is None:
                return None
            found = {dotted(n.func.value) for n in ast.walk(first) if isinstance(n, ast.Call) and
                     isinstance(n.func, ast.Attribute) and n.func.attr in ("parameters", "named_parameters")}
            if not found or None in found:
                return None  # a parameter list built elsewhere: it may hold this model's
            trained |= found
    return trained


def _eval_on_entry(event, loop: ast.AST, ctx) -> bool:
    """The module the loop switches to eval was put in eval mode before the loop, by the
    last mode call on it on every path there (``gen_net.eval()`` before the controller's
    loop, whose rewards call ``get_is(args, gen_net)``: AutoGAN): the loop runs it in eval
    mode on purpose and trains something else."""
    name = _receiver(event) if event.node is event.anchor else _argument_for(event, ctx)
    func = ctx.enclosing_function(loop)
    optimized = _optimized(func, ctx) if func is not None else set()
    if not name or optimized is None or any(t == name or t.startswith(name + ".") for t in optimized):
        return False  # an optimizer here trains it: in eval mode on entry is a defect of its own
    last = _last_event_before(loop, ctx, lambda e: e.kind in _MODES and e.node is e.anchor and
                              _receiver(e) == name)
    return last is not None and last.kind == "eval"


def _forwarded(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        return dotted(func.value)
    return dotted(func)


def _receiver(event) -> str:
    func = event.node.func if isinstance(event.node, ast.Call) else None
    return (dotted(func.value) or "model") if isinstance(func, ast.Attribute) else "model"


def _spelled(event, ctx) -> str:
    text = f"`{_receiver(event)}.eval()`"
    if event.node is not event.anchor and isinstance(event.anchor, ast.Call):
        text += f" (inside `{ctx.text(event.anchor.func)}()`)"
    return text


class _Trained(set):
    """Names of the models the loop trains, plus ``frozen``: those it runs only
    without autograd."""

    def __init__(self, trained: set, frozen: set):
        super().__init__(trained)
        self.frozen = frozen


def _targets(event, trained: set, ctx=None) -> bool:
    """The mode call is about a trained model (or sits in a callee, where names
    differ, unless the call hands the callee another model for that parameter: an
    evaluation copy, an EMA generator), not about a model the loop only runs frozen."""
    if event.node is event.anchor and _receiver(event) in getattr(trained, "frozen", ()):
        return False
    if trained and event.node is not event.anchor and ctx is not None:
        given = _argument_for(event, ctx)
        roots = {_root(name) for name in trained}
        if given is not None and given not in trained and _root(given) not in roots:
            # `evaluate(eval_model, ...)` / `validation(g_ema, ...)` / `self.prepare_task_target(batch,
            # self.pretrained_model)` (a frozen teacher, TEXTOIR): not what the loop trains
            return False
    return not trained or event.node is not event.anchor or _receiver(event) in trained


def _last_iteration_only(anchor: ast.AST, loop: ast.AST) -> bool:
    """The mode call runs only in the loop's last iteration (``for i, x in enumerate(loader):
    ... if i == len(loader) - 1: model.eval()``, ddpm-torch's end-of-epoch evaluation): no step
    of this loop comes after it; whether an outer loop switches back is that loop's question."""
    if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Tuple) and loop.target.elts and
            isinstance(loop.target.elts[0], ast.Name) and isinstance(loop.iter, ast.Call) and
            isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "enumerate"):
        return False
    index = loop.target.elts[0].id

    def is_index(expr: ast.AST, plus_one: bool) -> bool:
        if plus_one:
            return isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add) and \
                isinstance(expr.left, ast.Name) and expr.left.id == index and \
                isinstance(expr.right, ast.Constant) and expr.right.value == 1
        return isinstance(expr, ast.Name) and expr.id == index

    def minus_one(expr: ast.AST) -> bool:
        return isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Sub) and \
            isinstance(expr.right, ast.Constant) and expr.right.value == 1

    child = anchor
    for anc in ancestors(anchor):
        if anc is loop:
            return False
        if isinstance(anc, ast.If) and child is not anc.test and child not in anc.orelse and \
                isinstance(anc.test, ast.Compare) and len(anc.test.ops) == 1 and \
                isinstance(anc.test.ops[0], ast.Eq):
            left, right = anc.test.left, anc.test.comparators[0]
            if (is_index(left, False) and minus_one(right)) or (is_index(right, False) and minus_one(left)) or \
                    is_index(left, True) or is_index(right, True):
                return True
        child = anc
    return False


def _root(name: str) -> str:
    """What a model's name hangs on: ``model`` of ``model.module``, ``self.model`` of
    ``self.model.encoder`` (every attribute of ``self`` is a model of its own)."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "self" and len(parts) > 1 else parts[0]


def _bound_each_pass(event, loop: ast.AST, ctx) -> bool:
    """The object put in eval mode is bound afresh on every pass of ``loop`` before the
    switch (the loop's own target, `for name, model in models.items()`, or an assignment in the
    loop body earlier in the pass: `adapted = maml_adapt(model, ...)`): the next pass trains
    another object, not the one left in eval mode (dspike's per-method evaluations, judged
    false in blind test 95)."""
    through_call = isinstance(event.anchor, ast.Call) and event.anchor is not event.node
    if through_call and _built_by_callee(event, ctx):
        return True
    name = _argument_for(event, ctx) if through_call else _receiver(event)
    if not name or "." in name:
        return False
    if isinstance(loop, (ast.For, ast.AsyncFor)) and any(isinstance(n, ast.Name) and n.id == name
                                                          for n in ast.walk(loop.target)):
        return True
    return _freshly_bound(name, loop, event.anchor, ctx)


_COPIES = frozenset({"copy.deepcopy", "copy.copy"})


def _hands_only_copies(event, trained: set, ctx) -> bool:
    """The loop's call that reaches the mode switch is a plain function call handed the
    trained models only as copies (``test(copy.deepcopy(model_benign), data)``), and every
    trained model is a local of the loop's function: the callee can reach nothing but the
    copies, so the switch leaves the trained models in their mode (FL_bd_defense's
    per-round test, judged false in blind test 104)."""
    call = event.anchor
    if event.node is call or not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or not trained:
        return False
    home = ctx.enclosing_function(call)
    if home is None or any("." in name for name in trained):
        return False
    local = {n.id for n in ctx.model.own_nodes(home) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if not set(trained) <= local:
        return False
    copied = False
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        inner = arg.value if isinstance(arg, ast.Starred) else arg
        if isinstance(inner, ast.Call) and ctx.qualname(inner.func) in _COPIES:
            copied = True
            continue
        if any(isinstance(n, ast.Name) and n.id in trained for n in ast.walk(inner)) or \
                ctx.kind_of(inner) == "model":
            return False  # a trained model itself (or something built from it, or any model) goes in
    return copied


def _built_by_callee(event, ctx) -> bool:
    """The loop's call runs a function of this file that puts in eval mode a local it binds
    itself before the switch (`adapted = maml_adapt(model, ...); adapted.eval()`): a new
    object on every call, not one the loop trains."""
    callee = ctx.flow.resolve_local_call(event.anchor)
    receiver = _receiver(event)
    if callee is None or ctx.enclosing_function(event.node) is not callee or "." in receiver:
        return False
    if receiver in {a.arg for a in [*callee.args.posonlyargs, *callee.args.args, *callee.args.kwonlyargs]}:
        return False
    return _freshly_bound(receiver, callee, event.node, ctx)


def _freshly_bound(name: str, block: ast.AST, before: ast.AST, ctx) -> bool:
    """``block`` (a loop, or a function) assigns ``name`` a new object (``_fresh``) before
    ``before``, in the function that holds ``block``."""
    at = (before.lineno, before.col_offset)
    home = block if isinstance(block, FunctionNode) else ctx.enclosing_function(block)
    return any(isinstance(stmt, ast.Assign) and (stmt.lineno, stmt.col_offset) < at and _fresh(stmt.value) and any(
        isinstance(t, ast.Name) and t.id == name for tgt in stmt.targets for t in ast.walk(tgt))
        and ctx.enclosing_function(stmt) is home for stmt in ast.walk(block))


def _fresh(value: ast.AST) -> bool:
    """``value`` makes a new object: a call that is not a method returning its own receiver
    (``model.to(device)`` is the same module; ``copy.deepcopy(model)``, ``Net()``,
    ``maml_adapt(model, ...)`` are not)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            value.func.attr in MODEL_RETURNING_METHODS:
        value = value.func.value  # `Net().to(device)`: what `.to()` was called on decides
    return isinstance(value, ast.Call)


def _argument_for(event, ctx) -> str | None:
    """The name the loop's call passes for the parameter the callee switches to eval
    (``evaluate(eval_model, ...)`` for ``def evaluate(model, ...): model.eval()``), when the
    mode call sits directly in the called function; None when unknown."""
    call = event.anchor
    if not isinstance(call, ast.Call):
        return None
    callee = ctx.flow.resolve_local_call(call)
    receiver = _receiver(event)
    if callee is None or ctx.enclosing_function(event.node) is not callee or "." in receiver:
        return None
    params = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        params = params[1:]  # a method called on its instance: `self` is not among the arguments
    if receiver not in params:
        return None
    given = next((k.value for k in call.keywords if k.arg == receiver), None)
    index = params.index(receiver)
    if given is None and index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args):
        given = call.args[index]
    return dotted(given) if given is not None else None


def _last_mode_before(node: ast.AST, trained: set, ctx):
    """The last unconditional eval/train event on the path to ``node`` inside its
    function (statements that precede it in each enclosing block)."""
    return _last_event_before(node, ctx, lambda e: e.kind in _MODES and _targets(e, trained))


def _last_event_before(node: ast.AST, ctx, accept):
    """The last event ``accept`` takes on the path to ``node`` inside its function (in the
    nearest preceding statement that has one, in each enclosing block), when that event
    runs unconditionally; None otherwise."""
    child = node
    for anc in ctx.ancestors(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(anc, field, None)
            if isinstance(block, list) and child in block:
                for stmt in reversed(block[: block.index(child)]):
                    found = [e for e in ctx.flow.events_in([stmt]) if accept(e)]
                    if found:
                        last = found[-1]
                        return last if not last.conditions and last.depth == 0 else None
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or parent(anc) is None:
            return None
        child = anc
    return None


def _any_train_call(body, ctx, depth: int = 3) -> bool:
    """A ``x.train(...)`` call on anything that may be a module (``trainable_module.train()``),
    in ``body`` or in same-module functions it calls."""
    for stmt in body:
        for sub in ast.walk(stmt):
            if not isinstance(sub, ast.Call):
                continue
            func = sub.func
            if isinstance(func, ast.Attribute) and func.attr == "train" and \
                    ctx.kind_of(func.value) in (None, "model") and not (
                        sub.args and isinstance(sub.args[0], ast.Constant) and sub.args[0].value is False):
                return True
            callee = ctx.flow.resolve_local_call(sub) if depth > 0 else None
            if callee is not None and _any_train_call(callee.body, ctx, depth - 1):
                return True
    return False


def _set_for_training(eval_call: ast.AST, ctx) -> str | None:
    """``"frozen"``/``"top"`` when ``eval_call`` is a statement of a function that
    then runs its own training loop (backward/step there) without calling the
    model in between: the mode is chosen for training (``"frozen"`` when the file
    also freezes parameters, the linear-probe protocol); None otherwise."""
    func = ctx.enclosing_function(eval_call)
    stmt = parent(eval_call)
    if func is None or not isinstance(stmt, ast.Expr) or stmt not in func.body:
        return None
    receiver = dotted(eval_call.func.value) if isinstance(eval_call.func, ast.Attribute) else None
    loops = [tl.node for tl in ctx.training_loops if ctx.enclosing_function(tl.node) is func
             and (tl.node.lineno, tl.node.col_offset) > (stmt.lineno, stmt.col_offset)]
    if receiver is None or not loops:
        return None
    first = min(loops, key=lambda n: (n.lineno, n.col_offset))
    for sub in ast.walk(func):
        if isinstance(sub, ast.Call) and dotted(sub.func) == receiver and \
                stmt.lineno < sub.lineno < first.lineno:
            return None  # the model is used in eval mode first (a baseline evaluation)
    return "frozen" if _freezes_parameters(ctx) else "top"


def _freezes_parameters(ctx) -> bool:
    for node in ctx.model.nodes_by_type.get(ast.Assign, ()):
        if isinstance(node.value, ast.Constant) and node.value.value is False and any(
                isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets):
            return True
    return any(isinstance(c.func, ast.Attribute) and c.func.attr == "requires_grad_" and c.args and
               isinstance(c.args[0], ast.Constant) and c.args[0].value is False for c in ctx.model.calls)
