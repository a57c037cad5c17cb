"""File facts (small, picklable) and the project view that project rules read.

Project rules never see a tree: only these facts, gathered once per file.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchreview.engine.anchor import Anchor
from torchreview.engine.checkpoint_index import CheckpointIndex, iter_loads, iter_saves, link_saves
from torchreview.engine.semantic import FunctionNode, position
from torchreview.findings import Finding, Severity

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.catalog import Rule
    from torchreview.engine.checkpoint_index import CheckpointLoad, Link
    from torchreview.engine.context import FileContext
    from torchreview.findings import Fix

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


_CHEAP_MARKERS = ("torch", "DataLoader", "nn.Module", "optimizer.step", "optimiser.step", "loss.backward",
                  "lightning", "timm", "accelerate")


def has_torch_signal(text: str) -> bool:
    """Whether any detection signal is present (the engine's fast path: a
    substring test first, then the patterns, cheapest and commonest first)."""
    if not any(marker in text for marker in _CHEAP_MARKERS):
        return False
    return any(pattern.search(text) for _, pattern in SIGNALS)


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
    # Modules this file imports, as written (relative ones keep their dots), so
    # project rules can tell which files use which (TR503).
    imports: tuple[str, ...] = ()
    # Every module this file imports (dotted, relative ones with their dots).
    imports: tuple[str, ...] = ()
    # The pickle-family libraries this file writes files with (`pickle.dump`,
    # `dill.dump`, `joblib.dump`: "pickle", "dill", "joblib"), so a load of the
    # same kind elsewhere in the project reads the project's own output (TR103).
    pickle_dumps: tuple[str, ...] = ()
    # The checkpoint save/load index as compact JSON (so the on-disk cache keeps it);
    # rules read it typed, through ``checkpoints``.
    checkpoint_json: str = ""
    # Whether this file places tensors or modules on an accelerator (`.cuda()`,
    # `.to(<not a dtype, not "cpu">)`, `device=` other than "cpu", DataParallel,
    # `accelerator.prepare`, a Lightning `Trainer(accelerator=/gpus=)`): a project
    # where no file does runs on one device, so it cannot mix devices (TR403).
    places_on_accelerator: bool = False
    # The devices this file builds, as tokens: "cpu", "cuda" (the default GPU spelled
    # out: "cuda", "cuda:0"), "cuda()" (a bare `.cuda()`), "cuda:1" ..., "mps" ..., "?" for a computed
    # or spread device (`f"cuda:{rank}"`, `.cuda(args.gpu)`, a `--gpu` option,
    # DataParallel/DDP, `set_device`); engine/facts_devices.py (TR403).
    devices: tuple[str, ...] = ()
    # The URL each download of this file fetches ("" when not a single literal),
    # in the order of the `downloads` count (TR105: the project's own releases).
    download_urls: tuple[str, ...] = ()

    @property
    def checkpoints(self) -> CheckpointIndex:
        """What each ``torch.save`` of this file writes and each ``torch.load`` reads back
        (``engine/checkpoint_index.py``)."""
        return CheckpointIndex.parse(self.checkpoint_json)

    @checkpoints.setter
    def checkpoints(self, index: CheckpointIndex) -> None:
        self.checkpoint_json = index.dumps()


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
    # TR201/TR206: more ways to pick an accelerator; TR205: more graph/export paths;
    # TR206: more mixed-precision APIs.
    ("torch.accelerator.", "accelerator_check"),
    ("torch.cuda.set_device", "accelerator_check"),
    ("torch.cuda.device_count", "accelerator_check"),
    ("torch.cuda.current_device", "accelerator_check"),
    ("torch.xpu.is_available", "accelerator_check"),
    ("torch.nn.parallel.DistributedDataParallel", "accelerator_check"),
    ("torch.jit.", "compile"),
    ("torch._dynamo.", "compile"),
    ("onnxruntime.", "compile"),
    ("tensorrt.", "compile"),
    ("openvino.", "compile"),
    ("torch.ao.quantization.quantize_pt2e.", "compile"),
    ("apex.amp.", "mixed_precision"),
    ("torch.set_default_dtype", "sets_default_dtype"),
    # TR503: BatchNorm layers built outside a Module subclass (Sequential, factories).
    ("torch.nn.BatchNorm1d", "batchnorm"),
    ("torch.nn.BatchNorm2d", "batchnorm"),
    ("torch.nn.BatchNorm3d", "batchnorm"),
    ("torch.nn.SyncBatchNorm", "batchnorm"),
    ("torch.nn.LazyBatchNorm1d", "batchnorm"),
    ("torch.nn.LazyBatchNorm2d", "batchnorm"),
    ("torch.nn.LazyBatchNorm3d", "batchnorm"),
    # TR105: integrity checks of downloads; TR304: more configuration mechanisms;
    # TR305/TR306: trainers that checkpoint and log on their own; more trackers.
    ("torchvision.datasets.utils.check_integrity", "hash_check"),
    ("torchvision.datasets.utils.check_md5", "hash_check"),
    ("torchvision.datasets.utils.calculate_md5", "hash_check"),
    ("absl.flags.", "config"),
    ("gin.", "config"),
    ("ml_collections.", "config"),
    ("tyro.", "config"),
    ("simple_parsing.", "config"),
    ("docopt.docopt", "config"),
    ("transformers.HfArgumentParser", "config"),
    ("toml.load", "config"),
    ("tomli.load", "config"),
    ("yaml.full_load", "config"),
    ("configparser.ConfigParser", "config"),
    ("lightning.pytorch.Trainer", "managed_training"),
    ("lightning.Trainer", "managed_training"),
    ("transformers.Trainer", "managed_training"),
    ("transformers.Seq2SeqTrainer", "managed_training"),
    ("trl.SFTTrainer", "managed_training"),
    ("torch.utils.tensorboard.writer.SummaryWriter", "tracking"),
    ("tensorboard_logger.", "tracking"),
    ("visdom.", "tracking"),
    ("dvclive.", "tracking"),
    ("swanlab.", "tracking"),
    ("trackio.", "tracking"),
    ("lightning.fabric.loggers.", "tracking"),
    ("tensorflow.summary.", "tracking"),
    ("tensorflow.compat.v1.summary.", "tracking"),
    # TR201: online reinforcement learning (a Gym environment feeds the loop) and
    # convolutional models (which do gain from a GPU).
    ("gym.make", "rl_environment"),
    ("gym.vector.", "rl_environment"),
    ("gymnasium.make", "rl_environment"),
    ("gymnasium.vector.", "rl_environment"),
    ("torch.nn.Conv1d", "conv_layers"),
    ("torch.nn.Conv2d", "conv_layers"),
    ("torch.nn.Conv3d", "conv_layers"),
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
    "init_trackers": "tracking",
}


def _flag_tables() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    exact: dict[str, tuple[str, ...]] = {}
    prefixes: dict[str, tuple[str, ...]] = {}
    for key, flag in _CALL_FLAGS:
        table = prefixes if key.endswith(".") else exact
        table[key] = table.get(key, ()) + (flag,)
    return exact, prefixes


def _flags_for(q: str) -> tuple[str, ...]:
    """Every flag a call to ``q`` sets (exact names, then dotted prefixes)."""
    exact, prefixes = _FLAG_TABLES
    out = exact.get(q, ())
    dot = q.find(".")
    while dot != -1:
        out += prefixes.get(q[: dot + 1], ())
        dot = q.find(".", dot + 1)
    return out


def _flag_for(q: str) -> str | None:
    flags = _flags_for(q)
    return flags[0] if flags else None


_FLAG_TABLES = _flag_tables()


def _anchor(ctx: "FileContext", node: ast.AST) -> Anchor:
    line, col = position(node)
    cell, cell_line = ctx.source.locate(line)
    return Anchor(ctx.path, cell_line, ctx._column(line, col), cell, ctx.source.line_text(line).strip())


# TR105: downloads, with the argument (name, position) that carries a checksum when given.
_DOWNLOADS: dict[str, tuple[str, int] | None] = {
    "urllib.request.urlretrieve": None,
    "urllib.request.urlopen": None,
    "wget.download": None,
    "gdown.download": None,
    "gdown.cached_download": ("md5", 2),
    "torch.hub.download_url_to_file": ("hash_prefix", 2),
    "torchvision.datasets.utils.download_url": ("md5", 3),
    "torchvision.datasets.utils.download_and_extract_archive": ("md5", 4),
    "torchvision.datasets.utils.download_file_from_google_drive": ("md5", 3),
}


@dataclass
class ProjectFacts:
    files: list[FileFacts]
    findings: list[Finding] = field(default_factory=list)
    rule: "type[Rule] | None" = None
    # The torch version the project targets (None: unknown, assume the newest).
    target_torch: tuple[int, int] | None = None

    def torch_at_least(self, major: int, minor: int) -> bool:
        return self.target_torch is None or self.target_torch >= (major, minor)

    def any_flag(self, flag: str) -> bool:
        return any(flag in f.flags for f in self.files)

    def trusted_release(self, url: str, facts: FileFacts) -> str | None:
        """Why a download of ``url`` by the file ``facts`` needs no pinned hash (a release
        asset of the project's own GitHub repository, as its setup.py/setup.cfg/
        pyproject.toml/README badges name it, or of a package that file imports), else
        None (engine/project_identity.py)."""
        from torchreview.engine.discovery import project_root
        from torchreview.engine.project_identity import trusted_release

        return trusted_release(url, project_root(facts.path, {}), facts.imports)

    def single_default_device(self) -> bool:
        """Every device the project builds is the CPU or the default GPU, and none is
        computed (``FileFacts.devices``): ``.cuda()`` and ``.to(x.device)`` agree."""
        tokens = {t for f in self.files for t in f.devices}
        # "cuda" (spelled out) must be there: bare `.cuda()` calls alone (a snippet, a
        # project that sets the device elsewhere) do not show which GPU is current
        return "cuda" in tokens and tokens <= {"cpu", "cuda", "cuda()", "meta"}

    def files_with(self, flag: str) -> list[FileFacts]:
        return [f for f in self.files if flag in f.flags]

    @property
    def torch_files(self) -> list[FileFacts]:
        return [f for f in self.files if f.has_torch]

    def report(self, anchor: Anchor, message: str, *, severity: Severity | None = None,
               kind: str | None = None, confidence: str | None = None, fix: "Fix | None" = None) -> None:
        assert self.rule is not None
        self.findings.append(self.rule.make_finding(
            path=anchor.path, line=anchor.line, column=anchor.column, cell=anchor.cell,
            end_column=anchor.column + max(1, len(anchor.source_line)),
            message=message, severity=severity, scope="project", source_line=anchor.source_line,
            kind=kind, confidence=confidence, fix=fix,
        ))

    def checkpoint_saves(self) -> list:
        """Every ``(FileFacts, CheckpointSave)`` of the project."""
        return list(iter_saves(self.files))

    def checkpoint_loads(self) -> list:
        """Every ``(FileFacts, CheckpointLoad)`` of the project."""
        return list(iter_loads(self.files))

    def saves_for(self, load: "CheckpointLoad") -> "Link | None":
        """The saves of the checkpoint ``load`` reads (``checkpoint_index.link_saves``)."""
        return link_saves(self.files, load)

    def safe_globals(self) -> set[str]:
        """Class names the project registers with ``torch.serialization.add_safe_globals``."""
        return {name for f in self.files for name in f.checkpoints.safe_globals}


def is_function(node: ast.AST) -> bool:
    return isinstance(node, FunctionNode)


