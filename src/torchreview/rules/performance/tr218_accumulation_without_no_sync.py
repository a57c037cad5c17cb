from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import FunctionNode, LoopNode, ancestors, dotted, names_accumulation
from torchreview.findings import Fix, Severity
from torchreview.rules._helpers import (loop_idle_by_default, none_at_every_construction, off_at_defaults,
                                        schedule_idle_by_default)

_DDP = frozenset({"torch.nn.parallel.DistributedDataParallel"})
# Anything in the file that already controls DDP's gradient synchronisation.
_SYNC_CONTROL = ("no_sync", "require_backward_grad_sync")


class AccumulationWithoutNoSync(Rule):
    """
    ## What it does
    Flags gradient accumulation on a model wrapped in
    `DistributedDataParallel` when the micro-steps that do not call
    `optimizer.step()` run their backward outside `model.no_sync()`.

    ## Why is this bad?
    DDP all-reduces the gradients at the end of every backward pass. While
    accumulating, only the last micro-step's gradients are ever applied, so
    every other all-reduce is pure communication overhead: with 8 micro-steps
    the step moves 8 times the data across the network and waits for it.
    Running the forward and backward of the other micro-steps inside
    `with model.no_sync():` accumulates locally and synchronises once, with
    the same result.

    ## Example
    ```python
    from torch.nn.parallel import DistributedDataParallel as DDP

    ddp_model = DDP(Net().cuda(rank), device_ids=[rank])
    for step, batch in enumerate(train_loader):
        out = ddp_model(batch["input"])
        (loss_fn(out, batch["label"]) / grad_accum).backward()
        if step % grad_accum == grad_accum - 1:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    ```

    ## Use instead
    ```python
    import contextlib

    from torch.nn.parallel import DistributedDataParallel as DDP

    ddp_model = DDP(Net().cuda(rank), device_ids=[rank])
    for step, batch in enumerate(train_loader):
        sync_now = step % grad_accum == grad_accum - 1
        with contextlib.nullcontext() if sync_now else ddp_model.no_sync():
            out = ddp_model(batch["input"])
            (loss_fn(out, batch["label"]) / grad_accum).backward()
        if sync_now:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    ```

    ## Heuristics
    A training loop accumulates when its optimizer step runs under a modulo
    or `accum`/`micro`-named condition that the backward does not run under
    (any step condition counts when the loss is divided by an `accum`-named
    value, unless both branches of an `if` step), or when backward runs in a
    nested micro-batch loop that does not step. The model is under DDP when a
    model the loop calls was built by `DistributedDataParallel` (any import
    form or alias), followed through names, `self` attributes, `.to()`,
    same-module call arguments and trainer-class constructors, or when the
    file assigns a DDP wrapper to the same name the loop calls. A loop is
    trusted when `no_sync` or `require_backward_grad_sync` is used on its
    micro-step path: in the function that runs the loop, in a `with` around
    it, or in a same-module function the loop calls (two levels deep); a
    mention elsewhere in the file (another training function, an unused
    helper) does not count. Also trusted: loops that call an `accumulate`
    context (Accelerate) or a framework backward (`accelerator.backward(loss)`,
    a DeepSpeed engine, Lightning's `manual_backward`), and loops with a `with` whose
    context is built from the model (`with sync_context(model, last):`, a
    helper from another file). FSDP is out of scope. When the step's modulo
    schedule divides by a command-line option this script declares with
    default 1 (`--grad_accumulation_steps`), nothing accumulates at the
    defaults: low confidence (hidden by default and from `--min-confidence
    medium`: every such finding judged on real code was noise, the shipped
    commands never accumulate), and the message names the option; so is a
    micro-batch loop (`for _ in range(cfg.train.grad_accum_steps):`) whose
    count is 1 at the defaults (the command line, or every shipped
    configuration file), which runs once per step; so is a
    loop whose every DDP wrap sits in a branch the defaults leave off (`if
    args.local_rank != -1: model = DDP(model)`, `--local_rank` defaulting to -1). A DDP wrap
    under `if self.local_rank is not None:` whose class every construction in
    the project builds with `local_rank` None never runs: no finding. The fix is shown, not
    applied: the forward of each non-stepping micro-step has to move into
    the `no_sync()` context as well, which is not a mechanical edit.
    One project, one finding: the same accumulation loop copied into several
    training scripts (FiD's reader and retriever) is one root cause, reported
    once with the other loops as related locations.
    """

    code = "TR218"
    name = "accumulation-without-no-sync"
    severity = Severity.MEDIUM
    severity_reason = ("Waste on the hot path: every micro-step all-reduces all gradients, "
                       "communication that grows with model size and accumulation steps.")
    summary = "gradient accumulation under DDP without `no_sync()`: gradients all-reduced every micro-step"
    summarize = "project"

    def check_file(self, ctx) -> None:
        if not ctx.training_loops:
            return
        wrappers = [c for c in ctx.model.calls if ctx.qualname(c.func) in _DDP]
        # a wrap under `if self.local_rank is not None:` that every construction of the trainer
        # leaves None never runs in this project
        wrappers = [w for w in wrappers if none_at_every_construction(ctx, w) is None]
        if not wrappers:
            return
        for tl in ctx.training_loops:
            if not tl.accumulates or _framework_loop(tl, ctx) or _controls_sync(tl, ctx):
                continue
            backward = _micro_step_backward(tl)
            if backward is None:
                continue
            model = _ddp_model(tl, ctx, wrappers)
            if model is None or _model_context(tl, model):
                continue
            name = ctx.text(model)
            # the factor is a command-line option declared with default 1: nothing accumulates
            # (each backward is followed by a step) unless the user sets it
            idle = next((o for s in tl.events if s.kind == "step" for c in s.conditions
                         if _accumulation_condition(c) for o in [schedule_idle_by_default(ctx, c)]
                         if o is not None), None)
            if idle is None:
                # the micro-batch loop runs once at the defaults (`for _ in range(cfg.grad_accum)`,
                # `grad_accum: 1` in every shipped config): nothing accumulates unless it is raised
                inner = _inner_loop(backward, tl.node)
                idle = loop_idle_by_default(ctx, inner) if inner is not None else None
            when = f" (once `{ctx.text(idle)}` is set above its default 1)" if idle is not None else ""
            # every DDP wrap sits in a branch the command-line defaults leave off (`if
            # args.local_rank != -1: model = DDP(model)`, `--local_rank` defaulting to -1)
            offs = [off_at_defaults(ctx, w) for w in wrappers]
            if idle is None and offs and all(offs):
                idle = wrappers[0]
                when = f" (when `{offs[0]}` holds: the defaults leave the DDP wrap off)"
            ctx.report(backward.anchor,
                       f"gradients are accumulated over micro-steps{when} but `{name}` is a "
                       "`DistributedDataParallel` model: this backward all-reduces them on every "
                       "micro-step although the optimizer only steps every few; run the forward and "
                       f"backward of the non-stepping micro-steps under `with {name}.no_sync():` "
                       f"(e.g. `contextlib.nullcontext() if stepping else {name}.no_sync()`)",
                       fix=Fix("display", (), f"run the forward and backward of each micro-step that does not "
                                             f"step under `with {name}.no_sync():`"),
                       # the shipped defaults never accumulate (minimind-v, pcqm4mv2: judged noise)
                       confidence="low" if idle is not None else None)


def _controls_sync(tl, ctx) -> bool:
    """Synchronisation is controlled on the micro-step path: ``no_sync`` /
    ``require_backward_grad_sync`` (an attribute, a name, a ``getattr`` string, a
    function named for it) appears in the function that runs the training loop,
    in a ``with`` around the loop, or in a same-module function the loop calls
    (two levels). A mention elsewhere in the file (another loop, an unused helper)
    does not count."""
    owner = ctx.enclosing_function(tl.node) or ctx.model.tree
    nodes = list(ctx.model.own_nodes(owner))  # every node that runs in that function, nested scopes aside
    nodes += [sub for anc in ancestors(tl.node) if isinstance(anc, (ast.With, ast.AsyncWith))
              for item in anc.items for sub in ast.walk(item.context_expr)]
    seen: set[int] = {id(owner)}
    frontier = [n for n in nodes if isinstance(n, ast.Call)]
    for _ in range(2):
        called = []
        for call in frontier:
            callee = ctx.flow.resolve_local_call(call)
            if callee is not None and id(callee) not in seen:
                seen.add(id(callee))
                if any(word in callee.name for word in _SYNC_CONTROL):
                    return True
                inner = ctx.model.own_nodes(callee)
                nodes += inner
                called += [n for n in inner if isinstance(n, ast.Call)]
        frontier = called
    for n in nodes:
        if isinstance(n, ast.Attribute) and n.attr in _SYNC_CONTROL:
            return True
        if isinstance(n, ast.Name) and any(word in n.id for word in _SYNC_CONTROL):
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in _SYNC_CONTROL:
            return True
    return False


def _framework_loop(tl, ctx) -> bool:
    """Accelerate / Fabric / DeepSpeed / Lightning handle synchronisation themselves."""
    for e in tl.events:
        if e.kind != "backward" or not isinstance(e.node, ast.Call):
            continue
        func = e.node.func
        if isinstance(func, ast.Attribute) and (func.attr == "manual_backward" or (
                e.node.args and ctx.kind_of(func.value) not in ("tensor", "parameter"))):
            return True
    nodes = tl.nodes if tl.nodes is not None else list(ast.walk(tl.node))
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "accumulate"
               for n in nodes)


def _same_condition(a: ast.AST, b: ast.AST) -> bool:
    if a is b:
        return True
    # an else branch is recorded as a fresh ``not <test>`` for each event
    return (isinstance(a, ast.UnaryOp) and isinstance(b, ast.UnaryOp) and isinstance(a.op, ast.Not)
            and isinstance(b.op, ast.Not) and a.operand is b.operand)


def _complement(a: ast.AST, b: ast.AST) -> bool:
    return (isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.Not) and a.operand is b) or (
        isinstance(b, ast.UnaryOp) and isinstance(b.op, ast.Not) and b.operand is a)


def _accumulation_condition(cond: ast.AST) -> bool:
    return any(isinstance(n, ast.Mod) or (type(n) in (ast.Name, ast.Attribute) and names_accumulation(n))
               for n in ast.walk(cond))


def _divides_by_accumulation(tl) -> bool:
    """``loss / accum_steps`` or ``loss /= accum_steps`` in the loop."""
    nodes = tl.nodes if tl.nodes is not None else list(ast.walk(tl.node))
    for n in nodes:
        if isinstance(n, (ast.BinOp, ast.AugAssign)) and isinstance(n.op, ast.Div):
            divisor = n.right if isinstance(n, ast.BinOp) else n.value
            if any(type(d) in (ast.Name, ast.Attribute) and names_accumulation(d) for d in ast.walk(divisor)):
                return True
    return False


def _gating(step, steps, loose: bool) -> list[ast.AST]:
    """The conditions of ``step`` that skip it on some iterations."""
    out = []
    for cond in step.conditions:
        if _accumulation_condition(cond):
            out.append(cond)
        elif loose and not any(_complement(cond, c) for other in steps for c in other.conditions):
            out.append(cond)
    return out


def _micro_step_backward(tl):
    """A backward event that runs on iterations (or inner micro-batches) where no
    optimizer step follows it, or None."""
    steps = [e for e in tl.events if e.kind == "step"]
    backwards = [e for e in tl.events if e.kind == "backward"]
    if not steps or not backwards:
        return None
    loose = _divides_by_accumulation(tl)
    gates = [_gating(s, steps, loose) for s in steps]
    for b in backwards:
        # every step is skipped on some iterations where this backward runs
        if all(any(not any(_same_condition(g, c) for c in b.conditions) for g in gate) for gate in gates):
            return b
        inner = _inner_loop(b, tl.node)
        if inner is not None and not any(_inside(s, inner) for s in steps):
            return b
    return None


def _loops_above(node: ast.AST, stop: ast.AST) -> list[ast.AST]:
    out = []
    for anc in ancestors(node):
        if anc is stop or isinstance(anc, FunctionNode):
            break
        if isinstance(anc, LoopNode):
            out.append(anc)
    return out


def _inner_loop(event, loop: ast.AST) -> ast.AST | None:
    """The innermost loop, nested in the training loop, that runs ``event``."""
    loops = _loops_above(event.node, loop)
    if event.anchor is not event.node:
        loops += _loops_above(event.anchor, loop)
    return loops[0] if loops else None


def _inside(event, loop: ast.AST) -> bool:
    return any(anc is loop for node in (event.node, event.anchor) for anc in ancestors(node))


def _ddp_model(tl, ctx, wrappers: list[ast.Call]) -> ast.AST | None:
    """A model the loop calls that ``DistributedDataParallel`` built, or None."""
    callees = []
    for e in tl.events:
        if e.kind == "forward" and isinstance(e.node, ast.Call):
            if e.anchor is not e.node and isinstance(e.anchor, ast.Call):
                # run in a helper: name the model as the loop passes it (``loss_of(ddp_model, x)``)
                callees += [a for a in [*e.anchor.args, *(k.value for k in e.anchor.keywords)]
                            if isinstance(a, (ast.Name, ast.Attribute))]
            func = e.node.func
            callees.append(func.value if isinstance(func, ast.Attribute) and func.attr == "forward" else func)
    nodes = tl.nodes if tl.nodes is not None else list(ast.walk(tl.node))
    for n in nodes:
        if isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) or (
                isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "self")) and n.func not in callees:
            callees.append(n.func)
    wrapped_names = {dotted(t) for w in wrappers for t in _assigned_to(w)} - {None}
    for callee in callees:
        if ctx.qualname(callee) is not None:
            continue
        if ctx.flow.wrapping_call(callee, _DDP) is not None:
            return callee
        # same name as a DDP wrapper of this file, and nothing else known to be assigned to it
        if dotted(callee) in wrapped_names and all(v is callee for v in ctx.flow.values_of(callee, depth=1)):
            return callee
    return None


def _model_context(tl, model: ast.AST) -> bool:
    """A ``with`` in the loop whose context is built from the model
    (``with sync_context(model, last):``, ``with model.join():``): a helper that
    may control synchronisation, trusted."""
    name = dotted(model)
    nodes = tl.nodes if tl.nodes is not None else list(ast.walk(tl.node))
    for n in nodes:
        if not isinstance(n, (ast.With, ast.AsyncWith)):
            continue
        for item in n.items:
            call = item.context_expr
            if isinstance(call, ast.Call) and (
                    any(dotted(a) == name for a in [*call.args, *(k.value for k in call.keywords)])
                    or (isinstance(call.func, ast.Attribute) and dotted(call.func.value) == name)):
                return True
    return False


def _assigned_to(call: ast.Call) -> list[ast.AST]:
    for anc in ancestors(call):
        if isinstance(anc, ast.Assign):
            return anc.targets
        if isinstance(anc, ast.stmt):
            return []
    return []
