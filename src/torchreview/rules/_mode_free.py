"""Whether a model behaves the same in train and eval mode (shared by rules that ask
whether `.eval()`/`.train()` makes any difference)."""

from __future__ import annotations

import ast

# Layers that compute the same thing in train and eval mode (no dropout, no
# running statistics).
_MODE_FREE_LAYERS = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Identity", "Flatten", "Unflatten", "Embedding", "EmbeddingBag",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm",
    "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid",
    "Hardtanh", "Hardswish", "Hardsigmoid", "Softplus", "Softmax", "LogSoftmax", "Softsign", "Tanhshrink",
    "GLU", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "Upsample", "PixelShuffle", "PixelUnshuffle",
    "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Parameter",
    "LSTMCell", "GRUCell", "RNNCell",
})
_RECURRENT = frozenset({"LSTM", "GRU", "RNN"})  # mode-free unless built with dropout
_INSTANCE_NORMS = frozenset({"InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"})
_MOVES = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_"})
_MODE_FUNCTIONS = ("dropout", "batch_norm", "instance_norm", "rrelu")


def mode_free_model(ctx, receiver: ast.AST) -> bool:
    """Every value the model may hold is built from a class of this module (or an
    `nn.Sequential`) made only of layers that behave the same in train and eval
    mode: `.eval()` would change nothing, so its absence is no bug."""
    return _mode_free_values(ctx, receiver, 3)


def _mode_free_values(ctx, node: ast.AST, depth: int) -> bool:
    values = ctx.flow.values_of(node)
    return bool(values) and all(isinstance(v, ast.Call) and _mode_free_build(ctx, v, depth) for v in values)


def _mode_free_build(ctx, call: ast.Call, depth: int) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _MOVES:
        # `build().to(device)`: judge what was moved, never the method itself
        return isinstance(func.value, ast.Call) and _mode_free_build(ctx, func.value, depth)
    if isinstance(func, ast.Name) and func.id in ctx.model.functions and func.id not in ctx.model.classes:
        callee = ctx.flow.resolve_local_call(call)
        returned = [v for v in ctx.flow.values_of(call, follow_returns=True) if v is not call] \
            if callee is not None and depth > 0 else []
        return bool(returned) and all(isinstance(v, ast.Call) and _mode_free_build(ctx, v, depth - 1)
                                      for v in returned)
    if isinstance(func, ast.Name) and func.id in ctx.model.classes:
        cls = ctx.model.classes[func.id]
        return func.id in ctx.model.module_classes and depth > 0 and \
            all(ctx.qualname(b) == "torch.nn.Module" for b in cls.bases) and _mode_free_body(ctx, cls, depth - 1)
    if ctx.qualname(func) == "torch.nn.Sequential":
        return all(_mode_free_layer(ctx, a, depth) for a in call.args)
    return _mode_free_call(ctx, call, depth)


def _mode_free_layer(ctx, arg: ast.AST, depth: int) -> bool:
    """A layer of `nn.Sequential(...)`: built in place, or a name bound only to
    mode-free layers (`NL = nn.Tanh()` ... `nn.Sequential(nn.Linear(2, 5), NL)`)."""
    if isinstance(arg, ast.Call):
        return _mode_free_build(ctx, arg, depth)
    return isinstance(arg, ast.Name) and _mode_free_values(ctx, arg, depth)  # not `*layers`, a subscript


def _mode_free_body(ctx, cls: ast.ClassDef, depth: int) -> bool:
    for sub in ast.walk(cls):
        if isinstance(sub, ast.Attribute) and sub.attr == "training":
            return False
        if isinstance(sub, ast.Call) and not _mode_free_call(ctx, sub, depth):
            return False
    return True


def _mode_free_call(ctx, call: ast.Call, depth: int) -> bool:
    func = call.func
    if isinstance(func, ast.Name) and func.id in ctx.model.classes:
        return _mode_free_build(ctx, call, depth)
    q = ctx.qualname(func)
    if q is None:
        # a method of a local object (`self.fc(x)`, `x.view(...)`); a local function
        # could build anything
        return not (isinstance(func, ast.Name) and func.id in ctx.model.functions)
    if q.startswith("torch.nn.functional."):
        return not any(word in q.rsplit(".", 1)[-1] for word in _MODE_FUNCTIONS)
    if q.startswith("torch.nn."):
        layer = q.rsplit(".", 1)[-1]
        if layer in _RECURRENT:
            dropout = ctx.arg(call, "dropout", 5)
            return dropout is None or (isinstance(dropout, ast.Constant) and not dropout.value)
        if layer in _INSTANCE_NORMS:  # running statistics only with track_running_stats=True
            track = ctx.arg(call, "track_running_stats", 4)
            return track is None or (isinstance(track, ast.Constant) and not track.value)
        return layer in _MODE_FREE_LAYERS or layer.endswith("Loss")
    return q.startswith(("torch.", "builtins.", "math."))
