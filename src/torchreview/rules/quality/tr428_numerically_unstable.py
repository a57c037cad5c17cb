from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import ACTIVATION_FUNCTIONS
from torchreview.findings import Fix, Severity
from torchreview.fixes import replace_node
from torchreview.rules._helpers import short_text
from torchreview.rules.quality._apis import spell

_ATOMIC = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


def _one(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 1


class NumericallyUnstable(Rule):
    """
    ## What it does
    Flags expressions with a numerically stable PyTorch equivalent:
    `torch.log(1 + x)` (use `torch.log1p`), `torch.exp(x) - 1` (`torch.expm1`),
    `log(sum(exp(x)))` (`torch.logsumexp`), `log(softmax(x))` (`log_softmax`),
    `log(sigmoid(x))` (`F.logsigmoid`), and `torch.log(p)` / `torch.log(1 - p)`
    of a softmax or sigmoid output with no clamp or epsilon.

    ## Why is this bad?
    In floating point, `1 + x` rounds away a small `x` before the log sees
    it, and `exp(x) - 1` cancels to 0; `exp` overflows to `inf` for
    moderately large logits, so `log(sum(exp(x)))` returns `inf`/`nan`; a
    softmax or sigmoid underflows to exactly 0 for confident predictions and
    its log becomes `-inf`, turning the loss and every gradient into `nan`.
    The fused functions compute the same value without these failure modes.

    ## Example
    ```python
    import torch
    import torch.nn.functional as F

    def nll(logits, x):
        log_probs = torch.log(F.softmax(logits, dim=-1))
        return log_probs, torch.log(1 + x), torch.exp(x) - 1
    ```

    ## Use instead
    ```python
    import torch
    import torch.nn.functional as F

    def nll(logits, x):
        log_probs = F.log_softmax(logits, dim=-1)
        return log_probs, torch.log1p(x), torch.expm1(x)
    ```

    ## Fix safety
    `log1p`, `expm1`, `log_softmax` and `logsigmoid` rewrites are safe: same
    value, computed without rounding to 0 or `-inf`. `logsumexp` gets no fix
    (the reduced dimension must be stated). A probability held in a variable
    gets no fix either: the right change is upstream (keep the logits).

    ## Heuristics
    A probability is recognised by what produced it (a softmax/sigmoid call,
    an `nn.Softmax`/`nn.Sigmoid` module, a model whose `forward` ends in one).
    `log(p + eps)`, `log(p.clamp(min=eps))` and `torch.clamp(p, ...)` are
    never reported.
    """

    code = "TR428"
    name = "numerically-unstable"
    severity = Severity.MEDIUM
    kind = "advice"
    severity_reason = (
        "Precision loss at extreme values (inf or NaN for very small or large inputs); ordinary "
        "inputs are fine."
    )
    fixable = "safe"
    summary = "Unstable log/exp expressions with a fused stable equivalent (log1p, expm1, logsumexp, log_softmax)"
    node_types = (ast.Call, ast.BinOp)
    call_qualnames = frozenset({"torch.log"})
    call_attrs = frozenset({"log"})

    def check(self, node, ctx) -> None:
        if isinstance(node, ast.BinOp):
            self._expm1(node, ctx)
            return
        inner, method = _log_operand(node, ctx)
        if inner is None:
            return
        if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Add) and (_one(inner.left) ^ _one(inner.right)):
            x = inner.right if _one(inner.left) else inner.left
            self._rewrite(node, ctx, "log1p", x, method, f"`log(1 + {short_text(ctx, x)})` loses a small "
                          f"`{short_text(ctx, x)}` to rounding: use `log1p`")
            return
        label = ctx.flow.activation_of(inner) if not isinstance(inner, ast.BinOp) else None
        if _is_sum_of_exp(inner, ctx):
            ctx.report(node, "`log(sum(exp(x)))` overflows for large `x`: use `torch.logsumexp(x, dim=...)`")
        elif label in ("softmax", "sigmoid") and isinstance(inner, ast.Call):
            self._fused(node, inner, label, ctx)
        elif label in ("softmax", "sigmoid"):
            fused = "log_softmax" if label == "softmax" else "F.logsigmoid"
            ctx.report(node, f"`{short_text(ctx, inner)}` is a {label} output: its log is `-inf` wherever it "
                             f"underflows to 0; compute `{fused}` from the logits (or clamp it first)")
        elif isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Sub) and _one(inner.left) and \
                ctx.flow.activation_of(inner.right) == "sigmoid":
            ctx.report(node, f"`log(1 - {short_text(ctx, inner.right)})` of a sigmoid output is `-inf` once it "
                             "saturates: use `F.logsigmoid(-logits)`")

    def _fused(self, node, inner: ast.Call, label: str, ctx) -> None:
        func, q, new = inner.func, ctx.qualname(inner.func), None
        method = q is None and isinstance(func, ast.Attribute) and func.attr == label
        if label == "softmax" and (method or q in ACTIVATION_FUNCTIONS):
            callee = f"{ctx.text(func.value)}.log_softmax" if isinstance(func, ast.Attribute) else \
                spell(ctx, q.rsplit(".", 1)[0] + ".log_softmax")
            new = callee + ctx.text(inner)[len(ctx.text(func)):] if callee else None
        elif label == "sigmoid" and (method or q in ACTIVATION_FUNCTIONS):
            x = func.value if method and not inner.args else inner.args[0] if len(inner.args) == 1 else None
            callee = spell(ctx, "torch.nn.functional.logsigmoid")
            new = f"{callee}({ctx.text(x)})" if callee and x is not None and not inner.keywords else None
        fused = "log_softmax" if label == "softmax" else "F.logsigmoid"
        fix = Fix("safe", (replace_node(ctx, node, new),), f"use `{fused}`") if new else None
        ctx.report(node, f"log of a {label} output (`{short_text(ctx, inner, limit=60)}`) is `-inf` wherever "
                         f"it underflows to 0: use `{fused}`", fix=fix)

    def _expm1(self, node: ast.BinOp, ctx) -> None:
        if not (isinstance(node.op, ast.Sub) and _one(node.right) and isinstance(node.left, ast.Call)):
            return
        call = node.left
        if ctx.qualname(call.func) == "torch.exp" and len(call.args) == 1 and not call.keywords:
            x, method = call.args[0], False
        elif isinstance(call.func, ast.Attribute) and call.func.attr == "exp" and not call.args and \
                ctx.qualname(call.func) is None:
            x, method = call.func.value, True
        else:
            return
        self._rewrite(node, ctx, "expm1", x, method, f"`exp({short_text(ctx, x)}) - 1` cancels to 0 for small "
                      "values: use `expm1`", func=call.func)

    def _rewrite(self, node, ctx, fused: str, x, method: bool, message: str, func=None) -> None:
        func = func or node.func
        text = ctx.text(x)
        if method:
            new = f"{text if isinstance(x, _ATOMIC) else f'({text})'}.{fused}()"
        else:
            callee = f"{ctx.text(func.value)}.{fused}" if isinstance(func, ast.Attribute) else spell(ctx, "torch." + fused)
            new = f"{callee}({text})" if callee else None
        fix = Fix("safe", (replace_node(ctx, node, new),), f"use `{fused}`") if new else None
        ctx.report(node, message, fix=fix)


def _log_operand(call: ast.Call, ctx) -> tuple[ast.AST | None, bool]:
    """The operand of `torch.log(v)` / `v.log()`, and whether it is the method form."""
    if ctx.qualname(call.func) == "torch.log" and len(call.args) == 1 and not call.keywords:
        return call.args[0], False
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "log" and not call.args and not call.keywords and \
            ctx.qualname(func) is None and ctx.kind_of(func.value) not in ("model", "loss_fn", "optimizer"):
        return func.value, True
    return None, False


def _is_sum_of_exp(expr: ast.AST, ctx) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    if ctx.qualname(expr.func) == "torch.sum" and expr.args:
        inner = expr.args[0]
    elif isinstance(expr.func, ast.Attribute) and expr.func.attr == "sum" and ctx.qualname(expr.func) is None:
        inner = expr.func.value
    else:
        return False
    if not isinstance(inner, ast.Call):
        return False
    return ctx.qualname(inner.func) == "torch.exp" or (
        isinstance(inner.func, ast.Attribute) and inner.func.attr == "exp" and ctx.qualname(inner.func) is None)
