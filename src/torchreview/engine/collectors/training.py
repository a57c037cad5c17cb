"""How the file trains: its loops, loaders, layers, and the frameworks, checkpoints,
trackers and configuration around them."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchreview.engine.anchor import Anchor
from torchreview.engine.collectors.registry import CallNames, collects
from torchreview.engine.facts import _anchor

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext


@collects("training_loop")
def training_loop(ctx: "FileContext", calls: CallNames) -> Anchor | None:
    loops = ctx.training_loops
    return _anchor(ctx, loops[0].node) if loops else None


@collects("epoch_loop")
def epoch_loop(ctx: "FileContext", calls: CallNames) -> Anchor | None:
    first = next((tl.epoch_loop for tl in ctx.training_loops if tl.epoch_loop is not None), None)
    return _anchor(ctx, first) if first is not None else None


@collects("train_loaders_without_drop_last")
def train_loaders_without_drop_last(ctx: "FileContext", calls: CallNames) -> tuple[Anchor, ...]:
    """Training DataLoaders (``Flow.is_training_loader``; not in notebooks or over
    in-memory data, ``Advice.loader_skip``) that keep a short last batch: no
    ``drop_last=True``, no ``batch_sampler``, no ``**kwargs`` that could carry it."""
    if "torch.utils.data.DataLoader" not in calls.names:
        return ()
    found = []
    for call in ctx.model.calls:
        if ctx.model.qualname(call.func) != "torch.utils.data.DataLoader":
            continue
        kws = {k.arg: k.value for k in call.keywords}
        drop_last = kws.get("drop_last")
        if None in kws or "batch_sampler" in kws or len(call.args) > 4 or \
                not (drop_last is None or (isinstance(drop_last, ast.Constant) and drop_last.value is False)):
            continue
        if ctx.flow.is_training_loader(call) and not ctx.advice.loader_skip(call):
            found.append(_anchor(ctx, call))
    return tuple(found)


_BATCHNORM = frozenset({"torch.nn.BatchNorm1d", "torch.nn.BatchNorm2d", "torch.nn.BatchNorm3d",
                        "torch.nn.SyncBatchNorm", "torch.nn.LazyBatchNorm1d", "torch.nn.LazyBatchNorm2d",
                        "torch.nn.LazyBatchNorm3d"})


@collects("builds_batchnorm")
def builds_batchnorm(ctx: "FileContext", calls: CallNames) -> bool:
    """A BatchNorm layer built anywhere (Sequential, factories), or any
    ``torch.nn.BatchNorm*``/``SyncBatchNorm*`` call inside an ``nn.Module`` class."""
    if calls.any_of(_BATCHNORM):
        return True
    m = ctx.model
    if not m.module_classes or not calls.any_of(frozenset(), ("torch.nn.BatchNorm", "torch.nn.SyncBatchNorm")):
        return False  # (no call the pass below could accept)
    for call in m.calls:
        if (m.qualname(call.func) or "").startswith(("torch.nn.BatchNorm", "torch.nn.SyncBatchNorm")):
            cls = m.enclosing_class(call)
            if cls is not None and cls.name in m.module_classes:
                return True
    return False


@collects("builds_conv_layers")
def builds_conv_layers(ctx: "FileContext", calls: CallNames) -> bool:
    return calls.any_of(frozenset({"torch.nn.Conv1d", "torch.nn.Conv2d", "torch.nn.Conv3d"}))


_TRAINER_ENTRIES = frozenset({"lightning.pytorch.Trainer", "lightning.Trainer", "lightning.fabric.Fabric",
                              "accelerate.Accelerator", "transformers.Trainer", "deepspeed.initialize"})
_TRAINER_IMPORTS = ("lightning", "accelerate", "deepspeed", "transformers.Trainer")


@collects("trainer_framework")
def trainer_framework(ctx: "FileContext", calls: CallNames) -> bool:
    return calls.any_of(_TRAINER_ENTRIES) or \
        any(name.startswith(_TRAINER_IMPORTS) for name in ctx.model.aliases.values())


@collects("managed_training")
def managed_training(ctx: "FileContext", calls: CallNames) -> bool:
    return calls.any_of(frozenset({"lightning.pytorch.Trainer", "lightning.Trainer", "transformers.Trainer",
                                   "transformers.Seq2SeqTrainer", "trl.SFTTrainer"}))


@collects("steps_environment")
def steps_environment(ctx: "FileContext", calls: CallNames) -> bool:
    return calls.any_of(frozenset({"gym.make", "gymnasium.make"}), ("gym.vector.", "gymnasium.vector."))


@collects("saves_checkpoint")
def saves_checkpoint(ctx: "FileContext", calls: CallNames) -> bool:
    return calls.any_of(frozenset({"torch.save", "lightning.pytorch.callbacks.ModelCheckpoint",
                                   "safetensors.torch.save_file"})) or \
        calls.any_method(frozenset({"save_checkpoint", "save_state", "save_pretrained", "save_model"}))


_TRACKERS = frozenset({"torch.utils.tensorboard.SummaryWriter", "torch.utils.tensorboard.writer.SummaryWriter",
                       "tensorboardX.SummaryWriter"})
_TRACKER_MODULES = ("wandb.", "mlflow.", "aim.", "comet_ml.", "neptune.", "clearml.", "lightning.pytorch.loggers.",
                    "lightning.fabric.loggers.", "tensorboard_logger.", "visdom.", "dvclive.", "swanlab.",
                    "trackio.", "tensorflow.summary.", "tensorflow.compat.v1.summary.")


@collects("tracking")
def tracking(ctx: "FileContext", calls: CallNames) -> bool:
    return calls.any_of(_TRACKERS, _TRACKER_MODULES) or calls.any_method(frozenset({"init_trackers"}))


_CONFIG_CALLS = frozenset({"argparse.ArgumentParser", "fire.Fire", "hydra.main", "yaml.safe_load", "yaml.load",
                           "yaml.full_load", "json.load", "tomllib.load", "toml.load", "tomli.load",
                           "configparser.ConfigParser", "lightning.pytorch.cli.LightningCLI", "docopt.docopt",
                           "transformers.HfArgumentParser"})
_CONFIG_MODULES = ("click.", "typer.", "omegaconf.", "jsonargparse.", "absl.flags.", "gin.", "ml_collections.",
                   "tyro.", "simple_parsing.")


@collects("reads_config")
def reads_config(ctx: "FileContext", calls: CallNames) -> bool:
    return calls.any_of(_CONFIG_CALLS, _CONFIG_MODULES)
