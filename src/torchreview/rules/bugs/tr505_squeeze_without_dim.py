from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import ancestors, call_name, parent
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text

_SCALAR_CONSUMERS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})
_FULL_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "norm", "std", "var", "all", "any",
                              "item", "numel", "logsumexp", "amax", "amin"})
_NOT_TORCH = ("numpy", "tolist", "astype", "to_numpy", "values")
# Image display and saving: squeezing a single picture for them is the intent.
_DISPLAY = frozenset({"imshow", "imsave", "save_image", "make_grid", "fromarray", "add_image", "show"})


class SqueezeWithoutDim(Rule):
    """
    ## What it does
    Flags `x.squeeze()` and `torch.squeeze(x)` called without a `dim`.

    ## Why is this bad?
    Without `dim`, every dimension of size 1 goes, including the batch
    dimension when a batch happens to hold one sample (the last batch of an
    epoch, inference on a single image). Shapes change silently: a `(1, C)`
    logit tensor becomes `(C,)`, a loss then broadcasts or reduces over the
    wrong axis, or the error surfaces far away. Naming the dimension removes
    exactly the one you meant.

    ## Example
    ```python
    import torch.nn.functional as F

    def step(model, x, y):
        return F.binary_cross_entropy_with_logits(model(x).squeeze(), y)
    ```

    ## Use instead
    ```python
    import torch.nn.functional as F

    def step(model, x, y):
        return F.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
    ```

    ## Heuristics
    Reported when the receiver is known to be a tensor (a model output, a
    torch call, a name the file binds to a tensor) or the call sits in the
    forward path of an `nn.Module` (`forward`, `*_step`, methods `forward`
    calls), where unknown names are batched activations. Not reported:
    results consumed as scalars (`.item()`, `float(...)`) or handed to numpy
    (`.squeeze().cpu().numpy()`), receivers that already lost or never had a
    batch dimension (`x[0]`, `x[-1]`, full reductions such as `x.mean()`, a
    module's own parameters and buffers `self.w`, samples inside a `Dataset`
    method), numpy-side values (`.numpy().squeeze()`, `np.squeeze`), pictures
    squeezed for display (`plt.imshow(...)`, `save_image(...)`), values
    checked to hold one element (`x.numel() == 1`), and test files.

    Where it reports: only where a lost batch dimension breaks something.
    The squeezed value (directly, through `.float()`/`.to()`-style calls and
    arithmetic, or through a name it is assigned to in the same function)
    must reach a loss or criterion call, a comparison with another tensor
    (`pred.squeeze() == labels`), a reduction or selection along a dimension
    (`.argmax(1)`, `.max(dim=1)`, `torch.softmax(x, dim=1)`), indexing by a
    batch axis (`x[:, 0]`), or be returned from `forward` (or another method of
    an `nn.Module`, or a `collate` function, whose results are batches).
    Values that are plotted, printed, appended to a list or saved as images
    are left alone, and so are values built with an explicit batch of one
    (`.unsqueeze(0)`, `.unsqueeze(dim=0)` or `x[None]` earlier in the same
    chain, or in the input of the model call that produced them, followed
    through names assigned in the same function).

    Advice, hidden by default (shown with `--select TR505` or
    `--show-advice`): measured: 0 of 27 true on unseen code. Full-batch
    outputs such as `[N, 1]` logits where N is never 1 made up the noise; a
    helper that feeds one sample on purpose made up the false findings.
    """

    code = "TR505"
    name = "squeeze-without-dim"
    severity = Severity.MEDIUM
    kind = "advice"
    confidence = "medium"  # the shape question is a guess: the batch may never hold one sample
    severity_reason = (
        "Wrong shapes when a batch holds one sample, often broadcast silently. Advice (hidden by "
        "default): that dimension is rarely 1 in practice (measured: 0 of 27 true on unseen code)."
    )
    summary = "`squeeze()` without `dim` also drops a batch dimension of size 1"
    node_types = (ast.Call,)
    call_qualnames = frozenset({"torch.squeeze"})
    call_attrs = frozenset({"squeeze"})

    def check(self, node: ast.Call, ctx) -> None:
        if node.keywords or ctx.is_test_file:
            return
        func = node.func
        q = ctx.qualname(func)
        if q == "torch.squeeze":
            if len(node.args) != 1:
                return
            receiver = node.args[0]
        elif isinstance(func, ast.Attribute) and func.attr == "squeeze" and not node.args and q is None:
            receiver = func.value
            if not (ctx.kind_of(receiver) in ("tensor", "parameter") or ctx.flow.in_forward_path(node)):
                return
        else:
            return
        if _scalar_use(node, ctx) or _no_batch_dim(receiver, node, ctx) or _numpy_side(receiver, ctx) or \
                _for_display(node) or _single_element(receiver, node, ctx) or _batch_of_one(receiver, ctx):
            return
        if not _breaks_on_lost_batch(node, ctx, hops=2):
            return  # plotted, printed, collected: nothing depends on the batch axis
        name = short_text(ctx, receiver)
        # a receiver known to be a tensor only by its name (or not at all, inside forward) is a guess
        guessed = "low" if ctx.known_by_name_only(receiver) or ctx.kind_of(receiver) is None else None
        ctx.report(node, f"`squeeze()` without `dim` on `{name}` also removes the batch dimension "
                         "when a batch holds one sample; name the dimension, e.g. `squeeze(-1)`",
                   confidence=guessed)


def _scalar_use(node: ast.Call, ctx) -> bool:
    """Consumed as a scalar (``.item()``, ``float()``), or handed to numpy/Python
    (``.squeeze().cpu().numpy()``), where dropping singleton axes is the point."""
    up = parent(node)
    if isinstance(up, ast.Call) and ctx.qualname(up.func) in _SCALAR_CONSUMERS:
        return True
    while isinstance(up, ast.Attribute):
        if up.attr in ("item", "tolist", "numpy"):
            return True
        call = parent(up)
        if not (isinstance(call, ast.Call) and call.func is up):
            return False
        up = parent(call)
    return False


def _no_batch_dim(receiver: ast.AST, node: ast.AST, ctx) -> bool:
    """``x[0]``/``x[-1]``, full reductions (``x.mean()``), a module's own parameters and
    buffers (``self.w``), and samples inside a ``Dataset`` method."""
    cls = ctx.enclosing_class(node)
    if cls is not None and cls.name in ctx.model.dataset_classes:
        return True
    if isinstance(receiver, ast.Subscript):
        index = receiver.slice.elts[0] if isinstance(receiver.slice, ast.Tuple) and receiver.slice.elts \
            else receiver.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
            index = index.operand
        return isinstance(index, ast.Constant) and isinstance(index.value, int)
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
        return receiver.func.attr in _FULL_REDUCTIONS and not receiver.args and not receiver.keywords
    root = receiver
    while isinstance(root, ast.Attribute):
        root = root.value
    return root is not receiver and isinstance(root, ast.Name) and root.id == "self" and \
        ctx.in_module_class(node) is not None


def _numpy_side(receiver: ast.AST, ctx) -> bool:
    while True:
        if isinstance(receiver, ast.Call):
            receiver = receiver.func
        elif isinstance(receiver, ast.Attribute):
            if receiver.attr in _NOT_TORCH:
                return True
            q = ctx.qualname(receiver)
            if q and q.split(".")[0] in ("numpy", "pandas", "PIL", "cv2"):
                return True
            receiver = receiver.value
        elif isinstance(receiver, ast.Subscript):
            receiver = receiver.value
        else:
            return isinstance(receiver, ast.Name) and (ctx.qualname(receiver) or "").startswith("numpy")


def _for_display(node: ast.AST) -> bool:
    for anc in ancestors(node):
        if isinstance(anc, ast.stmt):
            return False
        if isinstance(anc, ast.Call) and call_name(anc) in _DISPLAY:
            return True
    return False


def _single_element(receiver: ast.AST, node: ast.AST, ctx) -> bool:
    """The function checks ``x.numel() == 1`` / ``torch.numel(x) == 1`` for this name first."""
    if not isinstance(receiver, ast.Name):
        return False
    func = ctx.enclosing_function(node) or ctx.tree
    for sub in ast.walk(func):
        if isinstance(sub, ast.Call) and call_name(sub) == "numel" and getattr(sub, "lineno", 0) <= node.lineno:
            subject = sub.args[0] if sub.args else getattr(sub.func, "value", None)
            if isinstance(subject, ast.Name) and subject.id == receiver.id:
                return True
    return False


# Consumers that read the squeezed value along a dimension (a lost batch axis shifts it).
_ALONG_DIM = frozenset({"argmax", "argmin", "max", "min", "topk", "sort", "softmax", "log_softmax",
                        "cumsum", "gather", "cat", "stack", "index_select", "transpose", "permute"})
# Calls that keep the shape (the value passes through them).
_SHAPE_KEEPING = frozenset({"float", "double", "half", "long", "int", "bool", "to", "cuda", "cpu", "detach",
                            "clone", "contiguous", "type", "type_as", "sigmoid", "tanh", "relu", "exp", "log",
                            "abs", "neg", "clamp", "clamp_"})
_LOSS_WORDS = ("loss", "criterion")


def _batch_of_one(receiver: ast.AST, ctx, hops: int = 3) -> bool:
    """The squeezed value was built from an explicit batch of one in the same
    function: ``x.unsqueeze(0)``/``x.unsqueeze(dim=0)``/``x[None]`` in its own chain,
    or in the input of the call (``model(inp)``) that produced it, followed through
    names assigned earlier in the function (``inp = x[None]``; ``out = model(inp)``)."""
    func = ctx.enclosing_function(receiver)
    for sub in ast.walk(receiver):
        if _one_sample_batch(sub):
            return True
        if hops > 0 and isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            value = ctx.flow.reaching_value(sub)
            if value is not None and value is not receiver and ctx.enclosing_function(value) is func and \
                    _batch_of_one(value, ctx, hops - 1):
                return True
    return False


def _one_sample_batch(node: ast.AST) -> bool:
    """``x.unsqueeze(0)``, ``x.unsqueeze(dim=0)``, ``x[None]``, ``x[None, ...]``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr in ("unsqueeze", "unsqueeze_"):
        dim = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "dim"), None)
        return isinstance(dim, ast.Constant) and dim.value == 0
    if isinstance(node, ast.Subscript):
        index = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
        return isinstance(index, ast.Constant) and index.value is None or \
            isinstance(index, ast.Attribute) and index.attr == "newaxis"
    return False


def _breaks_on_lost_batch(value: ast.AST, ctx, hops: int) -> bool:
    """The squeezed ``value`` reaches a consumer that depends on its batch axis."""
    node = value
    while True:
        up = parent(node)
        if isinstance(up, ast.Attribute) and up.value is node:
            call = parent(up)
            if not (isinstance(call, ast.Call) and call.func is up):
                return False  # `.shape`, `.data`: not followed
            if up.attr in _ALONG_DIM:
                return bool(call.args or call.keywords) or up.attr in ("argmax", "argmin")
            if up.attr in _SHAPE_KEEPING:
                node = call
                continue
            return False
        if isinstance(up, ast.keyword):
            up = parent(up)
        if isinstance(up, ast.Call) and node is not up.func:
            name = (call_name(up) or "").lower()
            if ctx.flow.loss_call(up) is not None or any(w in name for w in _LOSS_WORDS):
                return True
            if name in _ALONG_DIM:
                return len(up.args) > 1 or any(k.arg == "dim" for k in up.keywords)
            return False
        if isinstance(up, ast.BinOp) or (isinstance(up, ast.UnaryOp) and not isinstance(up.op, ast.Not)):
            node = up
            continue
        if isinstance(up, ast.Compare):
            return any(not isinstance(o, ast.Constant) for o in (up.left, *up.comparators) if o is not node)
        if isinstance(up, ast.Subscript) and up.value is node:
            index = up.slice
            return isinstance(index, ast.Tuple) and bool(index.elts) and isinstance(index.elts[0], ast.Slice)
        if isinstance(up, ast.Return):
            return _returns_a_batch(up, ctx)
        if isinstance(up, (ast.Assign, ast.AnnAssign)) and hops > 0:
            targets = up.targets if isinstance(up, ast.Assign) else [up.target]
            if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                return False
            return any(_breaks_on_lost_batch(use, ctx, hops - 1) for use in _later_loads(targets[0], ctx))
        return False


def _returns_a_batch(ret: ast.Return, ctx) -> bool:
    func = ctx.enclosing_function(ret)
    if func is None:
        return False
    return func.name == "forward" or ctx.in_module_class(ret) is not None or "collate" in func.name.lower()


def _later_loads(target: ast.Name, ctx) -> list[ast.Name]:
    """Reads of ``target``'s name after its assignment, in the same function (or module level)."""
    scope = ctx.enclosing_function(target) or ctx.tree
    out = []
    for sub in ast.walk(scope):
        if isinstance(sub, ast.Name) and sub.id == target.id and isinstance(sub.ctx, ast.Load) and \
                (sub.lineno, sub.col_offset) > (target.lineno, target.col_offset) and \
                (ctx.enclosing_function(sub) or ctx.tree) is scope:
            out.append(sub)
    return out
