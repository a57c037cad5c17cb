from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.engine.context import TENSOR_FACTORIES, parent


class DeviceTransferInForward(Rule):
    """
    ## What it does
    Flags device transfers inside the `forward` of an `nn.Module`: `.cuda()`,
    `.to("cuda")`, `.to(device)` with a device the module was configured with
    (a global, `self.device` set in `__init__`, `args.device`), and tensors
    created on the default device and moved afterwards.

    ## Why is this bad?
    A module should compute where its parameters and inputs already are. A
    transfer hidden in `forward` copies data host-to-device on every call,
    pins the module to one device (it breaks on CPU, on another GPU under
    `DistributedDataParallel`, and with `torch.compile` graph breaks), and
    hides the real data path: the loader and training loop should put the batch
    on the device once, and buffers should be registered so `model.to(device)`
    moves them.

    ## Example
    ```python
    import torch
    import torch.nn as nn

    class Scorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(128, 1)

        def forward(self, x):
            x = x.cuda()
            return self.proj(x)
    ```

    ## Use instead
    ```python
    import torch
    import torch.nn as nn

    class Scorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(128, 1)

        def forward(self, x):
            offset = torch.zeros(1, device=x.device)
            return self.proj(x) + offset
    ```

    ## Heuristics
    Only `forward` methods of classes that subclass `nn.Module` (directly or
    through classes of the same file) are inspected. Moves that follow an
    input or a parameter (`.to(x.device)`, `.to(other_tensor)`,
    `.to(self.weight.device)`, a `self.device` property the class does not
    assign), dtype-only casts (`.to(torch.float16)`, `.to(dtype=...)`) and
    `.cpu()` (often needed, e.g. for `pack_padded_sequence` lengths) are not
    reported. Modules that place their own submodules on devices (model
    parallelism) or whose `forward` sends results back to the host (RPC and
    pipeline stages) move activations on purpose and are skipped, and so is
    the output of a tokenizer or processor called inside `forward` (text can
    only become tensors on the host, so moving them there is required). `torch.zeros(...).to(device)` chains are left to TR211, which
    fixes them.
    Test files are not reviewed.
    """

    code = "TR208"
    name = "device-transfer-in-forward"
    severity = Severity.MEDIUM
    severity_reason = (
        "Waste on every forward call (a copy, often a sync), and a device fixed in `forward` defeats "
        "multi-device placement."
    )
    summary = "Device transfer (`.cuda()`, `.to(device)`) inside `nn.Module.forward`"
    node_types = (ast.FunctionDef,)

    def check(self, node: ast.FunctionDef, ctx) -> None:
        if ctx.is_test_file:
            return  # test code is not where step time is spent
        cls = parent(node)
        if node.name != "forward" or not isinstance(cls, ast.ClassDef) or cls.name not in ctx.model.module_classes:
            return
        candidates = [sub for sub in ctx.model.subtree(node) if isinstance(sub, ast.Call)
                      and isinstance(sub.func, ast.Attribute) and sub.func.attr in ("cuda", "to")]
        if not candidates or _device_boundary(cls, node, ctx):
            return
        created = _created_on_default_device(node, ctx)
        for sub in candidates:
            if not isinstance(sub, ast.Call) or not isinstance(sub.func, ast.Attribute):
                continue
            if ctx.enclosing_function(sub) is not node:
                continue  # nested helpers are not forward itself
            attr, receiver = sub.func.attr, sub.func.value
            if _is_factory(receiver, ctx) or ctx.kind_of(receiver) == "model":
                continue  # TR211 / moving a submodule is another matter
            if _tokenized(receiver, ctx):
                continue  # text becomes tensors on the host here: moving them is the only way
            if attr == "cuda" and ctx.qualname(sub.func) is None:
                target = "`.cuda()`"
            elif attr == "to":
                device = ctx.model.to_call_device(sub)
                kind = ctx.model.device_kind(device)
                if kind == "follows" and isinstance(receiver, ast.Name) and receiver.id in created:
                    target = f"`.to({ctx.text(device)})` of a tensor created on the default device"
                elif kind in ("accelerator", "variable"):
                    target = f"`.to({ctx.text(device)})`"
                else:
                    continue
            else:
                continue
            what = ctx.text(receiver)
            what = what if len(what) <= 30 else what[:27] + "..."
            ctx.report(sub, f"{target} inside `forward` moves `{what}` on every call and ties the "
                            "module to one device; put inputs on the device in the data pipeline, "
                            "register constants as buffers, or create tensors with "
                            "`device=x.device`")


def _device_boundary(cls: ast.ClassDef, forward: ast.FunctionDef, ctx) -> bool:
    """Model-parallel shards and RPC/pipeline stages move activations on purpose:
    the class places its own submodules on devices, or forward sends results back
    to the host."""
    for sub in ctx.model.subtree(cls):
        if not isinstance(sub, ast.Call) or not isinstance(sub.func, ast.Attribute):
            continue
        inside = ctx.enclosing_function(sub) is forward
        attr, receiver = sub.func.attr, sub.func.value
        if inside and (attr == "cpu" or attr == "to" and ctx.model.device_kind(ctx.model.to_call_device(sub)) == "cpu") \
                and _returned(sub, forward, ctx):
            return True
        if not inside and attr in ("to", "cuda") and (ctx.kind_of(receiver) == "model" or (
                isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name)
                and receiver.value.id == "self" and ctx.kind_of(receiver) != "tensor")):
            if attr == "cuda" or ctx.model.device_kind(ctx.model.to_call_device(sub)) in ("accelerator", "variable"):
                return True
    return False


def _returned(call: ast.Call, forward: ast.FunctionDef, ctx) -> bool:
    """The call is (part of) what ``forward`` returns, directly or through a name."""
    returns = [n for n in ctx.model.subtree(forward) if isinstance(n, ast.Return) and n.value is not None]
    if any(isinstance(a, ast.Return) for a in ctx.ancestors(call)):
        return True
    stmt = parent(call)
    names = {t.id for t in stmt.targets if isinstance(t, ast.Name)} if isinstance(stmt, ast.Assign) else set()
    return any(isinstance(n, ast.Name) and n.id in names for r in returns for n in ast.walk(r.value))


_TOKENIZER_WORDS = ("tokeniz", "processor", "feature_extractor")
_ENCODE_METHODS = ("encode", "encode_plus", "batch_encode_plus", "pad", "apply_chat_template")


def _tokenized(receiver: ast.AST, ctx) -> bool:
    """The value comes out of a tokenizer/processor called in ``forward``
    (``self.tokenizer(texts, return_tensors="pt")``, ``tok.encode(...)``,
    ``batch["input_ids"]`` of such a result)."""
    made = ctx.flow.origin(receiver)
    if not isinstance(made, ast.Call):
        return False
    func = made.func
    if isinstance(func, ast.Attribute) and func.attr in _ENCODE_METHODS:
        func = func.value
    if any(w in ctx.text(func).lower() for w in _TOKENIZER_WORDS):
        return True
    built = ctx.flow.origin(func)
    q = ctx.qualname(built.func) if isinstance(built, ast.Call) else None
    return bool(q) and q.startswith(("transformers.", "tokenizers.")) and \
        any(w in q.lower() for w in _TOKENIZER_WORDS)


def _is_factory(node: ast.AST, ctx) -> bool:
    return isinstance(node, ast.Call) and (ctx.qualname(node.func) or "") in TENSOR_FACTORIES


def _created_on_default_device(func: ast.FunctionDef, ctx) -> set[str]:
    """Names assigned in ``func`` from a tensor factory without ``device=``."""
    out = set()
    for sub in ctx.model.subtree(func):
        if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name) \
                and _is_factory(sub.value, ctx) and ctx.arg(sub.value, "device") is None \
                and not (ctx.qualname(sub.value.func) or "").endswith("_like"):
            out.add(sub.targets[0].id)
    return out
