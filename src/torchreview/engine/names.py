"""Knowledge about PyTorch names: qualified-name normalisation and what calls return.

Kept apart from the semantic model so that it is data, not logic.
"""

from __future__ import annotations

import re
from functools import lru_cache

from torchreview.engine.vocab import Kind

# Prefixes rewritten to the public spelling so rules compare one name.
_CANONICAL_PREFIXES = (
    ("torch.utils.data.dataloader.", "torch.utils.data."),
    ("torch.utils.data.dataset.", "torch.utils.data."),
    ("torch.utils.data.sampler.", "torch.utils.data."),
    ("torch.nn.modules.module.", "torch.nn."),
    ("torch.nn.modules.loss.", "torch.nn."),
    ("torch.nn.modules.", "torch.nn."),
    ("torch.nn.parallel.data_parallel.", "torch.nn."),
    ("torch.nn.parallel.DataParallel", "torch.nn.DataParallel"),
    ("torch.nn.parallel.distributed.", "torch.nn.parallel."),
    ("torch.nn.parameter.", "torch.nn."),
    ("torch.optim.optimizer.", "torch.optim."),
    ("torch.optim.adam.", "torch.optim."),
    ("torch.optim.sgd.", "torch.optim."),
    ("torch.optim.adamw.", "torch.optim."),
    ("torch.cuda.amp.grad_scaler.", "torch.cuda.amp."),
    ("torch.amp.grad_scaler.", "torch.amp."),
    ("torch.autograd.grad_mode.", "torch."),
    ("torch.autograd.no_grad", "torch.no_grad"),
    ("torch.autograd.enable_grad", "torch.enable_grad"),
    ("torch.autograd.set_grad_enabled", "torch.set_grad_enabled"),
    ("torch.autograd.inference_mode", "torch.inference_mode"),
    ("pytorch_lightning.", "lightning.pytorch."),
    ("lightning.pytorch.core.module.", "lightning.pytorch."),
    ("lightning.LightningModule", "lightning.pytorch.LightningModule"),
)


@lru_cache(maxsize=8192)
def canonical(qualname: str) -> str:
    if not qualname.startswith(_CANONICAL_ROOTS):
        return qualname
    for old, new in _CANONICAL_PREFIXES:
        if qualname.startswith(old):
            qualname = new + qualname[len(old):]
    # torch.nn.modules.<file>.<Class> -> torch.nn.<Class> after the prefix rewrite
    match = re.match(r"torch\.nn\.[a-z_]+\.([A-Z]\w*)$", qualname)
    if match and not qualname.startswith(("torch.nn.functional", "torch.nn.utils",
                                          "torch.nn.init", "torch.nn.parallel")):
        qualname = "torch.nn." + match.group(1)
    return qualname


_CANONICAL_ROOTS = tuple({old.split(".")[0] + "." for old, _ in _CANONICAL_PREFIXES} | {"lightning"})

NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode"})
# Decorators that hand a function to another compiler (Taichi, Numba, Triton, JAX, Warp):
# its body runs as a GPU/CPU kernel, not as PyTorch code, so autograd, devices and modes
# do not apply to what it does with its arguments.
FOREIGN_KERNEL_DECORATORS = frozenset({
    "taichi.kernel", "taichi.func", "taichi.real_func", "numba.jit", "numba.njit", "numba.cuda.jit",
    "numba.vectorize", "numba.guvectorize", "numba.stencil", "triton.jit", "jax.jit", "warp.kernel", "warp.func",
    "cupyx.jit.rawkernel",
})
# Datasets whose items are already in memory, and wrappers that keep that property.
IN_MEMORY_DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.StackDataset"})
DATASET_WRAPPERS = frozenset({
    "torch.utils.data.Subset", "torch.utils.data.ConcatDataset", "torch.utils.data.random_split",
})
# Calls that a ``__getitem__`` may make and still be "indexing in memory" (no I/O, no transform).
CHEAP_ITEM_CALLS = frozenset({
    "builtins.int", "builtins.float", "builtins.len", "builtins.tuple", "builtins.list",
    "builtins.dict", "builtins.min", "builtins.max", "builtins.slice", "builtins.range",
    "builtins.isinstance", "torch.stack", "torch.cat", "numpy.asarray", "numpy.array",
})
CHEAP_ITEM_METHODS = frozenset({
    "float", "long", "int", "double", "half", "bool", "clone", "view", "reshape", "unsqueeze",
    "squeeze", "item", "astype", "tolist", "copy", "flatten", "contiguous",
})
# Calls that only make sense in code that runs (or may run) on CUDA.
CUDA_QUERIES = frozenset({
    "torch.cuda.is_available", "torch.cuda.set_device", "torch.cuda.device_count",
    "torch.cuda.current_device", "torch.cuda.synchronize",
})
ENABLE_GRAD_CONTEXTS = frozenset({"torch.enable_grad"})
SET_GRAD = "torch.set_grad_enabled"

MODULE_BASES = frozenset({
    "torch.nn.Module",
    "lightning.pytorch.LightningModule",
    "transformers.PreTrainedModel",
    "transformers.modeling_utils.PreTrainedModel",
})
DATASET_BASES = frozenset({
    "torch.utils.data.Dataset",
    "torch.utils.data.IterableDataset",
})

TENSOR_FACTORIES = frozenset({
    "torch.tensor", "torch.randn", "torch.rand", "torch.zeros", "torch.ones",
    "torch.empty", "torch.full", "torch.arange", "torch.randint", "torch.linspace",
    "torch.logspace", "torch.eye", "torch.randperm", "torch.zeros_like",
    "torch.ones_like", "torch.randn_like", "torch.rand_like", "torch.empty_like",
    "torch.full_like", "torch.as_tensor", "torch.from_numpy", "torch.normal",
})

# Factories of random numbers (torch and NumPy): data they build carries no signal.
RANDOM_FACTORIES = frozenset({
    "torch.randn", "torch.rand", "torch.randint", "torch.randperm", "torch.randn_like", "torch.rand_like",
    "torch.randint_like", "torch.normal", "torch.bernoulli", "torch.multinomial",
    "numpy.random.randn", "numpy.random.rand", "numpy.random.randint", "numpy.random.normal",
    "numpy.random.uniform", "numpy.random.random", "numpy.random.random_sample", "numpy.random.choice",
    "numpy.random.binomial", "numpy.random.poisson",
})

# Calls that read data from files.
FILE_READERS = frozenset({
    "builtins.open", "numpy.load", "numpy.loadtxt", "numpy.genfromtxt", "numpy.fromfile", "torch.load",
    "pandas.read_csv", "pandas.read_parquet", "pandas.read_json", "pandas.read_pickle", "pandas.read_excel",
    "pandas.read_table", "PIL.Image.open", "cv2.imread", "imageio.imread", "h5py.File", "pickle.load",
    "json.load", "os.listdir", "glob.glob", "os.walk", "scipy.io.loadmat", "librosa.load", "soundfile.read",
    "torchaudio.load", "datasets.load_dataset",
})

# torch.<lower-case> callables that do not return tensors.
_TORCH_NOT_TENSOR = frozenset({
    "torch.device", "torch.load", "torch.save", "torch.manual_seed", "torch.compile",
    "torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.set_grad_enabled",
    "torch.is_tensor", "torch.numel", "torch.get_default_dtype", "torch.set_default_dtype",
    "torch.use_deterministic_algorithms", "torch.set_num_threads", "torch.get_num_threads",
    "torch.autocast", "torch.is_grad_enabled", "torch.initial_seed", "torch.seed",
    "torch.set_float32_matmul_precision", "torch.set_printoptions", "torch.is_floating_point",
    "torch.Generator", "torch.dtype", "torch.finfo", "torch.iinfo", "torch.Size",
})

# Tensor methods whose result is not a tensor.
TENSOR_NON_TENSOR_METHODS = frozenset({
    "item", "tolist", "numpy", "size", "dim", "numel", "ndimension", "nelement",
    "element_size", "is_contiguous", "data_ptr", "get_device", "stride", "storage",
    "backward", "register_hook", "__len__", "equal", "is_floating_point",
})

# torch functions / tensor methods that return a tuple of tensors, not one tensor.
TUPLE_RETURNING_OPS = frozenset({
    "split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "meshgrid",
    "broadcast_tensors", "sort", "topk", "kthvalue", "mode", "std_mean", "var_mean", "aminmax",
    "frexp", "histogram", "slogdet", "lu", "qr", "svd", "eig", "symeig", "lstsq", "solve",
    "triangular_solve", "unique_consecutive", "max", "min", "median", "nanmedian", "cummax", "cummin",
    "geqrf", "where", "nonzero", "unique",
})

MODEL_RETURNING_METHODS = frozenset({
    "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "train", "eval",
    "requires_grad_", "type", "to_empty", "xpu", "mps",
})

# Name heuristics: used only for names with no binding we can see (e.g. parameters).
_NAME_HINTS = (
    (Kind.MODEL, re.compile(r"^(model|net|network|module|.+_model|.+_net|ddp_model|backbone)$")),
    (Kind.OPTIMIZER, re.compile(r"^(optimizer|optim|optimiser|.+_optimizer|optimizer_.+|.+_optim)$")),
    (Kind.LOADER, re.compile(r"^(loader|dataloader|data_loader|.+_loader|.+_dataloader|.+_dl|dl)$")),
    (Kind.SCHEDULER, re.compile(r"^(scheduler|sched|lr_scheduler|.+_scheduler|.+_sched)$")),
    (Kind.SCALER, re.compile(r"^(scaler|grad_scaler|amp_scaler|.+_scaler)$")),
    (Kind.LOSS_FN, re.compile(r"^(criterion|loss_fn|loss_func|lossfn|loss_function|.+_criterion)$")),
    (Kind.TENSOR, re.compile(r"^(loss|.+_loss|logits|outputs?|preds?|predictions|inputs?|targets?|labels?)$")),
)


# Devices and dtypes as spelled in `.to(...)` / `device=` arguments (SemanticModel.device_kind).
ACCELERATOR_DEVICE_TYPES = frozenset({"cuda", "mps", "xpu", "hpu", "npu", "mtia", "privateuseone"})
DTYPE_NAMES = frozenset({
    "float", "float16", "float32", "float64", "half", "double", "bfloat16", "float8_e4m3fn",
    "float8_e5m2", "int", "int8", "int16", "int32", "int64", "long", "short", "uint8", "bool",
    "complex64", "complex128", "cfloat", "cdouble",
})
DEVICE_NAME = re.compile(r"^(device|dev|\w+_device|device_?\d)$", re.I)
# Objects whose `.device` is a configured device rather than a tensor's placement.
CONFIG_HOLDER = re.compile(
    r"^(args|arguments|opt|opts|options|cfg|config|conf|hparams|hp|settings|flags|accelerator"
    r"|trainer|fabric|env|\w+_(args|cfg|config|opts))$", re.I)


def kind_from_name(name: str) -> str | None:
    # a pure function of the name, asked for the same names over and over: memoised
    kind = _kinds_by_name.get(name, _UNKNOWN)
    if kind is _UNKNOWN:
        kind = next((k for k, pattern in _NAME_HINTS if pattern.match(name)), None)
        if len(_kinds_by_name) >= 65536:
            _kinds_by_name.clear()
        _kinds_by_name[name] = kind
    return kind


_kinds_by_name: dict[str, str | None] = {}
_UNKNOWN = object()


_ANNOTATION_KINDS = {
    "torch.nn.Module": Kind.MODEL,
    "torch.Tensor": Kind.TENSOR,
    "torch.nn.Parameter": Kind.PARAMETER,
    "torch.optim.Optimizer": Kind.OPTIMIZER,
    "torch.utils.data.DataLoader": Kind.LOADER,
    "torch.optim.lr_scheduler.LRScheduler": Kind.SCHEDULER,
    "torch.optim.lr_scheduler._LRScheduler": Kind.SCHEDULER,
}


def kind_from_annotation(qualname: str | None) -> str | None:
    if qualname is None:
        return None
    return _ANNOTATION_KINDS.get(qualname)


# nn.Module subclasses that compute a loss (not "the model"): DINOLoss, SetCriterion.
LOSS_CLASS_NAME = re.compile(r"(Loss|Criterion)|^(loss|criterion)")
LOSS_VALUE_NAME = re.compile(r"^(loss|losses|.+_loss)$")
_FUNCTIONAL_LOSSES = ("cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
                      "ctc_loss", "cosine_embedding_loss")


def is_functional_loss(q: str) -> bool:
    """``torch.nn.functional.cross_entropy``, ``F.mse_loss`` ...: the call computes a loss."""
    if not q.startswith("torch.nn.functional."):
        return False
    last = q.rsplit(".", 1)[-1]
    return last.endswith("_loss") or last in _FUNCTIONAL_LOSSES


def kind_from_call_qualname(q: str) -> str | None:
    """What a call to the callable named ``q`` returns, when the name alone says
    (a pure function of the name: memoised, like ``kind_from_name``)."""
    kind = _kinds_by_callee.get(q, _UNKNOWN)
    if kind is _UNKNOWN:
        kind = _kind_from_call_qualname(q)
        if len(_kinds_by_callee) >= 65536:
            _kinds_by_callee.clear()
        _kinds_by_callee[q] = kind
    return kind


_kinds_by_callee: dict[str, str | None] = {}


def _kind_from_call_qualname(q: str) -> str | None:
    if q.startswith("torch.optim.lr_scheduler.") or q.startswith("transformers.get_") and "schedule" in q:
        return "scheduler"
    if q.startswith("torch.optim.") and q.rsplit(".", 1)[-1][:1].isupper():
        return "optimizer"
    if q in ("transformers.AdamW", "timm.optim.create_optimizer_v2", "bitsandbytes.optim.AdamW8bit"):
        return "optimizer"
    if q == "torch.utils.data.DataLoader":
        return "loader"
    if q.endswith(".GradScaler"):
        return "scaler"
    if q in ("torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"):
        return "sampler"
    if q == "torch.nn.Parameter":
        return "parameter"
    if q == "torch.device":
        return "device"
    if q.startswith("torch.utils.data.") and q.endswith("Dataset"):
        return "dataset"
    if q.startswith("torchvision.datasets."):
        return "dataset"
    if q.startswith("torch.nn.") and not q.startswith(("torch.nn.functional", "torch.nn.utils", "torch.nn.init")):
        last = q.rsplit(".", 1)[-1]
        if last[:1].isupper():
            if last.endswith("Loss"):
                return "loss_fn"
            return "model"
    if q.startswith("torchvision.models."):
        # a builder (`resnet50`, `detection.fasterrcnn_resnet50_fpn`, `get_model`); not a weights
        # enum's member (`ResNet50_Weights.DEFAULT.transforms()`: a preprocessing preset) nor a
        # lookup (`get_weight`, `list_models`, `feature_extraction.get_graph_node_names`)
        parts = q[len("torchvision.models."):].split(".")
        last = parts[-1]
        if all(p[:1].islower() for p in parts) and (last == "get_model" or not last.startswith(("get_", "list_"))):
            return "model"
    if q in ("timm.create_model", "torch.hub.load"):
        return "model"
    if q.startswith("transformers.") and q.endswith(".from_pretrained"):
        cls = q.split(".")[-2]
        if "Model" in cls or "For" in cls:
            return "model"
        return None
    if q in TENSOR_FACTORIES or q.startswith("torch.nn.functional."):
        return "tensor"
    if q.startswith("torch.") and q.count(".") == 1 and q not in _TORCH_NOT_TENSOR:
        last = q.rsplit(".", 1)[-1]
        if last[:1].islower() and not last.startswith("_") and not last.startswith(("set_", "get_", "is_")):
            return "tensor"
    return None


# ---------------------------------------------------------------- producers (Flow.activation_of)
# What a tensor is, by the call that produced it: a probability, a log-probability, raw scores.
ACTIVATION_FUNCTIONS = {
    "torch.softmax": "softmax", "torch.nn.functional.softmax": "softmax",
    "torch.special.softmax": "softmax",
    "torch.log_softmax": "log_softmax", "torch.nn.functional.log_softmax": "log_softmax",
    "torch.special.log_softmax": "log_softmax",
    "torch.sigmoid": "sigmoid", "torch.nn.functional.sigmoid": "sigmoid", "torch.special.expit": "sigmoid",
    "torch.nn.functional.logsigmoid": "logsigmoid",
    "torch.nn.functional.linear": "logits",
}
ACTIVATION_METHODS = {"softmax": "softmax", "log_softmax": "log_softmax", "sigmoid": "sigmoid"}
ACTIVATION_MODULES = {
    "torch.nn.Softmax": "softmax", "torch.nn.Softmax2d": "softmax", "torch.nn.LogSoftmax": "log_softmax",
    "torch.nn.Sigmoid": "sigmoid", "torch.nn.LogSigmoid": "logsigmoid",
    # layers whose output is an unnormalised score when they end a model
    "torch.nn.Linear": "logits", "torch.nn.LazyLinear": "logits", "torch.nn.Bilinear": "logits",
    "torch.nn.Conv1d": "logits", "torch.nn.Conv2d": "logits", "torch.nn.Conv3d": "logits",
}
# Tensor methods that keep what a value is (a softmax output stays one after ``.view``).
VALUE_PRESERVING_METHODS = frozenset({
    "view", "reshape", "squeeze", "unsqueeze", "flatten", "contiguous", "float", "double", "half",
    "to", "cpu", "cuda", "permute", "transpose", "clone", "detach", "type_as", "view_as",
    "reshape_as", "bfloat16", "requires_grad_",
})
# Calls that wrap a module and forward to it.
MODULE_WRAPPERS = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel", "torch.compile",
    "torch.jit.script", "torch.jit.trace",
})
# Loss modules -> the functional they compute (Flow.loss_call).
LOSS_MODULES = {
    "torch.nn.CrossEntropyLoss": "cross_entropy", "torch.nn.NLLLoss": "nll_loss",
    "torch.nn.NLLLoss2d": "nll_loss", "torch.nn.BCELoss": "binary_cross_entropy",
    "torch.nn.BCEWithLogitsLoss": "binary_cross_entropy_with_logits",
}
LOSS_FUNCTIONALS = frozenset(LOSS_MODULES.values())
# ``X.from_pretrained(...)`` of an unresolved class named like a model (not a tokenizer/config).
PRETRAINED_MODEL_CLASS = re.compile(r"^(?!.*(Tokenizer|Config|Processor|Extractor)$)[A-Z]\w*(Model|For\w+|Classification|Classifier|LMHead\w*)$")
