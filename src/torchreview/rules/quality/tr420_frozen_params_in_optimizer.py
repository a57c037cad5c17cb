from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import dotted, parent
from torchreview.findings import Severity

_ITERATORS = ("parameters", "named_parameters", "modules", "named_modules", "children", "named_children")


class FrozenParamsInOptimizer(Rule):
    """
    ## What it does
    Flags an optimizer built from `model.parameters()` when part of `model`
    was frozen (`requires_grad_(False)`, `p.requires_grad = False` in a loop
    over `....parameters()`), in the same function or in the `__init__` of the
    model's class.

    ## Why is this bad?
    Frozen parameters handed to the optimizer are dead weight at best: the
    optimizer keeps per-parameter state and hyper-parameter groups for
    tensors that never train, and code reading `optimizer.param_groups`
    (schedulers, logging, parameter counts) sees the wrong model. Worse, if a
    gradient ever reaches them (a later `requires_grad_(True)`, a manual
    `.grad` assignment), they start moving although the code says they are
    frozen. Passing only trainable parameters states the intent.

    ## Example
    ```python
    import torch
    import torchvision

    model = torchvision.models.resnet18(num_classes=10)
    for p in model.parameters():
        p.requires_grad = False
    model.fc = torch.nn.Linear(512, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    ```

    ## Use instead
    ```python
    import torch
    import torchvision

    model = torchvision.models.resnet18(num_classes=10)
    for p in model.parameters():
        p.requires_grad = False
    model.fc = torch.nn.Linear(512, 10)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01)
    ```

    ## Heuristics
    Freezing and the optimizer must be in the same function (or the freezing
    in the model class's `__init__`). A model that is unfrozen later -- in
    another function or under a condition/epoch loop (gradual unfreezing,
    where passing everything up front is deliberate) -- is left alone;
    unfreezing the head right after freezing everything still counts.
    """

    code = "TR420"
    name = "frozen-params-in-optimizer"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = "Hygiene: frozen parameters in the optimizer get no gradient and are skipped."
    summary = "Frozen parameters passed to the optimizer unfiltered via `model.parameters()`"

    def check_file(self, ctx) -> None:
        freezes, unfreezes, unfrozen = [], [], set()
        # a flag is set through an attribute of that name: a file spelling neither has none
        spelled = ctx.model.attribute_names
        calls = ctx.model.nodes_by_type.get(ast.Call, []) if "requires_grad_" in spelled else []
        assigns = ctx.model.nodes_by_type.get(ast.Assign, []) if "requires_grad" in spelled else []
        for node in calls + assigns:
            state = _grad_flag(node)
            if state is None:
                continue
            target = node.func.value if isinstance(node, ast.Call) else node.targets[0].value
            path = _owner(target, ctx)
            if path is not None:
                (unfreezes if state else freezes).append((path, node))
        freeze_functions = {ctx.enclosing_function(node) for _, node in freezes}
        for path, node in unfreezes:  # gradual unfreezing: passing everything up front is deliberate
            func, root = ctx.enclosing_function(node), path.split(".")[0]
            if root == "self":
                unfrozen.add((ctx.enclosing_class(node), "self"))
            elif func is not None and func not in freeze_functions:
                unfrozen.add((None, "*"))  # an unfreeze helper: any model may be unfrozen later
            elif _conditional(node, ctx):
                unfrozen.add((func, root))
        if not freezes:
            return
        for call in ctx.model.calls:
            if ctx.kind_of(call) != "optimizer":
                continue
            for source in _parameter_sources(ctx.arg(call, "params", 0)):
                self._check_source(ctx, call, source, freezes, unfrozen)

    def _check_source(self, ctx, optimizer, source: ast.Call, freezes, unfrozen) -> None:
        owner = dotted(source.func.value)
        func = ctx.enclosing_function(optimizer)
        if owner is None or (None, "*") in unfrozen or (func, owner.split(".")[0]) in unfrozen:
            return
        ctor = ctx.flow.module_constructor(source.func.value)
        cls = ctx.model.classes.get(ctor.func.id) if ctor is not None and isinstance(ctor.func, ast.Name) else None
        for path, node in freezes:
            where = ctx.enclosing_function(node)
            same_scope = where is func and (path == owner or path.startswith(owner + "."))
            in_init = cls is not None and path.split(".")[0] == "self" and where is not None and \
                where.name == "__init__" and parent(where) is cls and (cls, "self") not in unfrozen
            if same_scope or in_init:
                what = f"`{path}`" if same_scope else f"`{path}` of `{cls.name}`"
                cell, line = ctx.source.locate(node.lineno)
                where_text = f"line {line}" if cell is None else f"cell {cell}, line {line}"
                ctx.report(source, f"`{ctx.call_qualname(optimizer) or 'the optimizer'}` gets every parameter "
                                   f"of `{owner}` although {what} was frozen ({where_text}): pass only "
                                   f"trainable ones, e.g. `[p for p in {owner}.parameters() if p.requires_grad]`")
                return


def _conditional(node: ast.AST, ctx) -> bool:
    """Under an `if`/loop of its function (other than its own parameter loop)."""
    for anc in ctx.ancestors(node):
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        if isinstance(anc, (ast.If, ast.While)) or (isinstance(anc, (ast.For, ast.AsyncFor)) and not _freeze_loop(anc)):
            return True
    return False


def _freeze_loop(loop: ast.AST) -> bool:
    """`for p in m.parameters(): p.requires_grad = True` is the unfreeze itself, not a condition."""
    it = loop.iter if isinstance(loop, (ast.For, ast.AsyncFor)) else None
    return isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in _ITERATORS


def _grad_flag(node: ast.AST) -> bool | None:
    """True/False for `x.requires_grad_(flag)` / `x.requires_grad = flag` with a literal flag."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_":
        arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
        if arg is None:
            return True
        return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, bool) else None
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) \
            and node.targets[0].attr == "requires_grad" and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, bool):
        return node.value.value
    return None


def _owner(expr: ast.AST, ctx) -> str | None:
    """The module path whose parameters `expr` is: `model.backbone` for itself, or for
    the loop variable of `for p in model.backbone.parameters()`."""
    if isinstance(expr, ast.Name):
        for anc in ctx.ancestors(expr):
            if isinstance(anc, (ast.For, ast.AsyncFor)) and _binds(anc.target, expr.id):
                it = anc.iter
                if isinstance(it, ast.Call) and ctx.qualname(it.func) == "builtins.list" and it.args:
                    it = it.args[0]
                if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in _ITERATORS:
                    return dotted(it.func.value)
                return None
    return dotted(expr)


def _binds(target: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def _parameter_sources(arg: ast.AST | None) -> list[ast.Call]:
    """`X.parameters()` calls handed over as-is (alone or as a group's "params")."""
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "parameters":
        return [arg]
    out = []
    if isinstance(arg, (ast.List, ast.Tuple)):
        for elt in arg.elts:
            if isinstance(elt, ast.Dict):
                for key, value in zip(elt.keys, elt.values):
                    if isinstance(key, ast.Constant) and key.value == "params":
                        out += _parameter_sources(value)
    return out
