from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import ancestors, dotted, position
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text

_GRAD_USERS = frozenset({"backward", "grad", "requires_grad_", "manual_backward", "retain_grad"})


class InferenceWithoutNoGrad(Rule):
    """
    ## What it does
    Flags model calls made after `model.eval()` (in the same function, or in
    every same-module caller) with autograd still enabled: no `torch.no_grad()`
    / `torch.inference_mode()` block or decorator around them.

    ## Why is this bad?
    `eval()` only switches dropout and batch-norm behaviour; it does not turn
    off gradient tracking. Every activation of the forward pass is kept for a
    backward that never comes: evaluation uses several times the memory it
    needs (often the cause of an OOM that only happens during validation) and
    runs slower.

    ## Example
    ```python
    import torch

    def evaluate(model, loader):
        model.eval()
        correct = 0
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
        return correct
    ```

    ## Use instead
    ```python
    import torch

    @torch.no_grad()
    def evaluate(model, loader):
        model.eval()
        correct = 0
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
        return correct
    ```

    ## Heuristics
    The last `eval()`/`train()` call before the model call, in source order,
    must be `eval()`. Calls inside a training loop, in functions that need
    gradients (`backward()`, `torch.autograd.grad`, `requires_grad_`: saliency
    maps, adversarial examples), under `torch.set_grad_enabled(...)`, or after
    a `torch.set_grad_enabled(False)` statement, or under a project's own
    wrapper whose name says it disables gradients (`@smart_inference_mode()`,
    `with no_grad_ctx():`), or in a function whose every caller -- in this
    module and in the project's other files -- runs it under `no_grad`, are
    not reported, nor are test files. A call of
    `self.head` after only `self.backbone.eval()` (another attribute of the
    same object) is not in eval mode and stays quiet. One finding per
    function.
    """

    code = "TR404"
    name = "inference-without-no-grad"
    severity = Severity.MEDIUM
    kind = "advice"
    severity_reason = (
        "Waste: activations are kept for a backward that never comes (memory and time); results are "
        "correct."
    )
    extra_review = ("PR",)
    summary = "Model called in eval mode with autograd still on"

    def check_file(self, ctx) -> None:
        if ctx.is_test_file or "eval" not in ctx.model.calls_by_name and "train" not in ctx.model.calls_by_name:
            return
        done: set[int] = set()
        owners = {loop.function for loop in ctx.training_loops}
        for call in sorted(ctx.model.calls, key=lambda c: (c.lineno, c.col_offset)):
            if ctx.flow.classify(call) != "forward":
                continue
            func = ctx.enclosing_function(call)
            if id(func) in done or ctx.in_grad_disabled(call) or _under_set_grad(ctx, call) or \
                    _custom_no_grad(ctx, call) or (func is not None and ctx.call_paths.callers_disable_grad(func)):
                continue
            if ctx.flow.training_loop_of(call) is not None or (
                    func in ctx.flow.training_functions and func not in owners):
                continue  # part of a training step
            if _needs_grad(ctx, func) or ctx.flow.mode_at(call) != "eval" or _sibling_evaluated(ctx, call):
                continue
            done.add(id(func))
            ctx.report(call, f"`{short_text(ctx, call)}` runs in eval mode with autograd on: activations "
                             f"are kept for a backward that never happens; wrap the inference in "
                             f"`with torch.no_grad():` (or decorate the function with "
                             f"`@torch.inference_mode()`)")


def _under_set_grad(ctx, node) -> bool:
    for anc in ancestors(node):
        if isinstance(anc, (ast.With, ast.AsyncWith)) and any(
                ctx.qualname(i.context_expr.func if isinstance(i.context_expr, ast.Call) else i.context_expr)
                == "torch.set_grad_enabled" for i in anc.items):
            return True
    return False


def _named_no_grad(expr) -> bool:
    target = expr.func if isinstance(expr, ast.Call) else expr
    name = (dotted(target) or "").rsplit(".", 1)[-1].lower()
    return "inference" in name or "no_grad" in name or "nograd" in name


def _custom_no_grad(ctx, node, depth: int = 2) -> bool:
    """A project's own wrapper around no_grad/inference_mode (``@smart_inference_mode()``,
    ``with utils.no_grad_ctx():``) on ``node``'s function, a with-block around it, or
    every same-module caller."""
    for anc in ancestors(node):
        if isinstance(anc, (ast.With, ast.AsyncWith)) and any(_named_no_grad(i.context_expr) for i in anc.items):
            return True
    func = ctx.enclosing_function(node)
    if func is None:
        return False
    if any(_named_no_grad(deco) for deco in func.decorator_list):
        return True
    sites = ctx.flow.call_sites(func) if depth > 0 else []
    return bool(sites) and all(ctx.in_grad_disabled(s) or _custom_no_grad(ctx, s, depth - 1) for s in sites)


def _needs_grad(ctx, func) -> bool:
    scope = func if func is not None else ctx.tree
    for node in ctx.model.subtree(scope):
        if ctx.flow.training_loop_of(node) is not None:
            continue  # training uses gradients; the question is about the inference part
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node.func, ast.Name) else ""
            if name in _GRAD_USERS and name != "grad" or ctx.qualname(node.func) == "torch.autograd.grad":
                return True
            if ctx.qualname(node.func) == "torch.set_grad_enabled":
                return True
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets):
            return True
    return False


def _sibling_evaluated(ctx, call: ast.Call) -> bool:
    """`self.backbone.eval()` then `self.head(x)`: every `eval()` before the call in its
    function switches another attribute of the same object, so the called
    sub-module is not the one in eval mode (a frozen feature extractor in front
    of a trainable head)."""
    func = ctx.enclosing_function(call)
    model = dotted(ctx.flow.called_model(call))
    if func is None or model is None or "." not in model:
        return False
    target = position(call)
    receivers = [dotted(sub.func.value) if isinstance(sub.func, ast.Attribute) else None
                 for sub in ctx.model.subtree(func)
                 if isinstance(sub, ast.Call) and position(sub) < target and
                 ctx.enclosing_function(sub) is func and ctx.flow.classify(sub) == "eval"]
    root = model.split(".", 1)[0]
    return bool(receivers) and all(
        r is not None and "." in r and r.split(".", 1)[0] == root and
        not (r == model or model.startswith(r + ".") or r.startswith(model + ".")) for r in receivers)
