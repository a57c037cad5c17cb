"""Collector of the checkpoint save/load index (``engine/checkpoint_index.py``).

``checkpoint_facts(ctx)`` reads every ``torch.save`` / ``torch.load`` of one file
through the semantic model and returns a ``CheckpointIndex``; ``collect_facts``
stores it on ``FileFacts.checkpoints``.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchreview.engine.checkpoint_index import (
    CONFIG, MODEL_STATE, MODULE, NAMESPACE, NUMPY, OPTIMIZER_STATE, PLAIN, SCALER_STATE, SCHEDULER_STATE, STATE, UNKNOWN,
    CheckpointIndex, CheckpointSave, SavedEntry,
)
from torchreview.engine.facts import _anchor
from torchreview.engine.facts_checkpoint_loads import (
    _MODEL_WORDS, _STATE_TARGETS, LoadFollowing, _class_names, _no_momentum, _positions_scheduler, _str,
)
from torchreview.engine.names import MODEL_RETURNING_METHODS
from torchreview.engine.semantic import dotted
from torchreview.engine.semantic_common import ancestors, argument_for, excluded_by_flag, exclusive_branches, \
    exits_before, parent

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext

_WRAPPERS = {
    "torch.nn.DataParallel": "module.",
    "torch.nn.parallel.DataParallel": "module.",
    "torch.nn.parallel.DistributedDataParallel": "module.",
    "torch.nn.parallel.distributed.DistributedDataParallel": "module.",
    "torch.nn.parallel.data_parallel.DataParallel": "module.",
    "torch.compile": "_orig_mod.",
}
_UNWRAP_ATTRS = {"module": "module.", "_orig_mod": "_orig_mod."}
_CONFIG_FACTORIES = frozenset({
    "omegaconf.OmegaConf.create", "omegaconf.OmegaConf.load", "omegaconf.OmegaConf.merge",
    "omegaconf.OmegaConf.structured", "types.SimpleNamespace", "easydict.EasyDict",
    "ml_collections.ConfigDict", "ml_collections.config_dict.ConfigDict", "yacs.config.CfgNode",
})
# the class a config factory's result has (what a weights-only load is missing)
_CONFIG_TYPES = {"omegaconf.OmegaConf.create": "DictConfig", "omegaconf.OmegaConf.load": "DictConfig",
                 "omegaconf.OmegaConf.merge": "DictConfig", "omegaconf.OmegaConf.structured": "DictConfig",
                 "types.SimpleNamespace": "SimpleNamespace", "easydict.EasyDict": "EasyDict",
                 "ml_collections.ConfigDict": "ConfigDict", "ml_collections.config_dict.ConfigDict": "ConfigDict",
                 "yacs.config.CfgNode": "CfgNode"}
_CONFIG_CLASS = re.compile(r"(Config|Cfg|Conf|Args|Arguments|Params|Hparams|HParams|Options|Settings)$")
# NumPy calls whose result is an array or a NumPy scalar (never a Python number)
_NUMPY_MAKERS = frozenset(f"numpy.{n}" for n in (
    "random.get_state", "array", "asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "stack",
    "concatenate", "vstack", "hstack", "mean", "std", "var", "median", "sum", "max", "min", "argmax", "argmin",
    "float32", "float64", "int32", "int64"))
# torch functions that hand back whatever a file holds, not a tensor
_LOADS = frozenset({"torch.load", "torch.serialization.load", "torch.hub.load", "torch.jit.load"})
_PLAIN_CALLS = frozenset({"builtins.vars", "dataclasses.asdict", "omegaconf.OmegaConf.to_container",
                          "omegaconf.OmegaConf.to_yaml", "builtins.dict", "builtins.str", "builtins.int",
                          "builtins.float", "builtins.list", "copy.deepcopy"})
_NAMESPACE_NAMES = frozenset({"args", "opt", "opts", "hparams", "flags", "cmd_args", "arguments"})
_COUNTER_WORDS = ("epoch", "step", "iter")


def _namespace_name(name: str) -> bool:
    """``args``, ``opt`` or a qualified one (``model_opt``, ``train_args``, ``self.model_opt``):
    the options object of a script, known by its name only."""
    return name in _NAMESPACE_NAMES or ("_" in name and name.rsplit("_", 1)[-1] in ("args", "opt", "opts"))
# torch.nn names that build tensors, not modules: a weights-only load accepts them
# (t2g-former's saved `boost_rate = nn.Parameter(...)`, judged false in nr60)
_TENSOR_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer",
                             "torch.nn.parameter.Buffer"})
# Optimizers with per-parameter adaptive step sizes (Adam and its variants, RMSprop,
# Adagrad, Adadelta, Adafactor, LAMB): the class names they are built with.
_ADAPTIVE = re.compile(r"^(?:[A-Z]\w*)?(?:Adam|RMSprop|Adagrad|Adadelta|Adafactor|Lamb|LAMB)(?:W|ax)?(?:\d+bit)?$")


# module methods that return the module itself (a rebinding through them keeps its wraps)
_RETURNS_SELF = frozenset({"train", "eval", "to", "cuda", "cpu", "float", "half", "double", "bfloat16",
                           "requires_grad_", "share_memory", "apply", "zero_grad"})


def _same_module_again(value: ast.AST, name: str) -> bool:
    """``model = model.train()`` / ``model.to(device)``: the same module object returned by
    one of its own methods, still wrapped as it was (Korean-FastSpeech2's ``model =
    model.train()`` after ``model = nn.DataParallel(...)``), not a fresh model."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _RETURNS_SELF:
        value = value.func.value
    return dotted(value) == name


def _wrap_tested_around(name: str, at: ast.AST) -> bool:
    """``at`` runs in a branch of a test of whether model ``name`` is wrapped
    (``hasattr(name, "module")``, ``isinstance(name, (DataParallel, DDP))``): the code
    picks the layer itself, so its prefix is not one fixed answer (M2M_VFI's
    ``net.load_state_dict(s) if hasattr(net, 'module') == False else net.module...``)."""
    node = at
    for up in ancestors(at):
        if isinstance(up, (ast.If, ast.IfExp, ast.While)) and node is not up.test:
            for sub in ast.walk(up.test):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and len(sub.args) == 2 and \
                        dotted(sub.args[0]) == name and (
                            sub.func.id == "hasattr" and isinstance(sub.args[1], ast.Constant)
                            and sub.args[1].value in ("module", "_orig_mod") or
                            sub.func.id == "isinstance" and any(w in ast.unparse(sub.args[1]) for w in
                                                                ("DataParallel", "OptimizedModule"))):
                    return True
        if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            return False
        node = up
    return False


def _guarded_unwrap(value: ast.AST, name: str, at: ast.AST) -> bool:
    """``value`` is ``name.module`` (or ``._orig_mod``) assigned back to ``name`` in the body of an
    ``if`` that tests whether ``name`` is wrapped, an ``if`` that runs before ``at`` and does not
    hold it: after that statement the model is unwrapped whichever way the test went."""
    if not (isinstance(value, ast.Attribute) and value.attr in _UNWRAP_ATTRS and dotted(value.value) == name):
        return False
    stmt = parent(value)
    guard = parent(stmt)
    if not (isinstance(guard, ast.If) and stmt in guard.body and not guard.orelse) or \
            any(a is guard for a in ancestors(at)) or not _runs_before(guard, at):
        return False
    return _wrap_tested_around(name, stmt)


def _unbound_attribute(ctx: "FileContext", func: ast.AST) -> bool:
    """``func`` is ``self.<attr>.<method>`` in a class with no base class (nothing it inherits
    could bind the attribute) while nothing in the file binds ``<attr>`` on any object (an
    assignment, an annotated or augmented one, ``setattr``): the call would raise, so it is
    no evidence of what the attribute holds."""
    receiver = func.value if isinstance(func, ast.Attribute) else None
    if not (isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name)
            and receiver.value.id == "self"):
        return False
    cls = ctx.enclosing_class(receiver)
    if cls is None or cls.bases or cls.keywords:
        return False
    attr, by_type = receiver.attr, ctx.model.nodes_by_type
    for node in by_type.get(ast.Attribute, ()):
        if node.attr == attr and isinstance(node.ctx, (ast.Store, ast.Del)):
            return False
    return not any(dotted(c.func) == "setattr" for c in ctx.model.calls_by_name.get("setattr", ())) and \
        "__dict__" not in ctx.source.text


def checkpoint_facts(ctx: "FileContext") -> CheckpointIndex:
    m = ctx.model
    saves, loads, registered = [], [], []
    collector = _Collector(ctx)
    wrappers: list[str] = []
    for call in sorted(m.calls, key=lambda c: (c.lineno, c.col_offset)):
        q = m.qualname(call.func)
        if q == "torch.save":
            save = collector.save(call)
            if save.entries or save.path_pattern or save.path_names:
                saves.append(save)
            wrapper = collector.save_wrapper(call)
            if wrapper:
                wrappers.append(wrapper)
        elif q != "torch.save" and collector.helper_save_name(call):
            saves.append(collector.save(call, via=collector.helper_save_name(call)))
        elif q == "torch.load":
            loads.append(collector.load(call))
        elif q == "torch.serialization.add_safe_globals":
            registered.extend(_class_names(call, m))
    # a scheduler step that can run: not one in a method or function nothing calls (one-shot
    # siamese's `decay_lr()`, whose only call and whose scheduler were commented out: judged
    # false in blind test 61)
    # and not one on an attribute of a base-less class that nothing binds (seqrec's
    # `self.scheduler.step()` behind a config test, its construction commented out: judged false
    # in blind test 67's focused pass)
    # (and which classes step one: another class's scheduler is not restarted by a load in this
    # one -- a text-classification trainer module whose LLM trainer steps a warm-up schedule and
    # whose DNN trainer has none: a resume "restarting" it judged false in blind test 84)
    stepping = [c for c in m.calls_by_name.get("step", ())
                if ctx.flow.classify(c) == "sched_step" and not _unbound_attribute(ctx, c.func) and
                ctx.call_paths.never_runs(c.lineno, ctx.source.is_notebook, branches=False) is None
                and not _built_per_call(ctx, c)]
    sched = bool(stepping)
    owners = tuple(sorted({getattr(ctx.enclosing_class(c), "name", "") for c in stepping}))
    # a `GradScaler` built once holds a loss scale across steps; one built anew inside the
    # batch/epoch loop (IGEV-MVS builds one per batch) has no state a resume could restore
    scaler = any((m.qualname(c.func) or "").endswith("GradScaler") and ctx.flow.repeating_loop(c) is None
                 for c in m.calls)
    # an entry script: it parses its arguments or runs under a `__main__` guard (a config
    # parser of the project may call `parse_args` for it: `ConfigParser.from_args(args)`)
    parses = "parse_args" in m.calls_by_name or "parse_known_args" in m.calls_by_name or any(
        isinstance(s, ast.If) and ctx.flow.is_main_guard(s.test) for s in m.tree.body)
    optimizers = [c for c in m.calls if (m.qualname(c.func) or "").startswith("torch.optim.")
                  and (m.qualname(c.func) or "").count(".") == 2 and (m.qualname(c.func) or "")[12:13].isupper()]
    stateless = bool(optimizers) and all(m.qualname(c.func) == "torch.optim.SGD" and _no_momentum(ctx, c)
                                         for c in optimizers)
    # an adaptive optimizer the script builds with its default options: not one behind an option
    # the defaults leave off (HardNet's `elif args.optimizer == 'adam':` with `--optimizer sgd`
    # by default: the Adam wording judged noise in blind test 62)
    # (and one with a first moment: Adam with `betas=(0.0, 0.99)`, the GAN setting, steps by
    # g/sqrt(v) all along, so a restart changes no step size: CityDreamer's and BUTD-DETR's
    # resumes, judged noise in blind tests 47 and 48)
    adaptive = any(_ADAPTIVE.search((m.qualname(c.func) or "").rsplit(".", 1)[-1]) and
                   ctx.options.ruling_test(c) is None and not _no_first_moment(c) for c in m.calls)
    optimized = sorted({name for c in optimizers for name in _optimized(c)})
    return CheckpointIndex(saves=tuple(saves), loads=tuple(loads), safe_globals=tuple(sorted(set(registered))),
                           parses_args=parses, parsed_args=_parsed_args(m),
                           uses_scaler=scaler, steps_scheduler=sched,
                           scheduler_owners=owners,
                           save_helpers=tuple(sorted(set(wrappers))), stateless_optimizer=stateless,
                           positions_scheduler=_positions_scheduler(m), adaptive_optimizer=adaptive,
                           optimized=tuple(optimized), fixed_start=_fixed_start(ctx))


def _fixed_start(ctx) -> bool:
    """Every training loop of the file runs under an epoch loop ``for ... in range(...)`` whose
    start is a literal (``range(self.epoch)``, ``range(1, EPOCHS + 1)``): a resumed counter
    cannot move where training starts. False with no training loop, or one without such an
    epoch loop (a ``while``, a start read from an option or the checkpoint)."""
    loops = ctx.training_loops
    if not loops:
        return False
    for tl in loops:
        outer = tl.epoch_loop
        it = getattr(outer, "iter", None)
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and
                it.args and not it.keywords):
            return False
        if len(it.args) > 1 and not isinstance(it.args[0], ast.Constant):
            return False
    return True


def _optimized(optimizer: ast.Call) -> set[str]:
    """The models whose ``.parameters()`` (or ``named_parameters()``) an optimizer's first
    argument reads (``SGD(model.parameters())``, ``Adam([{"params": net.head.parameters()}])``
    -> the receiver's text); ``{"?"}`` when it reads none (a list built elsewhere)."""
    first = optimizer.args[0] if optimizer.args else next(
        (k.value for k in optimizer.keywords if k.arg == "params"), None)
    if first is None:
        return {"?"}
    found = {dotted(n.func.value) or "?" for n in ast.walk(first) if isinstance(n, ast.Call) and
             isinstance(n.func, ast.Attribute) and n.func.attr in ("parameters", "named_parameters")}
    return found or {"?"}


def _agreed(results):
    """The one classification (kind, prefix, certain, type name) all ``results`` share (known
    kinds only; certain when each is), or None."""
    if not results or any(r[0] == UNKNOWN for r in results) or len({(r[0], r[1], r[3]) for r in results}) != 1:
        return None
    kind, prefix, _, type_name = results[0]
    return kind, prefix, all(r[2] for r in results), type_name


class _Collector(LoadFollowing):
    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx
        self.m = ctx.model
        self._param_hops = 0  # parameters followed to their call sites, in the current question
        self._wraps: dict[tuple[int, str], list[tuple[int, str, ast.AST]]] | None = None
        self._renames: tuple[str, ...] | None = None
        self._keyed: set[str | None] | None = None  # names the file reads with a string key

    # ------------------------------------------------------------ wrapping
    def wraps(self) -> dict[tuple[int, str], list[tuple[int, str, ast.AST]]]:
        """(scope id, dotted target) -> [(line, prefix, node)] of ``x = DDP(...)``-style wraps."""
        if self._wraps is None:
            self._wraps = {}
            for node in self.m.nodes_by_type.get(ast.Assign, ()):
                prefix = self._wrap_prefix(node.value)
                if not prefix:
                    continue
                for target in node.targets:
                    name = dotted(target)
                    if name:
                        self._wraps.setdefault(self._scope_key(target, name), []).append(
                            (node.lineno, prefix, node))
        return self._wraps

    def _handed_in_prefix(self, wrap: ast.AST, depth: int) -> str | None:
        """The prefix of the model the innermost argument of ``wrap`` (an ``x = DDP(...)``
        statement) holds when that argument is a parameter of its function: what every call
        site of this file passes (a class's ``__init__``: its ``Cls(...)`` calls), "" when it
        is no parameter or nothing here calls the function, None when the sites disagree or
        one is unknown."""
        value = getattr(wrap, "value", None)
        while isinstance(value, ast.Call):
            if isinstance(value.func, ast.Attribute) and value.func.attr in ("cuda", "to", "cpu", "float", "half") \
                    and isinstance(value.func.value, ast.Call):
                value = value.func.value
            elif _WRAPPERS.get(self.m.qualname(value.func) or "") is not None and value.args:
                value = value.args[0]
            else:
                break
        if not isinstance(value, ast.Name) or not depth:
            return ""
        values, func = self.m.assignments(value)
        if values or func is None or not isinstance(getattr(func, "args", None), ast.arguments):
            return ""
        owner = parent(func)
        params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
        if func.name == "__init__" and isinstance(owner, ast.ClassDef):
            sites = [c for c in self.m.calls_by_name.get(owner.name, ()) if isinstance(c.func, ast.Name)]
            params = params[1:]  # `Trainer(model, ...)`: no `self` at the call
        else:
            sites = self.ctx.flow.call_sites(func)
            if params and params[0] in ("self", "cls"):
                params = params[1:]
        found = set()
        for site in sites:
            arg = next((k.value for k in site.keywords if k.arg == value.id), None)
            if arg is None and value.id in params and params.index(value.id) < len(site.args) and \
                    not any(isinstance(a, ast.Starred) for a in site.args):
                arg = site.args[params.index(value.id)]
            if arg is None:
                continue  # left at its default, or passed through `*args`: no model of the call's own
            found.add(self.prefix_of(arg, site, depth - 1))
        if not found:
            return ""
        return found.pop() if len(found) == 1 else None

    def _wrap_prefix(self, value: ast.AST) -> str:
        """``DDP(torch.compile(m))`` -> "module._orig_mod." ("" when not a wrapper call)."""
        prefix = ""
        while isinstance(value, ast.Call):
            if isinstance(value.func, ast.Attribute) and value.func.attr in ("cuda", "to", "cpu", "float", "half") \
                    and isinstance(value.func.value, ast.Call):
                value = value.func.value  # `DataParallel(model).cuda()`: the wrapper, moved
                continue
            outer = _WRAPPERS.get(self.m.qualname(value.func) or "")
            if outer is None or not value.args:
                break
            prefix += outer
            value = value.args[0]
        return prefix

    def _scope_key(self, node: ast.AST, name: str) -> tuple[int, str]:
        if name.startswith("self."):
            return id(self.ctx.enclosing_class(node)), name
        return id(self.m.scope_of(node)), name

    def prefix_of(self, expr: ast.AST, at: ast.AST, depth: int = 3) -> str | None:
        """The state-dict key prefix of model ``expr`` at node ``at`` ("" unwrapped, None unknown)."""
        return self._wrapped_at(expr, at, depth)[0]

    def wrap_option(self, expr: ast.AST, at: ast.AST) -> str:
        """The command-line option (its text) under which every wrap of ``expr`` in effect at
        ``at`` runs, when the script's defaults leave it off (``if params.isPar: model =
        DataParallel(model)``, ``--isPar`` defaulting to False); "" otherwise."""
        prefix, wraps = self._wrapped_at(expr, at, 3)
        if not prefix or not wraps:
            return ""
        guards = [self._off_by_default_guard(node) for node in wraps]
        return guards[0] if all(guards) else ""

    def _off_by_default_guard(self, node: ast.AST) -> str:
        """The option test of an enclosing ``if`` that rules ``node`` out at the script's
        defaults (``ctx.options.ruling_test``), as text; "" when none."""
        test = self.ctx.options.ruling_test(node)
        return self.ctx.text(test) if test is not None else ""

    def _wrapped_at(self, expr: ast.AST, at: ast.AST, depth: int) -> tuple[str | None, list[ast.AST]]:
        """(prefix, the wrap statements in effect) of model ``expr`` at ``at``; the wraps are
        listed only when they are this name's own (not followed through ``.module`` or an
        attribute it was assigned from)."""
        if isinstance(expr, ast.Attribute) and expr.attr in _UNWRAP_ATTRS:
            inner = self.prefix_of(expr.value, at, depth - 1) if depth else None
            strip = _UNWRAP_ATTRS[expr.attr]
            return (inner[len(strip):] if inner and inner.startswith(strip) else ""), []
        name = dotted(expr)
        if not name or name.count(".") > 1 or (name.count(".") == 1 and not name.startswith("self.")):
            return None, []
        if _wrap_tested_around(name, at):
            return None, []  # `m.load_state_dict(s) if not hasattr(m, "module") else m.module.load_state_dict(s)`
        values, func = self.m.assignments(expr)
        later = name.startswith("self.")  # wraps elsewhere have run before (or are sorted out below)
        if name.startswith("self."):
            wraps = self._attribute_wraps(self.wraps().get(self._scope_key(expr, name), ()), at)
            if wraps is None:
                return None, []
        else:
            # the scope that binds the name (a global read in a function: every wrap has run)
            scopes = {id(self.m.scope_of(v)): self.m.scope_of(v) for v in values}
            wraps = [w for s in scopes for w in self.wraps().get((s, name), ())]
            later = any(s is not self.m.scope_of(expr) for s in scopes.values())
        if not later and not name.startswith("self."):
            # a plain rebinding that always runs before `at` builds a fresh, unwrapped model: the
            # wraps before it are gone (chan-dst: `model = BeliefTracker(...)` again for the
            # evaluation, after the training's `model = DataParallel(model)`)
            scope = self.m.scope_of(expr)
            wrap_lines = {line for line, _, _ in wraps}
            # (also a rebinding earlier in a block that holds `at`: iurww's per-fold
            # `model = SigLIPClassifier(...)` before each fold's load, in the inference loop after
            # the training loop's `model = DDP(model)`)
            resets = [parent(v).lineno for v in values if isinstance(parent(v), ast.Assign) and
                      self.m.scope_of(v) is scope and _runs_before(parent(v), at) and
                      parent(v).lineno not in wrap_lines and parent(v).lineno < at.lineno and
                      not _same_module_again(v, name)]
            # ... and an unwrap guarded by the test of being wrapped (`if isinstance(model,
            # nn.DataParallel): model = model.module`): unwrapped after it either way (MASKER's
            # train.py before its save, judged false in blind test 127)
            resets += [parent(v).lineno for v in values if isinstance(parent(v), ast.Assign) and
                       self.m.scope_of(v) is scope and parent(v).lineno < at.lineno and
                       _guarded_unwrap(v, name, at)]
            if resets:
                wraps = [w for w in wraps if w[0] > max(resets)]
        before: list[tuple[int, str, ast.AST]] = []
        for line, prefix, node in sorted(((line, prefix, node) for line, prefix, node in wraps
                                          if (line <= at.lineno or later) and not exclusive_branches(node, at)
                                          and not exits_before(node, at) and not excluded_by_flag(node, at)
                                          and not self._never_taken(node)),
                                         key=lambda w: w[0]):
            alternatives = [w for w in before if exclusive_branches(w[2], node)]
            if alternatives:  # `if ddp: model = DDP(model) else: model = DataParallel(model)`: one of them ran
                if any(w[1] != prefix for w in alternatives):
                    return None, []
                continue
            before.append((line, prefix, node))
        if before:
            # the first wrap may wrap a model its function is handed (`self.model = DDP(model)` in a
            # trainer's `__init__`): what the callers pass may be wrapped already (a DDP model
            # wrapped again, so `self.model.module.state_dict()` keeps a `module.` prefix)
            inner = self._handed_in_prefix(before[0][2], depth)
            if inner is None:
                return None, []
            return "".join(prefix for _, prefix, _ in reversed(before)) + inner, [node for _, _, node in before]
        if not values or func is not None:
            return None, []  # a parameter or never assigned here: the caller may have wrapped it
        if len(values) == 1 and isinstance(values[0], ast.Attribute) and depth:
            return self.prefix_of(values[0], at, depth - 1), []
        if len(values) == 1 and isinstance(values[0], ast.Name) and name.startswith("self.") and depth:
            # `self.model = model` in `__init__`: what the name held there (a parameter: the
            # caller may have wrapped it -- a trainer handed a DataParallel model by its script)
            return self.prefix_of(values[0], values[0], depth - 1), []
        if any(isinstance(v, (ast.IfExp, ast.BoolOp)) or (isinstance(v, ast.Call) and self._unwrap_call(v))
               for v in values):
            return None, []  # `model.module if ddp else model`, unwrap_model(...): depends
        # `best_model = None` before the loop binds no model: the other bindings decide
        values = [v for v in values if not (isinstance(v, ast.Constant) and v.value is None)] or values
        # `best_model = model` (an alias) or `copy.deepcopy(model)`: the module the model was,
        # with the wrapper it had there (dorisduan06's `best_model = model` after a conditional
        # DataParallel wrap, judged false in blind test 130)
        copies = [v if isinstance(v, ast.Name) and v.id != name else _copied(self.m, v) for v in values]
        if any(c is not None for c in copies):
            # `ema = copy.deepcopy(model).eval()`: the copy has the wrapper the model had there
            # (CityDreamer's EMA generator, copied from its DDP generator)
            found = {self.prefix_of(c, v, depth - 1) if c is not None and depth else
                     (None if c is not None else "") for c, v in zip(copies, values)}
            return (found.pop() if len(found) == 1 else None), []
        return "", []

    def _never_taken(self, node: ast.AST) -> bool:
        """``node`` sits on a branch whose test never takes it: ``if device == 'cuda':`` with
        ``device`` a ``torch.device`` (never equal to a string; the model's devices concept), ``if
        torch.cuda.device_count() > 1:`` in a module that makes one GPU visible, or a
        module-level test that literals stored once before it fix (``Values.fixed_test``: a
        script forcing ``gpu_start, gpu_finish = 0, 0`` before ``if gpu_finish - gpu_start >= 1:``)."""
        child = node
        for anc in ancestors(node):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)):
                return False
            if isinstance(anc, ast.If):
                value = self.m.devices.string_test_value(anc.test)
                if value is None:  # `if torch.cuda.device_count() > 1:` with one GPU made visible
                    value = self.m.devices.device_count_test_value(anc.test)
                if value is None:  # `gpu_start, gpu_finish = 0, 0` then `if gpu_finish - gpu_start >= 1:`
                    value = self.ctx.flow.fixed_test(anc.test)
                if value is False and any(child is s for s in anc.body):
                    return True
                if value is True and any(child is s for s in anc.orelse):
                    return True
            child = anc
        return False

    def _attribute_wraps(self, wraps, at: ast.AST):
        """Wraps of ``self.x`` that are in effect at ``at``: those of the same method
        before it, else those of ``__init__`` unless ``at``'s method is called from
        ``__init__`` before the wrap (``self._load(); self.model = DDP(self.model)``).
        None when the wraps are in other methods (order unknown)."""
        func = self.ctx.enclosing_function(at)
        same = [w for w in wraps if self.ctx.enclosing_function(w[2]) is func]
        if same:
            return [w for w in same if w[0] <= at.lineno]
        others = [w for w in wraps if getattr(self.ctx.enclosing_function(w[2]), "name", "") == "__init__"]
        if len(others) != len(wraps):
            return None
        if func is not None and others:
            first = min(w[0] for w in others)
            init = self.ctx.enclosing_function(others[0][2])
            if any(self.ctx.enclosing_function(site) is init and site.lineno < first
                   for site in self.ctx.flow.call_sites(func)):
                return []  # runs in __init__ before the wrap
        return others

    def _unwrap_call(self, call: ast.Call) -> bool:
        name = (dotted(call.func) or "").rsplit(".", 1)[-1]
        return "unwrap" in name or "parallel" in name or name == "getattr"

    def renamed_prefixes(self) -> tuple[str, ...]:
        """The wrapper prefixes this file rewrites in state-dict keys: ``module.`` /
        ``_orig_mod.`` named in a string (``k.replace("module.", "")``,
        ``consume_prefix_in_state_dict_if_present(sd, "_orig_mod.")``) or sliced off by
        length (``k[7:]``, ``k[10:]``); "*" for a prefix helper defined elsewhere (unknown)."""
        if self._renames is None:
            found: set[str] = set()
            for node in self.m.nodes_by_type.get(ast.Constant, ()):
                if isinstance(node.value, str) and not isinstance(getattr(node, "_tr_parent", None), ast.Expr):
                    if "_orig_mod" in node.value:  # (docstrings and comments do not rename anything)
                        found.add("_orig_mod.")
                    if "module." in node.value:
                        found.add("module.")
            for node in self.m.nodes_by_type.get(ast.Slice, ()):
                if isinstance(node.lower, ast.Constant) and node.lower.value in (7, 10):
                    found.add("module." if node.lower.value == 7 else "_orig_mod.")
            defined = {f.name for t in (ast.FunctionDef, ast.AsyncFunctionDef) for f in self.m.nodes_by_type.get(t, ())}
            for name, calls in self.m.calls_by_name.items():
                low = name.lower()
                if ("prefix" in low or ("strip" in low and "state" in low) or "consume" in low) and \
                        name not in defined and not any(_str(a) for c in calls for a in c.args):
                    found.add("*")
            self._renames = tuple(sorted(found))
        return self._renames

    # ------------------------------------------------------------ saves
    def save_wrapper(self, call: ast.Call) -> str:
        """The name of the function this ``torch.save`` is the body of, when that function
        passes its own first parameter (or ``*args``) as the saved object: a project save
        helper (``save_on_master(*args, **kwargs)``, ``save_checkpoint(state, filename)``)."""
        func = self.ctx.enclosing_function(call)
        if func is None or isinstance(func, ast.Lambda) or not call.args:
            return ""
        first = call.args[0]
        params = [a.arg for a in func.args.posonlyargs + func.args.args if a.arg not in ("self", "cls")]
        if isinstance(first, ast.Starred) and func.args.vararg is not None and \
                isinstance(first.value, ast.Name) and first.value.id == func.args.vararg.arg:
            return func.name
        if isinstance(first, ast.Name) and params and first.id == params[0]:
            return func.name
        return ""

    def helper_save_name(self, call: ast.Call) -> str:
        """``utils.save_on_master({...}, path)``: a call that may reach a project save
        helper (the name says ``save``; the project decides, ``CheckpointIndex.save_helpers``)."""
        name = call.func.attr if isinstance(call.func, ast.Attribute) else \
            call.func.id if isinstance(call.func, ast.Name) else ""
        if "save" not in name.lower() or not call.args or isinstance(call.args[0], ast.Starred):
            return ""
        if isinstance(call.func, ast.Attribute):
            # a function of an imported project module (`utils.save_on_master`), not a method of
            # some object (`image.save(...)`, `plt.savefig(...)`) nor a library function
            receiver = call.func.value
            if not (isinstance(receiver, ast.Name) and receiver.id in self.m.aliases) or \
                    (self.m.qualname(call.func) or "").startswith(("torch.", "numpy.", "pickle.", "json.")):
                return ""
        return name

    def save(self, call: ast.Call, via: str = "") -> CheckpointSave:
        ctx = self.ctx
        obj = ctx.arg(call, "obj", 0)
        path = ctx.arg(call, "f", 1)
        if via:
            path = path if path is not None else next(
                (kw.value for kw in call.keywords if kw.arg and ("path" in kw.arg or "file" in kw.arg)), None)
        entries: tuple[SavedEntry, ...] = ()
        complete = False
        if obj is not None:
            dict_entries = self._dict_entries(obj)
            if dict_entries is not None:
                # each value as of where it is computed: a dict built before the save (in the
                # `if MULTIGPU is False:` branch, away from the `if MULTIGPU is True:` wrap) holds
                # the state dict of the model as it was there (alpha-protein, judged false in
                # blind test 82)
                entries, complete = tuple(self.entry(k, v, v if v.lineno < call.lineno else call)
                                          for k, v in dict_entries[0]), dict_entries[1]
            else:
                entries, complete = (self.entry("", obj, call),), True
        pattern, names = self.path(path) if path is not None else (None, ())
        pickler = ctx.arg(call, "pickle_module", 2) if not via else None
        return CheckpointSave(anchor=_anchor(ctx, call), entries=entries, complete=complete,
                              path_pattern=pattern, path_names=names, function=self._function(call), via=via,
                              pickle_module=(ctx.qualname(pickler) or "") if pickler is not None else "",
                              copies_loads=self._copied_loads(obj) if obj is not None else (),
                              never_runs=self._switched_off(call))

    def _switched_off(self, call: ast.Call) -> str:
        """Why the save never runs, when its module-level function is one nothing in the project
        calls and a call of it is written out and commented out (``# save_checkpoint(...)``:
        the author turned the save off); "" otherwise (a function nothing names at all may be
        called in ways the project does not spell)."""
        ctx = self.ctx
        func = ctx.enclosing_function(call)
        while func is not None and ctx.enclosing_function(func) is not None:
            func = ctx.enclosing_function(func)
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) or ctx.source.is_notebook or \
                not ctx.call_paths.unused_function(func) or not ctx.call_paths.call_commented_out(func.name):
            return ""
        return f"the only call of `{func.name}` is commented out"

    def _copied_loads(self, obj: ast.AST) -> tuple[int, ...]:
        """Lines of the ``torch.load`` calls whose result a name in the saved object is
        bound to (``saved["epoch"]``, ``saved["encoder"].state_dict()``, ``saved`` itself),
        looking one step into a dict built by name before the save."""
        exprs = [obj]
        reaching = self.ctx.flow.reaching_value_strict(obj) if isinstance(obj, ast.Name) else None
        if reaching is not None and reaching is not obj:
            # the binding that reaches the save (`checkpoint = {...}` built in the epoch loop after
            # `checkpoint = torch.load(...)` of the resume: a fresh dict, no copy of what was read;
            # usatie's translation trainer, judged false in blind test 131)
            exprs = [reaching]
        elif isinstance(obj, ast.Name):
            values, func = self.m.assignments(obj)
            if func is None:
                exprs += [v for v in values if isinstance(v, ast.Dict)]
        lines = set()
        for expr in exprs:
            if isinstance(expr, ast.Call) and (self.m.qualname(expr.func) or "") in _LOADS:
                lines.add(expr.lineno)  # the loaded object saved again as it is
                continue
            for name in ast.walk(expr):
                if not isinstance(name, ast.Name):
                    continue
                values, func = self.m.assignments(name)
                if func is None:
                    lines.update(v.lineno for v in values
                                 if isinstance(v, ast.Call) and (self.m.qualname(v.func) or "") in _LOADS)
        return tuple(sorted(lines))

    def _dict_entries(self, obj: ast.AST, depth: int = 2):
        """([(key, value)], complete) of a dict literal / ``dict(...)`` / a name bound to one
        (with ``ckpt["k"] = v`` additions in the same scope), or None."""
        if isinstance(obj, ast.Dict):
            pairs = [(_str(k) or "", v) for k, v in zip(obj.keys, obj.values) if k is not None]
            return pairs, len(pairs) == len(obj.keys)
        if isinstance(obj, ast.Call) and self.m.qualname(obj.func) == "builtins.dict" and not obj.args:
            return [(kw.arg, kw.value) for kw in obj.keywords if kw.arg], all(kw.arg for kw in obj.keywords)
        if isinstance(obj, ast.Name) and depth:
            values, func = self.m.assignments(obj)
            reach = self.ctx.flow.reaching_value_strict(obj) if len(values) > 1 and func is None else None
            if isinstance(reach, ast.Dict) and any(v is reach for v in values):
                # the binding that reaches the save: `checkpoint = {...}` in the epoch loop after
                # `checkpoint = None` / `checkpoint = torch.load(...)` of the resume (usatie's
                # translation trainer: its epoch checkpoints, judged false when unread in blind
                # test 131)
                values = [reach]
            if len(values) > 1 and func is None:
                # rebound in the same scope (a periodic save and a final one each build the dict):
                # the last binding before the save is the one written -- or, built on the two arms
                # of one `if` (`if MULTIGPU is False: d = {...} else: d = {...}`), either of them
                before = sorted((v for v in values if (v.lineno, v.col_offset) < (obj.lineno, obj.col_offset)),
                                key=lambda v: (v.lineno, v.col_offset))
                if before and all(isinstance(v, ast.Dict) for v in values):
                    last = before[-1]
                    values = [v for v in before if v is last or exclusive_branches(v, last)]
            if func is not None or not values:
                return None
            parts = [self._dict_entries(v, depth - 1) for v in values]
            if any(p is None for p in parts):
                return None
            inner = ([pair for p in parts for pair in p[0]], all(p[1] for p in parts))
            scope = self.m.scope_of(obj)
            extra = [(_str(t.slice) or "", a.value) for a in self.m.nodes_by_type.get(ast.Assign, ())
                     for t in a.targets if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                     and t.value.id == obj.id and self.m.scope_of(a) is scope]
            return inner[0] + extra, inner[1]
        return None

    def entry(self, key: str, value: ast.AST, at: ast.AST, depth: int = 2) -> SavedEntry:
        text = " ".join(self.ctx.text(value).split())[:60]
        kind, prefix, certain, type_name = self._classify(value, at, depth)
        if kind in (PLAIN, UNKNOWN) and key and any(w in key.lower() for w in _COUNTER_WORDS):
            kind = PLAIN
        option = ""
        if kind == MODEL_STATE and prefix:
            receiver = value.func.value if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr == "state_dict" else None
            option = self.wrap_option(receiver, at) if receiver is not None else ""
        return SavedEntry(key=key, kind=kind, text=text, prefix=prefix, certain=certain, type_name=type_name,
                          wrap_option=option)

    def _classify(self, value: ast.AST, at: ast.AST, depth: int):
        m = self.m
        if isinstance(value, ast.Constant) or isinstance(value, (ast.JoinedStr, ast.BinOp, ast.UnaryOp)):
            return PLAIN, None, True, ""
        if isinstance(value, ast.Call):
            q = m.qualname(value.func) or ""
            if isinstance(value.func, ast.Attribute) and value.func.attr == "state_dict":
                return self._state_of(value.func.value, at)
            if isinstance(value.func, ast.Attribute) and value.func.attr in MODEL_RETURNING_METHODS:
                built = self.module_built_by(value)
                if built is not None:
                    return MODULE, None, True, built  # net.to("cpu"), Net(3).eval()
            if isinstance(value.func, ast.Attribute) and value.func.attr in ("item", "tolist", "cpu", "clone"):
                return PLAIN, None, True, ""
            if q in _NUMPY_MAKERS or (isinstance(value.func, ast.Attribute) and value.func.attr == "numpy"
                                      and not value.args and not value.keywords and q == ""):
                # a NumPy array or scalar (`np.random.get_state()`, `np.mean(accs)`, `t.cpu().numpy()`):
                # pickled through NumPy's reconstructors, which a weights-only load refuses
                return NUMPY, None, True, ""
            last = q.rsplit(".", 1)[-1]
            if q in _TENSOR_CLASSES:
                return PLAIN, None, True, ""  # nn.Parameter(...): a tensor, which a weights-only load accepts
            if q.startswith("torch.nn.") and last[:1].isupper():
                return MODULE, None, True, last  # nn.Linear(...): a module object, not a tensor
            if q.startswith(("torch.optim.", "torch.amp.", "torch.cuda.amp.", "torch.utils.")) and last[:1].isupper():
                return UNKNOWN, None, True, ""  # optimizer/scaler/loader objects
            if q in _LOADS:
                return UNKNOWN, None, True, ""  # `features = torch.load(cache)`: whatever the file held
            if q in _PLAIN_CALLS or q.startswith("torch."):
                return PLAIN, None, True, ""
            if q == "argparse.Namespace":
                return NAMESPACE, None, True, "argparse.Namespace"
            if q in _CONFIG_FACTORIES:
                return CONFIG, None, True, q.rsplit(".", 1)[-1]
            callee = q.rsplit(".", 1)[-1] if q else value.func.attr if isinstance(value.func, ast.Attribute) \
                else getattr(value.func, "id", "")
            if callee and callee[:1].isupper() and _CONFIG_CLASS.search(callee):
                return CONFIG, None, True, callee
            if callee in ("parse_args",):
                made = self._project_config(q)
                if made:
                    # the project's own `parse_args()` hands back what a config factory built
                    # (`return OmegaConf.create(vars(args))`): a config object, no Namespace
                    return CONFIG, None, True, made
                return NAMESPACE, None, True, "argparse.Namespace"
            # `Upscaler(3)`: a class of another file; the project knows whether it is a Module
            return UNKNOWN, None, True, callee if callee[:1].isupper() else ""
        if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            kinds = {self._classify(e, at, depth)[0] for e in value.elts}
            return (PLAIN if kinds <= {PLAIN} else UNKNOWN), None, True, ""
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Call) and \
                isinstance(value.value.func, ast.Attribute) and value.value.func.attr == "parse_known_args":
            return NAMESPACE, None, True, "argparse.Namespace"
        if isinstance(value, (ast.Name, ast.Attribute)):
            name = dotted(value) or ""
            values, func = m.assignments(value)
            resolved = (UNKNOWN, None, True, "")
            if depth and len(values) == 1 and func is None:
                resolved = self._classify(values[0], at, depth - 1)
                if resolved[0] == NAMESPACE and not resolved[2] and self._read_by_key(name):
                    resolved = (UNKNOWN, None, True, "")  # `self.opt = opt`, read as `self.opt["cuda"]`
                if resolved[0] != UNKNOWN:
                    return resolved
            elif depth and len(values) > 1 and func is None and isinstance(value, ast.Name):
                # bound several times in its scope (`config = SimpleNamespace(...)` before each of a
                # script's runs): what every binding builds, when they agree
                reach = self.ctx.flow.reaching_value_strict(value)
                agreed = _agreed([self._classify(v, at, depth - 1) for v in
                                  ([reach] if any(v is reach for v in values) else values)])
                if agreed is not None:
                    return agreed
            elif not values and func is not None and isinstance(value, ast.Name):
                # a parameter: what this file's calls hand it (`save_model(model, opt, args, ...)`
                # called from `train(args)`, itself called with a `SimpleNamespace`), when they agree
                handed = self._handed(value, func, at, depth)
                if handed is not None:
                    return handed
            if m.kind_of(value) == "model" and not name.endswith(("state", "state_dict", "weights", "params")):
                built = self.module_built_by(value)
                if built is not None:
                    return MODULE, None, True, built
                # a name that sounds like a model, with nothing showing a module was built
                # (`model = make_publishable(model)` may be a dict): unknown, not a module
            if _namespace_name(name.rsplit(".", 1)[-1]) and (name.count(".") == 0 or name.startswith("self.")) \
                    and not any(isinstance(v, ast.Call) and (m.qualname(v.func) or "") in _PLAIN_CALLS for v in values) \
                    and not self._read_by_key(name):
                # (a name converted on its way, `args = vars(args)` / `OmegaConf.to_container(args)`
                # before the save: DeepEthogram's checkpoint(), is a plain dict there)
                return NAMESPACE, None, False, "argparse.Namespace"
            if m.kind_of(value) == "tensor":
                return PLAIN, None, True, ""
            return resolved  # unknown, with the class it was built by when known
        return UNKNOWN, None, True, ""

    def _handed(self, name: ast.Name, func: ast.AST, at: ast.AST, depth: int):
        """The classification every call of ``func`` in this file agrees on for the argument of
        parameter ``name`` (at most three parameters deep), or None."""
        if self._param_hops >= 3:
            return None
        self._param_hops += 1
        try:
            given = self.ctx.flow.arguments_for(func, name.id)
            return _agreed([self._classify(a, at, depth) for a in given]) if given else None
        finally:
            self._param_hops -= 1

    def _project_config(self, qualname: str) -> str:
        """The config factory (``OmegaConf.create``) whose result every return of the project
        function ``qualname`` hands back, by its class's name ("" when none)."""
        found = self.ctx.project.function(qualname) if qualname else None
        made = found.returns_ctor if found is not None else None
        return _CONFIG_TYPES.get(made, "") if made in _CONFIG_FACTORIES else ""

    def _read_by_key(self, name: str) -> bool:
        """The file reads ``name`` with a string key (``self.opt['cuda']``, ``args["lr"]``): a
        dict, which an ``argparse.Namespace`` is not (FlowQA's ``opt = vars(args)``, handed
        to the model as ``self.opt``)."""
        if self._keyed is None:
            self._keyed = {dotted(n.value) for n in self.m.nodes_by_type.get(ast.Subscript, ())
                           if isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)}
        return name in self._keyed

    def module_built_by(self, expr: ast.AST, depth: int = 3) -> str | None:
        """The class that built ``expr`` when the code shows it is an ``nn.Module`` ("" when
        the class has no name we can give), else None. Evidence is what built the value: a
        torch.nn or library model constructor, an ``nn.Module`` subclass, a function that
        returns one, a wrapper or ``.to()``/``.eval()`` of one; every binding must agree (a
        binding to a ``torch.load`` result beside them is neutral: it replaces the module). A
        name alone (a parameter called ``model``) is no evidence."""
        expr = self._inner_module(expr)
        if isinstance(expr, ast.Call):
            if self.m.kind_of(expr) != "model":
                return None
            func = expr.func
            if isinstance(func, ast.Name) and func.id in self.m.functions and func.id not in self.m.classes:
                # a function of this file: what its returns were built by (`average(paths)`
                # returning a `torch.load` result held in `avg_model` is no module), not the
                # kind its names suggest
                return self._returned_module(func.id, depth)
            last = (dotted(expr.func) or "").rsplit(".", 1)[-1]
            return last if last[:1].isupper() else ""  # a class; `build_model(cfg)` names none
        if isinstance(expr, (ast.Name, ast.Attribute)) and depth:
            values, func = self.m.assignments(expr)
            name = dotted(expr)  # `model = DDP(model)`, `model = model.to(device)` keep what it was
            scope = self.m.scope_of(expr)  # bindings after the use, in its own scope, come later
            values = [v for v in values if not (isinstance(v, ast.Constant) and v.value is None)
                      and not (name and dotted(self._inner_module(v)) == name)
                      and not (self.m.scope_of(v) is scope and v.lineno > expr.lineno)]
            # a binding to a `torch.load(...)` result beside bindings that build a module (`model =
            # torch.load(resume)` in the resume branch of a script that built `model = Net()`): the
            # object read back takes the module's place; it is neutral, the others decide
            built = [v for v in values if not (isinstance(v, ast.Call) and (self.m.qualname(v.func) or "") in _LOADS)]
            values = built or values
            if func is not None or not values:
                return None
            found = [self.module_built_by(v, depth - 1) for v in values]
            if any(f is None for f in found):
                return None
            named = {f for f in found if f}
            return named.pop() if len(named) == 1 else ""
        return None

    def _returned_module(self, name: str, depth: int) -> str | None:
        """``module_built_by`` agreed by every ``return <value>`` of the file's one
        function ``name`` (None when any return shows no module, or at the depth limit)."""
        defs = self.m.functions.get(name, ())
        if len(defs) != 1 or not depth:
            return None
        values = [r.value for r in self.m.index.own_returns(defs[0]) if r.value is not None]
        found = [self.module_built_by(v, depth - 1) for v in values]
        if not found or any(f is None for f in found):
            return None
        named = {f for f in found if f}
        return named.pop() if len(named) == 1 else ""

    def _inner_module(self, expr: ast.AST) -> ast.AST:
        """``expr`` without the calls that return the module they are given: ``.to()``,
        ``.eval()``, DDP/DataParallel/``torch.compile``/``torch.jit.script``, ``.module``."""
        for _ in range(8):
            if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
                    expr.func.attr in MODEL_RETURNING_METHODS:
                expr = expr.func.value  # Net(...).to(device).eval()
            elif isinstance(expr, ast.Attribute) and expr.attr in _UNWRAP_ATTRS:
                expr = expr.value  # ddp_model.module
            elif isinstance(expr, ast.Call) and expr.args and (self._wrap_prefix(expr) or self.m.qualname(
                    expr.func) in ("torch.jit.script", "torch.jit.trace")):
                expr = expr.args[0]
            else:
                break
        return expr

    def _state_of(self, receiver: ast.AST, at: ast.AST):
        kind = self.m.kind_of(receiver)
        text = (dotted(receiver) or "").lower()
        for word, state in _STATE_TARGETS:
            if kind == state or (kind not in ("model",) and word in text):
                return {"optimizer": OPTIMIZER_STATE, "scheduler": SCHEDULER_STATE,
                        "scaler": SCALER_STATE}[state], None, True, ""
        if kind == "model" or any(w in text for w in _MODEL_WORDS):
            return MODEL_STATE, self.prefix_of(receiver, at), True, ""
        # the state dict of an object of unknown kind (`ckpt["encoder"].state_dict()`): a dict
        # made by that object, never the object itself, whatever the loading code does with
        # the key it is stored under
        return STATE, None, True, ""

    # ------------------------------------------------------------ paths
    def path(self, expr: ast.AST) -> tuple[str | None, tuple[str, ...]]:
        """The file name as a glob, and the names that hold the whole path (``p`` and
        ``args.resume`` in ``p = args.resume; torch.load(p)``); a folder or file-name part
        (``out`` in ``os.path.join(out, "last.pt")``) names no file, so it is not listed."""
        names: list[str] = []
        pattern = self._pattern(expr, names, 3, True)
        if pattern is not None:
            pattern = re.sub(r"\*+", "*", pattern)
        return pattern, tuple(names)

    def _pattern(self, expr: ast.AST, names: list[str], depth: int, whole: bool = False) -> str | None:
        s = _str(expr)
        if s is not None:
            return s
        if isinstance(expr, ast.JoinedStr):
            return "".join(_str(v) or "*" for v in expr.values)
        if isinstance(expr, ast.BinOp):
            left = self._pattern(expr.left, names, depth) or "*"
            if isinstance(expr.op, ast.Mod):
                return re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]", "*", left)
            right = self._pattern(expr.right, names, depth) or "*"
            return left + ("/" if isinstance(expr.op, ast.Div) else "") + right
        if isinstance(expr, ast.Call):
            q = self.m.qualname(expr.func) or ""
            if isinstance(expr.func, ast.Attribute) and expr.func.attr == "format":
                base = self._pattern(expr.func.value, names, depth)
                return _formatted(base, expr) if base is not None else None
            if q in ("builtins.open", "io.open", "gzip.open", "bz2.open", "lzma.open") and expr.args:
                return self._pattern(expr.args[0], names, depth, whole)  # with open(path, "wb") as fh
            if q in ("pathlib.Path", "builtins.str", "os.fspath") and len(expr.args) == 1:
                return self._pattern(expr.args[0], names, depth, whole)  # Path(args.resume)
            if q in ("os.path.join", "posixpath.join", "pathlib.Path", "builtins.str", "os.fspath") or \
                    (isinstance(expr.func, ast.Attribute) and expr.func.attr in ("joinpath", "join")):
                parts = [self._pattern(a, names, depth) or "*" for a in expr.args]
                return "/".join(parts) if parts else None
            return None
        if isinstance(expr, (ast.Name, ast.Attribute)):
            name = dotted(expr)
            if name and whole:
                names.append(name)
            values, func = self.m.assignments(expr)
            if not values and isinstance(expr, ast.Name):
                values = self._with_targets(expr)  # with open("best.pt", "wb") as fh
            if depth and len(values) == 1 and func is None:
                return self._pattern(values[0], names, depth - 1, whole)
            if depth and len(values) > 1 and func is None:  # bound twice to one file name (write, then read)
                found = {self._pattern(v, [], depth - 1) for v in values}
                if len(found) > 1 and isinstance(expr, ast.Name) and not any(
                        isinstance(a, (ast.For, ast.AsyncFor, ast.While)) for a in ancestors(expr)):
                    # bound to two names, read outside any loop: the bindings that reach the read
                    # (`path = 'baseline/...'` then `torch.load(path)`, the epoch loop's later
                    # `path = 'models/...'` for its save: two files)
                    found = {self._pattern(v, [], depth - 1) for v in self.ctx.flow.branch_values(expr)} or found
                return found.pop() if len(found) == 1 else None
            if depth and not values and func is not None and isinstance(expr, ast.Name):
                return self._passed_pattern(func, expr.id, depth - 1)
        return None

    def _passed_pattern(self, func: ast.AST, param: str, depth: int) -> str | None:
        """The file name every call of ``func`` in this file passes for ``param``, when all
        of them pass the same known pattern (``build_model("outputs/models/198-checkpoint.ckpt")``
        for ``torch.load(checkpoint_path)``); None when a call passes something unknown or
        nothing calls it here."""
        if isinstance(parent(func), ast.ClassDef):
            return None  # a method: its calls pass `self` implicitly (positions shift); not followed
        found = set()
        for site in self.ctx.flow.call_sites(func):
            value = argument_for(site, func, param)
            if value is None:
                return None
            found.add(self._pattern(value, [], depth))
            if None in found or len(found) > 1:
                return None
        return found.pop() if found else None

    def _with_targets(self, name: ast.Name) -> list[ast.AST]:
        """The context expressions bound to ``name`` by ``with ... as name`` in its scope."""
        scope = self.m.scope_of(name)
        return [item.context_expr for t in (ast.With, ast.AsyncWith) for node in self.m.nodes_by_type.get(t, ())
                for item in node.items if isinstance(item.optional_vars, ast.Name)
                and item.optional_vars.id == name.id and self.m.scope_of(node) is scope]

    def _function(self, node: ast.AST) -> str:
        func = self.ctx.enclosing_function(node)
        return getattr(func, "name", "") if func is not None else ""


_FIELD = re.compile(r"\{([^{}!:]*)([^{}]*)\}")


def _formatted(base: str, call: ast.Call) -> str:
    """``base.format(...)`` as a glob: a field filled by a literal string or integer with no
    conversion or spec (``"{}_{}_best.pth".format("sequence", name)``) is that text, every
    other field ``*`` (a computed value, ``*args``, ``{:04d}``)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return _FIELD.sub("*", base)
    keywords = {k.arg: k.value for k in call.keywords}
    auto = iter(range(len(call.args)))

    def fill(match: re.Match) -> str:
        field, rest = match.group(1), match.group(2)
        if field == "":
            index = next(auto, None)
            value = call.args[index] if index is not None else None
        elif field.isdigit():
            value = call.args[int(field)] if int(field) < len(call.args) else None
        else:
            value = keywords.get(field)
        if rest or not isinstance(value, ast.Constant) or isinstance(value.value, bool) or \
                not isinstance(value.value, (str, int)) or (isinstance(value.value, str) and "*" in value.value):
            return "*"
        return str(value.value)

    return _FIELD.sub(fill, base)


_SAME_MODULE = frozenset({"eval", "train", "requires_grad_", "to", "cuda", "cpu", "float", "half", "double"})


def _copied(model, value: ast.AST) -> ast.AST | None:
    """The model ``value`` copies: ``copy.deepcopy(x)``, also under methods that hand back
    the same module (``.requires_grad_(False).eval()``); None when it is no such copy."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _SAME_MODULE:
        value = value.func.value
    if isinstance(value, ast.Call) and model.qualname(value.func) == "copy.deepcopy" and len(value.args) == 1:
        return value.args[0]
    return None


def _no_first_moment(call: ast.Call) -> bool:
    """An Adam-style optimizer built with ``betas=(0, b2)`` (keyword, or Adam's third positional
    argument) written out: no moving average of the gradient, so its steps are ``g / sqrt(v)``
    from the first one on."""
    betas = next((k.value for k in call.keywords if k.arg == "betas"), None)
    if betas is None and len(call.args) >= 3:
        betas = call.args[2]
    if not isinstance(betas, (ast.Tuple, ast.List)) or not betas.elts:
        return False
    first = betas.elts[0]
    return isinstance(first, ast.Constant) and isinstance(first.value, (int, float)) and \
        not isinstance(first.value, bool) and first.value == 0


def _built_per_call(ctx, step: ast.Call) -> bool:
    """Does ``sched.step()`` step a scheduler built anew each time its function runs: a local
    name whose every (non-``None``) reaching value is a scheduler construction repeated by a
    batch/epoch loop (in the loop, or in a function the loop calls), or one built only when a
    parameter is 0 (``if epoch == 0: lr_scheduler = warmup_lr_scheduler(...)``, a first-epoch
    warm-up)? Such a scheduler carries nothing across epochs a resume could restore."""
    receiver = step.func.value if isinstance(step.func, ast.Attribute) else None
    if not isinstance(receiver, ast.Name):
        return False
    values = [v for v in ctx.flow.branch_values(receiver)
              if not (isinstance(v, ast.Constant) and v.value is None)]
    if not values:
        return False
    func = ctx.enclosing_function(step)
    params = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)} if func is not None else set()
    for value in values:
        if not isinstance(value, ast.Call) or ctx.kind_of(value) != "scheduler":
            return False
        if ctx.flow.repeating_loop(value) is not None:
            continue
        if not any(isinstance(anc, ast.If) and _is_zero_test(anc.test, params) and
                   any(value is n for n in ast.walk(ast.Module(body=anc.body, type_ignores=[])))
                   for anc in ctx.ancestors(value)):
            return False
    return True


def _is_zero_test(test: ast.AST, params: set[str]) -> bool:
    """``epoch == 0`` / ``0 == epoch`` / ``not epoch`` on a parameter of the function."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return isinstance(test.operand, ast.Name) and test.operand.id in params
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        sides = [test.left, test.comparators[0]]
        return any(isinstance(a, ast.Name) and a.id in params for a in sides) and \
            any(isinstance(b, ast.Constant) and b.value == 0 and not isinstance(b.value, bool) for b in sides)
    return False


def argument_facts(ctx: "FileContext") -> CheckpointIndex:
    """The index of a file that saves and loads nothing but parses command-line arguments: only
    that it does and what their result becomes (what a save in a module it imports may be
    handed as ``args``)."""
    return CheckpointIndex(parses_args=True, parsed_args=_parsed_args(ctx.model))


def _parsed_args(m) -> str:
    """What the file's ``parse_args()`` / ``parse_known_args()`` results become: ``"namespace"``
    when one is not handed straight to ``vars(...)``, ``"dict"`` when each is (``args =
    vars(parser.parse_args())``), ``""`` when the file parses nothing."""
    calls = [*m.calls_by_name.get("parse_args", ()), *m.calls_by_name.get("parse_known_args", ())]
    if not calls:
        return ""
    return "namespace" if any(not (isinstance(parent(c), ast.Call) and isinstance(parent(c).func, ast.Name) and
                                   parent(c).func.id == "vars") for c in calls) else "dict"


def _runs_before(stmt: ast.stmt, at: ast.AST) -> bool:
    """``stmt`` runs every time before ``at``: it comes earlier in a statement list that holds
    ``at`` (directly or through the compound statements around ``at``)."""
    holder = parent(stmt)
    if holder is None:
        return False
    for anc in [at, *ancestors(at)]:
        if parent(anc) is holder:
            for field in ("body", "orelse", "finalbody"):
                block = getattr(holder, field, None)
                if isinstance(block, list) and any(s is stmt for s in block) and any(s is anc for s in block):
                    return block.index(stmt) < block.index(anc)
            return False
    return False
