from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import FunctionNode, parent
from torchreview.findings import Edit, Fix, Severity
from torchreview.fixes import _pos
from torchreview.rules._helpers import is_true

_DDP = frozenset({"torch.nn.parallel.DistributedDataParallel"})
# torch.nn containers and layers that do not use all of their parameters on every call,
# or whose members are picked by key.
_PARTIAL = frozenset({"ModuleDict", "ParameterDict", "ParameterList", "Module", "AdaptiveLogSoftmaxWithLoss"})
_CONTAINERS = frozenset({"Sequential", "ModuleList"})
# nn.Module methods an ``__init__`` may call on self without registering anything.
_HARMLESS_SELF_CALLS = frozenset({"apply", "register_buffer", "to", "cuda", "float", "half", "double",
                                  "bfloat16", "requires_grad_", "train", "eval", "parameters",
                                  "named_parameters", "modules", "named_modules", "children",
                                  "named_children", "__init__"})
# Control flow that may skip part of ``forward``.
_BRANCHES = (ast.If, ast.IfExp, ast.While, ast.Try, ast.Break, ast.Continue, ast.BoolOp, ast.Lambda,
             ast.Yield, ast.YieldFrom, ast.Await, *FunctionNode, ast.ClassDef, ast.Match)
# Names that stop gradients from reaching part of the model.
_GRAD_STOPS = frozenset({"detach", "detach_", "no_grad", "inference_mode", "set_grad_enabled", "data",
                         "requires_grad_", "getattr", "setattr", "vars"})
_MAX_DEPTH = 4


class FindUnusedParametersNotNeeded(Rule):
    """
    ## What it does
    Flags `DistributedDataParallel(..., find_unused_parameters=True)` around a
    model, defined in the same file, whose `forward` uses every sub-module and
    parameter it registers on every call.

    ## Why is this bad?
    With `find_unused_parameters=True`, DDP walks the autograd graph from the
    outputs after every forward pass to find parameters that will not get a
    gradient, and marks them ready early. When the forward always uses every
    parameter that walk finds nothing, yet it costs time on each step (more
    for large graphs) and it prevents some bucketing optimisations. DDP
    itself warns about it at run time, after the job is already running.

    ## Example
    ```python
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(32, 64)
            self.head = nn.Linear(64, 10)

        def forward(self, x):
            return self.head(self.encoder(x).relu())

    model = DDP(Net().cuda(rank), device_ids=[rank], find_unused_parameters=True)
    ```

    ## Use instead
    ```python
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    class Net(nn.Module):
        ...  # as above: forward always runs the encoder and the head

    model = DDP(Net().cuda(rank), device_ids=[rank])
    ```

    ## Fix safety
    Removing the argument is unsafe: the analysis is static, and if some
    parameter does go unused on a step after all (a path this rule could not
    see), DDP stops with "Expected to have finished reduction in the prior
    iteration" instead of training.

    ## Heuristics
    The wrapped model must be built from a class of the same file (followed
    through names, `self` attributes, `.to()`/`.cuda()` and a single
    same-module caller), deriving directly from `nn.Module`, and every
    sub-module it registers must be a `torch.nn` layer that uses all of its
    parameters, or a same-file class that passes the same check. The rule
    stays silent when `forward` (or a method it calls on `self`) has any
    branch, early `return`, `while`, `try`, `break`/`continue`, boolean
    short-circuit or comprehension filter, or stops gradients (`.detach()`,
    `.data`, `no_grad`); when it takes `*args`/`**kwargs`;
    when it indexes a sub-module (`self.heads[i]`, `getattr`), reads a
    sub-module's attributes (`self.proj.weight`), iterates anything but a
    registered container, or returns several outputs (a loss may not use all
    of them); when `__init__` registers modules dynamically (`add_module`,
    `setattr`, a helper method) or keeps a module passed in from outside;
    and when any registered sub-module or `nn.Parameter` is not used in
    `forward` (then `find_unused_parameters=True` is needed). A
    `ModuleList`/`Sequential` is assumed not to be empty. File-local: a model
    class defined in another file is not analysed.
    """

    code = "TR219"
    name = "find-unused-parameters-not-needed"
    severity = Severity.LOW
    fixable = "unsafe"
    severity_reason = "Small waste: one extra autograd-graph traversal per step."
    summary = "`find_unused_parameters=True` on a DDP model whose `forward` uses every parameter"
    node_types = (ast.Call,)
    call_qualnames = _DDP

    def check(self, node: ast.Call, ctx) -> None:
        if ctx.qualname(node.func) not in _DDP:
            return
        flag = next((kw for kw in node.keywords if kw.arg == "find_unused_parameters"), None)
        if flag is None or not is_true(flag.value):
            return
        module = ctx.arg(node, "module", 0)
        ctor = ctx.flow.module_constructor(module) if module is not None else None
        if ctor is None or not isinstance(ctor.func, ast.Name):
            return
        cls = ctx.model.classes.get(ctor.func.id)
        if cls is None or not _fully_used(cls, ctx, frozenset()):
            return
        ctx.report(flag, f"`find_unused_parameters=True` but `{cls.name}.forward` uses every sub-module "
                         "and parameter on each call: DDP searches the autograd graph for unused "
                         "parameters after every forward and finds none; drop the argument",
                   fix=_drop_keyword(node, flag, ctx))


# ---------------------------------------------------------------- the model class
def _fully_used(cls: ast.ClassDef, ctx, seen: frozenset) -> bool:
    """Every call of ``cls.forward`` uses every sub-module and parameter ``cls`` registers."""
    if cls in seen or len(seen) > _MAX_DEPTH or cls.name not in ctx.model.module_classes:
        return False
    if not cls.bases or any(ctx.qualname(b) != "torch.nn.Module" for b in cls.bases) or cls.decorator_list:
        return False
    methods = {s.name: s for s in cls.body if isinstance(s, FunctionNode)}
    init, forward = methods.get("__init__"), methods.get("forward")
    if init is None or forward is None:
        return False
    registered = _registered(init, methods, ctx, seen | {cls})
    if registered is None:
        return False
    uses = _forward_uses(forward, methods, registered, ctx)
    return uses is not None and {n for n, k in registered.items() if k != "opaque"} <= uses


def _registered(init, methods, ctx, seen) -> dict[str, str] | None:
    """``self.<name>`` -> "module"/"parameter"/"value" for what ``__init__`` assigns,
    or None when something cannot be resolved (a dynamic registration, an
    injected or unknown module, a layer that may leave parameters unused)."""
    out: dict[str, str] = {}
    for node in ctx.model.subtree(init):
        if isinstance(node, ast.Call):
            if not _harmless_init_call(node, methods, ctx, seen):
                return None
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Attribute) and _is_self(t.value) and isinstance(t.ctx, ast.Store):
                        if isinstance(target, ast.Tuple) or node.value is None:
                            return None
                        kind = _value_kind(node.value, ctx, seen)
                        if kind is None:
                            return None
                        if kind != "value" or t.attr not in out:
                            out[t.attr] = kind
    return {name: kind for name, kind in out.items() if kind != "value"}


def _harmless_init_call(call: ast.Call, methods, ctx, seen) -> bool:
    func = call.func
    q = ctx.qualname(func)
    if q in ("builtins.setattr", "builtins.getattr"):
        return False
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) and _is_self(func.value.value):
        # filling a container: self.blocks.append(Block(d))
        if func.attr == "append":
            return len(call.args) == 1 and _value_kind(call.args[0], ctx, seen) == "module"
        return func.attr not in ("extend", "insert", "add_module", "register_module", "register_parameter",
                                 "update", "__setitem__")
    if isinstance(func, ast.Attribute) and _is_self(func.value):
        if func.attr in methods:
            helper = methods[func.attr]
            return not any(isinstance(n, ast.Attribute) and _is_self(n.value) and isinstance(n.ctx, ast.Store)
                           or (isinstance(n, ast.Attribute) and n.attr in ("add_module", "register_module",
                                                                            "register_parameter"))
                           for n in ctx.model.subtree(helper))
        return func.attr in _HARMLESS_SELF_CALLS
    return True


def _value_kind(value: ast.AST, ctx, seen) -> str | None:
    """What an ``__init__`` assignment registers: "module", "parameter", "value"
    (not a module: numbers, tensors, functions), "opaque" (a name of unknown kind:
    fine unless ``forward`` calls or iterates it), or None when unknown."""
    if not isinstance(value, ast.Call):
        if isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)):
            q = ctx.qualname(value)
            if q is not None and q.startswith("torch.") and q.rsplit(".", 1)[-1][:1].islower():
                return "value"  # self.act = F.relu
            if ctx.kind_of(value) == "model":
                return None  # a module passed in from outside: not analysed
            return "opaque"
        return "value"
    q = ctx.qualname(value.func)
    if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        return "parameter"
    if q is not None and q.startswith("torch.nn.") and q.rsplit(".", 1)[-1][:1].isupper():
        return "module" if _torch_module_ok(value, q.rsplit(".", 1)[-1], ctx, seen) else None
    if isinstance(value.func, ast.Name) and value.func.id in ctx.model.classes:
        cls = ctx.model.classes[value.func.id]
        if value.func.id in ctx.model.module_classes:
            return "module" if _fully_used(cls, ctx, seen) else None
        return None
    if q is not None and not q.startswith(("torch.nn.", "torchvision.", "timm.", "transformers.")) and \
            ctx.kind_of(value) != "model":
        return "value"  # math.sqrt(d), torch.zeros(...), int(...)
    return None


def _torch_module_ok(call: ast.Call, name: str, ctx, seen) -> bool:
    if name in _PARTIAL:
        return False
    if name not in _CONTAINERS:
        return True
    for arg in call.args:
        if isinstance(arg, ast.Starred) and isinstance(arg.value, (ast.List, ast.Tuple, ast.ListComp,
                                                                   ast.GeneratorExp)):
            arg = arg.value  # nn.Sequential(*[Block(d) for _ in range(depth)])
        items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else \
            [arg.elt] if isinstance(arg, (ast.ListComp, ast.GeneratorExp)) else [arg]
        for item in items:
            if isinstance(item, ast.Starred) or _value_kind(item, ctx, seen) != "module":
                return False
    return not call.keywords


# ---------------------------------------------------------------- forward
def _forward_uses(forward, methods, registered: dict[str, str], ctx, depth: int = 0) -> set[str] | None:
    """Registered names ``forward`` uses on every call, or None when some path may skip one."""
    args = forward.args
    if args.vararg or args.kwarg or depth > _MAX_DEPTH:
        return None
    body = forward.body
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.Return) and i != len(body) - 1:
            return None
    if depth == 0 and body and isinstance(body[-1], ast.Return) and \
            isinstance(body[-1].value, (ast.Tuple, ast.List, ast.Dict)):
        return None  # several outputs: a loss may not use all of them
    uses: set[str] = set()
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, _BRANCHES) or (isinstance(node, ast.comprehension) and node.ifs):
            return None
        if (isinstance(node, ast.Name) and node.id in _GRAD_STOPS) or \
                (isinstance(node, ast.Attribute) and node.attr in _GRAD_STOPS):
            return None
        if isinstance(node, (ast.For, ast.AsyncFor)) and not _iterates_container(node, registered):
            if any(isinstance(n, ast.Attribute) and _is_self(n.value) and n.attr in registered
                   for n in ast.walk(node)):
                return None
        if not (isinstance(node, ast.Attribute) and _is_self(node.value)):
            continue
        if node.attr in methods:
            up = parent(node)
            if not (isinstance(up, ast.Call) and up.func is node):
                return None
            inner = _forward_uses(methods[node.attr], methods, registered, ctx, depth + 1)
            if inner is None:
                return None
            uses |= inner
        elif registered.get(node.attr) == "opaque":
            if _whole_use(node, "module"):
                return None  # called or iterated: a module we know nothing about
        elif node.attr in registered:
            if not _whole_use(node, registered[node.attr]):
                return None
            uses.add(node.attr)
    return uses


def _whole_use(node: ast.Attribute, kind: str) -> bool:
    """``self.x(...)``, ``for m in self.x``, ``f(self.x)``; parameters: any read."""
    if kind == "parameter":
        return True
    up = parent(node)
    if isinstance(up, ast.Call) and (up.func is node or node in up.args):
        return True
    if isinstance(up, ast.Attribute) and up.attr == "forward":
        grand = parent(up)
        return isinstance(grand, ast.Call) and grand.func is up
    if isinstance(up, (ast.For, ast.AsyncFor, ast.comprehension)) and up.iter is node:
        return True
    return isinstance(up, ast.Call) and up.func is not node and _is_enumerate(up) and up.args[0] is node \
        and isinstance(parent(up), (ast.For, ast.AsyncFor))


def _is_enumerate(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "enumerate" and len(call.args) == 1


def _iterates_container(loop, registered) -> bool:
    it = loop.iter
    if isinstance(it, ast.Call) and _is_enumerate(it):
        it = it.args[0]
    return isinstance(it, ast.Attribute) and _is_self(it.value) and registered.get(it.attr) == "module"


def _is_self(node) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


# ---------------------------------------------------------------- fix
def _drop_keyword(call: ast.Call, kw: ast.keyword, ctx) -> Fix | None:
    """Delete ``kw`` with the comma that joins it to its neighbour; None when that
    would also delete a comment."""
    items = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))
    index = items.index(kw)
    if index + 1 < len(items):
        start, end = (kw.lineno, kw.col_offset), (items[index + 1].lineno, items[index + 1].col_offset)
    elif index > 0:
        start, end = (items[index - 1].end_lineno, items[index - 1].end_col_offset), \
            (kw.end_lineno, kw.end_col_offset)
    else:
        return None
    removed = _source_between(ctx, start, end)
    if removed is None or "#" in removed:
        return None
    a, b = _pos(ctx, *start), _pos(ctx, *end)
    return Fix("unsafe", (Edit(a[0], a[1], b[0], b[1], ""),), "drop `find_unused_parameters=True`")


def _source_between(ctx, start, end) -> str | None:
    lines = [ctx.source.line_text(n).encode("utf-8") for n in range(start[0], end[0] + 1)]
    if not lines:
        return None
    if len(lines) == 1:
        return lines[0][start[1]:end[1]].decode("utf-8", "replace")
    return b"\n".join([lines[0][start[1]:], *lines[1:-1], lines[-1][:end[1]]]).decode("utf-8", "replace")
