from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Fix, Severity

# Factories that accept `device=` (torch.from_numpy / torch.normal do not, or not always).
_FACTORIES = frozenset({
    "torch.tensor", "torch.as_tensor", "torch.randn", "torch.rand", "torch.randint", "torch.randperm",
    "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.arange", "torch.linspace",
    "torch.logspace", "torch.eye", "torch.zeros_like", "torch.ones_like", "torch.empty_like",
    "torch.full_like", "torch.randn_like", "torch.rand_like", "torch.randint_like",
})
# Their values come from a random generator, which differs per device.
_RANDOM = frozenset({"randn", "rand", "randint", "randperm", "randn_like", "rand_like", "randint_like"})
# `.to()` keywords that mean nothing once the tensor is born on the device.
_DROPPABLE = frozenset({"non_blocking", "copy"})


class TensorCreatedThenMoved(Rule):
    """
    ## What it does
    Flags a tensor factory (`torch.zeros`, `torch.randn`, `torch.arange`,
    `torch.tensor`, ...) whose result is immediately moved with `.to(device)`
    or `.cuda()`.

    ## Why is this bad?
    The tensor is first allocated and filled in host memory, then copied to
    the accelerator: two allocations, a host-to-device transfer, and often a
    synchronisation, for a value that could have been created on the device
    directly. In a loop or a `forward` this cost is paid on every call.

    ## Example
    ```python
    import torch

    device = torch.device("cuda")
    mask = torch.ones(64, 64).to(device)
    ```

    ## Use instead
    ```python
    import torch

    device = torch.device("cuda")
    mask = torch.ones(64, 64, device=device)
    ```

    ## Fix safety
    Moving the device into the factory call is safe for deterministic factories
    (`zeros`, `ones`, `full`, `arange`, `tensor`, ...): the result is the same
    tensor on the same device. A `dtype=` given to `.to()` moves along when the
    factory has none. For random factories (`randn`, `rand`, `randint`,
    `randperm` and their `_like` forms) the fix is marked unsafe: the numbers are then drawn
    from the device's generator, so a seeded run produces different values.
    No fix is offered when the factory has `requires_grad=True` (the moved
    tensor is a non-leaf copy; creating it on the device changes which tensor
    is the leaf) or when `.to()` carries other arguments.

    ## Heuristics
    The device argument must read as a device (a `"cuda"`-like string, a
    `torch.device`, a name such as `device`, `x.device`); `.to(dtype)`,
    `.to("cpu")` and `.to(other_tensor)` are not reported. A `*_like` factory
    builds on its input's device, so `torch.zeros_like(x).to(y.device)` (most
    often a no-op) is not reported either. Test files are not reviewed.
    """

    code = "TR211"
    name = "tensor-created-then-moved"
    severity = Severity.LOW
    severity_reason = "Small waste: one extra allocation and copy."
    fixable = "safe"
    summary = "Tensor built on the host then moved with `.to(device)`/`.cuda()`; pass `device=` instead"
    node_types = (ast.Call,)
    call_attrs = frozenset({"to", "cuda"})

    def check(self, node: ast.Call, ctx) -> None:
        if ctx.is_test_file:
            return  # test code is not where step time is spent
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in ("to", "cuda"):
            return
        factory = func.value
        if not isinstance(factory, ast.Call):
            return
        q = ctx.qualname(factory.func)
        if q not in _FACTORIES or ctx.arg(factory, "device") is not None or ctx.has_kwargs_splat(factory):
            return
        if func.attr == "to":
            device = ctx.model.to_call_device(node)
            kind = ctx.model.device_kind(device)
            if kind not in ("accelerator", "variable", "follows") or kind == "follows" and not _is_device_attr(device):
                return  # `.to(dtype)`, `.to("cpu")`, `.to(other_tensor)` or unknown: stay quiet
            if q.endswith("_like") and _is_device_attr(device):
                return  # `zeros_like(x).to(y.device)`: built where `x` lives, most often there already
            device_text = ctx.text(device)
        else:
            device = ctx.arg(node, "device", 0)
            device_text = _cuda_device_text(device, ctx)
        short = q.split(".", 1)[1]
        moved = f".{func.attr}({', '.join(ctx.text(a) for a in [*node.args, *node.keywords])})"
        ctx.report(node, f"`torch.{short}(...)` is built on the host and then copied with `{moved}`; "
                         f"create it on the device: `torch.{short}(..., device={device_text or '...'})`",
                   fix=_fix(node, factory, short, device_text, ctx))


def _is_device_attr(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "device"


def _cuda_device_text(device: ast.AST | None, ctx) -> str | None:
    if device is None:
        return '"cuda"'
    if isinstance(device, ast.Constant) and isinstance(device.value, int) and not isinstance(device.value, bool):
        return f'"cuda:{device.value}"'
    if ctx.model.device_kind(device) in ("accelerator", "variable", "follows"):
        return ctx.text(device)
    return None  # e.g. `.cuda(rank)`: an int variable is not a device spelling


def _fix(node: ast.Call, factory: ast.Call, short: str, device_text: str | None, ctx) -> Fix | None:
    from torchreview.fixes import replace_node

    if device_text is None:
        return None
    requires_grad = ctx.arg(factory, "requires_grad")
    if requires_grad is not None and not (isinstance(requires_grad, ast.Constant) and requires_grad.value is False):
        return None
    extra = [f"device={device_text}"]
    for kw in node.keywords:
        if kw.arg in _DROPPABLE or kw.arg == "device":
            continue
        if kw.arg == "dtype" and ctx.arg(factory, "dtype") is None and node.func.attr == "to":
            extra.append(f"dtype={ctx.text(kw.value)}")
            continue
        return None
    device = ctx.arg(node, "device", 0)
    if any(arg is not device for arg in node.args):
        return None  # e.g. `.to(device, torch.float16)`: leave it to the author
    text = ctx.text(factory)
    if not text.endswith(")"):
        return None
    before = text[:-1].rstrip()
    sep = "" if before.endswith("(") else " " if before.endswith(",") else ", "
    applicability = "unsafe" if short in _RANDOM else "safe"
    title = f"create the tensor with `device={device_text}`"
    return Fix(applicability, (replace_node(ctx, node, before + sep + ", ".join(extra) + ")"),), title)
