from __future__ import annotations

import ast
import re

from torchreview.catalog import Rule
from torchreview.engine.semantic import FunctionNode, LoopNode
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text

_INFERENCE_WORDS = frozenset({"eval", "evaluate", "evaluation", "validate", "validation", "val", "test",
                              "predict", "prediction", "inference", "infer"})
_TRAINING_WORDS = frozenset({"train", "training", "fit"})
_SPLIT = re.compile(r"_+|(?<=[a-z])(?=[A-Z])")


class InferenceWithoutEval(Rule):
    """
    ## What it does
    Flags a model called for inference -- in an evaluation, validation, test
    or prediction function, or under `torch.no_grad()`/`torch.inference_mode()`
    -- when no `model.eval()` reaches that call: not earlier in the same
    function, and not before every call of that function in the module.

    ## Why is this bad?
    `no_grad()` only turns off autograd; it does not change module
    behaviour. A model left in training mode keeps dropping activations in
    `Dropout` layers and normalises with the statistics of the current
    batch in `BatchNorm` (updating the running averages as a side effect),
    so metrics are noisy, predictions change from call to call and depend
    on what else is in the batch.

    ## Example
    ```python
    import torch

    def evaluate(model, loader):
        correct = 0
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
        return correct
    ```

    ## Use instead
    ```python
    import torch

    def evaluate(model, loader):
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
        return correct
    ```

    ## Heuristics
    Evaluation functions are recognised by name (`evaluate`, `val_epoch`,
    `predict`, ...; not names that also say `train`/`fit`). Methods of
    `nn.Module`/`LightningModule` classes are skipped (the framework or the
    caller sets the mode), as are methods that only a base class defined
    elsewhere calls (`validation_step` of a trainer subclass), training
    loops and the training functions around them, except a loop-carrying
    `no_grad` block there (a validation pass). A model held in `self.attr` counts as evaluated when the class
    calls `self.attr.eval()` anywhere; models from `from_pretrained` are
    already in eval mode. Callers in other modules cannot be seen, test
    files are skipped, and so are smoke tests (`def test(): net = Net();
    y = net(torch.randn(2, 3, 32, 32))`), which check shapes, not
    predictions. A model built from a class of the same module (or an
    `nn.Sequential`, whose layers may also be names bound to layers: `NL =
    nn.Tanh()`) whose layers all behave the same in both modes (linear,
    convolution, recurrent layers without dropout, LayerNorm, InstanceNorm
    without `track_running_stats`, activations, pooling; no dropout, no
    BatchNorm, no `self.training`) is left alone: `eval()` would change
    nothing. Where it reports: a model whose construction is not visible
    (a parameter, an import) keeps the finding; a model known by its name
    only (an untyped parameter no call site of the module passes a model
    to) is reported with low confidence.
    """

    code = "TR207"
    name = "inference-without-eval"
    severity = Severity.MEDIUM
    kind = "likely-defect"
    severity_reason = (
        "Silently wrong results: dropout and batch-norm updates stay on during evaluation. Medium: it "
        "affects reported metrics, not the trained weights, and a caller elsewhere may set the mode."
    )
    extra_review = ("BR",)
    summary = "model used for inference while still in training mode (no `model.eval()`)"

    def check_file(self, ctx) -> None:
        if ctx.is_test_file:
            return
        flow = ctx.flow
        reported: set[ast.AST] = set()
        regions: list[tuple[ast.AST, list[ast.stmt], str]] = []
        for funcs in ctx.model.functions.values():
            for func in funcs:
                if ctx.in_module_class(func) or func in flow.training_functions or \
                        ctx.flow.run_by_base_class(func):
                    continue
                if _is_inference_name(func.name):
                    regions.append((func, func.body, f"`{func.name}`"))
                elif flow.function_grad_disabled(func):
                    regions.append((func, func.body, f"`{func.name}` (autograd disabled)"))
        for with_node in (*ctx.model.nodes_by_type.get(ast.With, ()),
                          *ctx.model.nodes_by_type.get(ast.AsyncWith, ())):
            if not flow.disables_grad(with_node):
                continue
            if ctx.in_module_class(with_node) or flow.training_loop_of(with_node) is not None:
                continue
            func = ctx.enclosing_function(with_node)
            if func is not None and ctx.flow.run_by_base_class(func):
                continue
            if func in flow.training_functions and not _has_loop(with_node.body):
                continue  # EMA updates, sampling, logging inside a training function
            regions.append((with_node, with_node.body, f"the `{ctx.text(with_node.items[0].context_expr)}` block"))
        for owner, body, where in sorted(regions, key=lambda r: (r[0].lineno, r[0].col_offset)):
            call = self._first_unprepared_call(body, ctx)
            scope = ctx.enclosing_function(call) if call is not None else None
            if call is None or call in reported or (scope is not None and scope in reported):
                continue
            if ctx.advice.smoke_test(call):
                continue  # `def test(): net(torch.randn(...))` checks shapes, not predictions
            reported.update({call, scope} - {None})
            model = short_text(ctx, ctx.flow.called_model(call), "the model")
            # a model known by its name only (an untyped parameter nothing passes here) is a guess
            guess = ctx.known_by_name_only(ctx.flow.called_model(call))
            ctx.report(call, f"`{model}` is called for inference in {where} but no `{model}.eval()` "
                             "runs before it: dropout stays active and BatchNorm uses batch statistics; "
                             f"call `{model}.eval()` first (and `.train()` before training again)",
                       confidence="low" if guess else None)

    def _first_unprepared_call(self, body: list[ast.stmt], ctx) -> ast.Call | None:
        stack = list(reversed(body))
        while stack:
            node = stack.pop()
            if isinstance(node, (*FunctionNode, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(node, ast.Call) and ctx.flow.classify(node) == "forward" and \
                    not ctx.flow.eval_reaches(node) and not _mode_free_model(ctx, ctx.flow.called_model(node)):
                return node
            stack.extend(reversed(list(ast.iter_child_nodes(node))))
        return None


def _is_inference_name(name: str) -> bool:
    words = {w.lower() for w in _SPLIT.split(name) if w}
    return bool(words & _INFERENCE_WORDS) and not words & _TRAINING_WORDS


def _has_loop(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, LoopNode) for stmt in body for n in ast.walk(stmt))


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


def _mode_free_model(ctx, receiver: ast.AST) -> bool:
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
