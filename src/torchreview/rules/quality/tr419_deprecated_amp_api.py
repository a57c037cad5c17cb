from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Fix, Severity
from torchreview.fixes import replace_node
from torchreview.rules.quality._apis import load_table, rewrite, spell

# old name -> (new name, device the old namespace implied)
OLD_AMP = {
    "torch.cuda.amp.autocast": ("torch.amp.autocast", "cuda"),
    "torch.cpu.amp.autocast": ("torch.amp.autocast", "cpu"),
    "torch.cuda.amp.GradScaler": ("torch.amp.GradScaler", "cuda"),
    "torch.cpu.amp.GradScaler": ("torch.amp.GradScaler", "cpu"),
    "torch.cuda.amp.custom_fwd": ("torch.amp.custom_fwd", "cuda"),
    "torch.cuda.amp.custom_bwd": ("torch.amp.custom_bwd", "cuda"),
}
NEW_AUTOCAST = frozenset({"torch.amp.autocast", "torch.autocast", "torch.amp.autocast_mode.autocast"})


class DeprecatedAmpApi(Rule):
    """
    ## What it does
    Flags the device-specific AMP API (`torch.cuda.amp.autocast`,
    `torch.cuda.amp.GradScaler`, `torch.cuda.amp.custom_fwd`/`custom_bwd`,
    `torch.cpu.amp.autocast`/`GradScaler`), deprecated since torch 2.4 in
    favour of `torch.amp` with an explicit device. It also flags calls that
    mix the two signatures, which fail or silently misbehave (high):
    `torch.cuda.amp.autocast(device_type=...)`, `torch.cuda.amp.autocast("cuda")`,
    `torch.cuda.amp.GradScaler("cuda")` (the string lands in `init_scale`) and
    `torch.autocast()`/`torch.amp.autocast()` without a device type.

    ## Why is this bad?
    The old names emit a `FutureWarning` on every construction and will be
    removed. A half-migrated call is worse: the old `autocast` takes
    `enabled` as its first argument and no `device_type`, so `device_type=`
    raises a `TypeError` and a positional device string is taken as `enabled`.

    ## Example
    ```python
    import torch

    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast(dtype=torch.float16):
        pass
    ```

    ## Use instead
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    with torch.amp.autocast("cuda", dtype=torch.float16):
        pass
    ```

    ## Fix safety
    Safe: the device of the old namespace becomes the first argument, and
    positional arguments of the old `autocast(enabled, dtype, cache_enabled)`
    are turned into keywords because the new signature orders them
    differently. The fix needs `import torch` (or an alias) in the file; a
    `from torch.cuda.amp import ...` line is left in place.

    ## Heuristics
    Deprecation findings are skipped when the targeted torch is older than
    2.4 and inside version-dependent branches (`hasattr`, version checks,
    `try/except ImportError`); signature errors are reported there too, except
    a device-less `autocast()` whose name the file also imports from
    `torch.cuda.amp` (a `try: from torch.amp import autocast` / `except
    ImportError: from torch.cuda.amp import autocast` shim) when the call runs
    only on some versions (the `except TypeError:` fallback of an
    `autocast("cuda")`): on the versions that reach it, the name is the old
    `autocast`, which takes no device.
    Copied utility code repeats the same nit many times: this rule reports one
    finding per project and severity (engine/merge.py), at the first occurrence,
    with a count and the other places as related locations (SARIF
    `relatedLocations`); `--fix` still rewrites every place.
    """

    code = "TR419"
    name = "deprecated-amp-api"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = (
        "Deprecated but working. A wrong-signature call raises a TypeError: that finding is high and "
        "a defect."
    )
    fixable = "safe"
    summary = "`torch.cuda.amp.*` is deprecated: use `torch.amp` with an explicit device"
    summarize = "project"
    node_types = (ast.Call, ast.FunctionDef, ast.AsyncFunctionDef)
    call_qualnames = frozenset({*OLD_AMP, *NEW_AUTOCAST})

    def check(self, node, ctx) -> None:
        if isinstance(node, ast.Call):
            q = ctx.qualname(node.func)
            if q in OLD_AMP:
                if not self._wrong_signature(node, q, ctx):
                    self._deprecated(node, q, ctx)
            elif q in NEW_AUTOCAST and not node.args and not ctx.has_kwargs_splat(node) and \
                    ctx.arg(node, "device_type") is None and not self._old_binding_possible(node, ctx):
                ctx.report(node, f"`{q}()` needs the device type as its first argument "
                                 "(`\"cuda\"`, `\"cpu\"`, ...): this call raises a TypeError",
                           severity=Severity.HIGH, kind="defect")
            return
        for deco in node.decorator_list:
            if isinstance(deco, (ast.Name, ast.Attribute)) and ctx.qualname(deco) in OLD_AMP:
                self._deprecated(deco, ctx.qualname(deco), ctx)

    @staticmethod
    def _old_binding_possible(call: ast.Call, ctx) -> bool:
        """The called name may be the old ``torch.cuda.amp.autocast``, whose calls take no device:
        the file also imports it under that name from the old module (``try: from torch.amp import
        autocast`` / ``except ImportError: from torch.cuda.amp import autocast``) and the call runs
        only on some versions (a fallback handler, a version test)."""
        if not isinstance(call.func, ast.Name) or not ctx.model.in_compat_branch(call):
            return False
        name = call.func.id
        for imp in ctx.model.nodes_by_type.get(ast.ImportFrom, ()):
            for alias in imp.names:
                old = OLD_AMP.get(f"{imp.module}.{alias.name}")
                if (alias.asname or alias.name) == name and old is not None and old[0] in NEW_AUTOCAST:
                    return True
        return False

    def _wrong_signature(self, call: ast.Call, q: str, ctx) -> bool:
        new, device = OLD_AMP[q]
        short = q.rsplit(".", 1)[-1]
        if short not in ("autocast", "GradScaler"):
            return False
        first = call.args[0] if call.args else None
        keyword = "device_type" if short == "autocast" else "device"
        if ctx.arg(call, keyword) is not None:
            problem = f"`{q}` takes no `{keyword}=` argument: this raises a TypeError"
        elif isinstance(first, ast.Constant) and isinstance(first.value, str):
            slot = "enabled" if short == "autocast" else "init_scale"
            problem = f"`{q}({first.value!r})` passes the device string as `{slot}`"
        else:
            return False
        callee = spell(ctx, new)
        fix = None
        if callee is not None and (short == "GradScaler" or len(call.args) <= 1):
            fix = Fix("safe", (replace_node(ctx, call.func, callee),), f"use `{new}`")
        ctx.report(call, f"{problem}; the device-taking signature belongs to `{new}`",
                   severity=Severity.HIGH, kind="defect", fix=fix)
        return True

    def _deprecated(self, node: ast.AST, q: str, ctx) -> None:
        if not ctx.torch_at_least(2, 4) or ctx.model.in_compat_branch(node):
            return
        new, device = OLD_AMP[q]
        entry = load_table("deprecated_apis.json")[q]
        hint = f'`{new}("{device}", ...)`' if "custom" not in q else f'`@{new}(device_type="{device}")`'
        ctx.report(node, f"`{q}` is deprecated since torch 2.4: use {hint}", fix=rewrite(ctx, node, entry))
