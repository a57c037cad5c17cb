from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules.quality._training import calls_in, report_loop

# Keywords that hand clipping to a trainer or an optimizer wrapper.
_CLIP_SETTINGS = ("gradient_clip_val", "max_grad_norm", "clip_grad", "grad_clip", "clip_norm",
                  "gradient_clipping", "clip_value", "clipnorm", "clipvalue")


class NoGradientClipping(Rule):
    """
    ## What it does
    Flags a training loop (backward + optimizer step) that never clips
    gradients: no `torch.nn.utils.clip_grad_norm_`/`clip_grad_value_`, no
    `accelerator.clip_grad_norm_`/`fabric.clip_gradients`, no manual
    `p.grad.clamp_()`.

    ## Why is this bad?
    A single bad batch can produce a huge gradient; one step with it can
    throw the weights far away or fill them with `inf`/`NaN`. Clipping the
    global gradient norm bounds every update while keeping its direction. It
    matters most for RNNs and transformers, and costs almost nothing.

    ## Example
    ```python
    import torch

    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    import torch

    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
    ```

    ## Heuristics
    Low severity: many models (small CNNs) train fine without clipping; the
    finding is a reminder for code that has none. The rule stays quiet when
    the module configures clipping elsewhere (a `gradient_clip_val`,
    `max_grad_norm`, `grad_clip`... keyword or attribute) or the loop calls a
    function whose name mentions clipping. Test files are skipped. GPU-only distributed research code (a module that sets up a process group or
    follows the `LOCAL_RANK` launcher convention and places tensors with bare
    `.cuda()`) is written for GPU clusters on purpose: its
    optimisation recipe is what the paper reports, so it is not reported there.
    """

    code = "TR407"
    name = "no-gradient-clipping"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = "A stability choice: many models train well without clipping."
    scope = ("file", "runtime")
    summary = "Training loop without gradient clipping"
    root_cause = "training-setup"

    def check_file(self, ctx) -> None:
        loops = [loop for loop in ctx.training_loops if not loop.has("clip")]
        if not loops or ctx.is_test_file or _clipping_configured(ctx) or ctx.advice.gpu_only_research:
            return
        for loop in loops:
            if any("clip" in _name(call) for call in calls_in(loop.node)):
                continue
            report_loop(ctx, loop.node,
                        "this training loop never clips gradients, so one outlier batch can blow up the "
                        "weights; call `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)` "
                        "between `backward()` and `step()`")


def _name(call: ast.Call) -> str:
    func = call.func
    return (func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else "").lower()


def _clipping_configured(ctx) -> bool:
    for call in ctx.model.calls:
        if any(kw.arg and kw.arg.lower() in _CLIP_SETTINGS for kw in call.keywords):
            return True
    return any(name.lower() in _CLIP_SETTINGS for name in ctx.model.attribute_names)
