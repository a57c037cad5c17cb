"""Seeding, and draws from the global NumPy / Python random generators."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchreview.engine.anchor import Anchor
from torchreview.engine.collectors.registry import CallNames, collects
from torchreview.engine.facts import _anchor
from torchreview.engine.semantic import position

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext

_TORCH_SEEDS = frozenset({"torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
                          "lightning.pytorch.seed_everything", "lightning.seed_everything",
                          "transformers.set_seed", "accelerate.utils.set_seed"})


@collects("seeds_torch")
def seeds_torch(ctx: "FileContext", calls: CallNames) -> bool:
    """torch's own seeding calls, the frameworks' ``seed_everything``/``set_seed``, and
    any method of those names (``torch.Generator().manual_seed``, ``L.seed_everything``)."""
    return calls.any_of(_TORCH_SEEDS) or calls.any_method(frozenset({"manual_seed", "seed_everything", "set_seed"}))


@collects("seeds_numpy")
def seeds_numpy(ctx: "FileContext", calls: CallNames) -> bool:
    return calls.any_of(frozenset({"numpy.random.seed"}))


@collects("seeds_python")
def seeds_python(ctx: "FileContext", calls: CallNames) -> bool:
    return calls.any_of(frozenset({"random.seed"}))


_TORCH_ONLY_SEEDS = frozenset({"torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all"})
_NOT_SEEDING = frozenset({"initial_seed", "get_seed", "seed_worker"})


def _called_name(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else \
        call.func.id if isinstance(call.func, ast.Name) else ""


@collects("seed_helper")
def seed_helper(ctx: "FileContext", calls: CallNames) -> bool:
    """A seeding call other than torch's own ``manual_seed`` (``seed_everything``,
    ``set_seed``, a project helper): assumed to seed every generator."""
    m = ctx.model
    # the calls by their called name (``_called_name``, as the model's walk files them): only
    # those whose name says "seed" are looked at
    for name, named in m.calls_by_name.items():
        if "seed" not in name.lower() or name in _NOT_SEEDING or name == "manual_seed":
            continue
        for call in named:
            q = m.qualname(call.func) or ""
            if q not in _TORCH_ONLY_SEEDS and q not in ("numpy.random.seed", "random.seed"):
                return True
    return False


_NUMPY_RANDOM_OK = frozenset({"seed", "get_state", "set_state", "SeedSequence", "Generator", "PCG64",
                              "BitGenerator", "MT19937", "Philox", "SFC64"})
_PY_RANDOM_USES = frozenset({"random", "randint", "randrange", "choice", "choices", "shuffle", "sample",
                             "uniform", "gauss", "normalvariate", "betavariate", "expovariate",
                             "triangular", "lognormvariate", "vonmisesvariate", "getrandbits"})


def _first(ctx: "FileContext", draws) -> Anchor | None:
    found = [call for call in ctx.model.calls if draws(call, ctx.model.qualname(call.func) or "")]
    return _anchor(ctx, min(found, key=position)) if found else None


def _numpy_draw(call: ast.Call, q: str) -> bool:
    last = q.rsplit(".", 1)[-1]
    return q.startswith("numpy.random.") and q.count(".") == 2 and last not in _NUMPY_RANDOM_OK and \
        not (last in ("default_rng", "RandomState") and bool(call.args or call.keywords))


@collects("numpy_random")
def numpy_random(ctx: "FileContext", calls: CallNames) -> Anchor | None:
    """The first draw from NumPy's global generator (``np.random.rand``; an unseeded
    ``default_rng()`` too)."""
    if not any(q.startswith("numpy.random.") for q in calls.names):
        return None  # (every draw is a call of one of these: no pass over the calls)
    return _first(ctx, _numpy_draw)


@collects("python_random")
def python_random(ctx: "FileContext", calls: CallNames) -> Anchor | None:
    """The first draw from Python's global ``random`` generator."""
    if not any(q.startswith("random.") for q in calls.names):
        return None  # (every draw is a call of one of these: no pass over the calls)
    return _first(ctx, lambda call, q: q.startswith("random.") and q.count(".") == 1 and
                  q.rsplit(".", 1)[-1] in _PY_RANDOM_USES)


_SEEDING_NAMES = frozenset({"manual_seed", "manual_seed_all", "seed", "seed_everything", "set_seed"})


@collects("seed_truthiness_guards")
def seed_truthiness_guards(ctx: "FileContext", calls: CallNames) -> tuple[Anchor, ...]:
    return tuple(_anchor(ctx, test) for test in _seed_truthiness_tests(ctx))


@collects("seed_truthiness_from_cli")
def seed_truthiness_from_cli(ctx: "FileContext", calls: CallNames) -> tuple[Anchor, ...]:
    """The guards whose seed comes from the command line (``if args.seed:``): a user who
    passes ``--seed 0`` gets an unseeded run -- the plain case of the bug. A seed handed
    in by a caller or a config may use 0 for "no seed" on purpose."""
    return tuple(_anchor(ctx, test) for test in _seed_truthiness_tests(ctx) if ctx.inputs.source_of(test) is not None)


def _seed_truthiness_tests(ctx: "FileContext") -> list[ast.AST]:
    """``if args.seed: torch.manual_seed(args.seed)`` (or ``... if seed else None``), a
    truthiness test that skips seeding for a seed of 0. None when the file declares
    the seed option with ``default=0`` or a help text saying 0 means no seed (0 then
    means "do not seed" by convention).
    A tested parameter of a notebook helper that every call of the notebook gives a
    non-zero constant or ``None`` (or leaves at such a default) never meets a seed of
    0: not collected (``_never_zero_parameter``); nor a parameter whose default is 0
    (the function's own "0 means do not seed"), nor a seed the same function also hands
    to another call outside the guard (``seed=seed``: a seed of 0 still seeds that), nor
    a value handed to a function of this module that seeds nothing (``if args.seed_path:
    seeds = load_seeds(args.seed_path)``: a file of seeds, not a seed)."""
    memo = ctx.__dict__.get("_tr_seed_tests")  # both collectors above ask: found once per file
    if memo is None:
        memo = ctx.__dict__["_tr_seed_tests"] = _find_seed_truthiness_tests(ctx)
    return memo


def _find_seed_truthiness_tests(ctx: "FileContext") -> list[ast.AST]:
    m = ctx.model
    if any(any(isinstance(a, ast.Constant) and isinstance(a.value, str) and "seed" in a.value for a in call.args) and
           any((kw.arg == "default" and isinstance(kw.value, ast.Constant) and kw.value.value == 0) or
               (kw.arg == "help" and _zero_means_unseeded(kw.value)) for kw in call.keywords)
           for call in m.calls_by_name.get("add_argument", [])):
        return []  # the option says 0 means "do not seed" (its default, or its help text)
    found = []
    for node in [*m.nodes_by_type.get(ast.If, ()), *m.nodes_by_type.get(ast.IfExp, ())]:
        test = node.test
        name = test.attr if isinstance(test, ast.Attribute) else test.id if isinstance(test, ast.Name) else ""
        if "seed" not in name.lower() or _never_zero_parameter(ctx, test) or _zero_by_default(ctx, test) or \
                _seeded_elsewhere(ctx, node, test):
            continue
        text = ast.unparse(test)
        body = node.body if isinstance(node.body, list) else [node.body]
        for sub in (n for stmt in body for n in ast.walk(stmt)):
            if not isinstance(sub, ast.Call):
                continue
            callee = _called_name(sub)
            if (callee in _SEEDING_NAMES or "seed" in callee.lower()) and any(
                    ast.unparse(a) == text for a in [*sub.args, *(k.value for k in sub.keywords)]) and \
                    not _local_non_seeding(ctx, sub):
                found.append(test)
                break
    return found


def _local_non_seeding(ctx: "FileContext", call: ast.Call) -> bool:
    """The call reaches a function of this module that seeds nothing itself
    (``load_seeds(args.seed_path)``, reading a list of environment seeds from a file):
    the tested value is not a seed handed to a generator, so 0 is not a lost seed."""
    func = ctx.flow.resolve_local_call(call)
    if func is None:
        return False
    return not any(isinstance(n, ast.Call) and (_called_name(n) in _SEEDING_NAMES or "seed" in _called_name(n).lower())
                   for n in ast.walk(func))


_ZERO_UNSEEDED = re.compile(r"\b(?:0|zero)\b[^.]*\b(?:no|not|without|disables?|random)\b", re.IGNORECASE)


def _zero_means_unseeded(help_text: ast.AST) -> bool:
    """A help text saying a seed of 0 turns seeding off (``"Seed to use, if zero, no seed used"``)."""
    text = help_text.value if isinstance(help_text, ast.Constant) and isinstance(help_text.value, str) else \
        "".join(v.value for v in help_text.values if isinstance(v, ast.Constant) and isinstance(v.value, str)) \
        if isinstance(help_text, ast.JoinedStr) else ""
    return bool(_ZERO_UNSEEDED.search(text))


def _zero_by_default(ctx: "FileContext", test: ast.AST) -> bool:
    """``test`` is a parameter of its function whose default is 0 (``def f(seed=0)``): the
    function's own convention is that 0 means "do not seed", as with ``default=0`` on the
    command-line option."""
    if not isinstance(test, ast.Name):
        return False
    func = ctx.enclosing_function(test)
    if func is None:
        return False
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults)) + \
        [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return any(a.arg == test.id and isinstance(d, ast.Constant) and d.value == 0 and not isinstance(d.value, bool)
               for a, d in pairs)


def _seeded_elsewhere(ctx: "FileContext", guard: ast.AST, test: ast.AST) -> bool:
    """The seed is also handed to another call of the same function outside the guard
    (``differential_evolution(..., seed=seed)``): a seed of 0 still seeds that work."""
    scope = ctx.enclosing_function(guard) or ctx.tree
    text = ast.unparse(test)
    inside = {id(n) for n in ast.walk(guard)}
    for call in ast.walk(scope):
        if isinstance(call, ast.Call) and id(call) not in inside and any(
                kw.arg in ("seed", "random_state", "rng", "generator") and ast.unparse(kw.value) == text
                for kw in call.keywords):
            return True
    return False


def _nonzero_or_none(value: ast.AST | None) -> bool:
    return isinstance(value, ast.Constant) and (value.value is None or (
        isinstance(value.value, (int, float)) and not isinstance(value.value, bool) and value.value != 0))


def _never_zero_parameter(ctx: "FileContext", test: ast.AST) -> bool:
    """``test`` is a parameter of a function defined in a notebook (every caller is in
    view), the function is called there, and every call passes for it a non-zero
    number or ``None`` -- or leaves it at a default that is one. A helper that picks
    random images to plot with ``seed=42`` or ``seed=None`` never sees a seed of 0."""
    if not (isinstance(test, ast.Name) and ctx.source.is_notebook):
        return False
    func = ctx.enclosing_function(test)
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    names = [a.arg for a in positional]
    if test.id in names:
        index = names.index(test.id)
        defaults = dict(zip(names[len(names) - len(args.defaults):], args.defaults))
        default = defaults.get(test.id)
    elif test.id in [a.arg for a in args.kwonlyargs]:
        index = None
        default = dict(zip([a.arg for a in args.kwonlyargs], args.kw_defaults)).get(test.id)
    else:
        return False
    calls = [c for c in ctx.model.calls_by_name.get(func.name, [])
             if isinstance(c.func, ast.Name) and c.func.id == func.name]
    if not calls:
        return False
    for call in calls:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return False
        passed = next((k.value for k in call.keywords if k.arg == test.id), None)
        if passed is None and index is not None and index < len(call.args):
            passed = call.args[index]
        if not _nonzero_or_none(passed if passed is not None else default):
            return False
    return True
