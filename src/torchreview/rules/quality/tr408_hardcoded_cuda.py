from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import ancestors
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text

_GUARD_WORDS = ("cuda", "gpu", "device", "accelerat")
_QUERIES = frozenset({"torch.cuda.device_count", "torch.cuda.is_available"})
_FRAMEWORKS = ("accelerate", "lightning", "pytorch_lightning", "deepspeed", "lightning_fabric", "ignite")


class HardcodedCuda(Rule):
    """
    ## What it does
    Flags hard-coded CUDA placement -- `.cuda()`, `.to("cuda")`,
    `device="cuda"`, `torch.device("cuda")`, `device = "cuda:0"` -- in a module
    that never checks for a GPU (`torch.cuda.is_available()`,
    `device_count()`, `torch.accelerator`) and uses no framework that picks
    the device (Accelerate, Lightning, DeepSpeed, Ignite).

    ## Why is this bad?
    The script crashes with `AssertionError: Torch not compiled with CUDA
    enabled` / `No CUDA GPUs are available` on laptops, CI runners, Apple
    silicon and CPU-only servers, and cannot be run or tested there at all.
    A device chosen once at the top lets the same code run everywhere.

    ## Example
    ```python
    import torch

    model = torch.nn.Linear(4, 2).cuda()
    x = torch.randn(8, 4, device="cuda")
    ```

    ## Use instead
    ```python
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(4, 2).to(device)
    x = torch.randn(8, 4, device=device)
    ```

    ## Heuristics
    Places: `.cuda()`, `device="cuda"`, `.to("cuda")`, `torch.device("cuda")`,
    a `*dev*` name assigned `"cuda"`, and a `*dev*` parameter whose default is
    `"cuda"` (every caller that leaves it out gets GPU tensors).
    Any GPU query anywhere in the module counts as handling the CPU case.
    Calls under an `if` or conditional expression whose test mentions
    `cuda`, `gpu`, `device` or an accelerator (`if args.cuda:`) are opt-in
    and not reported. Test files are skipped. GPU-only distributed research code (a module that sets up a process group or
    follows the `LOCAL_RANK` launcher convention and places tensors with bare
    `.cuda()`) is written for GPU clusters on purpose: a CPU
    fallback is not its goal, so it is not reported there.
    One finding per project and severity (engine/merge.py): the first hard-coded
    place, with a count and the other places as related locations.
    """

    code = "TR408"
    name = "hardcoded-cuda"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = (
        "Portability: it crashes only on machines without CUDA, which GPU-only code does not target "
        "(catalog: medium)."
    )
    summary = "CUDA hard-coded with no availability check: the module crashes on CPU-only machines"
    summarize = "project"

    def check_file(self, ctx) -> None:
        if "cuda" not in ctx.source.text:
            return  # nothing can hard-code CUDA without naming it
        if ctx.is_test_file or _handles_cpu(ctx) or ctx.advice.gpu_only_research:
            return  # distributed research code is written for GPU machines on purpose
        groups: dict[int, list[ast.AST]] = {}  # one finding per function (or module level)
        for node in [*ctx.model.calls, *ctx.model.nodes_by_type.get(ast.Assign, ()), *_cuda_defaults(ctx)]:
            spot = node if isinstance(node, ast.Constant) else _hardcoded(ctx, node)
            if spot is not None and not _guarded(ctx, spot):
                groups.setdefault(id(ctx.enclosing_function(spot)), []).append(spot)
        for spots in groups.values():
            spots.sort(key=lambda n: (n.lineno, n.col_offset))
            more = f" ({len(spots) - 1} more place(s) in this {'function' if ctx.enclosing_function(spots[0]) else 'module'})" \
                if len(spots) > 1 else ""
            ctx.report(spots[0], f"`{short_text(ctx, spots[0], limit=50)}` hard-codes CUDA{more} and this module "
                                 f"never checks `torch.cuda.is_available()`: it crashes on machines without a "
                                 f"GPU; choose the device once (`\"cuda\" if torch.cuda.is_available() else "
                                 f"\"cpu\"`) and use `.to(device)`")


def _cuda_defaults(ctx) -> list:
    """``def one_hot(x, n, device="cuda")``: a device parameter whose default is CUDA,
    so every caller that leaves it out places its tensors on a GPU."""
    out = []
    for defs in ctx.model.functions.values():
        for func in defs:
            a = func.args
            positional = a.posonlyargs + a.args
            pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
            pairs += [(k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            out += [d for p, d in pairs if "dev" in p.arg.lower() and _cuda_literal(d)]
    return out


def _cuda_literal(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and \
        node.value.strip().split(":")[0] == "cuda"


def _hardcoded(ctx, node) -> ast.AST | None:
    if isinstance(node, ast.Assign):
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if _cuda_literal(node.value) and any("dev" in n.lower() for n in names):
            return node
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "cuda" and not (ctx.qualname(func) or "").startswith("torch.cuda"):
        return node
    if any(kw.arg == "device" and _cuda_literal(kw.value) for kw in node.keywords):
        return node
    if node.args and _cuda_literal(node.args[0]) and (
            isinstance(func, ast.Attribute) and func.attr == "to" or ctx.qualname(func) == "torch.device"):
        return node
    return None


def _guarded(ctx, node) -> bool:
    for anc in ancestors(node):
        test = anc.test if isinstance(anc, (ast.If, ast.IfExp, ast.While)) else None
        if test is not None and any(w in ctx.text(test).lower() for w in _GUARD_WORDS):
            return True
    return False


def _handles_cpu(ctx) -> bool:
    m = ctx.model
    if any(m.imports_module(f) for f in _FRAMEWORKS):
        return True
    for call in m.calls:
        q = ctx.qualname(call.func) or ""
        if q in _QUERIES or q.startswith("torch.accelerator.") or q.endswith(".is_available"):
            return True
    return False
