from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.semantic import ancestors, call_name, parent
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
    import torch

    def scores(model, x):
        return model(x).squeeze()
    ```

    ## Use instead
    ```python
    import torch

    def scores(model, x):
        return model(x).squeeze(-1)
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
    """

    code = "TR505"
    name = "squeeze-without-dim"
    severity = Severity.MEDIUM
    kind = "likely-defect"
    severity_reason = (
        "Wrong shapes when a batch holds one sample, often broadcast silently. A likely defect: that "
        "dimension may never be 1."
    )
    summary = "`squeeze()` without `dim` also drops a batch dimension of size 1"
    node_types = (ast.Call,)

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
                _for_display(node) or _single_element(receiver, node, ctx):
            return
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
