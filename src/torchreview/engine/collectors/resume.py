"""Checkpoints and resuming: the save/load index, and the training state a resume
can lose (a skipping loader kept for every epoch, a scaler left out of a state
dict, an update counter rebuilt at 0)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchreview.engine.anchor import Anchor
from torchreview.engine.collectors.registry import CallNames, collects
from torchreview.engine.facts import ClassBuild, CounterRestart, _anchor
from torchreview.engine.facts_checkpoints import argument_facts, checkpoint_facts
from torchreview.engine.semantic import LoopNode, ancestors, parent, position

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext


@collects("checkpoint_json")
def checkpoint_json(ctx: "FileContext", calls: CallNames) -> str:
    """The checkpoint index (engine/facts_checkpoints.py) of a file that saves or loads; of a
    file that only parses command-line arguments, whether they stay a Namespace."""
    m = ctx.model
    if "load" in m.calls_by_name or "save" in m.calls_by_name:
        return checkpoint_facts(ctx).dumps()
    if "parse_args" in m.calls_by_name or "parse_known_args" in m.calls_by_name:
        return argument_facts(ctx).dumps()
    return ""


_SKIPPERS = frozenset({"skip_first_batches", "islice"})


@collects("resume_skips_kept")
def resume_skips_kept(ctx: "FileContext", calls: CallNames) -> tuple[Anchor, ...]:
    """Inside an epoch loop, a conditional ``loader = accelerator.skip_first_batches(loader, n)``
    (or ``itertools.islice``) rebinds the very name the inner loop iterates, so every
    later epoch skips too. In source order."""
    m = ctx.model
    found = []
    for call in sorted((c for name in _SKIPPERS for c in m.calls_by_name.get(name, [])), key=position):
        stmt = parent(call)
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == stmt.targets[0].id):
            continue
        name = stmt.targets[0].id
        chain = list(ancestors(stmt))
        guard = next((a for a in chain if isinstance(a, ast.If)), None)
        loop = next((a for a in chain if isinstance(a, LoopNode)), None)
        if guard is None or loop is None or not any(a is loop for a in ancestors(guard)):
            continue  # not a one-epoch rebinding inside the epoch loop
        stores = [n for n in ast.walk(loop) if isinstance(n, ast.Name) and n.id == name
                  and isinstance(n.ctx, ast.Store)]
        iterated = any(isinstance(n, ast.For) and n is not loop and any(
            isinstance(i, ast.Name) and i.id == name for i in ast.walk(n.iter)) for n in ast.walk(loop))
        if len(stores) == 1 and iterated:
            found.append(_anchor(ctx, stmt))
    return tuple(found)


@collects("state_dicts_without_scaler")
def state_dicts_without_scaler(ctx: "FileContext", calls: CallNames) -> tuple[Anchor, ...]:
    """A class's ``state_dict()`` returns a dict holding an optimizer's ``state_dict()``
    but nothing of the ``GradScaler`` that the class (or the step runner it holds in an
    attribute) builds, and no other place of the file saves that scaler's state."""
    if not any(q.endswith("GradScaler") for q in calls.names):
        return ()  # no scaler built (what the pass below looks for first)
    m = ctx.model
    owners: dict[str, str] = {}  # class name -> attribute holding its GradScaler
    for node in m.nodes_by_type.get(ast.Assign, ()):
        if isinstance(node.value, ast.Call) and (m.qualname(node.value.func) or "").endswith("GradScaler") and \
                len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) and \
                isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self":
            cls = m.enclosing_class(node)
            if cls is not None:
                owners[cls.name] = node.targets[0].attr
    if not owners or any(
            isinstance(c.func, ast.Attribute) and c.func.attr == "state_dict" and isinstance(c.func.value, ast.Attribute)
            and c.func.value.attr in owners.values() for c in m.calls_by_name.get("state_dict", [])):
        return ()
    found = []
    for cls in m.classes.values():
        # the attribute path from this class to a scaler: "" (its own) or "<attr>." (a held runner)
        reach = {"": owners[cls.name]} if cls.name in owners else {}
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                    isinstance(node.value.func, ast.Name) and node.value.func.id in owners and \
                    len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
                reach[node.targets[0].attr + "."] = owners[node.value.func.id]
        method = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "state_dict"), None)
        if not reach or method is None:
            continue
        for ret in (n for n in ast.walk(method) if isinstance(n, ast.Return) and isinstance(n.value, ast.Dict)):
            texts = [ast.unparse(v) for v in ret.value.values if v is not None]
            if any(ret.value.keys[i] is None for i in range(len(ret.value.keys))):
                continue  # **other: unknown entries
            keys = [k.value if isinstance(k, ast.Constant) else "" for k in ret.value.keys]
            if any(t.endswith(".state_dict()") and ("optim" in t or "optim" in str(k))
                   for k, t in zip(keys, texts)) and \
                    not any("scaler" in t.lower() for t in texts):
                found.append(_anchor(ctx, ret))
    return tuple(found)


_COUNTER_PARAMS = frozenset({"updates", "num_updates", "n_updates", "update_count", "step", "steps",
                             "global_step", "optimization_step"})
_COUNTER_KEYS = frozenset({"epoch", "step", "global_step", "iteration", "iter", "updates"})


@collects("counter_classes")
def counter_classes(ctx: "FileContext", calls: CallNames) -> dict[str, Anchor]:
    """Classes whose ``__init__`` takes an update counter (``updates=0``) stored on
    ``self`` and advanced by another method (an EMA's warm-up ramp)."""
    found: dict[str, Anchor] = {}
    for cls in ctx.model.classes.values():
        init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if init is None:
            continue
        args = init.args.args[len(init.args.args) - len(init.args.defaults):]
        counters = {a.arg for a, d in zip(args, init.args.defaults)
                    if a.arg in _COUNTER_PARAMS and isinstance(d, ast.Constant) and d.value == 0}
        if not counters:
            continue
        stored = {t.attr for n in ast.walk(init) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name)
                  and n.value.id in counters for t in n.targets
                  if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
        if stored and any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute) and
                          n.target.attr in stored for f in cls.body if f is not init for n in ast.walk(f)):
            found[cls.name] = _anchor(ctx, cls)
    return found


@collects("built_after_resume")
def built_after_resume(ctx: "FileContext", calls: CallNames) -> tuple[ClassBuild, ...]:
    """``Cls(...)`` called without an update counter (at most two positional arguments,
    no ``**kwargs``) after a counter is read back from a checkpoint
    (``start_epoch = ckpt["epoch"] + 1``) in the same function."""
    m = ctx.model
    restored = _counter_restores(m)
    if not restored:
        return ()
    found = []
    for defs in m.functions.values():
        for func in defs:
            first = restored.get(id(func))
            if first is None:
                continue
            for call in (n for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                         and n.func.id[:1].isupper()):  # a class being built
                if call.lineno > first and not any(k.arg in _COUNTER_PARAMS or k.arg is None
                                                   for k in call.keywords) and len(call.args) <= 2 \
                        and not _counter_set_later(call, func):
                    found.append(ClassBuild(call.func.id, _anchor(ctx, call)))
    return tuple(found)


def _counter_set_later(call: ast.Call, func: ast.AST) -> bool:
    """The built object's counter is assigned after the construction, in the same
    function: ``ema = ModelEMA(model)`` ... ``ema.updates = start_epoch * nb // accumulate``
    (YOLOR, YOLOv5's resume)."""
    stmt = call
    for anc in ancestors(call):
        stmt = anc
        if isinstance(anc, ast.stmt):
            break
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    return any(isinstance(n, ast.Assign) and n.lineno > stmt.lineno and any(
        isinstance(t, ast.Attribute) and t.attr in _COUNTER_PARAMS and isinstance(t.value, ast.Name)
        and t.value.id == name for t in n.targets) for n in ast.walk(func))


def _counter_restores(m) -> dict[int, int]:
    """id(function) -> the first line where it (or a function inside it) assigns a
    value that reads a counter back from a mapping (``start = ckpt["epoch"] + 1``).
    Found from the model's index of subscripts, not by walking every function."""
    first: dict[int, int] = {}
    for sub in m.nodes_by_type.get(ast.Subscript, ()):
        if not (isinstance(sub.slice, ast.Constant) and sub.slice.value in _COUNTER_KEYS
                and isinstance(sub.value, ast.Name)):
            continue
        child, assign = sub, None
        for anc in ancestors(sub):
            if isinstance(anc, ast.Assign):
                assign = anc if child is anc.value else None
                break
            if isinstance(anc, ast.stmt):
                break
            child = anc
        if assign is None:
            continue
        for anc in ancestors(assign):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
                line = first.get(id(anc))
                first[id(anc)] = assign.lineno if line is None else min(line, assign.lineno)
    return first


_RESUME_TESTS = ("resume", "restore", "continu")


def _sets_lr(func: ast.AST) -> bool:
    """The function assigns a learning rate: ``group["lr"] = ...`` or ``x.lr = ...``."""
    return any(isinstance(n, ast.Assign) and any(
        (isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == "lr") or
        (isinstance(t, ast.Attribute) and t.attr == "lr") for t in n.targets) for n in ast.walk(func))


def _feeds_lr(name: str, loop: ast.AST, setters: dict[str, ast.AST]) -> list[bool] | None:
    """Where ``name`` is read, inside ``loop``, by a call of a local LR-setting function or
    by an assignment of a learning rate: for each such read, whether the learning rate it
    sets is a warm-up ramp capped at a constant (``min((itr + 1) / warmup, 1.0)``); None
    when the counter sets no learning rate."""
    ramps = []
    for node in ast.walk(loop):
        if isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node.func, ast.Name) else ""
            parts = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Assign) and _sets_lr(node):
            callee, parts = "", [node.value]
        else:
            continue
        if not (callee in setters or not callee):
            continue
        reads = [(i, p) for i, p in enumerate(parts)
                 if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(p))]
        if not reads:
            continue
        if not callee:
            ramps.append(all(_capped(name, p) for _, p in reads))
            continue
        func = setters[callee]
        params = [a.arg for a in func.args.args]
        if isinstance(parent(func), ast.ClassDef) and params:
            params = params[1:]  # `self.adjust_lr(step)` passes `step` for the second parameter
        if isinstance(node, ast.Call) and not _reaches_lr(func, _fed_params(node, params, reads)):
            continue  # the setter only logs it (`DLLogger.log(step=(epoch, iteration))`): Tacotron 2
        ramp = isinstance(node, ast.Call) and not node.keywords and all(
            i < len(node.args) and i < len(params) and _capped(params[i], func) for i, _ in reads)
        ramps.append(ramp)
    return ramps or None


def _fed_params(call: ast.Call, params: list[str], reads: list[tuple[int, ast.AST]]) -> set[str] | None:
    """The parameters of the called setter that receive the counter's reads (``reads``: index
    into the call's positional then keyword arguments); None when a read's parameter is not
    known (``*args``, an index past the parameters)."""
    out = set()
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    for index, _ in reads:
        if index < len(call.args):
            if index >= len(params):
                return None
            out.add(params[index])
        else:
            out.add(call.keywords[index - len(call.args)].arg)
    return out


def _reaches_lr(func: ast.AST, names: set[str] | None) -> bool:
    """Some learning rate ``func`` assigns depends on ``names`` (its parameters): through
    assignments from them, or by being set under a test, loop or condition that reads
    them. True when not known (``names`` None)."""
    if names is None:
        return True
    tainted = set(names)

    def reads(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id in tainted and isinstance(n.ctx, ast.Load) for n in ast.walk(node))

    def guarded(node: ast.AST) -> bool:  # under a test / loop whose header reads a tainted name
        for anc in ancestors(node):
            if anc is func:
                return False
            header = anc.test if isinstance(anc, (ast.If, ast.While, ast.IfExp)) else \
                anc.iter if isinstance(anc, (ast.For, ast.AsyncFor)) else None
            if header is not None and reads(header):
                return True
        return False

    assigns = [n for n in ast.walk(func) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               and getattr(n, "value", None) is not None]
    for _ in range(8):  # to a fixed point (a few hops of local names)
        before = len(tainted)
        for node in assigns:
            if reads(node.value) or guarded(node):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                tainted.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        if len(tainted) == before:
            break
    for node in assigns:
        if isinstance(node, ast.Assign) and _sets_lr(node) and (reads(node.value) or guarded(node)):
            return True
    return False


def _capped(name: str, tree: ast.AST) -> bool:
    """Every read of ``name`` in ``tree`` lies inside a ``min(..., 1)`` call: the value
    it feeds ramps up to a constant and stays there (a warm-up, no decay)."""
    reads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    if not reads:
        return False
    for read in reads:
        if not any(isinstance(a, ast.Call) and isinstance(a.func, ast.Name) and a.func.id == "min" and any(
                isinstance(x, ast.Constant) and x.value in (1, 1.0) and type(x.value) in (int, float)
                for x in a.args) for a in ancestors(read)):
            return False
    return True


@collects("lr_counter_restarts")
def lr_counter_restarts(ctx: "FileContext", calls: CallNames) -> tuple[CounterRestart, ...]:
    """A training loop resumes at an offset (``for it in range(args.start_iter, ...)``)
    while a counter the learning rate is computed from (``step_index = 0`` before it, ``step_index += 1`` inside,
    read by an LR-setting function or a ``group["lr"] =`` assignment) starts again at
    its initial value: the LR decays already done are undone. Anchored on the resume
    in the same scope (the first statement of an ``if args.resume:`` branch before the
    loop), else on the counter's initial assignment."""
    m = ctx.model
    setters: set[str] | None = None  # found when a resumed loop's counter is asked about (a walk of every function)
    training = [tl.node for tl in ctx.training_loops]
    found = []
    for loop in m.nodes_by_type.get(ast.For, ()):
        it = loop.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and len(it.args) >= 2 and not isinstance(it.args[0], ast.Constant)):
            continue  # not a loop resuming at an offset
        if not any(t is loop or any(a is loop for a in ancestors(t)) for t in training):
            continue
        scope = m.scope_of(loop)
        stores = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                  and m.scope_of(n) is scope]
        seen = set()
        for aug in (n for n in ast.walk(loop) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)):
            name = aug.target.id
            if name in seen:
                continue
            seen.add(name)
            inits = [n for n in stores if n.id == name and n is not aug.target]
            init = parent(inits[0]) if len(inits) == 1 else None
            if not (isinstance(init, ast.Assign) and isinstance(init.value, ast.Constant) and
                    type(init.value.value) is int and init.lineno < loop.lineno and
                    not any(a is loop for a in ancestors(init))):
                continue
            if any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name
                   and not any(a is loop for a in ancestors(n)) for n in ast.walk(scope)):
                continue
            if setters is None:
                setters = {f.name: f for defs in m.functions.values() for f in defs if _sets_lr(f)}
            ramps = _feeds_lr(name, loop, setters)
            if ramps is None:
                continue
            anchor_node = init
            for branch in (n for n in ast.walk(scope) if isinstance(n, ast.If) and n.lineno < loop.lineno
                           and m.scope_of(n) is scope):
                if any(w in ast.unparse(branch.test).lower() for w in _RESUME_TESTS):
                    anchor_node = next((b for b in branch.body if any(isinstance(c, ast.Call) for c in ast.walk(b))
                                        and not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Call)
                                                 and isinstance(b.value.func, ast.Name)
                                                 and b.value.func.id == "print")), anchor_node)
                    break
            found.append(CounterRestart(_anchor(ctx, anchor_node), name, ast.unparse(it.args[0]), all(ramps)))
    return tuple(found)
