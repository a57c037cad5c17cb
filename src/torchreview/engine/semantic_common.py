"""Shared pieces of the semantic model: node helpers and tables."""

from __future__ import annotations

import ast
import builtins
import operator
import re


FunctionNode = (ast.FunctionDef, ast.AsyncFunctionDef)
LoopNode = (ast.For, ast.While, ast.AsyncFor)
_BUILTINS = frozenset(dir(builtins))
_CONFLICT = "?"
_MISSING = object()
# Shared singleton tokens (Load, Store, Add, ...): no parent, not dispatched.
_LEAF_TOKENS = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def _subclasses(bases) -> frozenset[type]:
    out: set[type] = set()
    todo = list(bases)
    while todo:
        cls = todo.pop()
        out.add(cls)
        todo.extend(cls.__subclasses__())
    return frozenset(out)


_TOKEN_TYPES = _subclasses(_LEAF_TOKENS) | {str, int, float, complex, bytes, bool, type(None), type(...)}
# Fields that never hold child nodes (names, operators, flags): not visited.
_SCALAR_FIELDS = frozenset({"ctx", "op", "id", "attr", "name", "arg", "asname", "module", "level",
                            "type_comment", "kind", "conversion", "is_async", "simple", "ops"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(node_type: type) -> tuple[str, ...]:
    return tuple(f for f in node_type._fields if f not in _SCALAR_FIELDS)


# Nodes with no AST children worth visiting: recorded, never pushed.
_LEAF_TYPES = frozenset({ast.Name, ast.Constant})
# Statements (and lambdas): their run in the depth-first walk order is recorded,
# so ``subtree``/``own_nodes`` are slices instead of new walks.
_CONTAINER_TYPES = frozenset({ast.Module, ast.Lambda, *(
    cls for cls in vars(ast).values() if isinstance(cls, type) and issubclass(cls, ast.stmt) and cls is not ast.stmt)})
_NESTED_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef})
_SCOPE_TYPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef})
# Values whose kind never depends on other bindings (and is never a tensor).
_INERT_VALUES = (ast.Constant, ast.JoinedStr, ast.Dict, ast.Set, ast.Compare, ast.Lambda,
                 ast.DictComp, ast.SetComp)
_INDEXED = frozenset({
    ast.Call, ast.Attribute, ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef,
    ast.AsyncFunctionDef, ast.For, ast.While, ast.AsyncFor, ast.Assign, ast.AnnAssign, ast.NamedExpr,
})


class NodeMemo(dict):
    """node -> an answer computed once by ``compute`` on the first question: ``memo[node]``
    (or its bound ``__getitem__``) costs no Python call once the node is known."""

    __slots__ = ("_compute",)

    def __init__(self, compute) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, node):
        value = self[node] = self._compute(node)
        return value


_UNSET = object()


class NearestAbove(dict):
    """node -> the nearest node of the types ``stops`` above it (``itself``: the node
    included), else ``default``; a ``NodeMemo`` whose climb stops at the first ancestor
    already answered (the answer of a node that is not a stop is its nearest answered
    ancestor's) and answers every node it climbed through on the way: the nodes of one
    function are climbed once, not once per question. (A dict subclass, not a closure
    over the dict: no cycle, the tree dies by reference counting.)"""

    __slots__ = ("_stops", "_default", "_itself")

    def __init__(self, stops: tuple[type, ...], default: ast.AST | None, itself: bool) -> None:
        super().__init__()
        self._stops, self._default, self._itself = stops, default, itself

    def __missing__(self, node: ast.AST) -> ast.AST | None:
        stops, known = self._stops, self.get
        climbed = []
        # (``parent`` inlined: a climb step is this module's most frequent question)
        probe = node if self._itself else getattr(node, "_tr_parent", None)
        while probe is not None:
            if isinstance(probe, stops):
                found = probe
                break
            hit = known(probe, _UNSET)
            if hit is not _UNSET:
                found = hit
                break
            climbed.append(probe)
            probe = getattr(probe, "_tr_parent", None)
        else:
            found = self._default
        for below in climbed:
            self[below] = found
        self[node] = found
        return found


def parent(node: ast.AST) -> ast.AST | None:
    return getattr(node, "_tr_parent", None)


def ancestors(node: ast.AST):
    node = getattr(node, "_tr_parent", None)
    while node is not None:
        yield node
        node = getattr(node, "_tr_parent", None)


def statement_of(node: ast.AST) -> ast.AST:
    """The innermost statement holding ``node`` (``node`` itself when it is one; ``node``
    when no statement holds it)."""
    if isinstance(node, ast.stmt):
        return node
    return next((a for a in ancestors(node) if isinstance(a, ast.stmt)), node)


_JUMPS = (ast.Raise, ast.Return, ast.Continue, ast.Break)


def is_unreachable(node: ast.AST) -> bool:
    """Code after an unconditional ``raise``/``return``/``continue``/``break`` of
    its own block (or of an enclosing block of the same function) never runs."""
    child = node
    for anc in ancestors(node):
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(anc, field, None)
            if isinstance(block, list) and child in block:
                if any(isinstance(stmt, _JUMPS) for stmt in block[:block.index(child)]):
                    return True
                break
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        child = anc
    return False


def branch_conditions(node: ast.AST) -> dict[str, bool]:
    """The ``if`` tests that decide whether ``node`` runs, as {test text: taken},
    ``taken`` False in the ``else`` branch; ``if not x`` counts as ``x`` not taken.
    Stops at the enclosing function."""
    out: dict[str, bool] = {}
    child = node
    for anc in ancestors(node):
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            break
        if isinstance(anc, ast.If) and child is not anc.test:
            taken = child in anc.body
            test, taken = _plain_test(anc.test, taken)
            out.setdefault(ast.dump(test), taken)
        child = anc
    return out


def _plain_test(test: ast.expr, taken: bool) -> tuple[ast.expr, bool]:
    """``test`` without negations and comparisons with a bool written out: ``not x``, ``x is
    False``, ``x == False``, ``x is not True`` all read ``x`` the other way round (alpha-protein's
    ``if MULTIGPU is True:`` wrap and ``if MULTIGPU is False:`` save never both run)."""
    while True:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, taken = test.operand, not taken
            continue
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(
                test.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) and isinstance(test.comparators[0], ast.Constant) \
                and isinstance(test.comparators[0].value, bool):
            positive = test.comparators[0].value is isinstance(test.ops[0], (ast.Is, ast.Eq))
            test, taken = test.left, taken if positive else not taken
            continue
        return test, taken


def exclusive_branches(a: ast.AST, b: ast.AST) -> bool:
    """``a`` and ``b`` sit on opposite branches of the same test (``if ddp: model =
    DDP(model)`` ... ``else: torch.save(model.state_dict())``): when the test reads the
    same value both times, at most one of them runs."""
    first = branch_conditions(a)
    return any(first.get(test) is (not taken) for test, taken in branch_conditions(b).items())


def excluded_by_flag(a: ast.AST, b: ast.AST) -> bool:
    """``a`` sits in a block that also sets a flag to ``True`` (``model = DataParallel(model);
    is_distributed = True``), and ``b`` runs only where that flag is false (the ``else`` of
    ``if is_distributed:``, or under ``if not is_distributed:``): they never both run."""
    block_of = parent(a)
    siblings = []
    for field in ("body", "orelse", "finalbody"):
        block = getattr(block_of, field, None)
        if isinstance(block, list) and a in block:
            siblings = block
    flags = {t.id for stmt in siblings if isinstance(stmt, ast.Assign) and
             isinstance(stmt.value, ast.Constant) and stmt.value.value is True
             for t in stmt.targets if isinstance(t, ast.Name)}
    if not flags:
        return False
    conditions = branch_conditions(b)
    return any(conditions.get(ast.dump(ast.Name(id=flag, ctx=ast.Load()))) is False for flag in flags)


_EXITS = (ast.Return, ast.Raise)


def exits_before(a: ast.AST, b: ast.AST) -> bool:
    """``a`` sits in a block that leaves the function (a ``return``/``raise`` later in
    that block, or in an enclosing block of the same function) before control can
    reach ``b``, which lies outside it (``if gen_maps: model = DDP(model); ...;
    return`` then ``torch.save(model.state_dict())`` below): ``a`` never runs before ``b``."""
    inside_b = set(map(id, ancestors(b))) | {id(b)}
    child = a
    for anc in ancestors(a):
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)):
            return False
        if id(anc) in inside_b:
            return False  # the common ancestor: `b` is in the same block from here on
        for field in ("body", "orelse", "finalbody"):
            block = getattr(anc, field, None)
            if isinstance(block, list) and child in block:
                if any(isinstance(stmt, _EXITS) for stmt in block[block.index(child) + 1:]):
                    return True
        child = anc
    return False


def position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def call_name(call: ast.Call) -> str | None:
    """The last name of what is called: ``a.b.c()`` -> ``c``, ``f()`` -> ``f``."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _is_cuda_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and \
        node.value.split(":")[0] == "cuda"


_COMPAT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "TypeError", "Exception",
                            "BaseException"})
_VERSION_WORDS = ("version", "torch_ge", "torch_gt", "torch_lt", "torch_le", "is_torch_greater",
                  "is_torch_less", "_greater_or_equal", "_less_than", "at_least")


# a flag named after a torch release: `is_torch_1_8_plus`, `torch19`, `use_torch_2`
_TORCH_NUMBERED = re.compile(r"torch_?v?\d")


_VERSION_LITERAL = re.compile(r"^\d+\.\d+(?:\.\d+)?$")


def _probes_version(test: ast.AST) -> bool:
    """An ``if`` test that asks which library version or API is present (also any
    comparison with a version string: ``if _v < "1.10.0":``, pydrobert's compat module)."""
    for sub in ast.walk(test):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in ("hasattr", "getattr"):
            return True
        if isinstance(sub, ast.Compare) and any(
                isinstance(c, ast.Constant) and isinstance(c.value, str) and _VERSION_LITERAL.match(c.value)
                for c in (sub.left, *sub.comparators)):
            return True
        name = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else None
        if name is None:
            continue
        low = name.lower()
        if any(word in low for word in _VERSION_WORDS) or (name.isupper() and "TORCH" in name) or \
                _TORCH_NUMBERED.search(low):
            return True
    return False


def root_name(expr: ast.AST, through_calls: bool = False) -> str | None:
    """The name an attribute / subscript chain starts from (``batch`` of ``batch["x"].y``);
    with ``through_calls``, through method calls too (``data[0].float()`` -> ``data``)."""
    while True:
        if isinstance(expr, (ast.Attribute, ast.Subscript)):
            expr = expr.value
        elif through_calls and isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            expr = expr.func.value
        else:
            return expr.id if isinstance(expr, ast.Name) else None

def dotted(node: ast.AST) -> str | None:
    """``self.model.fc`` -> "self.model.fc" (purely syntactic)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


# methods of a module that return the module itself, moved or cast (`net.cuda().eval()`)
PLACING_METHODS = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "xpu", "mps"})


def placed_module(expr: ast.AST) -> ast.AST:
    """``expr`` without the calls that move or cast a module and return it: the module
    ``self.model.cuda().eval()`` switches is ``self.model``."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
            expr.func.attr in PLACING_METHODS:
        expr = expr.func.value
    return expr


def mode_switched_to(node: ast.AST) -> str | None:
    """The mode a call of ``nn.Module``'s switches sets, by its signature: ``x.eval()``,
    ``x.train(False)``, ``x.train(mode=False)`` -> "eval"; ``x.train()``, ``x.train(True)``,
    ``x.train(mode=True)`` -> "train"; None for anything else (a flag that is not a literal,
    ``clf.train(X, y)``, ``x.eval(data)``). The one reading of these calls the model uses."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if node.func.attr == "eval":
        return "eval" if not node.args and not node.keywords else None
    if node.func.attr != "train" or len(node.args) + len(node.keywords) > 1:
        return None
    if node.keywords and node.keywords[0].arg != "mode":
        return None
    flag = node.args[0] if node.args else node.keywords[0].value if node.keywords else None
    if flag is None:
        return "train"
    if isinstance(flag, ast.Constant) and flag.value in (True, False, 0, 1):
        return "train" if flag.value else "eval"
    return None


def switches_to_eval(node: ast.AST, receiver: str | None = None) -> bool:
    """``receiver.eval()`` / ``receiver.train(False)`` / ``receiver.train(mode=False)``
    (``receiver``: a dotted name, also moved first: ``self.model.cuda().eval()``; None: on
    anything, a chained ``Net(conf).eval()`` too)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if receiver is not None and dotted(node.func.value) != receiver and \
            dotted(placed_module(node.func.value)) != receiver:
        return False
    return mode_switched_to(node) == "eval"


def argument_for(call: ast.Call, callee: ast.AST, name: str) -> ast.AST | None:
    """What ``call`` passes for ``callee``'s parameter ``name`` (positional or keyword; a
    method called through an attribute skips ``self``), None when it passes nothing there
    (the default) or passes ``*args``/``**kwargs``."""
    args = getattr(callee, "args", None)
    if not isinstance(args, ast.arguments):
        return None
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    params = [a.arg for a in [*args.posonlyargs, *args.args]]
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        params = params[1:]
    if name in params and params.index(name) < len(call.args):
        return call.args[params.index(name)]
    return None


def parameter_default(args: ast.arguments, name: str) -> ast.AST | None:
    """The default expression of the parameter ``name`` (positional or keyword-only), or None."""
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return defaults.get(name)


# what a comparison operator of the syntax tree computes, for constant folding of tests
# (``args.local_rank == -1`` at the option's default, ``self.shift != 0`` at a constructor default)
COMPARE_OPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Gt: operator.gt, ast.GtE: operator.ge,
               ast.Lt: operator.lt, ast.LtE: operator.le, ast.Is: operator.is_, ast.IsNot: operator.is_not}


def _python3_value(test: ast.AST):
    """What a test of the interpreter's version evaluates to on every Python 3 (True/False),
    or None when it is no such test or depends on the minor version: ``sys.version_info >
    (3, 0)``, ``sys.version_info[0] < 3``, ``sys.version_info.major == 2``, ``six.PY2``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _python3_value(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.Attribute) and test.attr in ("PY2", "PY3") and dotted(test.value) in ("six", "sys"):
        return test.attr == "PY3"
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right, op = test.left, test.comparators[0], test.ops[0]
    text = dotted(left.value) if isinstance(left, ast.Subscript) else dotted(left)
    if isinstance(left, ast.Subscript):
        index = left.slice
        if text != "sys.version_info" or not (isinstance(index, ast.Constant) and index.value == 0):
            return None
        wanted = "major"
    elif text == "sys.version_info.major":
        wanted = "major"
    elif text == "sys.version_info":
        wanted = "tuple"
    else:
        return None
    try:
        bound = ast.literal_eval(right)
    except (ValueError, SyntaxError, TypeError):
        return None
    compare = {ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b, ast.Lt: lambda a, b: a < b,
               ast.LtE: lambda a, b: a <= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}.get(type(op))
    if compare is None:
        return None
    results = set()
    for version in ((3, 0, 1), (3, 99, 0)):  # the oldest and a far future Python 3
        value = version[0] if wanted == "major" else version
        try:
            results.add(compare(value, bound if wanted == "major" else tuple(bound)))
        except TypeError:
            return None
    return results.pop() if len(results) == 1 else None


def python2_only_lines(tree: ast.Module, by_if) -> list[tuple[int, int]]:
    """Line ranges that run only on Python 2: the branch of an ``if`` on the interpreter's
    version that no Python 3 takes (``if sys.version_info > (3, 0): ... else: <here>``,
    ``if six.PY2: <here>``). Code kept for an interpreter nobody runs any more."""
    out = []
    for node in by_if:
        value = _python3_value(node.test)
        if value is None:
            continue
        dead = node.orelse if value else node.body
        if dead:
            out.append((dead[0].lineno, dead[-1].end_lineno or dead[-1].lineno))
    return out
