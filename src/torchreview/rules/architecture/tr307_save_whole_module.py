from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity

_SCRIPTED = frozenset({"torch.jit.script", "torch.jit.trace", "torch.jit.load", "torch.jit.freeze",
                       "torch.jit.optimize_for_inference", "torch.export.export", "torch.export.load"})


class SaveWholeModule(Rule):
    """
    ## What it does
    Flags `torch.save(model, ...)` where the object saved is a whole
    `nn.Module` (also inside a checkpoint dict) rather than its
    `state_dict()`.

    ## Why is this bad?
    Pickling a module stores a reference to its class by import path, not
    the class itself: renaming a file, moving the class or changing its
    `__init__` breaks every saved file. Loading needs `weights_only=False`,
    i.e. running arbitrary pickled code. A `state_dict()` is only tensors
    and loads with `weights_only=True` into any compatible model.

    ## Example
    ```python
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    torch.save(model, "model.pt")
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    torch.save(model.state_dict(), "model.pt")
    ```

    ## Heuristics
    The saved object must be known to be a model: built from an `nn` class
    or a local `nn.Module` subclass, a `self` attribute holding one, or a
    parameter named like a model (`model`, `net`, `*_model`). Scripted,
    traced or exported modules (`torch.jit.script/trace`, `torch.export`)
    are not reported: they are meant to be saved whole (with
    `torch.jit.save`).
    """

    code = "TR307"
    name = "save-whole-module"
    severity = Severity.MEDIUM
    severity_reason = (
        "A whole pickled module breaks after refactors, and a `weights_only=True` load (the default "
        "since torch 2.6) refuses it, so the checkpoint needs an unsafe load."
    )
    summary = "`torch.save` of a whole `nn.Module` instead of its `state_dict()`"
    node_types = (ast.Call,)
    call_qualnames = frozenset({"torch.save"})

    def check(self, node: ast.Call, ctx) -> None:
        if ctx.qualname(node.func) != "torch.save":
            return
        obj = ctx.arg(node, "obj", 0)
        if obj is None:
            return
        if isinstance(obj, ast.Dict):
            for key, value in zip(obj.keys, obj.values):
                if self._whole_module(value, ctx):
                    label = f" under key {ctx.text(key)}" if key is not None else ""
                    loads = "with `weights_only=True`" if ctx.torch_at_least(1, 13) else "into any compatible model"
                    ctx.report(value, f"the checkpoint stores the whole module `{ctx.text(value)}`{label}: "
                                      f"store `{ctx.text(value)}.state_dict()` so it loads {loads} "
                                      "and survives code changes")
            return
        if self._whole_module(obj, ctx):
            ctx.report(node, f"`torch.save({ctx.text(obj)}, ...)` pickles the whole module, tying the file to "
                             f"today's class layout and requiring unsafe loads: save "
                             f"`{ctx.text(obj)}.state_dict()` and rebuild the model before `load_state_dict`")

    @staticmethod
    def _whole_module(expr: ast.AST, ctx) -> bool:
        if ctx.kind_of(expr) != "model":
            return False
        for value in [expr, *ctx.flow.values_of(expr)]:
            probe = value
            while isinstance(probe, ast.Call):
                if ctx.qualname(probe.func) in _SCRIPTED:
                    return False
                probe = probe.func.value if isinstance(probe.func, ast.Attribute) else None
        return True
