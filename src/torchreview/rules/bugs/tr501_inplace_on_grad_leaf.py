from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import ancestors, dotted
from torchreview.findings import Severity

# Methods with a trailing underscore that change no values: `detach_()` on a leaf
# only turns its gradient off (freezing a mean-teacher copy), it never raises.
_NOT_INPLACE = frozenset({"requires_grad_", "share_memory_", "retain_grad_", "detach_"})


def _in_place(method: str) -> bool:
    """``x.<method>(...)`` writes into ``x`` (``add_``, ``copy_``; not ``requires_grad_``)."""
    return method.endswith("_") and not method.startswith("_") and method not in _NOT_INPLACE


_VIEWS = frozenset({"view", "view_as", "t", "transpose", "permute", "unsqueeze", "squeeze", "narrow",
                    "select", "expand", "expand_as", "unflatten", "diagonal", "as_strided", "unbind", "split",
                    "chunk"})


class InplaceOnGradLeaf(Rule):
    """
    ## What it does
    Flags in-place operations (`+=` and friends, `x.add_()`, `x.fill_()`,
    `x.zero_()`, `x[i] = ...`) on a leaf tensor that requires grad -- an
    `nn.Parameter`, a tensor created with `requires_grad=True`, a layer's
    `.weight`/`.bias`, or a loop variable over `model.parameters()` -- when
    autograd is enabled.

    ## Why is this bad?
    Autograd refuses to modify a leaf that requires grad in place: the call
    raises `RuntimeError: a leaf Variable that requires grad is being used in an
    in-place operation`. Manual weight updates and re-initialisations must run
    under `torch.no_grad()`; values that feed the graph should be computed
    out of place.

    ## Example
    ```python
    import torch

    w = torch.randn(3, requires_grad=True)
    w += 1.0
    ```

    ## Use instead
    ```python
    import torch

    w = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        w += 1.0
    ```

    ## Heuristics
    The target must be visibly a grad-requiring leaf in the same file (its
    creation, an `nn.Parameter` attribute of the module, `model.parameters()`).
    Code under `torch.no_grad()`/`inference_mode()` (blocks, decorators, or
    functions only called from there) and `.data`/`.detach()` targets are not
    reported; neither is a target whose `requires_grad` is switched off first,
    nor one replaced first by a tensor built with `requires_grad=False`
    (`q.weight = nn.Parameter(w, requires_grad=False)`),
    nor a trailing-underscore method that changes no values (`detach_()`, which
    on a leaf only turns its gradient off, `requires_grad_()`, `share_memory_()`).
    A tensor handed earlier in the function to a function of this file that
    turns its gradient off (`out.requires_grad = False`, `out.requires_grad_(False)`
    or `out.detach_()` on that parameter: a sinusoidal-embedding initialiser) no
    longer requires grad, and an in-place update of it after that call is fine.
    A name assigned a view of such a leaf (`b = conv.bias.view(n, -1)`, through
    `view`/`transpose`/`t`/`unsqueeze`/`narrow`/`.T`/indexing ...; not
    `.data`, `.detach()`, `.clone()` or `reshape`, nor advanced indexing by a
    tensor, a list or a mask -- `self.start_transitions[tags[0]]` copies) is
    modified in place too: autograd raises for a view of a leaf just as for the leaf.
    In-place updates of one leaf, or of the parameters of one object
    (`new.weight.copy_(w)`, `new.bias.copy_(b)`), in one function are one
    finding (one missing `no_grad()` block), the other lines kept as related
    locations.

    At runtime (`torchreview run`, `torchreview.watch`), a script that stops
    with autograd's in-place errors is reported with this code at the
    innermost line of user code on the traceback: "a leaf Variable that
    requires grad is being used in an in-place operation" (the in-place line
    itself) and "one of the variables needed for gradient computation has
    been modified by an inplace operation" (an in-place change of a tensor
    the graph saved, e.g. `clamp_` on columns of a non-leaf output; reported
    at the `backward()` line, since only anomaly mode records where the
    change happened).
    In a notebook cell that the stored notebook shows ran to the end without
    an error (executed, no `error` output, outputs kept), the finding is low
    confidence (`claims_raise`): the author's own run refutes the crash there.
    A leaf built with `requires_grad=` a value rather than `True`
    (`nn.Parameter(torch.empty(n), requires_grad=bias)`) may not require grad
    where the update runs: medium confidence.
    A line inside a `try` whose handler names the error (`except RuntimeError
    as e: print(e)`, a lesson provoking it) is not reported (engine/runner.py);
    a broad `except Exception` is no such evidence.
    """

    code = "TR501"
    name = "inplace-on-grad-leaf"
    severity = Severity.HIGH
    claims_raise = True
    severity_reason = "Crash: autograd raises on an in-place update of a leaf that requires grad."
    summary = "In-place operation on a leaf tensor that requires grad, outside `torch.no_grad()`"
    scope = ("file", "runtime")
    node_types = (ast.AugAssign, ast.Assign, ast.Call)
    # several in-place writes to one leaf, or to the parameters of one object, in one
    # function (`w[0] = a; w[1] = b`; `new.weight.copy_(..); new.bias.copy_(..)`): one finding
    summarize = "scope"

    def wants_calls(self, ctx) -> bool:
        # `check` acts only on a call of an in-place method (`x.add_(...)`)
        return any(_in_place(attr) for attr in ctx.model.called_methods)

    def check(self, node, ctx) -> None:
        if isinstance(node, ast.AugAssign):
            target = node.target
            if isinstance(target, ast.Subscript):
                target = target.value
            self._check(node, target, _op_text(node), ctx)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript):
                    self._check(node, target.value, "slice assignment", ctx)
        elif isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if _in_place(attr):
                self._check(node, node.func.value, f"`.{attr}()`", ctx)

    def _check(self, node, target, what: str, ctx) -> None:
        if not isinstance(target, (ast.Name, ast.Attribute)) or ctx.in_grad_disabled(node):
            return
        leaf, view = target, None
        if not ctx.autograd.is_grad_leaf(target) and isinstance(target, ast.Name):
            view = ctx.flow.reaching_value(target)
            leaf = _viewed_base(view)
            if leaf is None or not (ctx.autograd.is_grad_leaf(leaf) or _layer_param(ctx, leaf)):
                return
        elif not ctx.autograd.is_grad_leaf(target):
            return
        if _grad_switched_off(leaf, node, ctx):
            return
        name = ctx.text(target)
        # a function no code of this file calls (other modules do): whether grad is on when it
        # runs is out of sight (Fooocus sd1_clip.py: reached only under `@torch.no_grad()`)
        func = ctx.enclosing_function(node)
        unseen = func is not None and func.name != "__init__" and not ctx.flow.call_sites(func)
        # `model.bias += ...` where `model` is a parameter of the function (nothing assigned
        # here): a plain class of this file keeping its own `bias` tensor is what it may well
        # hold (a from-scratch lesson's `NeuronModel` updated by hand) -- not reported; a
        # parameter that is a model by its name alone is a guess, medium
        by_name = isinstance(leaf, ast.Attribute) and leaf.attr in ("weight", "bias", "weights") and \
            isinstance(leaf.value, ast.Name) and func is not None and \
            leaf.value.id in {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]} and \
            not ctx.model.assignments(leaf.value)[0]
        if by_name and _plain_class_keeps(ctx, leaf.attr):
            return
        guessed = by_name and ctx.known_by_name_only(leaf.value)  # nor shown by a same-module caller
        confidence = "medium" if unseen or guessed or _grad_decided_by_a_value(ctx, leaf) else None
        # the parameters of one object updated in one function (`new.weight.copy_(..)`,
        # `new.bias.copy_(..)`): one missing `no_grad()` block, one finding
        root = leaf
        while isinstance(root, ast.Attribute):
            root = root.value
        subject = ctx.text(root) if isinstance(root, ast.Name) else ctx.text(leaf)
        if view is not None:
            base = ctx.text(leaf)
            ctx.report(node, f"{what} modifies `{name}` in place, but `{name}` is a view of `{base}`, a leaf "
                             "tensor that requires grad: autograd raises a RuntimeError here; wrap the update "
                             f"in `with torch.no_grad():` or view `{base}.data`", confidence=confidence,
                       subject=subject)
            return
        ctx.report(node, f"{what} modifies `{name}` in place, but `{name}` is a leaf tensor that "
                         "requires grad: autograd raises a RuntimeError here; wrap the update in "
                         "`with torch.no_grad():` or compute a new tensor out of place", confidence=confidence,
                   subject=subject)


def _grad_decided_by_a_value(ctx, leaf) -> bool:
    """Every construction of the leaf passes ``requires_grad=`` a value, not ``True``
    (``nn.Parameter(torch.empty(n), requires_grad=bias)``): whether it requires grad where
    the update runs depends on that value (SGI's ``if self.bias: ... else:
    self.bias_sigma.fill_(0)``, the branch where it does not)."""
    values = ctx.model.assignments(leaf)[0]
    calls = [v for v in values if isinstance(v, ast.Call)]
    if not calls or len(calls) != len(values):
        return False
    for call in calls:
        flag = next((k.value for k in call.keywords if k.arg == "requires_grad"), None)
        if flag is None or isinstance(flag, ast.Constant):
            return False
    return True


def _plain_class_keeps(ctx, attr: str) -> bool:
    """A class of this file that is not an ``nn.Module`` assigns ``self.<attr>``."""
    for name, cls in ctx.model.classes.items():
        if name in ctx.model.module_classes:
            continue
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                    and t.value.id == "self" for t in node.targets):
                return True
    return False


def _layer_param(ctx, expr) -> bool:
    """``conv.bias`` where ``conv`` is the loop variable over a module list
    (``for conv, s in zip(self.convs, strides)``, ``for i, conv in enumerate(...)``)."""
    if not (isinstance(expr, ast.Attribute) and expr.attr in ("weight", "bias") and isinstance(expr.value, ast.Name)):
        return False
    name = expr.value.id
    for loop in ancestors(expr):
        if not isinstance(loop, ast.For):
            continue
        source, target = loop.iter, loop.target
        if isinstance(target, ast.Tuple) and isinstance(source, ast.Call) and isinstance(source.func, ast.Name) \
                and source.func.id in ("zip", "enumerate"):
            items = source.args if source.func.id == "zip" else [None, *source.args[:1]]
            for t, item in zip(target.elts, items):
                if isinstance(t, ast.Name) and t.id == name and item is not None:
                    return _modules(ctx, item)
        elif isinstance(target, ast.Name) and target.id == name:
            return _modules(ctx, source)
    return False


def _modules(ctx, expr) -> bool:
    """A module container: a model, or an attribute of one (``self.head.convs``)."""
    return ctx.model.kind_of(expr) == "model" or \
        isinstance(expr, ast.Attribute) and ctx.model.kind_of(expr.value) == "model"


def _viewed_base(value):
    """``conv.bias.view(na, -1)`` / ``p.t()[0]`` / ``w.T``: the tensor a chain of
    view operations starts from (None when anything else is in the chain)."""
    if not isinstance(value, (ast.Call, ast.Subscript, ast.Attribute)):
        return None
    steps = 0
    while True:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _VIEWS:
            value = value.func.value
        elif isinstance(value, ast.Subscript):
            if _advanced_index(value.slice):
                return None  # `w[tags[0]]`, `w[idx_list]`: advanced indexing copies, no view
            value = value.value
        elif isinstance(value, ast.Attribute) and value.attr in ("T", "mT", "H", "mH", "real"):
            value = value.value
        else:
            break
        steps += 1
    return value if steps and isinstance(value, (ast.Name, ast.Attribute)) else None


def _advanced_index(index: ast.AST) -> bool:
    """An index that is visibly a tensor or a sequence -- an element of another tensor
    (``tags[0]``), a call (``torch.arange(n)``), a list, a comparison (a mask) -- somewhere
    in the subscript: advanced indexing, which returns a copy, not a view (CRF transition
    scores ``self.start_transitions[tags[0]]``, BERT-NER)."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(p, (ast.Subscript, ast.Call, ast.List, ast.ListComp, ast.Compare)) for p in parts)


def _op_text(node: ast.AugAssign) -> str:
    symbols = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
               ast.MatMult: "@", ast.FloorDiv: "//", ast.Mod: "%"}
    return f"`{symbols.get(type(node.op), '')}=`"


def _grad_switched_off(target, node, ctx) -> bool:
    """``x.requires_grad = False`` / ``x.requires_grad_(False)`` earlier in the function, or
    ``x`` replaced by a tensor built with ``requires_grad=False`` (``q.weight =
    nn.Parameter(q.weight.detach(), requires_grad=False)``: a frozen quantizer filled by hand)."""
    name = dotted(target)
    scope = ctx.enclosing_function(node) or ctx.tree
    for sub in ast.walk(scope):
        if getattr(sub, "lineno", 0) >= node.lineno:
            continue
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call) and any(
                k.arg == "requires_grad" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in sub.value.keywords) and any(dotted(t) == name for t in sub.targets):
            return True
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Constant) and sub.value.value is False:
            if any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" and dotted(t.value) == name
                   for t in sub.targets):
                return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                sub.func.attr == "requires_grad_" and dotted(sub.func.value) == name and \
                any(isinstance(a, ast.Constant) and a.value is False for a in sub.args):
            return True
        if isinstance(sub, ast.Call) and _helper_switches_off(sub, name, ctx):
            return True
    return False


def _helper_switches_off(call: ast.Call, name: str, ctx) -> bool:
    """``call`` hands ``name`` to a function of this file that turns its gradient off
    (``create_sinusoidal_embeddings(n, d, out=self.pos.weight)`` whose body runs
    ``out.requires_grad = False`` / ``out.requires_grad_(False)`` / ``out.detach_()``)."""
    func = ctx.flow.resolve_local_call(call)
    if func is None:
        return False
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)]
    passed = {k.arg for k in call.keywords if k.arg and dotted(k.value) == name}
    passed |= {params[i] for i, a in enumerate(call.args[: len(params)])
               if not isinstance(a, ast.Starred) and dotted(a) == name}
    if not passed:
        return False
    for sub in ast.walk(func):
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Constant) and sub.value.value is False and \
                any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" and dotted(t.value) in passed
                    for t in sub.targets):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and dotted(sub.func.value) in passed \
                and (sub.func.attr == "detach_" or (sub.func.attr == "requires_grad_" and any(
                    isinstance(a, ast.Constant) and a.value is False for a in sub.args))):
            return True
    return False
