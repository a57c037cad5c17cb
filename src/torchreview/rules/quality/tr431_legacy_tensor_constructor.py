from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Fix, Severity
from torchreview.fixes import replace_node
from torchreview.rules.quality._apis import spell

_TYPES = {"Tensor": None, "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
          "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8", "ShortTensor": "int16",
          "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool"}
LEGACY = {**{f"torch.{k}": (v, None) for k, v in _TYPES.items()},
          **{f"torch.cuda.{k}": (v, "cuda") for k, v in _TYPES.items() if k != "Tensor"}}
_CONVERSIONS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
                "long": "int64", "int": "int32", "short": "int16", "bool": "bool", "byte": "uint8",
                "char": "int8"}
_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.zeros", "torch.ones", "torch.empty",
                        "torch.full", "torch.arange", "torch.eye"})


class LegacyTensorConstructor(Rule):
    """
    ## What it does
    Flags the legacy constructors `torch.Tensor(...)`, `torch.FloatTensor(...)`,
    `torch.LongTensor(...)`, `torch.cuda.FloatTensor(...)` ... and a dtype
    conversion applied right after creating a tensor (`torch.tensor(x).float()`,
    `torch.zeros(n).long()`, `torch.arange(n).to(torch.float16)`).

    ## Why is this bad?
    The legacy constructors mean two different things: with integers they
    allocate *uninitialised* memory of that size (`torch.Tensor(3)` is three
    arbitrary floats, not `[3.]`), with a sequence they copy data into a
    fixed dtype. They ignore `torch.set_default_device` and are not
    supported by TorchScript. Creating a tensor and then converting it
    allocates twice; the factories take `dtype=` directly.

    ## Example
    ```python
    import torch

    buffer = torch.Tensor(16, 8)
    ids = torch.LongTensor([1, 2, 3])
    mask = torch.tensor([[1, 0], [0, 1]]).float()
    ```

    ## Use instead
    ```python
    import torch

    buffer = torch.empty(16, 8)
    ids = torch.tensor([1, 2, 3], dtype=torch.int64)
    mask = torch.tensor([[1, 0], [0, 1]], dtype=torch.float32)
    ```

    ## Fix safety
    A sized constructor becomes `torch.empty(...)` and a literal list becomes
    `torch.tensor(..., dtype=...)`: safe for the typed constructors. For plain
    `torch.Tensor([...])` the fix writes `dtype=torch.float32`, which differs
    if the program changed the default dtype: unsafe. Moving a conversion
    into `dtype=` is safe. A constructor called with one variable gets no fix
    (it may be a size or data); two or more arguments are always sizes.

    ## Heuristics
    Only calls are reported: `torch.Tensor` in annotations, `isinstance`
    checks and as a base class is the public tensor type and fine. A
    conversion to the dtype the factory already produces is a no-op and stays
    quiet: `.float()` after `torch.zeros/ones/empty/eye` (unless the module
    changes the default dtype) and `.long()` after a `torch.arange` whose
    bounds show no float (float literal, `/`, `float(...)`).
    Copied utility code repeats the same nit many times: this rule reports one
    finding per project and severity (engine/merge.py), at the first occurrence,
    with a count and the other places as related locations (SARIF
    `relatedLocations`); `--fix` still rewrites every place.
    """

    code = "TR431"
    name = "legacy-tensor-constructor"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = (
        "Hygiene: legacy constructors work, with dtype and uninitialised-memory surprises."
    )
    fixable = "safe"
    summary = "Legacy `torch.Tensor(...)`/`torch.FloatTensor(...)` constructors and create-then-convert"
    summarize = "project"
    node_types = (ast.Call,)
    call_qualnames = frozenset(LEGACY)
    call_attrs = frozenset({*_CONVERSIONS, "to"})

    def check(self, node: ast.Call, ctx) -> None:
        q = ctx.qualname(node.func)
        if q in LEGACY:
            self._legacy(node, q, ctx)
            return
        func = node.func
        if q is not None or not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Call):
            return
        inner = func.value
        if ctx.qualname(inner.func) not in _FACTORIES or ctx.arg(inner, "dtype") is not None or \
                ctx.has_kwargs_splat(inner) or any(isinstance(a, ast.Starred) for a in inner.args):
            return
        if func.attr in _CONVERSIONS and not node.args and not node.keywords:
            dtype = spell(ctx, "torch." + _CONVERSIONS[func.attr])
        elif func.attr == "to" and len(node.args) == 1 and not node.keywords and \
                ctx.model.device_kind(node.args[0]) == "dtype" and ctx.qualname(node.args[0]):
            dtype = ctx.text(node.args[0])
        else:
            return
        if _no_op_conversion(inner, func.attr, node, ctx):
            return  # the factory already yields that dtype: nothing is allocated twice
        factory = ctx.text(inner.func)
        fix = None
        text = ctx.text(inner)
        if dtype and text.endswith(")"):
            body = text[:-1].rstrip()
            sep = "" if body.endswith("(") else (" " if body.endswith(",") else ", ")
            fix = Fix("safe", (replace_node(ctx, node, f"{body}{sep}dtype={dtype})"),), "pass `dtype=`")
        ctx.report(node, f"`{factory}(...)` creates a tensor that `.{func.attr}(...)` converts right away: "
                         f"pass `dtype={dtype or '...'}` to `{factory}` instead", fix=fix)

    def _legacy(self, call: ast.Call, q: str, ctx) -> None:
        dtype, device = LEGACY[q]
        args = call.args
        sizes = all(isinstance(a, ast.Constant) and type(a.value) is int for a in args) or (
            len(args) >= 2 and not any(isinstance(a, ast.Starred) for a in args))  # only sizes take 2+
        data = len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple))
        fix = None
        callee = spell(ctx, "torch.empty" if sizes else "torch.tensor")
        dtype_text = spell(ctx, "torch." + (dtype or "float32")) if (dtype or data) else ""
        if (sizes or data) and callee and dtype_text is not None:
            parts = [ctx.text(a) for a in args] or ["0"]
            parts += [f"dtype={dtype_text}"] if dtype_text else []
            parts += [f'device="{device}"'] if device else []
            parts += [ctx.text(k) for k in call.keywords]
            fix = Fix("unsafe" if data and dtype is None else "safe",
                      (replace_node(ctx, call, f"{callee}({', '.join(parts)})"),),
                      f"use `torch.{'empty' if sizes else 'tensor'}`")
        if sizes:
            what = "allocates uninitialised memory of that size; use `torch.empty(...)` (or `torch.zeros`)"
        elif data:
            what = "copies the data with a dtype fixed by the class name; use `torch.tensor(data, dtype=...)`"
        else:
            what = ("allocates uninitialised memory when given sizes and copies when given data; use "
                    "`torch.tensor(data, dtype=...)` or `torch.empty(size, dtype=...)`")
        ctx.report(call, f"legacy constructor `{q}(...)` {what}", fix=fix)


_FLOAT_DEFAULT_FACTORIES = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.eye"})
_DTYPE_NAMES = {"torch.float32": "float32", "torch.float": "float32", "torch.int64": "int64",
                "torch.long": "int64"}


def _no_op_conversion(inner: ast.Call, attr: str, call: ast.Call, ctx) -> bool:
    """`torch.zeros(n).float()`, `torch.arange(n).long()`: a conversion to the dtype
    the factory already produces (the default float dtype; int64 for an integer
    `arange`) returns the tensor itself, so there is no second allocation."""
    if attr == "to":
        target = _DTYPE_NAMES.get(ctx.qualname(call.args[0]) or "")
    else:
        target = _CONVERSIONS.get(attr)
    q = ctx.qualname(inner.func)
    if target == "float32" and q in _FLOAT_DEFAULT_FACTORIES:
        return "set_default_dtype" not in ctx.model.calls_by_name
    if target == "int64" and q == "torch.arange":
        bounds = [*inner.args, *(k.value for k in inner.keywords if k.arg in ("start", "end", "step"))]
        return bool(bounds) and not any(_maybe_float(b) for b in bounds)
    return False


def _maybe_float(expr: ast.AST) -> bool:
    """A float literal, a true division or a `float(...)`/`math.*` call in `expr`."""
    for sub in ast.walk(expr):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, float):
            return True
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Div):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "float":
            return True
    return False
