"""File facts (small, picklable) and the project view that project rules read.

Project rules never see a tree: only these facts, gathered once per file.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchreview.engine.semantic import FunctionNode, position
from torchreview.findings import Finding, Severity

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.catalog import Rule
    from torchreview.engine.context import FileContext

# The detection signals of the rule pack, plus the frameworks built on torch.
SIGNALS = (
    ("import torch", re.compile(r"^[ \t]*import[ \t]+torch\b", re.M)),
    ("from torch", re.compile(r"^[ \t]*from[ \t]+torch\b", re.M)),
    ("torch.nn", re.compile(r"\btorch\.nn\b")),
    ("torch.Tensor", re.compile(r"\btorch\.Tensor\b")),
    ("DataLoader", re.compile(r"\bDataLoader\b")),
    ("nn.Module", re.compile(r"\bnn\.Module\b")),
    ("optimizer.step()", re.compile(r"\boptimi[sz]er\.step\(\)")),
    ("loss.backward()", re.compile(r"\bloss\.backward\(")),
    ("torch framework import", re.compile(
        r"^[ \t]*(?:import|from)[ \t]+(?:torchvision|torchaudio|torchtext|lightning|pytorch_lightning"
        r"|timm|accelerate|torchmetrics)\b", re.M)),
)


def detect_signals(text: str) -> list[str]:
    return [name for name, pattern in SIGNALS if pattern.search(text)]


@dataclass(frozen=True)
class Anchor:
    path: str
    line: int
    column: int
    cell: int | None
    source_line: str


@dataclass
class FileFacts:
    path: str
    is_notebook: bool = False
    has_torch: bool = False
    flags: set[str] = field(default_factory=set)
    anchors: dict[str, Anchor] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    # Names of nn.Module subclasses defined here (for cross-file base resolution).
    module_classes: tuple[str, ...] = ()


# Calls whose qualified name (exact or prefix ending in ".") sets a flag.
_CALL_FLAGS: tuple[tuple[str, str], ...] = (
    ("torch.save", "saves_checkpoint"),
    ("lightning.pytorch.callbacks.ModelCheckpoint", "saves_checkpoint"),
    ("lightning.pytorch.Trainer", "trainer_framework"),
    ("lightning.Trainer", "trainer_framework"),
    ("lightning.fabric.Fabric", "trainer_framework"),
    ("accelerate.Accelerator", "trainer_framework"),
    ("transformers.Trainer", "trainer_framework"),
    ("deepspeed.initialize", "trainer_framework"),
    ("safetensors.torch.save_file", "saves_checkpoint"),
    ("torch.utils.tensorboard.SummaryWriter", "tracking"),
    ("tensorboardX.SummaryWriter", "tracking"),
    ("wandb.", "tracking"),
    ("mlflow.", "tracking"),
    ("aim.", "tracking"),
    ("comet_ml.", "tracking"),
    ("neptune.", "tracking"),
    ("clearml.", "tracking"),
    ("lightning.pytorch.loggers.", "tracking"),
    ("argparse.ArgumentParser", "config"),
    ("click.", "config"),
    ("typer.", "config"),
    ("fire.Fire", "config"),
    ("hydra.main", "config"),
    ("omegaconf.", "config"),
    ("yaml.safe_load", "config"),
    ("yaml.load", "config"),
    ("json.load", "config"),
    ("tomllib.load", "config"),
    ("jsonargparse.", "config"),
    ("lightning.pytorch.cli.LightningCLI", "config"),
    ("torch.manual_seed", "seed"),
    ("torch.cuda.manual_seed", "seed"),
    ("torch.cuda.manual_seed_all", "seed"),
    ("lightning.pytorch.seed_everything", "seed"),
    ("lightning.seed_everything", "seed"),
    ("transformers.set_seed", "seed"),
    ("accelerate.utils.set_seed", "seed"),
    ("numpy.random.seed", "numpy_seed"),
    ("random.seed", "python_seed"),
    ("torch.cuda.is_available", "accelerator_check"),
    ("torch.backends.mps.is_available", "accelerator_check"),
    ("torch.autocast", "mixed_precision"),
    ("torch.amp.", "mixed_precision"),
    ("torch.cuda.amp.", "mixed_precision"),
    ("torch.cpu.amp.", "mixed_precision"),
    ("torch.compile", "compile"),
    ("torch.jit.script", "compile"),
    ("torch.jit.trace", "compile"),
    ("torch.export.", "compile"),
    ("torch.onnx.", "compile"),
    ("torch_tensorrt.", "compile"),
    ("hashlib.", "hash_check"),
    ("torch.nn.utils.rnn.pad_sequence", "pads_sequences"),
)
_ATTR_FLAGS = {
    "save_checkpoint": "saves_checkpoint",
    "save_state": "saves_checkpoint",
    "save_pretrained": "saves_checkpoint",
    "save_model": "saves_checkpoint",
    "cuda": "uses_cuda",
    "half": "mixed_precision",
    "bfloat16": "mixed_precision",
    "manual_seed": "seed",
    "seed_everything": "seed",
    "set_seed": "seed",
}


def _flag_for(q: str) -> str | None:
    for key, flag in _CALL_FLAGS:
        if q == key or (key.endswith(".") and q.startswith(key)):
            return flag
    return None


def _anchor(ctx: "FileContext", node: ast.AST) -> Anchor:
    line, col = position(node)
    cell, cell_line = ctx.source.locate(line)
    return Anchor(ctx.path, cell_line, ctx._column(line, col), cell, ctx.source.line_text(line).strip())


def collect_facts(ctx: "FileContext") -> FileFacts:
    facts = FileFacts(path=ctx.path, is_notebook=ctx.source.is_notebook, has_torch=ctx.has_torch,
                      module_classes=tuple(sorted(ctx.model.module_classes)))
    m = ctx.model
    for call in m.calls:
        q = m.qualname(call.func)
        flag = _flag_for(q) if q else None
        if flag:
            facts.flags.add(flag)
        if isinstance(call.func, ast.Attribute):
            attr_flag = _ATTR_FLAGS.get(call.func.attr)
            if attr_flag:
                facts.flags.add(attr_flag)
        for kw in call.keywords:
            if kw.arg == "device" and _mentions_accelerator(kw.value):
                facts.flags.add("uses_cuda")
            if kw.arg in ("precision",) or (kw.arg == "dtype" and _is_half(ctx, kw.value)):
                facts.flags.add("mixed_precision")
            if kw.arg in ("padding_value", "pad_token_id"):
                facts.flags.add("pads_sequences")
        if isinstance(call.func, ast.Attribute) and call.func.attr == "to" and call.args and \
                _mentions_accelerator(call.args[0]):
            facts.flags.add("uses_cuda")
    for name in m.aliases.values():
        if name.startswith(("lightning", "accelerate", "deepspeed", "transformers.Trainer")):
            facts.flags.add("trainer_framework")
    for cls in m.module_classes:
        node = m.classes[cls]
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                q = m.qualname(sub.func) or ""
                if q.startswith("torch.nn.BatchNorm") or q.startswith("torch.nn.SyncBatchNorm"):
                    facts.flags.add("batchnorm")
    for tl in ctx.training_loops:
        facts.flags.add("trains")
        facts.anchors.setdefault("training_loop", _anchor(ctx, tl.node))
        if tl.epoch_loop is not None:
            facts.flags.add("epoch_loop")
            facts.anchors.setdefault("epoch_loop", _anchor(ctx, tl.epoch_loop))
    facts.counts["training_loops"] = len(ctx.training_loops)
    return facts


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


def _is_half(ctx: "FileContext", node: ast.AST) -> bool:
    q = ctx.qualname(node) or ""
    return q in ("torch.float16", "torch.half", "torch.bfloat16")


@dataclass
class ProjectFacts:
    files: list[FileFacts]
    findings: list[Finding] = field(default_factory=list)
    rule: "type[Rule] | None" = None

    def any_flag(self, flag: str) -> bool:
        return any(flag in f.flags for f in self.files)

    def files_with(self, flag: str) -> list[FileFacts]:
        return [f for f in self.files if flag in f.flags]

    @property
    def torch_files(self) -> list[FileFacts]:
        return [f for f in self.files if f.has_torch]

    def report(self, anchor: Anchor, message: str, *, severity: Severity | None = None) -> None:
        assert self.rule is not None
        self.findings.append(self.rule.make_finding(
            path=anchor.path, line=anchor.line, column=anchor.column, cell=anchor.cell,
            message=message, severity=severity, scope="project", source_line=anchor.source_line,
        ))


def is_function(node: ast.AST) -> bool:
    return isinstance(node, FunctionNode)
