"""Where the file runs: accelerators it names, selects or places on, a CPU device
hard-coded for training, mixed precision, compilation."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchreview.engine.anchor import Anchor
from torchreview.engine.collectors.registry import CallNames, collects
from torchreview.engine.facts import _anchor
from torchreview.engine.facts_devices import devices_built

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext


@collects("cuda_explicit")
def cuda_explicit(ctx: "FileContext", calls: CallNames) -> bool:
    return ctx.model.cuda_evidence is not None


@collects("gpu_only_research")
def gpu_only_research(ctx: "FileContext", calls: CallNames) -> bool:
    """Explicit CUDA in research code written for GPU clusters: advice about CPUs,
    AMP or memory does not pay there."""
    return ctx.model.cuda_evidence is not None and ctx.advice.gpu_only_research


def _mentions_accelerator(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and \
                sub.value.split(":")[0] in ("cuda", "mps", "xpu"):
            return True
        if isinstance(sub, ast.Name) and sub.id in ("device", "DEVICE", "dev"):
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in ("device",):
            return True
    return False


_CUDA = frozenset({"cuda"})
_TO = frozenset({"to"})
_DEVICE = frozenset({"device"})


@collects("uses_cuda")
def uses_cuda(ctx: "FileContext", calls: CallNames) -> bool:
    if calls.any_method(_CUDA):
        return True
    if not calls.any_keyword(_DEVICE) and not calls.any_method(_TO):
        return False  # what the pass below looks for: no `device=`, no `.to(...)`
    for call in ctx.model.calls:
        if any(kw.arg == "device" and _mentions_accelerator(kw.value) for kw in call.keywords):
            return True
        if isinstance(call.func, ast.Attribute) and call.func.attr == "to" and call.args and \
                _mentions_accelerator(call.args[0]):
            return True
    return False


@collects("checks_accelerator")
def checks_accelerator(ctx: "FileContext", calls: CallNames) -> bool:
    return calls.any_of(frozenset({"torch.cuda.is_available", "torch.backends.mps.is_available",
                                   "torch.xpu.is_available", "torch.cuda.set_device", "torch.cuda.device_count",
                                   "torch.cuda.current_device", "torch.nn.parallel.DistributedDataParallel"}),
                        ("torch.accelerator.",))


_PLACEMENT_CALLS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                              "torch.nn.parallel.DistributedDataParallel", "torch.cuda.set_device"})
_PLACEMENT_ATTRS = frozenset({"cuda", "xpu", "mps", "npu", "hpu", "prepare", "prepare_model", "setup",
                              "setup_module"})
_PLACEMENT_KEYWORDS = frozenset({"device", "map_location", "device_map", "accelerator", "gpus",
                                 "devices", "device_ids"})
_PLACEMENT_NAMES = _PLACEMENT_CALLS | {"torch.device"}
_PLACEMENT_METHODS = _PLACEMENT_ATTRS | {"to"}


@collects("places_on_accelerator")
def places_on_accelerator(ctx: "FileContext", calls: CallNames) -> bool:
    """Whether the file puts tensors or modules on an accelerator (or may: an
    unknown device counts). Only a dtype or a literal "cpu" does not: `.cuda()`,
    `.to(<not a dtype, not "cpu">)`, `device=` other than "cpu", DataParallel,
    `accelerator.prepare`, a Lightning `Trainer(accelerator=/gpus=)`."""
    if not calls.any_of(_PLACEMENT_NAMES, ("deepspeed.",)) and not calls.any_method(_PLACEMENT_METHODS) and \
            not calls.any_keyword(_PLACEMENT_KEYWORDS):
        return False  # no call the pass below could accept
    m = ctx.model
    for call in m.calls:
        q = m.qualname(call.func) or ""
        if q in _PLACEMENT_CALLS or q.startswith("deepspeed."):
            return True
        if q == "torch.device" and call.args and m.device_kind(call.args[0]) != "cpu":
            return True
        if isinstance(call.func, ast.Attribute):
            attr = call.func.attr
            if attr in _PLACEMENT_ATTRS and not q.startswith(("torch.backends.", "torch.cuda.", "torch.mps.")):
                return True
            if attr == "to" and any(m.device_kind(a) not in ("cpu", "dtype") for a in call.args[:1]):
                return True
        for kw in call.keywords:
            if kw.arg in _PLACEMENT_KEYWORDS and m.device_kind(kw.value) not in ("cpu", "dtype") and \
                    not (isinstance(kw.value, ast.Constant) and kw.value.value in (None, False, 0, "cpu")):
                return True
    return False


@collects("devices")
def devices(ctx: "FileContext", calls: CallNames) -> tuple[str, ...]:
    return devices_built(ctx, calls)


def _is_cpu_device(ctx: "FileContext", node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and ctx.qualname(node.func) == "torch.device" and len(node.args) == 1:
        node = node.args[0]
    return isinstance(node, ast.Constant) and node.value == "cpu"


@collects("hardcoded_cpu_device")
def hardcoded_cpu_device(ctx: "FileContext", calls: CallNames) -> Anchor | None:
    """``device = "cpu"`` / ``torch.device("cpu")`` bound once, unconditionally, to a
    device name (module level or a function), in a module that trains."""
    if not ctx.training_loops:
        return None
    for node in ctx.model.nodes_by_type.get(ast.Assign, ()):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        target = node.targets[0]
        if "device" not in target.id.lower() or "cpu" in target.id.lower() or \
                not _is_cpu_device(ctx, node.value):
            continue
        values, _ = ctx.model.assignments(target)
        if len(values) != 1:
            continue  # reassigned somewhere (e.g. to "cuda" when available)
        conditional = False
        for anc in ctx.ancestors(node):
            if isinstance(anc, (ast.If, ast.Try, ast.ExceptHandler, ast.Match)) and not (
                    isinstance(anc, ast.If) and ctx.flow.is_main_guard(anc.test)):
                conditional = True
                break
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                break
        if not conditional:
            return _anchor(ctx, node)
    return None


def _is_half(ctx: "FileContext", node: ast.AST) -> bool:
    q = ctx.qualname(node) or ""
    return q in ("torch.float16", "torch.half", "torch.bfloat16")


# Trainer and script options that turn mixed precision on (`fp16=True`, `--amp`).
_MIXED_PRECISION_KEYWORDS = frozenset({"fp16", "bf16", "mixed_precision", "amp", "use_amp", "autocast"})
_HALF_KEYWORDS = _MIXED_PRECISION_KEYWORDS | {"precision", "dtype"}
_HALF_METHODS = frozenset({"to", "add_argument", "add"})


@collects("mixed_precision")
def mixed_precision(ctx: "FileContext", calls: CallNames) -> bool:
    """autocast / torch.amp / apex.amp, `.half()`/`.bfloat16()`, `.to(torch.float16)`,
    `dtype=torch.float16`, `precision=`, `fp16=`-style options and `--amp` switches."""
    if calls.any_of(frozenset({"torch.autocast"}), ("torch.amp.", "torch.cuda.amp.", "torch.cpu.amp.", "apex.amp.")) \
            or calls.any_method(frozenset({"half", "bfloat16"})):
        return True
    if not calls.any_keyword(_HALF_KEYWORDS) and not calls.any_method(_HALF_METHODS):
        return False  # no call the pass below could accept
    for call in ctx.model.calls:
        for kw in call.keywords:
            if kw.arg in _MIXED_PRECISION_KEYWORDS or kw.arg == "precision" or \
                    (kw.arg == "dtype" and _is_half(ctx, kw.value)):
                return True
        if isinstance(call.func, ast.Attribute):
            if call.func.attr == "to" and any(_is_half(ctx, a) for a in call.args):
                return True
            if call.func.attr in ("add_argument", "add") and any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) and
                    a.value.lstrip("-").replace("-", "_") in _MIXED_PRECISION_KEYWORDS for a in call.args):
                return True
    return False


_COMPILE = frozenset({"compile"})
_COMPILERS = frozenset({"torch.compile", "torch.jit.script", "torch.jit.trace"})
_COMPILER_MODULES = ("torch.jit.", "torch.export.", "torch.onnx.", "torch._dynamo.", "torch_tensorrt.",
                     "onnxruntime.", "tensorrt.", "openvino.", "torch.ao.quantization.quantize_pt2e.")


@collects("compiles")
def compiles(ctx: "FileContext", calls: CallNames) -> bool:
    """torch.compile, TorchScript, torch.export, ONNX, TensorRT, OpenVINO ..., or
    ``nn.Module.compile()`` on a model."""
    if calls.any_of(_COMPILERS, _COMPILER_MODULES):
        return True
    if not calls.any_method(_COMPILE):
        return False  # no `x.compile(...)`
    m = ctx.model
    return any(isinstance(call.func, ast.Attribute) and call.func.attr == "compile" and
               m.kind_of(call.func.value) == "model" for call in m.calls)
