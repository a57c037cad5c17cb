"""The model's vocabularies: the closed sets of words its answers are made of.

Each is a string enum, so a member equals its word (``Kind.MODEL == "model"``,
hashing and JSON alike) and rules that compare strings keep working; new code
names the member. ``tests/test_vocab.py`` holds the engine to these sets: every
kind, event, device label, mode and split it answers over the fixtures is a
member.
"""

from __future__ import annotations

import enum

try:  # Python 3.11+
    from enum import StrEnum
except ImportError:  # pragma: no cover - Python 3.10
    class StrEnum(str, enum.Enum):  # type: ignore[no-redef]
        """``str`` members that print and format as their value (3.11's StrEnum)."""

        __str__ = str.__str__
        __format__ = str.__format__


class Kind(StrEnum):
    """What a name or expression holds (``ctx.kind_of``)."""

    MODEL = "model"
    OPTIMIZER = "optimizer"
    LOADER = "loader"
    SCHEDULER = "scheduler"
    SCALER = "scaler"
    LOSS_FN = "loss_fn"
    TENSOR = "tensor"
    PARAMETER = "parameter"
    DATASET = "dataset"
    SAMPLER = "sampler"
    DEVICE = "device"


class EventKind(StrEnum):
    """What a statement of a training loop does (``Event.kind``, ``ctx.flow.classify``)."""

    ZERO_GRAD = "zero_grad"
    FORWARD = "forward"
    BACKWARD = "backward"
    CLIP = "clip"
    UNSCALE = "unscale"
    STEP = "step"
    SCHED_STEP = "sched_step"
    EVAL = "eval"
    TRAIN = "train"


class DeviceKind(StrEnum):
    """What a device argument names (``ctx.model.device_kind``)."""

    ACCELERATOR = "accelerator"
    CPU = "cpu"
    FOLLOWS = "follows"      # another tensor's placement (``x.device``)
    VARIABLE = "variable"    # a configured device (``device``, ``args.device``)
    DTYPE = "dtype"          # ``.to(torch.float16)``: no device at all


class Mode(StrEnum):
    """A module's mode (``ctx.flow.mode_at``)."""

    TRAIN = "train"
    EVAL = "eval"


class Split(StrEnum):
    """A data split (``ctx.flow.data_split``, ``split_of_words``)."""

    TRAIN = "train"
    VAL = "val"
    TEST = "test"


class EntryKind(StrEnum):
    """What a checkpoint entry is (``SavedEntry.kind``)."""

    MODEL_STATE = "model_state"          # model.state_dict() (see ``prefix``)
    OPTIMIZER_STATE = "optimizer_state"
    SCHEDULER_STATE = "scheduler_state"
    SCALER_STATE = "scaler_state"
    MODULE = "module"                    # a whole nn.Module (pickled class)
    NAMESPACE = "namespace"              # an argparse.Namespace
    CONFIG = "config"                    # a config object (dataclass, OmegaConf, EasyDict, SimpleNamespace, ...)
    NUMPY = "numpy"                      # a NumPy array or scalar (np.random.get_state(), np.mean(...), t.numpy())
    PLAIN = "plain"                      # numbers, strings, tensors, vars(args), plain containers
    STATE = "state"                      # `.state_dict()` of an object of unknown kind: a dict, not the object
    UNKNOWN = "unknown"
