"""Does ``model.eval()`` change what a model computes? (the model-content fact)

For every ``nn.Module`` class of the project, :class:`ModeContent` says whether
it holds a layer that behaves differently in train and eval mode -- dropout
with a rate that is not 0, BatchNorm, an InstanceNorm tracking running
statistics, recurrent dropout, a read of ``self.training`` (functional dropout
with ``training=self.training``; one that only picks a rate, ``p = self.drop if
self.training else 0.0``, is that rate; a layer stored in ``__init__`` that nothing in the
module reads, in a class with its own ``forward``, is never applied and does not count)
-- transitively through the submodules its
methods build (``nn.Sequential``/``nn.ModuleList`` contents included) and the
classes of other project modules (resolved by the project index's import
resolution). Where the answer depends on the constructor's arguments
(``nn.Dropout(dropout)`` with ``dropout`` an ``__init__`` parameter, a submodule
handed in as ``transformer``), the fact names those parameters and a
construction site decides (``Attention(64, 0.0)`` is mode-free).

Facts are computed once per class (memoised by the content hash of the file
that defines it, or per reviewed file) and then asked per construction.
Library layers come from ``data/mode_layers.json`` (torch.nn, einops layers,
linformer, ...), asked through ``engine/library.py`` (``library.layer``,
``library.functional``); an unknown library class keeps the answer "unknown".

:class:`ModeFacts` (``ctx.module_modes``) answers for a value of the reviewed
file: ``content_of(expr)`` is ``"free"`` (eval() changes nothing),
``"active"`` (a mode-dependent layer is known: dropout, BatchNorm, a read of
``self.training``) or None (unknown: not provably free, but only because a
base class, a callable or a submodule from elsewhere is out of sight).
"""

from __future__ import annotations

import ast
import contextvars
import os
import warnings
from dataclasses import dataclass

from torchreview.engine import library
from torchreview.engine import names as N
from torchreview.engine import project_index as P
from torchreview.engine.regular_files import read_capped
from torchreview.engine.semantic_common import FunctionNode, LoopNode, ancestors, argument_for, mode_switched_to, parent, switches_to_eval  # noqa: F401

_MOVES = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_", "eval", "train",
                    "share_memory"})
_SAFE_ROOTS = frozenset({"builtins", "math", "numpy", "functools", "itertools", "typing", "collections",
                         "einops", "warnings", "logging", "copy", "inspect", "dataclasses", "os", "re",
                         "cv2", "PIL", "scipy", "sklearn", "pandas", "time", "json", "pathlib",
                         # configuration, files and logging: their calls build no module
                         "omegaconf", "yaml", "toml", "tomllib", "configparser", "argparse", "easydict",
                         "ml_collections", "glob", "shutil", "sys", "random", "pickle", "h5py", "csv",
                         "datetime", "pprint", "tqdm", "wandb", "matplotlib", "string", "uuid", "hashlib"})
_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})
_TRANSFORMS = ("torchvision.transforms.",)
_FACTS_LIMIT = 8192
_CYCLE = "cycle"
# "settled" asks for the state right after construction: a class whose constructor
# switches itself to eval mode (``self.eval()`` in ``__init__``), a ``from_pretrained``
# load and a builder that calls ``.eval()`` on what it returns count as mode-free then
_SETTLED: contextvars.ContextVar[bool] = contextvars.ContextVar("settled", default=False)
_EVAL_LOADERS = frozenset({"from_pretrained"})
_PLAIN_BASES = frozenset(f"builtins.{name}" for name in ("object", "dict", "list", "tuple", "set", "str", "int",
                                                          "float", "Exception", "ValueError", "RuntimeError"))


@dataclass(frozen=True)
class Verdict:
    """Whether something depends on the mode: always (``active``), or only through
    constructor parameters (``rates``: active unless 0; ``modules``: active when
    the submodule passed there is)."""
    active: bool = False
    rates: frozenset[str] = frozenset()
    modules: frozenset[str] = frozenset()
    # active only because something could not be seen (an unknown base class or
    # callable, a submodule from elsewhere): not free, but no mode-dependent layer is
    # known either -- ``content_of`` answers None (unknown), not "active"
    unknown: bool = False

    def __or__(self, other: Verdict) -> Verdict:
        if (self.active and not self.unknown) or (other.active and not other.unknown):
            return _ACTIVE
        if self.active or other.active:
            return _UNKNOWN
        return Verdict(False, self.rates | other.rates, self.modules | other.modules)

    @property
    def known_active(self) -> bool:
        return self.active and not self.unknown

    @property
    def free(self) -> bool:
        return not (self.active or self.rates or self.modules)


_FREE = Verdict()
_ACTIVE = Verdict(True)
_UNKNOWN = Verdict(True, unknown=True)


def _word(verdict: Verdict) -> str | None:
    """``content_of``'s answer for a verdict: "free", "active" (a mode-dependent layer
    is known), None (not free, but only for want of sight)."""
    if verdict.free:
        return "free"
    # a dropout whose rate the construction does not show is still a dropout layer
    return "active" if verdict.known_active or verdict.rates else None


@dataclass(frozen=True)
class ModeContent:
    """The model-content fact of one class: its verdict in terms of its own
    ``__init__`` parameters (positional names, and constant defaults)."""
    verdict: Verdict
    params: tuple[str, ...] = ()
    defaults: tuple[tuple[str, object], ...] = ()  # (name, constant default)
    has_kwargs: bool = False

    def argument(self, call: ast.Call, name: str) -> tuple[bool, ast.AST | object | None]:
        """(given, value): the expression passed for ``name`` at ``call``, else its
        constant default (given False); (False, None) when neither is known."""
        for kw in call.keywords:
            if kw.arg == name:
                return True, kw.value
        if name in self.params:
            index = self.params.index(name)
            if any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
                return True, None
            if index < len(call.args):
                return True, call.args[index]
        if any(kw.arg is None for kw in call.keywords):
            return True, None  # `Block(**cfg)`: unknown
        for key, value in self.defaults:
            if key == name:
                return False, value
        return False, None


class _NoDefault:
    pass


_NO_DEFAULT = _NoDefault()


class Unit:
    """One module of the project, parsed, with its semantic model (for qualified
    names and imports) and its class facts."""

    def __init__(self, path: str | None, model, flow=None) -> None:
        self.path = path
        self.model = model
        self.flow = flow
        self.facts: dict[str, ModeContent] = {}
        self.busy: set[str] = set()
        # a notebook: virtual line - 1 -> (cell, line in cell), for messages
        self.line_map: list[tuple[int, int]] | None = None
        self.text: str | None = None  # the text parsed (a file on disk)
        self.call_paths = None  # its call-path questions (engine/call_paths.py), built on first use
        self.options = None  # its command-line options (engine/options.py), built on first use


_units: dict[str, Unit] = {}  # content hash -> unit of a file on disk


def unit_for(path: str) -> Unit | None:
    """The unit of a project file (parsed once per content hash); None if unreadable."""
    digest = P.content_hash(path)
    hit = _units.get(digest)
    if hit is not None and hit.path == path:
        return hit
    parsed = _parse_text(path)
    if parsed is None:
        return None
    from torchreview.engine.semantic import SemanticModel

    unit = Unit(path, SemanticModel(parsed[0], P.ProjectView(path)))
    unit.line_map = parsed[1]
    unit.text = parsed[2]
    if len(_units) > 256:  # other files parsed for their classes and call sites, per process
        _units.clear()
    _units[digest] = unit
    return unit


def take_unit(path: str, text: str) -> Unit | None:
    """The unit already built here for the Python file ``path`` (for the call sites
    or classes another file asked about) when it was parsed from ``text``: the runner
    reviews the file with that tree and model instead of parsing and modelling it a
    second time. It leaves the memo (the review releases it when done)."""
    if not _units or path.endswith(".ipynb"):
        return None
    digest = P.content_hash(path)
    hit = _units.get(digest)
    if hit is None or hit.line_map is not None or getattr(hit, "text", None) != text or \
            os.path.abspath(hit.path or "") != os.path.abspath(path):
        return None
    del _units[digest]
    return hit


def parse_file(path: str) -> tuple[ast.Module, list[tuple[int, int]] | None] | None:
    """A project file parsed (a notebook: its code cells joined, with its line map), or None."""
    parsed = _parse_text(path)
    return parsed[:2] if parsed is not None else None


def _parse_text(path: str) -> tuple[ast.Module, list[tuple[int, int]] | None, str] | None:
    """``parse_file`` with the text that was parsed."""
    try:
        with open(path, "rb") as handle:
            data = read_capped(handle, P._MAX_BYTES)
    except OSError:
        return None
    if len(data) > P._MAX_BYTES:
        return None
    try:
        if path.endswith(".ipynb"):
            from torchreview.engine.source import LoadError, load_notebook

            try:
                source = load_notebook(path, path, data)
            except LoadError:
                return None
            text, line_map = source.text, source.line_map
        else:
            text, line_map = data.decode("utf-8-sig", errors="replace"), None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=path), line_map, text
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def locate_class(unit: Unit, qualname: str, hops: int = P.REEXPORT_HOPS) -> tuple[Unit, ast.ClassDef] | None:
    """The class a qualified name of ``unit`` (``model.Net``, ``.layers.Block``)
    names in the project: its unit and definition, following re-exports."""
    return _locate(unit, qualname, hops, True)  # type: ignore[return-value]


def _handed_back(func: ast.AST | None, call: ast.Call) -> ast.AST | None:
    """What ``call`` passes for the parameter every ``return`` of ``func`` hands back unchanged
    (``def weight_init(model): for m in model.modules(): ...; return model``: the same module,
    its weights initialised in place), or None (no such parameter, or it is rebound)."""
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    returns = [n for n in ast.walk(func) if isinstance(n, ast.Return) and _inside(n, func)]
    names = {r.value.id for r in returns if isinstance(r.value, ast.Name)}
    if not returns or len(names) != 1 or any(not isinstance(r.value, ast.Name) for r in returns):
        return None
    name = names.pop()
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]]
    if name not in params or any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                                 for n in ast.walk(func)):
        return None
    return argument_for(call, func, name)


def locate_function(unit: Unit, qualname: str) -> tuple[Unit, ast.AST] | None:
    """The module-level function a qualified name of ``unit`` names in the project."""
    return _locate(unit, qualname, P.REEXPORT_HOPS, False)


def _locate(unit: Unit, qualname: str, hops: int, want_class: bool) -> tuple[Unit, ast.AST] | None:
    if unit.path is None or "." not in qualname.lstrip("."):
        return None
    module, _, name = qualname.rpartition(".")
    target = P.resolve(unit.path, module or ".")
    if target is None and module.startswith("..") and not module.startswith("..."):
        target = P.resolve(unit.path, module[1:])
    if target is None:
        return None
    other = unit_for(target)
    if other is None:
        return None
    if want_class and name in other.model.classes:
        return other, other.model.classes[name]
    if not want_class and name in other.model.functions:
        defs = [d for d in other.model.functions[name] if isinstance(parent(d), ast.Module)]
        return (other, defs[0]) if len(defs) == 1 else None
    if hops <= 0:
        return None
    alias = other.model.aliases.get(name)
    if alias is not None:
        return _locate(other, alias, hops - 1, want_class)
    for star in other.model.star_imports:
        found = _locate(other, f"{star}.{name}", hops - 1, want_class)
        if found is not None:
            return found
    return None


# ------------------------------------------------------------------ class facts
def class_content(unit: Unit, cls: ast.ClassDef) -> ModeContent:
    """The model-content fact of ``cls`` (memoised on the unit)."""
    settled = _SETTLED.get()
    key = cls.name + ("@settled" if settled else "")
    hit = unit.facts.get(key)
    if hit is not None:
        return hit
    init = next((s for s in cls.body if isinstance(s, FunctionNode) and s.name == "__init__"), None)
    params: tuple[str, ...] = ()
    defaults: list[tuple[str, object]] = []
    has_kwargs = False
    if init is not None:
        args = init.args
        positional = [a.arg for a in [*args.posonlyargs, *args.args]][1:]
        params = tuple(positional)
        for name, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            defaults.append((name, _constant(default)))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            if default is not None:
                defaults.append((arg.arg, _constant(default)))
        has_kwargs = args.kwarg is not None
    if cls.name in unit.busy:
        return ModeContent(_FREE, params)  # a recursive reference adds nothing new
    unit.busy.add(cls.name)
    try:
        init_params = frozenset(params) | frozenset(a.arg for a in (init.args.kwonlyargs if init else ()))
        verdict = _FREE
        token = _SETTLED.set(False)  # a base's own eval() counts only through evaluates_itself below
        try:
            for base in cls.bases:
                verdict |= _judge_base(unit, base, init_params)
        finally:
            _SETTLED.reset(token)
        verdict |= _judge_body(unit, cls, init, init_params)
    finally:
        unit.busy.discard(cls.name)
    if settled and not verdict.free and evaluates_itself(unit, cls):
        verdict = _FREE  # `self.eval()` in its constructor: built in eval mode
    elif settled and init is not None and verdict.modules and not verdict.active:
        # a wrapper whose constructor switches the module it is handed to eval
        # (`self.model = model; self.model.eval()`): in eval mode once built
        verdict = Verdict(False, verdict.rates, verdict.modules - _evaluated_params(init, init_params))
    fact = ModeContent(verdict, params, tuple(defaults), has_kwargs)
    if len(unit.facts) < _FACTS_LIMIT:
        unit.facts[key] = fact
    return fact


def _body_switches(func: ast.AST, receiver: str, before: tuple[int, int] | None = None) -> bool:
    """Is ``receiver`` in eval mode after the mode calls of ``func``'s own body (not
    a nested function; only those before ``before`` when given): the last
    ``receiver.eval()`` / ``.train(...)`` there is an ``eval()`` / ``train(False)``."""
    from torchreview.engine.semantic_common import dotted

    last = None
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("eval", "train") and dotted(node.func.value) == receiver and \
                (_inside(node, func) if not isinstance(func, ast.Module) else
                 not any(isinstance(a, (*FunctionNode, ast.ClassDef, ast.Lambda)) for a in ancestors(node))):
            where = (node.lineno, node.col_offset)
            if before is not None and where >= before:
                continue
            if last is None or where > last[0]:
                last = (where, switches_to_eval(node, receiver))
    return last is not None and last[1]


def _evaluated_params(init: ast.AST, params: frozenset[str]) -> frozenset[str]:
    """The ``__init__`` parameters holding a module that the constructor leaves in
    eval mode: its last switch there, on the stored attribute (``self.model =
    model; self.model.eval()``) or on the parameter itself, is to eval."""
    out = set()
    for node in ast.walk(init):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in params
                and _inside(node, init)):
            continue
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                    target.value.id == "self" and (_body_switches(init, f"self.{target.attr}")
                                                   or _body_switches(init, node.value.id)):
                out.add(node.value.id)
    return frozenset(out)


def evaluates_itself(unit: Unit, cls: ast.ClassDef, hops: int = 3) -> bool:
    """Does constructing ``cls`` leave it in eval mode: its ``__init__`` calls
    ``self.eval()`` (or ``self.train(False)``) last, or it has no ``__init__``
    of its own and a project base class's does?"""
    init = next((s for s in cls.body if isinstance(s, FunctionNode) and s.name == "__init__"), None)
    if init is not None:
        if _body_switches(init, "self"):
            return True
        own_mode_call = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                            n.func.attr in ("eval", "train") and isinstance(n.func.value, ast.Name) and
                            n.func.value.id == "self" for n in ast.walk(init))
        calls_super = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                          n.func.attr == "__init__" for n in ast.walk(init))
        if own_mode_call or not calls_super:
            return False  # its own `self.train()` comes last, or the base's constructor is not run
    if hops <= 0:
        return False
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in unit.model.classes and base.id != cls.name:
            found: tuple[Unit, ast.ClassDef] | None = (unit, unit.model.classes[base.id])
        else:
            q = unit.model.qualname(base)
            found = locate_class(unit, q) if q and not q.startswith("torch.") else None
        if found is not None and evaluates_itself(*found, hops - 1):
            return True
    return False


def _constant(node: ast.AST) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return node.operand.value
    return _NO_DEFAULT


def _judge_base(unit: Unit, base: ast.AST, params: frozenset[str]) -> Verdict:
    if isinstance(base, ast.Name) and base.id in unit.model.classes:
        fact = class_content(unit, unit.model.classes[base.id])
        return _inherit(fact, params)
    q = unit.model.qualname(base)
    if q is None:
        return _UNKNOWN  # an unknown base class
    if q in _PLAIN_BASES:
        return _FREE  # `class AttrDict(dict)`: a plain container, no layer comes from the base
    if q.startswith("torch.") or library.layer(q) is not None:
        return _library(q, None, unit, params)
    found = locate_class(unit, q)
    if found is not None:
        return _inherit(class_content(*found), params)
    return _UNKNOWN  # a library base class the tables do not know


def _inherit(fact: ModeContent, params: frozenset[str]) -> Verdict:
    """A base class's fact seen from the subclass: the base's parameters map to the
    subclass's parameters of the same name (``super().__init__(dropout=dropout)``)."""
    v = fact.verdict
    if v.active:
        return v
    if not ({r.partition("[")[0] for r in v.rates} <= params and v.modules <= params):
        return _UNKNOWN
    return v


def _helper_verdict(unit: Unit, func: ast.AST, depth: int) -> Verdict:
    """What a helper function of the project builds (memoised per unit, function and depth)."""
    key = (id(func), depth, _SETTLED.get())
    memo = unit.__dict__.setdefault("helpers", {})
    hit = memo.get(key)
    if hit is None:
        memo[key] = _UNKNOWN  # a recursive helper: stay conservative while it is judged
        if _SETTLED.get() and _returns_evaluated(func):
            hit = memo[key] = _FREE  # `return model.eval(), transform`: built, then switched to eval
        else:
            built = _judge_body(unit, func, None, frozenset(), depth)
            hit = memo[key] = _FREE if built.free else _ACTIVE if built.known_active else _UNKNOWN
    return hit


def _returns_evaluated(func: ast.AST) -> bool:
    """Every ``return`` of ``func`` hands back a module switched to eval mode right there
    (``return model.eval()``, ``return model.eval(), transform``): what it builds is in
    eval mode once it returns."""
    returns = [n for n in ast.walk(func) if isinstance(n, ast.Return) and _inside(n, func)]
    if not returns:
        return False
    for ret in returns:
        value = ret.value
        if isinstance(value, ast.Tuple) and value.elts:
            value = value.elts[0]
        if mode_switched_to(value) != "eval":
            return False
    return True


def _judge_body(unit: Unit, owner: ast.AST, init: ast.AST | None, params: frozenset[str], depth: int = 4) -> Verdict:
    verdict = _FREE
    stored: dict[str, str] = {}  # self.attr -> __init__ parameter it holds
    called: set[str] = set()
    evaluated = _evaluated_attributes(init) if _SETTLED.get() and init is not None else frozenset()
    # a class with its own `forward`: what that code never reads is never applied
    has_forward = any(isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "forward"
                      for m in getattr(owner, "body", ()))
    for node in ast.walk(owner):
        if isinstance(node, ast.Attribute) and node.attr == "training" and isinstance(node.value, ast.Name) and \
                node.value.id == "self" and isinstance(node.ctx, ast.Load):
            if _training_argument_of_functional(unit, node):
                continue  # `F.dropout(x, p=..., training=self.training)`: the call is judged by its rate
            rate = _training_picks_rate(node, init, params)
            if rate is None:
                return _ACTIVE
            verdict |= _rate(rate, unit, params)
            if verdict.known_active:
                return verdict
            continue
        if isinstance(node, ast.Assign) and init is not None and isinstance(node.value, ast.Name) and \
                node.value.id in params and _inside(node, init):
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    stored[t.attr] = node.value.id
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            called.add(func.attr)
        in_init = init is not None and _inside(node, init)
        up = parent(node)
        if not in_init and isinstance(up, ast.Call) and up.func is node:
            # `nn.Dropout(p)(x)` built and applied in forward: a fresh layer in training mode on
            # every call, which eval() never reaches -- nothing eval() would change
            continue
        if in_init and evaluated and _assigned_attribute(node) in evaluated:
            continue  # `self.model = resnet34(); ...; self.model = self.model.eval()`: in eval once built
        if in_init and has_forward and _never_read(unit, _assigned_attribute(node)):
            continue  # `self.dropout = nn.Dropout(0.5)` that no method applies (CopyMTL): it changes nothing
        if _argument_of_torch_function(unit, node):
            continue  # `torch.load(path, map_location=tops.get_device())`: an argument, no submodule
        if in_init and _plain_member(node):
            continue  # `self.models = [get_model(p) for p in paths]`: a plain list, no submodule
        scope = params if in_init else frozenset()
        found = _judge_call(unit, node, scope, depth)
        if in_init and found.known_active:
            built = _built_under_flag(node, init, params)
            if built is not None:
                # `if has_dropout: model += [nn.Dropout2d(p=0.1)]` in `__init__`: built only when
                # the construction turns the parameter on, a condition like a rate (SynthDehazing's
                # cycle-GAN generator, built everywhere with `has_dropout=False`)
                found = Verdict(False, frozenset({built}))
        if in_init and not found.free:
            flag = _applied_under_flag(owner, init, _assigned_attribute(node), params)
            if flag is not None:
                # `self.dropout_layer = nn.Dropout(p)` applied only under `if self.dropout:`, the
                # flag an __init__ parameter: a condition, like a rate (MultiBench's MLP, whose
                # `dropout=False` default leaves it unapplied)
                found = Verdict(False, frozenset({flag}))
        verdict |= found
        if verdict.known_active:
            return verdict
    # a submodule handed to __init__ and called like a module (`self.transformer(x)`)
    modules = frozenset(p for attr, p in stored.items() if attr in called)
    return verdict | Verdict(False, frozenset(), modules)


def _training_argument_of_functional(unit: Unit, node: ast.Attribute) -> bool:
    """``self.training`` handed as the ``training`` argument of a functional the layer
    tables know (``F.dropout(x, p=self.p, training=self.training)``)."""
    up = parent(node)
    call = parent(up) if isinstance(up, ast.keyword) and up.arg == "training" else up
    if not isinstance(call, ast.Call) or (call is up and node not in call.args):
        return False
    return library.functional(unit.model.qualname(call.func)) is not None


def _training_picks_rate(node: ast.Attribute, init: ast.AST | None, params: frozenset[str]) -> ast.AST | None:
    """``self.training`` read only to pick a dropout probability that is 0 in eval
    (``p = self.drop_rate if self.training else 0.0``, torch-harmonics' attention):
    the rate it picks in training -- an ``__init__`` parameter (through the
    ``self.<attr>`` that stores it) or a constant --, else None."""
    up = parent(node)
    if not (isinstance(up, ast.IfExp) and up.test is node and isinstance(up.orelse, ast.Constant)
            and not up.orelse.value):
        return None
    body = up.body
    if isinstance(body, ast.Constant) or (isinstance(body, ast.Name) and body.id in params):
        return body
    if isinstance(body, ast.Attribute) and isinstance(body.value, ast.Name) and body.value.id == "self" and \
            init is not None:
        for sub in ast.walk(init):
            if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Name) and sub.value.id in params and any(
                    isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                    and t.attr == body.attr for t in sub.targets):
                return sub.value
    return None


def _argument_of_torch_function(unit: Unit, call: ast.Call) -> bool:
    """``call`` is an argument of a ``torch`` function that is not a layer constructor
    (``torch.load(path, map_location=tops.get_device())``, ``torch.zeros(n, device=dev())``):
    what it returns goes into that function, it cannot become a submodule."""
    up = parent(call)
    if isinstance(up, ast.keyword):
        up = parent(up)
    if not isinstance(up, ast.Call) or up.func is call:
        return False
    q = unit.model.qualname(up.func) or ""
    return q.startswith("torch.") and not q.startswith("torch.nn.")


def _evaluated_attributes(init: ast.AST) -> frozenset[str]:
    """The ``self`` attributes that the constructor's last mode call on them switches to
    eval (``self.model = self.model.eval()``, ``self.net.train(False)``): whatever was
    built into them is in eval mode once the object is constructed."""
    from torchreview.engine.semantic_common import dotted

    attrs = {dotted(n.func.value)[5:] for n in ast.walk(init)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("eval", "train")
             and (dotted(n.func.value) or "").startswith("self.") and dotted(n.func.value).count(".") == 1}
    return frozenset(a for a in attrs if _body_switches(init, f"self.{a}"))


def _built_under_flag(node: ast.AST, init: ast.AST, params: frozenset[str]) -> str | None:
    """The ``__init__`` parameter ``P`` when ``node`` sits in the body (not the ``else``) of an
    ``if P:`` of the constructor -- the innermost such test -- else None."""
    child = node
    for above in ancestors(node):
        if above is init:
            return None
        if isinstance(above, ast.If) and child in above.body and isinstance(above.test, ast.Name) and \
                above.test.id in params:
            return above.test.id
        child = above
    return None


def _applied_under_flag(owner: ast.AST, init: ast.AST | None, attr: str | None,
                        params: frozenset[str]) -> str | None:
    """The ``__init__`` parameter ``P`` when every read of ``self.attr`` outside ``__init__``
    sits in the body of an ``if self.F:`` whose ``F`` holds ``P`` (``self.F = P`` in
    ``__init__``): the layer is applied only when the construction turns ``P`` on. None
    otherwise (no read, a read outside such a test, two different flags)."""
    if attr is None or init is None:
        return None
    flags: dict[str, str] = {}
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in params:
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    flags[t.attr] = node.value.id
    if not flags:
        return None
    gates: set[str] = set()
    for node in ast.walk(owner):
        if not (isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name)
                and node.value.id == "self" and isinstance(node.ctx, ast.Load)) or _inside(node, init):
            continue
        gate, child = None, node
        for anc in ancestors(node):
            if isinstance(anc, ast.If) and any(child is b for b in anc.body) and \
                    isinstance(anc.test, ast.Attribute) and isinstance(anc.test.value, ast.Name) and \
                    anc.test.value.id == "self" and anc.test.attr in flags:
                gate = flags[anc.test.attr]
                break
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                break
            child = anc
        if gate is None:
            return None
        gates.add(gate)
    return gates.pop() if len(gates) == 1 else None


def _never_read(unit: Unit, attr: str | None) -> bool:
    """Nothing in the module reads ``<x>.attr`` (the layer stored there is never applied),
    and no string spells it (``getattr(self, "dropout")``). Asked only for a class that
    defines its own ``forward``."""
    if attr is None:
        return False
    model = unit.model
    if any(n.attr == attr and isinstance(n.ctx, ast.Load) for n in model.nodes_by_type.get(ast.Attribute, ())):
        return False
    return not any(isinstance(n.value, str) and attr in n.value for n in model.nodes_by_type.get(ast.Constant, ()))


def _assigned_attribute(call: ast.Call) -> str | None:
    """``X`` when ``call`` sits in the value of an assignment to ``self.X``."""
    for anc in ancestors(call):
        if isinstance(anc, ast.Assign):
            names = [t.attr for t in anc.targets if isinstance(t, ast.Attribute) and
                     isinstance(t.value, ast.Name) and t.value.id == "self"]
            return names[0] if len(names) == 1 and len(anc.targets) == 1 else None
        if isinstance(anc, ast.stmt):
            return None
    return None


def _inside(node: ast.AST, func: ast.AST) -> bool:
    probe = parent(node)
    while probe is not None:
        if probe is func:
            return True
        if isinstance(probe, (*FunctionNode, ast.ClassDef, ast.Lambda)):
            return False
        probe = parent(probe)
    return False


def _judge_call(unit: Unit, call: ast.Call, params: frozenset[str], depth: int = 4) -> Verdict:
    """What a call inside a class contributes (``params``: the ``__init__``
    parameters a value may come from where the call sits in ``__init__``)."""
    func = call.func
    model = unit.model
    if _loaded_settled(unit, call, depth):
        return _FREE
    if isinstance(func, ast.Name) and func.id in model.classes:
        if isinstance(parent(call), ast.Raise):
            return _FREE  # `raise CheckError(...)`
        return _apply(unit, class_content(unit, model.classes[func.id]), call, params)
    if isinstance(func, ast.Name) and func.id in model.functions:
        defs = [d for d in model.functions[func.id] if not isinstance(parent(d), ast.ClassDef)]
        if _transient(call):
            return _FREE
        if len(defs) != 1 or depth <= 0:
            return _UNKNOWN if defs else _FREE
        return _helper_verdict(unit, defs[0], depth - 1)
    q = model.qualname(func)
    if q is None:
        return _FREE  # a method of a local object (`self.fc(x)`, `x.view(...)`)
    if q in _CONTAINERS:
        extra = _FREE
        for arg in call.args:  # `nn.Sequential(*layers)` / `nn.ModuleList(blocks)` with a parameter
            inner = arg.value if isinstance(arg, ast.Starred) else arg
            if isinstance(inner, ast.Name) and inner.id in params:
                extra |= Verdict(False, frozenset(), frozenset({inner.id}))
        return extra
    if q in N.MODULE_WRAPPERS and call.args and isinstance(call.args[0], ast.Call):
        return _judge_call(unit, call.args[0], params, depth)  # torch.jit.script(nn.Sequential(...))
    if q.startswith(_TRANSFORMS) and not q.endswith("Compose"):
        return _FREE  # torchvision's image transforms: the same in train and eval mode
    if q.startswith("torch.") or library.layer(q) is not None:
        return _library(q, call, unit, params)
    found = locate_class(unit, q) if not q.startswith(("builtins.",)) else None
    if found is not None:
        other, cls = found
        return _apply(unit, class_content(other, cls), call, params)
    if q.split(".", 1)[0] in _SAFE_ROOTS:
        return _FREE
    helper = locate_function(unit, q) if depth > 0 and not _transient(call) else None
    if helper is not None:  # a builder function of another project file: what it builds
        return _helper_verdict(helper[0], helper[1], depth - 1)
    # an unknown callable: it may build a submodule when its result is kept
    return _UNKNOWN if _kept(call) and not _array_only(call, model) else _FREE


def _loaded_settled(unit: Unit, call: ast.Call, depth: int) -> bool:
    """A submodule a method other than ``__init__`` stores on ``self`` from a project
    builder function that returns it in eval mode (``self.model, self.h =
    load_model(path)`` on first use in ``forward``, the builder calling
    ``generator.eval()`` before returning it): it is built when that method runs,
    after any mode switch of the owner, so it adds nothing to what ``eval()`` on the
    owner changes. Only the returned values the statement stores on ``self`` count."""
    method = next((a for a in ancestors(call) if isinstance(a, (*FunctionNode, ast.Lambda))), None)
    if depth <= 0 or not isinstance(method, FunctionNode) or method.name == "__init__" or \
            not isinstance(parent(method), ast.ClassDef):
        return False
    stmt = parent(call)
    if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1):
        return False
    target = stmt.targets[0]
    elts = target.elts if isinstance(target, ast.Tuple) else [target]
    stored = [i for i, e in enumerate(elts) if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
              and e.value.id == "self"]
    if not stored:
        return False
    func = call.func
    if isinstance(func, ast.Name) and func.id in unit.model.functions and func.id not in unit.model.classes:
        defs = [d for d in unit.model.functions[func.id] if not isinstance(parent(d), ast.ClassDef)]
        found = (unit, defs[0]) if len(defs) == 1 else None
    else:
        q = unit.model.qualname(func)
        found = locate_function(unit, q) if q and not q.startswith("torch.") else None
    if found is None:
        return False
    builder_unit, builder = _with_flow(found[0]), found[1]
    returned = [n.value for n in builder_unit.model.own_nodes(builder) if isinstance(n, ast.Return)]
    values = []
    for value in returned:
        if value is None:
            return False
        if isinstance(target, ast.Tuple):
            if not isinstance(value, ast.Tuple) or len(value.elts) != len(elts):
                return False
            values += [value.elts[i] for i in stored]
        else:
            values.append(value)
    if not values or not all(isinstance(v, (ast.Name, ast.Call)) for v in values):
        return False
    facts = ModeFacts.for_unit(builder_unit)
    token = _SETTLED.set(True)
    try:
        return all((facts.content_of(v, depth - 1) if isinstance(v, ast.Name) else facts.build_content(v, depth - 1))
                   == "free" for v in values)
    finally:
        _SETTLED.reset(token)


def _array_only(call: ast.Call, model) -> bool:
    """The result goes into a local name that is only ever read as an argument of a
    ``torch.*``/``numpy.*`` function or registered as a buffer (``basis = mel(...)``;
    ``torch.from_numpy(basis)``):
    data, not a submodule (a module is stored, called or handed to a container)."""
    stmt = parent(call)
    if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1 and
            isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    func = next((a for a in ancestors(stmt) if isinstance(a, FunctionNode)), None)
    if func is None:
        return False
    reads = [n for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    for read in reads:
        holder = parent(read)
        if isinstance(holder, ast.Call) and isinstance(holder.func, ast.Attribute) and \
                holder.func.attr == "register_buffer" and read in holder.args:
            continue  # a buffer holds a tensor, never a submodule
        q = model.qualname(holder.func) if isinstance(holder, ast.Call) and read in holder.args else None
        if not q or not q.startswith(("torch.", "numpy.")) or q.startswith("torch.nn.") or q in _CONTAINERS:
            return False
    return bool(reads)


def _kept(call: ast.Call) -> bool:
    """Is the call's result kept -- stored on ``self`` or in a name, directly or inside
    a container or another call (``nn.Sequential(make(...))``)?"""
    node: ast.AST = call
    while True:
        above = parent(node)
        if isinstance(above, (ast.List, ast.Tuple, ast.Starred, ast.keyword, ast.ListComp, ast.Dict)) or \
                (isinstance(above, ast.Call) and node is not above.func):
            node = above
            continue
        if isinstance(above, ast.comprehension):
            return False
        if isinstance(above, (ast.Assign, ast.AnnAssign)):
            targets = above.targets if isinstance(above, ast.Assign) else [above.target]
            # a local name builds a submodule only in a constructor or a builder function, not
            # in another method (`path = Downloader.fetch(url)` in `load_from_file`)
            local = _builds_locally(above)
            return any((local and isinstance(t, (ast.Name, ast.Tuple))) or any(
                isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self"
                for e in (t.elts if isinstance(t, ast.Tuple) else [t])) for t in targets)
        return False


def _plain_member(call: ast.Call) -> bool:
    """The call's result is stored on ``self`` only inside a plain list, tuple or dict
    (``self.models = [load(p) for p in paths]``), which registers nothing: ``eval()`` /
    ``train()`` on the class never reach it (an ensemble wrapper that puts each member in
    eval mode itself: its missing eval() judged false twice in blind test 105) -- unless the class
    registers that attribute's items after all (``_registered_later``)."""
    node: ast.AST = call
    plain = False
    while True:
        above = parent(node)
        if isinstance(above, (ast.List, ast.Tuple, ast.ListComp, ast.Dict)):
            plain, node = True, above
            continue
        if isinstance(above, ast.Assign) and plain and len(above.targets) == 1:
            target = above.targets[0]
            return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                target.value.id == "self" and not _registered_later(above, target.attr)
        return False


def _registered_later(assign: ast.AST, attr: str) -> bool:
    """The class holding ``assign`` hands ``self.<attr>`` to a container module or registers
    its items (``nn.ModuleList(self.<attr>)``, ``nn.Sequential(*self.<attr>)``,
    ``self.add_module(...)``, ``setattr(self, ...)``): the plain list's members become
    submodules after all."""
    cls = next((a for a in ancestors(assign) if isinstance(a, ast.ClassDef)), None)
    if cls is None:
        return True
    for node in ast.walk(cls):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("add_module", "register_module", "setattr", "ModuleList", "ModuleDict", "Sequential"):
            if name in ("add_module", "register_module", "setattr"):
                return True
            for arg in node.args:
                inner = arg.value if isinstance(arg, ast.Starred) else arg
                if isinstance(inner, ast.Attribute) and inner.attr == attr and \
                        isinstance(inner.value, ast.Name) and inner.value.id == "self":
                    return True
    return False


def _transient(call: ast.Call) -> bool:
    """A helper function called in a method other than ``__init__`` (``forward``)
    whose result is not stored on ``self``: whatever it builds or runs there is no
    submodule, so ``eval()`` on the class does not reach it (a read of
    ``self.training`` is judged on its own)."""
    if isinstance(parent(call), ast.Raise) or (isinstance(parent(call), ast.Expr) and not any(
            isinstance(a, ast.Name) and a.id == "self" for a in (*call.args, *(k.value for k in call.keywords)))):
        return True  # a check or an exception: its result is dropped, and it is not handed `self`
    return not _builds_locally(call) and not _kept(call)


def _builds_locally(stmt: ast.AST) -> bool:
    func = next((a for a in ancestors(stmt) if isinstance(a, (*FunctionNode, ast.Lambda))), None)
    return func is None or not isinstance(parent(func), ast.ClassDef) or getattr(func, "name", "") == "__init__"


def _library(q: str, call: ast.Call | None, unit: Unit, params: frozenset[str]) -> Verdict:
    """A library layer or function by its qualified name (``call`` None: a base class,
    arguments unknown)."""
    known = library.layer(q)
    if known is not None and known.mode == "free":
        return _FREE
    if known is not None and known.mode == "active":
        return _ACTIVE
    if known is not None:  # conditional
        if known.stack is not None and _single_layer(_argument(call, known.stack)):
            return _FREE  # `nn.LSTM(..., dropout=0.3)` with one layer: the dropout acts between layers
        verdict = _FREE
        for arg in known.rates:
            verdict |= _rate(_argument(call, arg), unit, params)
        for arg in known.flags:
            verdict |= _flag(_argument(call, arg))
        return verdict
    functional = library.functional(q)
    if functional is not None:
        if call is None:
            return _FREE
        training = _argument(call, functional.training)
        if not isinstance(training, ast.AST) or isinstance(training, ast.Constant):
            return _FREE  # a fixed `training=` behaves the same in both modes
        rate = functional.rate
        return _rate(_argument(call, rate), unit, params) if rate else _ACTIVE
    if q.startswith("torch.nn.functional."):
        return _FREE
    if q.startswith("torch.nn.utils.") and "spectral_norm" in q:
        return _ACTIVE  # power iteration runs in train mode only
    if q.startswith("torch.nn.") and not q.startswith(("torch.nn.init.", "torch.nn.utils.")):
        last = q.rsplit(".", 1)[-1]
        if last.endswith("Loss"):
            return _FREE
        return _ACTIVE if last[:1].isupper() else _FREE
    return _FREE  # torch.* tensors and functions


def _argument(call: ast.Call | None, arg: library.Arg) -> object:
    name, position, default = arg.name, arg.position, arg.default
    if call is None:
        return None  # unknown
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if position is not None and position < len(call.args) and \
            not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
        return None
    return ast.Constant(default)


def _single_layer(value: object) -> bool:
    """A constant stack depth of at most 1 (``num_layers=1``, the default)."""
    constant = _constant(value) if isinstance(value, ast.AST) else _NO_DEFAULT
    return isinstance(constant, int) and not isinstance(constant, bool) and constant <= 1


def _rate(value: object, unit: Unit, params: frozenset[str]) -> Verdict:
    """A dropout probability: 0 (or None/False) is mode-free, an ``__init__``
    parameter is a condition, anything else counts as active."""
    if isinstance(value, ast.AST):
        constant = _constant(value)
        if constant is not _NO_DEFAULT:
            return _FREE if not constant else _ACTIVE
        if isinstance(value, ast.Name) and value.id in params:
            return Verdict(False, frozenset({value.id}))
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
            # `self.dropout = dropout` in `__init__`, read as `F.dropout(x, p=self.dropout, ...)`:
            # a condition on that parameter (NodeGAE's LinkPredictor built with dropout 0)
            stored = unit.model.assignments(value)[0]
            if stored and all(isinstance(v, ast.Name) and _init_parameter(unit, v) for v in stored):
                return Verdict(False, frozenset(v.id for v in stored))
        keyed = _config_key(value)
        if keyed is not None and keyed[0] in params:
            return Verdict(False, frozenset({f"{keyed[0]}[{keyed[1]}]"}))  # `cfg["drop_rate"]`
        if keyed is not None:
            found = _config_value(unit, value.value, keyed[1])  # type: ignore[attr-defined]
            if found is not _NO_DEFAULT:
                return _FREE if not found else _ACTIVE
        known = _constant_values(unit, value)
        if known is not None:
            return _FREE if not any(known) else _ACTIVE
    elif value is not None and value is not _NO_DEFAULT:
        return _FREE if not value else _ACTIVE
    return _ACTIVE


def _init_parameter(unit: Unit, name: ast.Name) -> bool:
    """``name`` reads a parameter of the ``__init__`` it is written in, never rebound there."""
    values, func = unit.model.assignments(name)
    return func is not None and getattr(func, "name", "") == "__init__" and not values


def _config_key(value: ast.AST) -> tuple[str, str] | None:
    """``(name, key)`` for ``name["key"]`` (a configuration dict read with a constant key)."""
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and \
            isinstance(value.slice, ast.Constant) and isinstance(value.slice.value, str):
        return value.value.id, value.slice.value
    return None


def _config_value(unit: Unit, expr: ast.AST, key: str) -> object:
    """The constant a configuration dict ``expr`` of the reviewed file holds under
    ``key`` (``CFG = {"drop_rate": 0.0, ...}``), followed through names; dicts merged
    in with ``CFG.update(other)`` and item stores ``CFG["key"] = v`` are taken into
    account. ``_NO_DEFAULT`` when unknown."""
    if unit.flow is None:
        return _NO_DEFAULT
    found = _entries(unit.flow.values_of(expr) if isinstance(expr, ast.Name) else [expr], key)
    if found is None:
        return _NO_DEFAULT
    name = expr.id if isinstance(expr, ast.Name) else None
    if name is not None:
        for call in unit.model.calls_by_name.get("update", ()):
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and \
                    call.func.value.id == name:
                merged = _merged_entries(unit, call, key)
                if merged is None:
                    return _NO_DEFAULT
                found.extend(merged)
        for node in unit.model.nodes_by_type.get(ast.Subscript, ()):
            if isinstance(node.ctx, ast.Store) and _config_key(node) == (name, key):
                return _NO_DEFAULT
    if not found:
        return _NO_DEFAULT
    return next((f for f in found if f), found[0])  # any non-zero rate wins


_MISSING_KEY = object()


def _dict_entry(value: ast.Dict, key: str) -> object:
    """The constant under ``key`` in a dict literal, ``_MISSING_KEY`` when absent,
    ``_NO_DEFAULT`` when not a constant (or hidden behind ``**other``)."""
    hit: object = _MISSING_KEY
    for k, v in zip(value.keys, value.values):
        if k is None:
            hit = _NO_DEFAULT  # `{**base, ...}`
        elif isinstance(k, ast.Constant) and k.value == key:
            hit = _constant(v)
    return hit


def _merged_entries(unit: Unit, call: ast.Call, key: str) -> list[object] | None:
    """What ``cfg.update(arg)`` may put under ``key``: [] when no dict it may merge
    holds the key, the constants when they do, None when unknown."""
    if len(call.args) != 1 or call.keywords:
        return None if call.keywords and any(k.arg == key or k.arg is None for k in call.keywords) or \
            len(call.args) > 1 else []
    arg = call.args[0]
    candidates: list[ast.AST] = []
    if isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name):
        for table in unit.flow.values_of(arg.value):  # `model_configs[choice]`: any of its dicts
            if not isinstance(table, ast.Dict) or any(k is None for k in table.keys):
                return None
            candidates.extend(table.values)
    else:
        candidates.extend(unit.flow.values_of(arg) if isinstance(arg, ast.Name) else [arg])
    return _entries(candidates, key)


def _entries(dicts: list[ast.AST], key: str) -> list[object] | None:
    """The constants dict literals hold under ``key`` (those without it add nothing);
    None when one is not a dict literal or its entry is not a constant."""
    out = []
    for value in dicts:
        if not isinstance(value, ast.Dict):
            return None
        entry = _dict_entry(value, key)
        if entry is _NO_DEFAULT:
            return None
        if entry is not _MISSING_KEY:
            out.append(entry)
    return out


def _flag(value: object) -> Verdict:
    if isinstance(value, ast.AST):
        constant = _constant(value)
        return _ACTIVE if constant is _NO_DEFAULT or constant else _FREE
    return _ACTIVE if value is None or value else _FREE


def _constant_values(unit: Unit, expr: ast.AST) -> list[object] | None:
    """The constants a name of the reviewed file may hold (``p = 0.0``), when every
    value it may hold is one; None otherwise (only where a flow is at hand)."""
    if unit.flow is None or not isinstance(expr, ast.Name):
        return None
    out = []
    for value in unit.flow.values_of(expr):
        constant = _constant(value) if value is not expr else _NO_DEFAULT
        if constant is _NO_DEFAULT:
            return None
        out.append(constant)
    return out or None


def _apply(unit: Unit, fact: ModeContent, call: ast.Call, params: frozenset[str]) -> Verdict:
    """A class's fact at one construction ``call`` (in ``unit``)."""
    v = fact.verdict
    if v.active:
        return v
    out = _FREE
    for rate in sorted(v.rates):
        name, _, key = rate.partition("[")
        given, value = fact.argument(call, name)
        if key:
            out |= _keyed_rate(unit, value if given else None, key[:-1], params)
        elif not given and value is None:
            out |= _ACTIVE  # no argument, no constant default
        else:
            out |= _rate(value, unit, params)
    for name in sorted(v.modules):
        given, value = fact.argument(call, name)
        out |= _module_value(unit, value, params) if given else (
            _FREE if value is None and any(k == name for k, _ in fact.defaults) else _UNKNOWN)
    return out


def _keyed_rate(unit: Unit, value: object, key: str, params: frozenset[str]) -> Verdict:
    """A rate read from a configuration dict parameter (``cfg["drop_rate"]``) at a
    construction that passes ``value`` for that dict."""
    if not isinstance(value, ast.AST):
        return _ACTIVE
    if isinstance(value, ast.Name) and value.id in params:
        return Verdict(False, frozenset({f"{value.id}[{key}]"}))
    found = _config_value(unit, value, key)
    if found is _NO_DEFAULT:
        return _ACTIVE
    return _FREE if not found else _ACTIVE


def _module_value(unit: Unit, value: object, params: frozenset[str]) -> Verdict:
    if not isinstance(value, ast.AST):
        return _UNKNOWN
    if isinstance(value, ast.Constant) and value.value is None:
        return _FREE
    if isinstance(value, ast.Name) and value.id in params:
        return Verdict(False, frozenset(), frozenset({value.id}))
    if isinstance(value, (ast.List, ast.Tuple)):
        out = _FREE
        for item in value.elts:
            out |= _module_value(unit, item, params)
        return out
    if unit.flow is not None:
        # one question set per unit and state: its cycle guard stops `model = Wrap(model)`,
        # whose argument's values include that very construction
        key = ("module_values", _SETTLED.get())
        facts = unit.__dict__.get(key)
        if facts is None:
            facts = unit.__dict__[key] = ModeFacts.for_unit(unit)
        content = facts.content_of(value)
        return _FREE if content == "free" else _ACTIVE if content == "active" else _UNKNOWN
    if isinstance(value, ast.Call):
        return _judge_call(unit, value, params)
    return _UNKNOWN


# ------------------------------------------------------------------ values of a file
class ModeFacts:
    """The model-content question for values of one reviewed file (``ctx.module_modes``)."""

    def __init__(self, model, flow, path: str | None) -> None:
        self.unit = Unit(path, model, flow)
        self._memo: dict[int, str | None] = {}
        self._parsed: list[ast.AST] = []

    @classmethod
    def for_unit(cls, unit: Unit) -> ModeFacts:
        facts = cls.__new__(cls)
        facts.unit = unit
        facts._memo = {}
        facts._parsed = []
        return facts

    def content_of(self, expr: ast.AST, depth: int = 3) -> str | None:
        """``"free"`` when every value ``expr`` may hold is a module whose layers all
        behave the same in train and eval mode (eval() changes nothing), ``"active"``
        when one holds a mode-dependent layer, None when unknown (a value from a
        library function, an untyped parameter). A ``None`` placeholder among the values
        (``MODEL = None`` filled by a loader declaring it ``global``) holds no module."""
        key = id(expr)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = _CYCLE  # a value that refers back to itself (`net = net.to(d)`) adds nothing
        result = self._content_of(expr, depth)
        self._memo[key] = result
        return result

    def build_state(self, call: ast.Call) -> str | None:
        """The state of what a construction expression builds, right after it runs:
        ``"free"`` (no mode-dependent layer), ``"eval"`` (it has some, but the class
        switches itself to eval mode in its constructor, it comes from
        ``from_pretrained``, or a builder calls ``.eval()`` on it before returning
        it), ``"active"`` (a mode-dependent layer in training mode), None (unknown)."""
        content = self.build_content(call)
        if content == "free":
            return content
        token = _SETTLED.set(True)
        try:
            settled = ModeFacts.for_unit(self.unit).build_content(call)
        finally:
            _SETTLED.reset(token)
        if settled == "free":
            return "eval"
        return settled if content == "active" else None

    def _content_of(self, expr: ast.AST, depth: int) -> str | None:
        flow = self.unit.flow
        if _SETTLED.get() and isinstance(expr, ast.Name) and \
                _body_switches(self.unit.model.scope_of(expr), expr.id, (expr.lineno, expr.col_offset)):
            return "free"  # `model.eval()` ran before: whatever it holds is in eval mode now
        values = flow.values_of(expr) if flow is not None else [expr]
        if values == [expr] and isinstance(expr, ast.Name):
            values = self._unpacked(expr) or values
        if len(values) > 1 and isinstance(expr, ast.Name) and self.unit.model.scope_of(expr) is self.unit.model.tree \
                and not _rebound_in_loop(expr, self.unit.model.assignments(expr)[0]):
            # a script or notebook runs top to bottom: the assignment that reaches this
            # line, not one of a later cell (`model = "llama3"` further down)
            reaching = flow.reaching_value(expr)
            if reaching is not None:
                values = flow.values_of(reaching) if isinstance(reaching, ast.Name) else [reaching]
        # a `None` placeholder (`MODEL = None` at the top, set by `global MODEL` in a loader)
        # holds no module: where the name is used as one, it holds one of the others
        values = [v for v in values if not (isinstance(v, ast.Constant) and v.value is None)] or values
        return _combine({self._value_content(v, expr, depth) for v in values})

    def _unpacked(self, name: ast.Name) -> list[ast.AST]:
        """What ``name`` holds when a tuple assignment binds it from a call of a
        function of this file (``model, result = train_model(...)``): the element at
        its place in every tuple that function returns; [] when unknown."""
        model, flow = self.unit.model, self.unit.flow
        if flow is None:
            return []
        scope = model.scope_of(name)
        out: list[ast.AST] = []
        for stmt in model.own_nodes(scope):
            if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
                continue
            for target in stmt.targets:
                if not isinstance(target, ast.Tuple) or any(isinstance(e, ast.Starred) for e in target.elts):
                    continue
                index = next((i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name.id),
                             None)
                if index is None:
                    continue
                if flow.resolve_local_call(stmt.value) is None:
                    return []
                for value in flow.values_of(stmt.value, follow_returns=True):
                    if not isinstance(value, ast.Tuple) or len(value.elts) != len(target.elts):
                        return []
                    out.append(value.elts[index])
        return out

    def _value_content(self, value: ast.AST, origin: ast.AST, depth: int) -> str | None:
        if isinstance(value, ast.Call):
            return self.build_content(value, depth)
        if isinstance(value, ast.IfExp):
            # `CNN().cuda() if self.with_cuda else CNN()`: what either arm builds (a trainer's
            # Conv/ReLU/Linear model, an eval() in its epoch loop judged noise in blind test 145)
            arms = [a for a in (value.body, value.orelse) if not (isinstance(a, ast.Constant) and a.value is None)]
            return _combine({self._value_content(a, origin, depth) for a in arms}) if arms else None
        if isinstance(value, ast.Name) and value is not origin:
            return self.content_of(value, depth - 1) if depth > 0 else None
        if isinstance(value, ast.Name):
            return self._annotated(value)
        return None

    def build_content(self, call: ast.Call, depth: int = 3) -> str | None:
        """What a construction expression builds: ``Net(...)``, ``nn.Sequential(...)``,
        a local helper returning one, ``build().to(device)``."""
        func = call.func
        model, flow = self.unit.model, self.unit.flow
        if isinstance(func, ast.Attribute) and func.attr in _MOVES:
            if _SETTLED.get() and switches_to_eval(call):
                return "free"  # `Net(conf).eval()`: in eval mode once built, whatever its layers
            if _SETTLED.get() and func.attr == "train":
                token = _SETTLED.set(False)  # `.eval().train()`: back in training mode, judged by its layers
                try:
                    return self._moved_content(func.value, depth)
                finally:
                    _SETTLED.reset(token)
            return self._moved_content(func.value, depth)
        if isinstance(func, ast.Name) and func.id in model.functions and func.id not in model.classes:
            if flow is None or depth <= 0 or flow.resolve_local_call(call) is None:
                return None
            handed = _handed_back(flow.resolve_local_call(call), call)
            if handed is not None:  # `model = weight_init(model)`: the module it was handed
                return self._layer(handed, depth)
            returned = [v for v in flow.values_of(call, follow_returns=True) if v is not call]
            returned = [v for v in returned if not (isinstance(v, ast.Constant) and v.value is None)] or returned
            return _combine({self._value_content(v, call, depth - 1) if isinstance(v, ast.Call) else
                             (self.content_of(v, depth - 1) if isinstance(v, (ast.Name, ast.Attribute)) else None)
                             for v in returned})
        if isinstance(func, ast.Attribute) and isinstance(func.value, (ast.Name, ast.Attribute)):
            loaded = self._class_constructor(func)
            if loaded is not None:
                return loaded
        if isinstance(func, ast.Name) and func.id in model.classes:
            if func.id not in model.module_classes:
                return None
            # the definition this construction sees: a notebook that redefines `Net` in a later
            # cell built `net = Net()` from the earlier one
            return _word(_apply(self.unit, class_content(self.unit, model.class_reaching(func.id, call)), call,
                                frozenset()))
        q = model.qualname(func)
        if q is None:
            return None
        if q in _CONTAINERS:
            return _combine({self._layer(a, depth) for a in call.args}, empty="free")
        if q.startswith(_TRANSFORMS) and not q.endswith("Compose"):
            return "free"  # (a Compose holds whatever callables it is given)
        if q == "copy.deepcopy" and call.args:  # a copy has the layers of what it copies
            return self._layer(call.args[0], depth)
        if q in N.MODULE_WRAPPERS:  # DataParallel(net), torch.compile(net): the layers of the module it wraps
            inner = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg in ("module", "model")), None)
            return self._layer(inner, depth) if inner is not None else None
        if q.startswith("torch.nn.") or library.layer(q) is not None:
            if q.startswith("torch.nn.functional.") or q.startswith("torch.nn.init."):
                return None
            return _word(_library(q, call, self.unit, frozenset()))
        found = locate_class(self.unit, q)
        if found is not None:
            other, cls = found
            return _word(_apply(self.unit, class_content(other, cls), call, frozenset()))
        helper = locate_function(self.unit, q) if depth > 0 and not q.startswith("torch.") else None
        handed = _handed_back(helper[1], call) if helper is not None else None
        if handed is not None:  # `model = weight_init(model)` of utils.py: the module it was handed
            return self._layer(handed, depth)
        if helper is not None:  # a builder function of another project file: what it returns
            return ModeFacts.for_unit(_with_flow(helper[0])).returned_content(helper[1], depth - 1)
        if q == "torch.hub.load" and _local_hub(call):
            return None  # the project's own `hubconf.py` entry: it returns whatever it builds
        if q == "torch.hub.load":
            entry = library.hub_entry(call)  # a hub model listed by repository and entry (DINOv2)
            if entry is not None and library.constructor(entry) is not None:
                return _constructed(entry)
        return _constructed(q, call, model)

    def _moved_content(self, inner: ast.AST, depth: int) -> str | None:
        """What ``inner.to(...)`` / ``inner.cuda()`` / ``inner.eval()`` holds: what ``inner`` does."""
        if isinstance(inner, ast.Call):
            return self.build_content(inner, depth)
        return self.content_of(inner, depth - 1) if depth > 0 and isinstance(inner, (ast.Name, ast.Attribute)) \
            else None

    def returned_content(self, func: ast.AST, depth: int) -> str | None:
        """What a builder function of this unit returns (every ``return`` value)."""
        returned = [n.value for n in self.unit.model.own_nodes(func) if isinstance(n, ast.Return)]
        if not returned or any(v is None for v in returned):
            return None
        return _combine({self._value_content(v, func, depth) if isinstance(v, ast.Call) else
                         (self.content_of(v, depth) if isinstance(v, (ast.Name, ast.Attribute)) else None)
                         for v in returned})

    def _class_constructor(self, func: ast.Attribute) -> str | None:
        """``Net.load_from_checkpoint(...)`` / ``Net.from_pretrained(...)`` / a
        classmethod of a project module class: an instance of that class, judged by
        the class whatever it is given (a ``from_pretrained`` load is in eval mode
        when the state after construction is asked)."""
        if _SETTLED.get() and func.attr in _EVAL_LOADERS:
            return "free"
        model = self.unit.model
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id in model.classes:
            if owner.id not in model.module_classes:
                return None
            found: tuple[Unit, ast.ClassDef] | None = (self.unit, model.classes[owner.id])
        else:
            q = model.qualname(owner)
            found = locate_class(self.unit, q) if q and not q.startswith("torch.") else None
        if found is None:
            return None
        cls = found[1]
        if not cls.bases:
            return None  # not a module class
        method = next((s for s in cls.body if isinstance(s, FunctionNode) and s.name == func.attr), None)
        is_constructor = func.attr in ("load_from_checkpoint", "from_pretrained") if method is None else any(
            isinstance(d, ast.Name) and d.id == "classmethod" for d in method.decorator_list)
        if not is_constructor:
            return None
        return _word(class_content(*found).verdict)

    def _layer(self, arg: ast.AST, depth: int) -> str | None:
        """A layer of ``nn.Sequential(...)``: built in place, or a name bound to layers."""
        if isinstance(arg, ast.Call):
            return self.build_content(arg, depth)
        if isinstance(arg, ast.Name):
            return self.content_of(arg, depth - 1) if depth > 0 else None
        return None  # `*layers`, a subscript

    def _annotated(self, name: ast.Name) -> str | None:
        """An untyped-value parameter annotated with a project model class
        (``model: "Whisper"``): free when the class is free whatever it is given."""
        values, func = self.unit.model.assignments(name)
        if func is None or values:
            return None
        args = func.args
        ann = next((a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
                    if a.arg == name.id and a.annotation is not None), None)
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                return None
            ann._tr_parent = func  # type: ignore[attr-defined]
            self._parsed.append(ann)  # kept alive: the model memoises qualified names by node id
        if not isinstance(ann, (ast.Name, ast.Attribute)):
            return None
        model = self.unit.model
        if isinstance(ann, ast.Name) and ann.id in model.classes:
            found: tuple[Unit, ast.ClassDef] | None = (self.unit, model.classes[ann.id])
        else:
            q = model.qualname(ann)
            found = locate_class(self.unit, q) if q else None
        if found is None:
            return None
        return _word(class_content(*found).verdict)


def _local_hub(call: ast.Call) -> bool:
    """``torch.hub.load(repo_dir, entry, source="local")``: an entry of a ``hubconf.py``
    on this machine (usually the project's own), not a published model repository --
    what it returns (a module, or a wrapper object) is not known from the call."""
    return any(kw.arg == "source" and isinstance(kw.value, ast.Constant) and kw.value.value == "local"
               for kw in call.keywords)


def _constructed(q: str, call: ast.Call | None = None, model=None) -> str | None:
    """What a library constructor builds, by the constructor table
    (``library.constructor``): ``"active"`` when it may hold BatchNorm/Dropout
    (``torchvision.models.resnet18()``, ``timm.create_model(...)``), ``"free"`` when
    it holds none and comes back in training mode; when the state right after
    construction is asked, one that comes back in eval mode is ``"free"``. A
    module that comes back in eval mode with no layers listed (``torch.jit.load``:
    whatever it was saved with) stays unknown otherwise, as does an unlisted call.
    A constructor whose normalisation layer ``call`` replaces (``norm_argument``:
    ``resnet18(norm_layer=nn.InstanceNorm2d)``) with one that keeps no running
    statistics holds no BatchNorm (tmi2022's feature extractor)."""
    entry = library.constructor(q)
    if entry is None:
        return None
    if _SETTLED.get() and entry.mode == "eval":
        return "free"
    contains = entry.contains
    if entry.norm_argument and call is not None and model is not None and "batchnorm" in contains:
        norm = next((kw.value for kw in call.keywords if kw.arg == entry.norm_argument), None)
        if norm is not None and _stateless_norm(model.qualname(norm)):
            contains = contains - {"batchnorm"}
    if contains:
        return "active"
    return "free" if entry.mode == "train" else None


def _stateless_norm(q: str | None) -> bool:
    """A normalisation class that, built with its defaults, behaves the same in both modes:
    ``LayerNorm``/``GroupNorm``/``Identity`` (no mode at all) or ``InstanceNorm*`` (no
    running statistics unless ``track_running_stats=True``, which a class passed by name
    does not get)."""
    if not q:
        return False
    known = library.layer(q)
    if known is None:
        return q == "torch.nn.Identity"
    if known.mode == "free":
        return True
    return known.mode != "active" and not known.rates and all(not flag.default for flag in known.flags)


def _with_flow(unit: Unit) -> Unit:
    if unit.flow is None:
        from torchreview.engine.flow import Flow

        unit.flow = Flow(unit.model)
    return unit


def _rebound_in_loop(expr: ast.AST, values: list[ast.AST]) -> bool:
    """Is a name re-assigned inside a loop that also runs ``expr`` (a later
    assignment there reaches ``expr`` on the next round)?"""
    loops = {id(a) for a in ancestors(expr) if isinstance(a, LoopNode)}
    return bool(loops) and any(id(a) in loops for v in values for a in ancestors(v))


def _combine(results: set, empty: str | None = None) -> str | None:
    """One answer for several possible values: any active one wins, then any unknown."""
    results = results - {_CYCLE}
    if not results:
        return empty
    if "active" in results:
        return "active"
    return "free" if results == {"free"} else None
