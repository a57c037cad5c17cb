"""Small helpers shared by rules (questions about calls that are not model facts)."""

from __future__ import annotations

import ast
import re

from torchreview.engine.context import COMPARE_OPS, NOT_KNOWN, ancestors, parent

TORCH_LOAD = "torch.load"


def is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def is_false(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def known_false(ctx, node: ast.AST | None) -> bool:
    """A literal ``False``, or a parameter every call site of an entry script's function
    (or of a function no other project file names) passes ``False`` (``GradScaler(enabled=amp)`` in ``def train(..., amp=True)`` only
    ever called with ``amp=False``)."""
    if is_false(node):
        return True
    if node is None:
        return False
    if _impossible_device_type(ctx, node):
        return True
    # a function of a module other files import, but that none of them names (LVM-Med's
    # `train_net`, called only by the module's own `train_2d_R50`): its call sites are here
    known, value = ctx.flow.parameter_constant(
        node, called_only_here=lambda func: not ctx.call_paths.mentioned_elsewhere(func.name))
    return known and value is False


def _impossible_device_type(ctx, node: ast.AST) -> bool:
    """``device.type == "cuda:1"``: a device's ``type`` is the bare type name ("cuda"; the
    index is ``.index``), so an equality with a string holding ``:`` never holds (an
    ``autocast(enabled=DEVICE.type == 'cuda:1')`` that is never on)."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
        return False
    sides = (node.left, node.comparators[0])
    text = next((s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)), None)
    attr = next((s for s in sides if isinstance(s, ast.Attribute) and s.attr == "type"), None)
    return text is not None and ":" in text and attr is not None and ctx.kind_of(attr.value) == "device"


def is_literal(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant)


def int_value(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def short_text(ctx, expr: ast.AST | None, fallback: str = "it", limit: int = 40) -> str:
    """A one-line, length-limited source rendering of ``expr`` for messages."""
    if expr is None:
        return fallback
    text = " ".join(ctx.text(expr).split())
    if not text:
        return fallback
    return text if len(text) <= limit else text[: limit - 3] + "..."


def torch_nn_spelling(ctx, node: ast.AST) -> str | None:
    """How the file spells ``torch.nn`` for code inserted at ``node``: as in the
    enclosing class's base (``nn.Module`` -> ``nn``), else an alias of ``torch.nn``
    (``nn`` preferred), else ``<torch alias>.nn``. None when torch is not imported."""
    cls = ctx.enclosing_class(node)
    for base in cls.bases if cls is not None else ():
        if isinstance(base, ast.Attribute) and ctx.qualname(base.value) == "torch.nn":
            return ctx.text(base.value)
    aliases = sorted(local for local, qual in ctx.model.aliases.items() if qual == "torch.nn")
    if aliases:
        return "nn" if "nn" in aliases else aliases[0]
    torch_aliases = sorted(local for local, qual in ctx.model.aliases.items() if qual == "torch")
    return torch_aliases[0] + ".nn" if torch_aliases else None


def has_weights_only(ctx) -> bool:
    """Whether the targeted torch has ``torch.load(weights_only=...)`` (added in 1.13;
    on older releases the keyword is a ``TypeError``)."""
    return ctx.torch_at_least(1, 13)


NO_WEIGHTS_ONLY = ("the targeted torch predates `weights_only` (added in torch 1.13), so there is no safe "
                   "way to load a pickle here: load only files you trust, or move to torch >= 1.13 and "
                   "pass `weights_only=True` (or load a safetensors file)")


def add_weights_only_fix(call: ast.Call, ctx):
    """The (unsafe) fix shared by TR101 and TR102: add ``weights_only=True``; None
    when the targeted torch has no such keyword (before 1.13)."""
    from torchreview.fixes import insert_keyword

    if not has_weights_only(ctx):
        return None
    return insert_keyword(call, ctx, "weights_only=True", "add `weights_only=True`", "unsafe")


def load_repeat_key(finding, top_level: bool = False) -> str:
    """``Rule.repeat_key`` of the ``torch.load`` rules: one function's loads with the same
    message once the loaded expression and the line of its source are left out (`of `<path>``
    and "(line N)" name the place, not the problem). With ``top_level``, the loads at the top
    level of one file fold too (a converter script reading shard after shard from the paths
    its command line names); otherwise each top-level load stays apart."""
    message = re.sub(r"^`torch\.load` of `[^`]*`", "`torch.load` of a path", finding.message)
    message = re.sub(r" \(line \d+\)", "", message)
    where = finding.context or ("<top level>" if top_level else f"line {finding.line}")
    return f"{finding.path}|{finding.cell}|{where}|{finding.kind}|{finding.severity.label}|{message}"


def one_function_repeat_key(finding) -> str:
    """``Rule.repeat_key`` of the rules that fold one constructor's repeats: the same message,
    the names in backticks and "line N" left out, in one function (a class's ``__init__``
    keeping ``convs1`` and ``convs2`` the same wrong way); top-level code keeps each line apart."""
    message = re.sub(r"`[^`]*`", "`…`", finding.message)
    message = re.sub(r"\bline \d+", "line …", message)
    where = finding.context or f"line {finding.line}"
    return f"{finding.path}|{finding.cell}|{where}|{finding.kind}|{finding.severity.label}|{message}"


_FILLS = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})


def attribute_never_read(ctx, attr: str, owner: str) -> bool:
    """Nothing reads an attribute of this name: in this file no code loads ``<x>.<attr>``
    except to fill it (``self.layers.append(m)``), no string spells it (``getattr(self,
    "pointer")``, a state-dict key), and no neighbouring project file -- the modules this
    file imports and the files naming its module, where a subclass or code holding an
    instance would be -- spells both the identifier and the name of the class ``owner``
    that stores it (``ctx.call_paths.neighbours_mention``; an unrelated class elsewhere
    with an attribute of the same name does not count).
    What such an attribute holds
    reaches no forward, optimizer or checkpoint, so how it is stored loses nothing
    (rl4co's ``self.pointer`` list, SSLRec's ``self.beh_embedding``: judged noise)."""
    for node in ctx.model.nodes_by_type.get(ast.Attribute, ()):
        if node.attr != attr or not isinstance(node.ctx, ast.Load):
            continue
        up = parent(node)
        if isinstance(up, ast.Attribute) and up.attr in _FILLS and isinstance(parent(up), ast.Call):
            continue
        return False
    for node in ctx.model.nodes_by_type.get(ast.Constant, ()):
        if isinstance(node.value, str) and attr in node.value:
            return False
    return not set(ctx.call_paths.neighbours_mention([attr])) & set(ctx.call_paths.neighbours_mention([owner]))


_UNKNOWN = object()


def off_by_default(ctx, node: ast.AST, cls: ast.ClassDef) -> bool:
    """``node``, in ``cls``, runs only in a branch that the constructor's defaults rule out:
    under an ``if``/``while``/conditional expression whose test reads ``__init__``
    parameters -- directly in ``__init__``, or through the attribute ``__init__`` stores
    one in (``self.shift = shift``) -- and, with their constant defaults, is false (or true,
    for an ``else`` branch): ``if self.center_shift != 0:`` with ``center_shift=0``,
    ``... if not tie_embedding else [lambda ...]`` with ``tie_embedding=False``. Every
    construction of the class in this file must leave those parameters at their defaults
    (omit them, pass the same constant, or unpack a dict literal without them), with at least
    one construction here and no other project file naming the class (AdaptiveWingLoss's
    jitter branch in MakeItTalk; MMT's tied-embedding lambdas)."""
    init = next((f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and f.name == "__init__"), None)
    if init is None:
        return False
    stored: dict[str, str] = {}  # attribute -> the parameter it holds
    for sub in ast.walk(init):
        if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.value, ast.Name):
            target = sub.targets[0]
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                stored[target.attr] = sub.value.id
    assigned = [t.attr for sub in ast.walk(cls) if isinstance(sub, (ast.Assign, ast.AugAssign))
                for t in (sub.targets if isinstance(sub, ast.Assign) else [sub.target])
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"]
    rebound = {n.id for n in ast.walk(init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    args = init.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]][1:]  # after `self`
    defaults = dict(zip(reversed([a.arg for a in [*args.posonlyargs, *args.args]]), reversed(args.defaults)))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    in_init = any(a is init for a in ancestors(node))

    def value(expr: ast.AST, used: set[str]):
        """What ``expr`` evaluates to with the parameters at their defaults, or _UNKNOWN."""
        if isinstance(expr, ast.Constant):
            return expr.value
        param = None
        if isinstance(expr, ast.Name) and in_init and expr.id in defaults and expr.id not in rebound:
            param = expr.id
        elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self" \
                and assigned.count(expr.attr) == 1 and stored.get(expr.attr) in defaults:
            param = stored[expr.attr]
        if param is not None:
            default = defaults[param]
            if not isinstance(default, ast.Constant):
                return _UNKNOWN
            used.add(param)
            return default.value
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            inner = value(expr.operand, used)
            return _UNKNOWN if inner is _UNKNOWN else not inner
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and type(expr.ops[0]) in COMPARE_OPS:
            left, right = value(expr.left, used), value(expr.comparators[0], used)
            if left is _UNKNOWN or right is _UNKNOWN:
                return _UNKNOWN
            try:
                return COMPARE_OPS[type(expr.ops[0])](left, right)
            except TypeError:
                return _UNKNOWN
        if isinstance(expr, ast.BoolOp):
            parts = [value(v, used) for v in expr.values]
            if isinstance(expr.op, ast.And):
                return False if any(p is not _UNKNOWN and not p for p in parts) else \
                    _UNKNOWN if _UNKNOWN in parts else True
            return True if any(p is not _UNKNOWN and p for p in parts) else \
                _UNKNOWN if _UNKNOWN in parts else False
        return _UNKNOWN

    guards: list[set[str]] = []  # per test that rules the branch out: the parameters it reads
    child = node
    for anc in ancestors(node):
        if anc is cls:
            break
        if isinstance(anc, (ast.If, ast.While, ast.IfExp)) and child is not anc.test:
            used: set[str] = set()
            known = value(anc.test, used)
            otherwise = child in anc.orelse if isinstance(anc.orelse, list) else child is anc.orelse
            if known is not _UNKNOWN and used and bool(known) == otherwise:
                guards.append(used)
        child = anc
    if not guards:
        return False
    builds = [c for c in ctx.model.calls_by_name.get(cls.name, ()) if isinstance(c.func, ast.Name)]
    if not builds or any(isinstance(a, ast.Starred) for c in builds for a in c.args):
        return False
    if ctx.call_paths.mentioned_elsewhere(cls.name):
        return False
    passed_by: list[dict[str, ast.AST]] = []
    for call in builds:
        given = {k.arg: k.value for k in call.keywords if k.arg is not None}
        for splat in (k.value for k in call.keywords if k.arg is None):
            # `**transformer_kwargs`, a dict literal with constant keys: it sets only those
            held = ctx.flow.reaching_value(splat) if isinstance(splat, ast.Name) else splat
            if not (isinstance(held, ast.Dict) and all(isinstance(k, ast.Constant) for k in held.keys)):
                return False
            given.update({k.value: v for k, v in zip(held.keys, held.values)})
        given.update({name: arg for name, arg in zip(positional, call.args)})
        passed_by.append(given)

    def left_at_default(param: str) -> bool:
        return all(given.get(param) is None or (isinstance(given[param], ast.Constant) and
                                                given[param].value == defaults[param].value)
                   for given in passed_by)

    # one test that no construction turns on is enough: the branch needs every test to pass
    return any(all(left_at_default(param) for param in used) for used in guards)


def schedule_idle_by_default(ctx, cond: ast.AST) -> ast.Attribute | None:
    """The command-line option whose default makes the modulo schedule in ``cond`` fire on
    every iteration: ``(step + 1) % args.gradient_accumulation_steps == 0`` with
    ``--gradient_accumulation_steps`` declared with ``default=1`` in this file (read directly
    or through a local name, ``accum = args.accum_iter``). With the defaults the optimizer
    steps after every backward, and nothing accumulates; the path that accumulates runs only
    when the user sets the option. None when no such option is read."""
    for node in ast.walk(cond):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            option = one_by_default(ctx, node.right)
            if option is not None:
                return option
    return None


def one_by_default(ctx, expr: ast.AST) -> ast.AST | None:
    """The option read ``expr`` holds (``args.accum_steps``, ``cfg.train.grad_accum``, a local
    name bound to one) when it is the integer 1 at the defaults -- the command-line default, or
    every shipped configuration's value; None otherwise."""
    option = ctx.options.option_of(expr)
    if option is None:
        return _one_at_every_construction(ctx, expr) or _one_by_literal(ctx, expr)
    default = ctx.options.default_of(option)
    if default is not NOT_KNOWN and type(default) is int and default == 1:
        return option
    values = ctx.options.values_at_defaults(option)
    if values is not NOT_KNOWN and values and all(type(v) is int and v == 1 for v in values):
        return option
    return None


def _one_by_literal(ctx, expr: ast.AST) -> ast.AST | None:
    """A name that every assignment of the module (a script's or notebook's first cell's
    ``accumulation_steps = 1``) binds to the integer literal 1, and no function binds or takes
    as a parameter: ``expr`` itself, else None -- the setting a user edits to accumulate."""
    if not isinstance(expr, ast.Name):
        return None
    values, func = ctx.model.assignments(expr)
    if func is not None or not values or not all(
            isinstance(v, ast.Constant) and type(v.value) is int and v.value == 1 for v in values):
        return None
    return expr if all(ctx.enclosing_function(v) is None for v in values) else None


def _one_at_every_construction(ctx, expr: ast.AST) -> ast.AST | None:
    """``self.<attr>`` that ``__init__`` sets from one of its parameters, which every
    construction of the class in the project leaves at the integer 1 (``CumulativeTrainer(model,
    None, None, None, 1)`` with ``accumulation_steps=1`` by default): ``expr`` itself, else None."""
    fixed, value = constant_at_every_construction(ctx, expr)
    return expr if fixed and type(value) is int and value == 1 else None


def constant_at_every_construction(ctx, expr: ast.AST) -> tuple[bool, object]:
    """``(True, value)`` for ``self.<attr>`` that ``__init__`` sets, once, from one of its
    parameters, which every construction of the class in the project gives the same constant
    (``ctx.call_paths.constructed_with``) -- or such a parameter itself, read in ``__init__``
    where nothing rebinds it; ``(False, None)`` otherwise."""
    if isinstance(expr, ast.Name):
        values, func = ctx.model.assignments(expr)
        cls = ctx.enclosing_class(func) if func is not None else None
        if values or getattr(func, "name", "") != "__init__" or cls is None or \
                not any(a.arg == expr.id for a in [*func.args.args, *func.args.kwonlyargs]):
            return False, None
        return ctx.call_paths.constructed_with(cls, expr.id)
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self"):
        return False, None
    cls = ctx.enclosing_class(expr)
    values = ctx.model.assignments(expr)[0]
    if cls is None or len(values) != 1 or not isinstance(values[0], ast.Name):
        return False, None
    func = ctx.enclosing_function(values[0])
    if getattr(func, "name", "") != "__init__" or ctx.enclosing_class(func) is not cls or \
            not any(a.arg == values[0].id for a in [*func.args.args, *func.args.kwonlyargs]):
        return False, None
    return ctx.call_paths.constructed_with(cls, values[0].id)


def none_at_every_construction(ctx, node: ast.AST) -> str | None:
    """The test (as text) that keeps ``node`` from running because it needs ``self.<attr>`` (or
    a parameter of ``__init__``) to be set while every construction of the class leaves it None:
    ``node`` in the
    body of ``if self.test_dataset is not None:`` / ``if self.test_dataset:``, in the ``else``
    of ``if self.test_dataset is None:``, or right of ``self.test_dataset is None or ...``
    (minGPT's trainer, vendored, built with ``Trainer(model, train_dataset, None, tconf)``).
    None when no such test encloses it."""
    def attr_none(test: ast.AST, wanted_none: bool) -> bool:
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and \
                isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
            is_none = isinstance(test.ops[0], ast.Is)
            if not is_none and not isinstance(test.ops[0], ast.IsNot):
                return False
            subject = test.left
        elif not wanted_none:
            subject = test  # `if self.test_dataset:`
            is_none = False
        else:
            return False
        if is_none != wanted_none:
            return False
        fixed, value = constant_at_every_construction(ctx, subject)
        return fixed and value is None

    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, ast.BoolOp) and isinstance(anc.op, ast.Or):
            before = anc.values[:next((i for i, v in enumerate(anc.values) if v is child), 0)]
            hit = next((v for v in before if attr_none(v, True)), None)
            if hit is not None:
                return ctx.text(hit)
        elif isinstance(anc, ast.If) and child is not anc.test:
            if any(child is s for s in anc.body) and attr_none(anc.test, False):
                return ctx.text(anc.test)
            if any(child is s for s in anc.orelse) and attr_none(anc.test, True):
                return ctx.text(anc.test)
        elif isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        child = anc
    return None


def loop_idle_by_default(ctx, loop: ast.AST) -> ast.AST | None:
    """The option whose default makes the micro-batch loop ``loop`` run once: ``for _ in
    range(cfg.grad_accum_steps):`` with the option 1 at the defaults (``one_by_default``).
    None otherwise."""
    it = getattr(loop, "iter", None)
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and \
            len(it.args) == 1 and not it.keywords:
        return one_by_default(ctx, it.args[0])
    return None


def off_at_defaults(ctx, node: ast.AST) -> str | None:
    """The test (as text) of an enclosing ``if`` or conditional expression that rules ``node`` out
    when the script runs with its command-line defaults (``ctx.options.ruling_test``):
    ``DistributedSampler(ds)`` in the ``else`` of ``... if args.local_rank == -1 else ...`` with
    ``--local_rank`` defaulting to -1 (the copied Hugging Face example scripts), or under ``if
    args.distributed:`` with a false default. None when no enclosing test is known to."""
    test = ctx.options.ruling_test(node)
    return ctx.text(test) if test is not None else None


# the note of a training-quality finding (a loss fed the wrong activation) in a loop that learns
# from random numbers (``ctx.advice.trained_on_noise``): an API walk-through nobody trains for real
TRAINED_ON_NOISE = " (medium confidence: the loop trains on random numbers, an API walk-through)"
