from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import ancestors
from torchreview.findings import Severity
from torchreview.rules._helpers import known_false, short_text
from torchreview.rules.quality._training import uses_framework

_AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast",
                       "torch.amp.autocast_mode.autocast"})
_FP16 = frozenset({"torch.float16", "torch.half"})


class Fp16WithoutGradScaler(Rule):
    """
    ## What it does
    Flags training under `float16` autocast (an autocast block inside, or
    around, a loop that runs `backward()` and `optimizer.step()`) in a module
    that never uses a `GradScaler`.

    ## Why is this bad?
    In float16 the smallest normal value is about 6e-5: many gradients
    underflow to zero in the backward pass, and layers quietly stop learning.
    `GradScaler` multiplies the loss before `backward()` so gradients stay
    representable, unscales them before the step, and skips steps that
    overflowed. `bfloat16` has float32's exponent range and needs no scaler.

    ## Example
    ```python
    import torch

    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Heuristics
    The autocast dtype must be known to be float16: `dtype=torch.float16`
    (also through a name), `torch.cuda.amp.autocast()` without a dtype, or
    `torch.autocast("cuda")` without a dtype (CUDA's default is float16).
    Autocast on the CPU, `bfloat16`, a dtype chosen at run time, or
    `enabled=False` are not reported, nor is an autocast under `no_grad()`/
    `inference_mode()` (the validation pass inside a training loop: nothing
    there runs a backward pass). Modules that build any `GradScaler`
    (also `ShardedGradScaler`) or use one built elsewhere the GradScaler way
    (`self.scaler.scale(loss).backward()`, `scaler.unscale_(optimizer)`), that step through a wrapper given the loss
    and the optimizer (`loss_scaler(loss, optimizer)`, timm/MAE style, which
    may scale inside) or use Accelerate/Lightning/DeepSpeed, which scale for
    you, are skipped.

    Confidence: high when the training loop holding (or held by) the
    autocast block, or the one-step function around it, itself calls `.backward()` on the loss as computed
    (`loss.backward()`, `model(x).sum().backward()`): the unscaled float16
    backward is in sight, and no optimizer wrapper can recover gradients
    that already underflowed. Medium when the autocast sits in a helper the
    loop calls, or the backward is out of sight. Low when its `enabled=`
    reads an option or configuration key that the defaults leave off (a
    `store_true` flag, `use_fp16: false` in every YAML config the project
    ships): float16 runs only when someone turns it on.
    """

    code = "TR417"
    name = "fp16-without-grad-scaler"
    severity = Severity.MEDIUM
    severity_reason = "Silently wrong training: small fp16 gradients underflow to zero."
    summary = "float16 autocast training without a GradScaler: small gradients underflow to zero"

    def check_file(self, ctx) -> None:
        loops = ctx.training_loops
        if not loops and not ctx.flow.step_functions or uses_framework(ctx) or _has_scaler(ctx):
            return
        functions = ctx.flow.training_functions | {f.node for f in ctx.flow.step_functions}
        for with_node in ctx.model.nodes_by_type.get(ast.With, []):
            call = next((item.context_expr for item in with_node.items
                         if isinstance(item.context_expr, ast.Call) and _is_fp16(ctx, item.context_expr)), None)
            if call is None or ctx.in_grad_disabled(call):
                continue  # under no_grad/inference_mode (a validation pass in the training loop): no backward
            inside = ctx.flow.training_loop_of(with_node) is not None or \
                ctx.enclosing_function(with_node) in functions
            around = [loop for loop in loops if with_node in set(ancestors(loop.node))]
            if inside or around:
                own = ctx.flow.training_loop_of(with_node)
                func = ctx.enclosing_function(with_node)
                steps = [f for f in ctx.flow.step_functions if f.node is func]
                direct = any(_plain_training(tl) for tl in [*([own] if own else []), *around, *steps])
                # `enabled=config.trainer.use_fp16` that the defaults (command line, shipped
                # configs) leave off: float16 runs only when someone turns it on (RealNet)
                switch = ctx.arg(call, "enabled", 0 if ctx.qualname(call.func) == "torch.cuda.amp.autocast" else 2)
                off = switch is not None and ctx.options.test_at_defaults(switch) is False
                when = f" (when `{ctx.text(switch)}` is turned on: the defaults leave it off)" if off else ""
                ctx.report(call, f"`{short_text(ctx, call)}` trains in float16 with no `GradScaler`{when}: small "
                                 f"gradients underflow to zero; scale the loss with `torch.amp.GradScaler` "
                                 f"(`scaler.scale(loss).backward()`, `scaler.step(optimizer)`) or use "
                                 f"`dtype=torch.bfloat16`",
                           confidence="low" if off else "high" if direct else None)


def _plain_training(loop) -> bool:
    """The loop itself calls ``.backward()`` on the loss as computed (``loss.backward()``,
    ``model(x).sum().backward()``; not through ``scale(...)`` nor a helper given the
    loss): the unscaled float16 backward is in sight."""
    for event in loop.of("backward"):
        call = event.node
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and
                call.func.attr == "backward" and not call.args):
            continue
        receiver = call.func.value
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and \
                receiver.func.attr == "scale":
            continue
        return True
    return False


def _has_scaler(ctx) -> bool:
    """A GradScaler is built here, or the loop steps through a callable we cannot
    read (``loss_scaler(loss, optimizer)``), which may scale inside."""
    if ctx.flow.step_wrapper_calls:
        return True
    return any((ctx.qualname(c.func) or "").endswith("GradScaler") or
               (isinstance(c.func, ast.Name) and c.func.id.endswith("GradScaler")) or _scaler_protocol(c)
               for c in ctx.model.calls)


def _scaler_protocol(call: ast.Call) -> bool:
    """A scaler built elsewhere (a base class, a trainer attribute) used the GradScaler
    way: ``self.scaler.scale(loss).backward()`` or ``scaler.unscale_(optimizer)``."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "unscale_" and len(call.args) == 1:
        return True
    receiver = func.value
    return func.attr == "backward" and isinstance(receiver, ast.Call) and \
        isinstance(receiver.func, ast.Attribute) and receiver.func.attr == "scale" and len(receiver.args) == 1


def _is_fp16(ctx, call: ast.Call) -> bool:
    q = ctx.qualname(call.func)
    if q not in _AUTOCAST:
        return False
    legacy = q == "torch.cuda.amp.autocast"  # (enabled=True, dtype=torch.float16, ...)
    if known_false(ctx, ctx.arg(call, "enabled", 0 if legacy else 2)):
        return False
    dtype = ctx.arg(call, "dtype", 1)  # torch.autocast(device_type, dtype=None, enabled=True)
    if dtype is None and legacy:
        return True
    if dtype is not None:
        return ctx.qualname(ctx.flow.origin(dtype, peel=False)) in _FP16
    device = ctx.arg(call, "device_type", 0)
    return isinstance(device, ast.Constant) and device.value == "cuda"
