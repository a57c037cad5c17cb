from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules.quality._apis import load_table, rewrite, version

TABLE = "deprecated_apis.json"


class DeprecatedTorchApi(Rule):
    """
    ## What it does
    Flags calls to PyTorch functions and classes that are deprecated or already
    removed: the old linear-algebra functions (`torch.solve`, `torch.symeig`,
    `torch.eig`, `torch.lstsq`, `torch.qr`, `torch.cholesky`, `torch.lu`,
    `torch.matrix_rank`, `torch.chain_matmul`, `torch.norm` ...), `torch.range`,
    `torch.nn.utils.weight_norm`, `torch.testing.assert_allclose`,
    `torch.backends.cuda.sdp_kernel`, the `functorch` entry points, the
    `torch.cuda.amp`/`torch.cpu.amp` classes and more. The list is data
    (`torchreview/data/deprecated_apis.json`: name, deprecated_in, removed_in,
    undeprecated_in, replacement, fix, message) and covers TorchFix's
    deprecated symbols.

    ## Why is this bad?
    Deprecated APIs print warnings today and disappear tomorrow; several on
    the list already raise when called on a current torch (`torch.solve`,
    `torch.symeig`, ...). Their replacements are usually more stable or
    faster, and some differ in argument order or return value, which is
    easier to migrate deliberately than under a failing upgrade.

    The severity follows the targeted torch (`target-torch`): a symbol that
    the targeted version has removed is reported at medium, one that is only
    deprecated at low, and one not yet deprecated in the targeted version is
    not reported. A deprecation PyTorch later withdrew (`F.sigmoid` and
    `F.tanh` warn from 0.4 to 1.13 and are plain aliases again since 2.0) is
    reported only for projects that target a torch before the withdrawal.

    ## Example
    ```python
    import torch

    x = torch.randn(4, 4)
    q, r = torch.qr(x)
    c = torch.chain_matmul(x, x, x)
    ```

    ## Use instead
    ```python
    import torch

    x = torch.randn(4, 4)
    q, r = torch.linalg.qr(x)
    c = torch.linalg.multi_dot([x, x, x])
    ```

    ## Fix safety
    Renames with the same arguments and the mechanical rewrites (`chain_matmul`
    -> `multi_dot([...])`, `qr(A, some=False)` -> `linalg.qr(A, mode="complete")`,
    vector `torch.norm` -> `torch.linalg.vector_norm`, `nn.UpsamplingNearest2d`
    -> `nn.Upsample(mode="nearest")`) are safe. `torch.range` -> `torch.arange`
    is unsafe: the end point moves and integer arguments give an integer
    tensor. `assert_allclose` and `weight_norm` are unsafe (stricter checks,
    different state-dict keys). Calls whose migration changes the meaning of
    arguments or results (`torch.solve`, `torch.svd`, ...) get no fix. A fix is
    offered only when the file imports the module the new name lives in.

    ## Heuristics
    Calls inside version-dependent branches (`if torch.__version__ ...`, a flag
    named after a torch release such as `is_torch_1_8_plus`,
    `hasattr(torch, ...)`, `try: ... except ImportError`) are skipped: that is
    compatibility code. AMP classes are left to TR419 when TR419 also runs.
    Copied utility code repeats the same nit many times: this rule reports one
    finding per project and severity (engine/merge.py), at the first occurrence,
    with a count and the other places as related locations (SARIF
    `relatedLocations`); `--fix` still rewrites every place. A removed API (a
    crash on the targeted torch) is one finding per API, each with the places
    that call it.
    """

    code = "TR423"
    name = "deprecated-torch-api"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = (
        "Deprecated but working. An API removed in the targeted torch raises when called: that "
        "finding is high and a defect."
    )
    fixable = "safe"
    summary = "Deprecated or removed PyTorch API (table-driven, version-aware)"
    summarize = "project"
    node_types = (ast.Call, ast.FunctionDef, ast.AsyncFunctionDef)
    call_qualnames = frozenset(load_table(TABLE))  # a call acts only through its table entry

    @classmethod
    def repeat_key(cls, finding) -> str:
        """Deprecation nits: one finding per project and severity. A removed API (a crash, its own
        fix) is one finding per API: `torch.symeig` is not listed under a `torch.lstsq` message
        (rewriting's related locations, noted by a judge)."""
        if finding.kind == "defect" and finding.subject:
            return f"{cls.code}:{finding.severity.label}:{finding.subject}"
        return f"{cls.code}:{finding.severity.label}"

    def check(self, node, ctx) -> None:
        if isinstance(node, ast.Call):
            self._check(node.func, node, ctx)
            return
        for deco in node.decorator_list:  # bare decorators: @torch.cuda.amp.custom_fwd
            if isinstance(deco, (ast.Name, ast.Attribute)):
                self._check(deco, deco, ctx)

    def _check(self, ref: ast.AST, node: ast.AST, ctx) -> None:
        q = ctx.qualname(ref)
        if q is None:
            return
        entry = load_table(TABLE).get(q)
        if entry is None or entry.get("owner") in ctx.active_codes:
            return
        target = ctx.target_torch
        deprecated, removed = version(entry["deprecated_in"]), version(entry.get("removed_in"))
        if target is not None and deprecated is not None and target < deprecated:
            return  # not deprecated yet in the torch this project targets
        undeprecated = version(entry.get("undeprecated_in"))
        if undeprecated is not None and (target is None or target >= undeprecated):
            return  # the deprecation was withdrawn (`F.sigmoid`, `F.tanh` since torch 2.0)
        if ctx.model.in_compat_branch(node):
            return
        if removed is not None and (target is None or target >= removed):
            status = f"was removed in torch {entry['removed_in']} (calling it raises)"
            severity = Severity.HIGH
        else:
            status = f"is deprecated since torch {entry['deprecated_in']}"
            severity = None
        ctx.report(node, f"`{q}` {status}: {entry['message']}", severity=severity,
                   kind="defect" if severity else None,
                   fix=rewrite(ctx, node, entry), subject=q)
