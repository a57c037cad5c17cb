from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Fix, Severity
from torchreview.fixes import replace_attr_name
from torchreview.rules._helpers import short_text

_REORDERING = frozenset({"transpose", "permute", "t", "swapaxes", "swapdims", "movedim", "moveaxis"})
_REORDERING_ATTRS = frozenset({"T", "mT", "H", "mH"})


class ViewAfterTranspose(Rule):
    """
    ## What it does
    Flags `.view(...)` applied to the result of `einops.rearrange(x, "b h t d -> b t h d")`
    (a pure reordering), `.transpose()`, `.permute()`,
    `.t()`, `.swapaxes()`, `.movedim()` or `.T`/`.mT` (directly or through a
    variable) with no `.contiguous()` in between.

    ## Why is this bad?
    Those operations return a view with reordered strides, not a contiguous
    tensor. `view` never copies, so whenever the new shape merges dimensions
    that are no longer adjacent in memory it raises `RuntimeError: view size
    is not compatible with input tensor's size and stride`; whether it does
    depends on the shapes, so the failure can hide until a new input size.

    ## Example
    ```python
    import torch

    def merge_heads(y):
        b, h, t, d = y.shape
        return y.transpose(1, 2).view(b, t, h * d)
    ```

    ## Use instead
    ```python
    import torch

    def merge_heads(y):
        b, h, t, d = y.shape
        return y.transpose(1, 2).contiguous().view(b, t, h * d)
    ```

    ## Fix safety
    Replacing `.view` with `.reshape` is unsafe: `reshape` copies when it has
    to, so the result no longer shares memory with the input (an in-place
    write to it stops reaching the original tensor).

    ## Heuristics
    Splitting a dimension is allowed on a non-contiguous tensor, so only views
    that visibly merge dimensions are reported. A permutation that undoes the
    one the tensor was given right after it was laid out (`x = y.view(...)
    .permute(1, 0, 2)`, later `x.permute(1, 0, 2).view(...)`) puts it back in
    contiguous order and is not reported; so does one applied to an
    element-wise op whose first operand is the inverse permutation of a tensor
    a call just returned (`(ps.permute(0, 2, 1) + c).permute(0, 2, 1)` after
    `ps, vs = out.topk(k)`, also through basic indexing `ps[:, :, -1, :]`):
    the op lays its result out like that operand. When the new order is known
    exactly (a literal `.permute(...)`, or `.transpose(a, b)` of a tensor
    whose rank is unpacked from `.shape`), the view is reported only if no
    reading of its sizes merges just dimensions that are still adjacent and
    in order (`nchw.permute(0, 2, 3, 1).view(n, -1, c)` merges H and W, which
    is valid, and stays quiet; a product such as `h * w` that the same
    function gives elsewhere as the size of one dimension, `x.view(n, k,
    h * w)`, may be that one dimension; a tensor the function asserts or makes
    channels-last, `x.is_contiguous(memory_format=torch.channels_last)`, is
    contiguous after `.permute(0, 2, 3, 1)`). Otherwise the known rank decides: fewer sizes than the known
    rank (from a `.permute(...)`, from `b, h, t, d = y.shape`, or at least the
    highest transposed dimension), a single size, or a product of two sizes
    such as `h * d` (a size scaled by a number, `2 * C`, may be one dimension). A single size must visibly be an integer (`-1`, `n * c`,
    `x.numel()`): a target shape taken from another tensor (`.view(other.shape)`,
    `.view(layer.weight.size())`) or otherwise unknown may keep every dimension,
    so it is not reported. `view(dtype)`, layers named `t` (`self.t(x)`) and
    NumPy arrays are skipped.

    Confidence: medium (hidden by default) whenever the reordered tensor is not
    visibly laid out in the function itself -- a parameter, an attribute, a
    subscript, another module's output: it may arrive as a permuted view that
    this reordering puts back in order (TPVFormer's `key.permute(0, 2, 1, 3)`
    of a tensor the caller permuted the same way; 15 of 16 such findings on the
    2026-11-29 sweeps were judged false). A tensor built here by a factory,
    `torch.cat`/`stack`, a matrix product, `.contiguous()`, an
    `nn.Linear`/`nn.Conv*`/`nn.Embedding`/`BatchNorm1d`/`LayerNorm`/`GroupNorm`
    layer (or a view or element-wise op of one) is laid out. For such a tensor: high when the new order is known exactly (a literal
    `.permute(...)`, a `.transpose(a, b)` of a tensor of known rank, a pure
    `rearrange`) and no reading of the sizes keeps the merged dimensions
    adjacent, or when a single size flattens a tensor whose two distinct
    dimensions were swapped by literal indices (`x.transpose(0, 1).view(-1)`):
    the view raises for any sizes but degenerate ones (a merged dimension of
    size 1). Medium when only a bound on the rank is known (`.T`, a transpose
    of a tensor of unknown rank viewed with several sizes).
    In a notebook cell that the stored notebook shows ran to the end without
    an error (executed, no `error` output, outputs kept), the finding is low
    confidence (`claims_raise`): the author's own run refutes the crash there.
    A line inside a `try` whose handler names the error (`except RuntimeError
    as e: print(e)`, a lesson provoking it) is not reported (engine/runner.py);
    a broad `except Exception` is no such evidence.
    """

    code = "TR421"
    name = "view-after-transpose"
    severity = Severity.HIGH
    claims_raise = True
    severity_reason = (
        "Crash: `.view()` of a non-contiguous tensor raises a RuntimeError. A likely defect: the "
        "merged dimensions may still be compatible (catalog: medium)."
    )
    fixable = "unsafe"
    summary = "`.view()` on a transposed/permuted tensor without `.contiguous()`"
    node_types = (ast.Call,)
    call_attrs = frozenset({"view"})

    def check(self, node: ast.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "view") or not node.args:
            return
        if node.keywords or any(_is_dtype(a, ctx) or isinstance(a, ast.Starred) for a in node.args):
            return
        source = func.value
        producer = ctx.flow.reaching_value_strict(source) if isinstance(source, ast.Name) else source
        found = _reordering(producer, ctx)
        sizes = _target_sizes(node.args, ctx)
        if found is None or sizes is None or not _merges(sizes, found[1]):
            return
        perm = _permutation(producer, ctx)
        if perm is not None and _some_grouping_keeps_order(perm, sizes, _one_dimension_products(node, ctx)):
            return  # e.g. NCHW.permute(0, 2, 3, 1).view(n, -1, c): H and W stay adjacent
        if perm == [0, 2, 3, 1] and _channels_last(producer, node, ctx):
            return  # a channels-last NCHW tensor permuted to NHWC is contiguous in that order (ffcv)
        if perm is not None and _undoes_earlier(producer, perm, ctx):
            return  # `x = y.view(...).permute(1, 0, 2)` ... `x.permute(1, 0, 2).view(...)`: back in order
        via = "" if producer is source else f" (`{source.id}` holds `{short_text(ctx, producer)}`)"
        fix = Fix("unsafe", (replace_attr_name(ctx, func, "reshape"),), "use `.reshape(...)`")
        known_order = perm is not None or (len(sizes) == 1 and _swaps(producer, ctx))
        # the reordered tensor's own layout: laid out here by an op that returns a contiguous
        # tensor, or unknown (a parameter, an attribute, another module's output, which may
        # itself be a permuted view that this reordering puts back in order: TPVFormer, lhy-ml)
        laid_out = _laid_out_here(_reordered(producer, ctx), ctx)
        ctx.report(node, f"`.view()` on the result of `{found[0]}`{via} merges dimensions that are no longer "
                         "adjacent in memory: this raises unless the tensor is made contiguous; call "
                         "`.contiguous()` first or use `.reshape(...)`", fix=fix,
                   confidence=("high" if known_order else None) if laid_out else "medium")


def _swaps(expr: ast.AST | None, ctx) -> bool:
    """``expr`` exchanges two distinct dimensions: ``.transpose(a, b)`` /
    ``torch.transpose(x, a, b)`` with literal indices of one sign that differ, or
    ``.permute`` of literals out of order. Flattened, such a tensor is never
    contiguous (but for degenerate sizes of 1)."""
    if not isinstance(expr, ast.Call):
        return False
    q = ctx.qualname(expr.func)
    dims = expr.args[1:] if q == "torch.transpose" else expr.args
    name = "transpose" if q == "torch.transpose" else (
        expr.func.attr if isinstance(expr.func, ast.Attribute) and q is None else None)
    if name == "permute" and len(dims) == 1 and isinstance(dims[0], (ast.Tuple, ast.List)):
        dims = dims[0].elts
    ints = [d.value for d in dims if isinstance(d, ast.Constant) and type(d.value) is int]
    if len(ints) != len(dims) or not ints:
        return False
    if name in ("transpose", "swapaxes"):
        return len(ints) == 2 and ints[0] != ints[1] and (ints[0] < 0) == (ints[1] < 0)
    return name == "permute" and all(i >= 0 for i in ints) and ints != sorted(ints)


def _rearrange_reorders(call: ast.Call) -> tuple[str, int | None] | None:
    """``einops.rearrange(x, "b h t d -> b t h d")``: a pure reordering (no group
    on the right, which einops would reshape into a copy) returns a strided view."""
    pattern = call.args[1] if len(call.args) > 1 else None
    if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str) and "->" in pattern.value):
        return None
    left, right = (side.split() for side in pattern.value.split("->", 1))
    if "(" in pattern.value.split("->", 1)[1] or "..." in left or sorted(left) != sorted(right):
        return None
    return ("rearrange()", len(left)) if left != right else None


def _reordering(expr: ast.AST | None, ctx) -> tuple[str, int | None] | None:
    """(label, known lower bound of the rank) for a stride-reordering expression."""
    if isinstance(expr, ast.Attribute) and expr.attr in _REORDERING_ATTRS:
        return None if _numpy(expr.value, ctx) else ("." + expr.attr, None)
    if not isinstance(expr, ast.Call):
        return None
    q = ctx.qualname(expr.func)
    if q == "einops.rearrange":
        return _rearrange_reorders(expr)
    if q is not None:
        name = q.rsplit(".", 1)[-1]
        if not (q.startswith("torch.") and q.count(".") == 1 and name in _REORDERING) or not expr.args:
            return None
        base, dims, label = expr.args[0], expr.args[1:], f"torch.{name}()"
    elif isinstance(expr.func, ast.Attribute) and expr.func.attr in _REORDERING:
        base, dims, label = expr.func.value, expr.args, f".{expr.func.attr}()"
        if _numpy(base, ctx) or ctx.kind_of(base) in ("model", "loss_fn") or \
                (expr.func.attr == "t") != (not dims):
            return None  # `self.t(x)` is a layer; Tensor.t() takes no argument
    else:
        return None
    if label.endswith("permute()"):
        if len(dims) == 1 and isinstance(dims[0], (ast.Tuple, ast.List)):
            dims = dims[0].elts
        return (label, len(dims)) if not any(isinstance(d, ast.Starred) for d in dims) else None
    ints = [d.value for d in dims if isinstance(d, ast.Constant) and type(d.value) is int]
    bound = max(ints) + 1 if ints and len(ints) == len(dims) and min(ints) >= 0 else None
    rank = _unpacked_rank(base, expr, ctx)
    return label, rank or bound


def _undoes_earlier(producer: ast.AST, perm: list[int], ctx) -> bool:
    """``producer`` permutes a name that holds an earlier permutation of a freshly laid-out
    tensor, and the two cancel (``permute(1, 0, 2)`` twice): the result is in its original,
    contiguous order again. So does ``(x.permute(p) + y).permute(p⁻¹)``: an element-wise op
    lays its result out like its permuted first operand (kospeech's beam search), when ``x``
    is a tensor a call just returned (``current_ps, _ = out.topk(k)``)."""
    if isinstance(producer, ast.Call) and isinstance(producer.func, ast.Attribute) and \
            isinstance(producer.func.value, ast.BinOp) and \
            isinstance(producer.func.value.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        first = producer.func.value.left
        inner = _permutation(first, ctx)
        if inner is None or len(inner) != len(perm) or not all(inner[perm[i]] == i for i in range(len(perm))):
            return False
        return _fresh(first.func.value, ctx)
    if not (isinstance(producer, ast.Call) and isinstance(producer.func, ast.Attribute)
            and isinstance(producer.func.value, ast.Name)):
        return False
    earlier = ctx.flow.reaching_value_strict(producer.func.value)
    inner = _permutation(earlier, ctx)
    if inner is None or len(inner) != len(perm):
        return False
    base = earlier.func.value
    laid_out = isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and \
        base.func.attr in ("view", "reshape", "contiguous", "repeat", "clone")
    return laid_out and all(inner[perm[i]] == i for i in range(len(perm)))


# Methods whose tuple of results are new tensors, laid out in order (not views).
_FRESH_TUPLES = frozenset({"topk", "sort", "max", "min", "kthvalue", "mode", "median"})


def _fresh(base: ast.AST, ctx) -> bool:
    """``base`` is a tensor a call just returned, laid out in order: a call that reorders
    nothing, or a name whose last binding before this use in its function is one -- also an
    element of a tuple of new tensors (``current_ps, current_vs = out.topk(k)``)."""
    if isinstance(base, ast.Call):
        return _reordering(base, ctx) is None and _permutation(base, ctx) is None and not (
            isinstance(base.func, ast.Attribute) and base.func.attr in ("split", "chunk", "unbind", "narrow"))
    if isinstance(base, ast.Subscript):
        # basic indexing keeps the dimensions' order (`x[:, :, -1, :]`): an element-wise op on
        # it still lays its result out densely in that order
        parts = base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice]
        return all(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and
                                                (type(p.value) is int or p.value in (None, Ellipsis))) or
                   (isinstance(p, ast.UnaryOp) and isinstance(p.operand, ast.Constant)) for p in parts) and \
            _fresh(base.value, ctx)
    if not isinstance(base, ast.Name):
        return False
    scope = ctx.enclosing_function(base) or ctx.tree
    binds = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and (node.end_lineno, node.end_col_offset) < (base.lineno, base.col_offset):
            for target in node.targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                if any(isinstance(n, ast.Name) and n.id == base.id for n in names):
                    binds.append((node, isinstance(target, ast.Tuple)))
    if not binds:
        return False
    node, unpacked = max(binds, key=lambda b: (b[0].lineno, b[0].col_offset))
    value = node.value
    if unpacked:
        return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            value.func.attr in _FRESH_TUPLES
    return _fresh(value, ctx)


def _permutation(expr: ast.AST | None, ctx) -> list[int] | None:
    """The exact dimension order a `.permute(...)` (all literal) or a
    `.transpose(a, b)` on a tensor of known rank produces, else None."""
    if isinstance(expr, ast.Call) and ctx.qualname(expr.func) == "einops.rearrange" and \
            _rearrange_reorders(expr) is not None:
        left, right = (side.split() for side in expr.args[1].value.split("->", 1))
        return [left.index(r) for r in right]
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return None
    dims = expr.args
    if expr.func.attr == "permute":
        if len(dims) == 1 and isinstance(dims[0], (ast.Tuple, ast.List)):
            dims = dims[0].elts
        perm = [d.value for d in dims if isinstance(d, ast.Constant) and type(d.value) is int]
        return perm if len(perm) == len(dims) and sorted(perm) == list(range(len(perm))) else None
    if expr.func.attr in ("transpose", "swapaxes") and len(dims) == 2:
        rank = _unpacked_rank(expr.func.value, expr, ctx)
        pair = [d.value for d in dims if isinstance(d, ast.Constant) and type(d.value) is int]
        if rank is None or len(pair) != 2 or not all(0 <= d < rank for d in pair):
            return None
        perm = list(range(rank))
        perm[pair[0]], perm[pair[1]] = perm[pair[1]], perm[pair[0]]
        return perm
    return None


_SHAPING = frozenset({"view", "reshape", "expand", "new_zeros", "new_ones", "new_empty", "zeros", "ones",
                      "empty", "randn", "rand"})


def _channels_last(producer: ast.AST, view: ast.Call, ctx) -> bool:
    """The permuted tensor is known to be channels-last in memory: the same function
    asserts or tests ``x.is_contiguous(memory_format=torch.channels_last)`` or makes it so
    (``x.contiguous(memory_format=torch.channels_last)``, ``x.to(memory_format=...)``)
    for the same name. Its ``permute(0, 2, 3, 1)`` is then contiguous: the view is valid."""
    base = producer
    while isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute):
        base = base.func.value
    func = ctx.enclosing_function(view)
    if not isinstance(base, ast.Name) or func is None:
        return False
    for call in ctx.model.subtree(func):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                call.func.attr in ("is_contiguous", "contiguous", "to") and \
                isinstance(call.func.value, ast.Name) and call.func.value.id == base.id and any(
                    k.arg == "memory_format" and (ctx.qualname(k.value) or ast.unparse(k.value)).endswith(
                        "channels_last") for k in call.keywords):
            return True
    return False


def _one_dimension_products(view: ast.Call, ctx) -> frozenset[str]:
    """Products of sizes (``h * w``) that the same function gives elsewhere as the size of
    one dimension (``x.view(n, heads, k, h * w)``): there such a product may be one dimension,
    not a merge of two."""
    func = ctx.enclosing_function(view)
    if func is None:
        return frozenset()
    found = set()
    for call in ctx.model.subtree(func):
        if call is view or not isinstance(call, ast.Call) or not isinstance(call.func, (ast.Attribute, ast.Name)):
            continue
        name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
        if name in _SHAPING and len(call.args) >= 2:
            found.update(ast.unparse(a) for a in call.args if _product_of_sizes(a))
    return frozenset(found)


def _some_grouping_keeps_order(perm: list[int], sizes: list[ast.AST], single: frozenset[str] = frozenset()) -> bool:
    """Whether the view's sizes can be read as merging only runs of output
    dimensions that were adjacent and in order before the reordering (a view
    that stays valid). A product size (`h * d`) merges at least two dimensions,
    unless the function gives that product elsewhere as one dimension (``single``,
    by source text)."""
    rank, count = len(perm), len(sizes)
    if count >= rank:
        return True  # no merge: splits or same rank

    def fits(start: int, index: int) -> bool:
        if index == count:
            return start == rank
        least = 2 if _product_of_sizes(sizes[index]) and ast.unparse(sizes[index]) not in single else 1
        for end in range(start + least, rank - (count - index - 1) + 1):
            run = perm[start:end]
            if all(b == a + 1 for a, b in zip(run, run[1:])) and fits(end, index + 1):
                return True
        return False

    return fits(0, 0)


def _merges(sizes: list[ast.AST], rank: int | None) -> bool:
    """The view visibly merges dimensions: fewer sizes than the known rank, a
    single size (a flatten), or a product of sizes (`h * d`)."""
    if len(sizes) == 1 or (rank is not None and len(sizes) < rank):
        return True
    return any(_product_of_sizes(a) for a in sizes) and (rank is None or len(sizes) <= rank)


def _product_of_sizes(size: ast.AST) -> bool:
    """``h * d``: a product of two sizes, which merges at least two dimensions. A size scaled
    by a number (``2 * C``: the channels a strided conv doubled, nnFormer's patch merging)
    may be one dimension."""
    if not (isinstance(size, ast.BinOp) and isinstance(size.op, ast.Mult)):
        return False
    return not any(isinstance(side, ast.Constant) and isinstance(side.value, int)
                   for side in (size.left, size.right))


def _target_sizes(args: list[ast.AST], ctx) -> list[ast.AST] | None:
    """The sizes a `.view(...)` asks for, or None when they are not known: a
    single argument that is another tensor's `.shape`/`.size()` (or a name
    holding one, or anything else not visibly an integer) may keep every
    dimension, so nothing proves a merge (`w.permute(3, 2, 0, 1).view(layer.weight.shape)`)."""
    if len(args) != 1:
        return list(args)
    arg = args[0]
    if isinstance(arg, (ast.Tuple, ast.List)):
        return None if any(isinstance(e, ast.Starred) for e in arg.elts) else list(arg.elts)
    value = ctx.flow.reaching_value(arg) if isinstance(arg, ast.Name) else arg
    if isinstance(value, (ast.Tuple, ast.List)):
        return None  # a shape tuple built elsewhere: its length is what matters, not provable here
    return [arg] if _an_integer(value) else None


def _an_integer(expr: ast.AST | None) -> bool:
    """Visibly a single integer size: `-1`, `n`, `b * t`, `x.numel()`, `x.size(0)`, `x.shape[0]`."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        expr = expr.operand
    if isinstance(expr, ast.Constant):
        return type(expr.value) is int
    if isinstance(expr, ast.BinOp):
        if any(_a_sequence(side) for side in (expr.left, expr.right)):
            return False  # `x.shape + (1,) * n`: a shape tuple built by concatenation or repetition
        return isinstance(expr.op, (ast.Mult, ast.FloorDiv)) or \
            (isinstance(expr.op, (ast.Add, ast.Sub)) and (_an_integer(expr.left) or _an_integer(expr.right)))
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        return expr.func.attr == "numel" or (expr.func.attr == "size" and bool(expr.args))
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute):
        return expr.value.attr == "shape"
    return False


def _a_sequence(expr: ast.AST) -> bool:
    """A tuple or list (a literal, `x.shape`, `x.size()`, or arithmetic on those)."""
    if isinstance(expr, (ast.Tuple, ast.List)):
        return True
    if isinstance(expr, ast.Attribute) and expr.attr == "shape":
        return True
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "size" and not expr.args:
        return True
    return isinstance(expr, ast.BinOp) and (_a_sequence(expr.left) or _a_sequence(expr.right))


def _unpacked_rank(base: ast.AST, before: ast.AST, ctx) -> int | None:
    """`b, h, t, d = y.shape` (or `y.size()`) earlier in the function: y has rank 4."""
    if not isinstance(base, ast.Name):
        return None
    func = ctx.enclosing_function(before)
    rank = None
    for node in ast.walk(func) if func is not None else ():
        if isinstance(node, ast.Assign) and node.lineno < before.lineno and \
                isinstance(node.targets[0], ast.Tuple):
            value = node.value.func if isinstance(node.value, ast.Call) and not node.value.args else node.value
            if isinstance(value, ast.Attribute) and value.attr in ("shape", "size") and \
                    isinstance(value.value, ast.Name) and value.value.id == base.id:
                rank = len(node.targets[0].elts)
    return rank


def _numpy(expr: ast.AST, ctx) -> bool:
    origin = ctx.flow.origin(expr, peel=False)
    q = ctx.qualname(origin.func) if isinstance(origin, ast.Call) else None
    return bool(q) and q.split(".")[0] in ("numpy", "pandas", "jax")


def _is_dtype(arg: ast.AST, ctx) -> bool:
    q = ctx.qualname(arg) or ""
    if q.startswith(("numpy.", "torch.")) and not isinstance(arg, ast.Call):
        return q.rsplit(".", 1)[-1][:1].islower() and q.count(".") == 1
    name = arg.id if isinstance(arg, ast.Name) else arg.attr if isinstance(arg, ast.Attribute) else ""
    return "dtype" in name.lower()


# calls that return a freshly laid-out (standard contiguous) tensor
_CONTIGUOUS_PRODUCERS = frozenset({
    "torch.tensor", "torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty", "torch.full",
    "torch.arange", "torch.randint", "torch.linspace", "torch.logspace", "torch.eye", "torch.normal",
    "torch.cat", "torch.stack", "torch.matmul", "torch.bmm", "torch.mm", "torch.einsum", "torch.baddbmm",
    "torch.nn.functional.linear", "torch.nn.functional.embedding",
})
_CONTIGUOUS_METHODS = frozenset({"contiguous", "repeat", "matmul", "bmm", "mm"})
# methods that hand back the receiver's layout (a view of it, or an element-wise copy)
_LAYOUT_KEEPING = frozenset({"view", "reshape", "unsqueeze", "squeeze", "float", "half", "double", "to",
                             "cuda", "detach", "type_as", "bfloat16", "sigmoid", "tanh", "relu", "exp",
                             "softmax", "log_softmax", "mul", "add", "sub", "div"})
# layers whose output is a new standard-contiguous tensor (a norm layer lays its output out
# contiguously whatever the input's strides; a convolution unless fed channels-last)
_LAYERS = frozenset({"Linear", "Embedding", "Conv1d", "Conv2d", "Conv3d", "Bilinear", "LazyLinear",
                     "BatchNorm1d", "LayerNorm", "GroupNorm"})


def _reordered(producer: ast.AST | None, ctx) -> ast.AST | None:
    """The tensor a reordering expression reorders (``x`` of ``x.permute(...)``,
    ``torch.transpose(x, ...)``, ``rearrange(x, ...)``, ``x.T``)."""
    if isinstance(producer, ast.Attribute):
        return producer.value
    if not isinstance(producer, ast.Call):
        return None
    if isinstance(producer.func, ast.Attribute) and ctx.qualname(producer.func) is None:
        return producer.func.value
    return producer.args[0] if producer.args else None


def _laid_out_here(expr: ast.AST | None, ctx, depth: int = 6) -> bool:
    """``expr`` is visibly a standard-contiguous tensor: built in this function by a
    factory, ``torch.cat``/``stack``, a matrix product, ``.contiguous()``, a
    ``nn.Linear``/``nn.Conv*``/``nn.Embedding`` layer, or an element-wise op or a
    view of such a tensor. A parameter, an attribute, a subscript or another
    module's output is not known to be: it may arrive permuted already."""
    if expr is None or depth <= 0:
        return False
    if isinstance(expr, ast.Name):
        return _laid_out_here(ctx.flow.reaching_value_strict(expr), ctx, depth - 1)
    if isinstance(expr, ast.BinOp):
        if isinstance(expr.op, ast.MatMult):
            return True
        sides = [e for e in (expr.left, expr.right) if not isinstance(e, ast.Constant)]
        return bool(sides) and all(_laid_out_here(e, ctx, depth - 1) for e in sides)
    if not isinstance(expr, ast.Call):
        return False
    q = ctx.qualname(expr.func) or ""
    if q in _CONTIGUOUS_PRODUCERS:
        return True
    if isinstance(expr.func, ast.Attribute) and not q:
        if expr.func.attr in _CONTIGUOUS_METHODS:
            return True
        if expr.func.attr in _LAYOUT_KEEPING:
            return _laid_out_here(expr.func.value, ctx, depth - 1)
    built = ctx.flow.module_constructor(expr.func)
    name = (ctx.qualname(built.func) or "") if isinstance(built, ast.Call) else ""
    return name.startswith("torch.nn.") and name.rsplit(".", 1)[-1] in _LAYERS
