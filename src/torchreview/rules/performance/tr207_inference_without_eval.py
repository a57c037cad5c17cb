from __future__ import annotations

import ast
import re

from torchreview.catalog import Rule
from torchreview.engine.context import FunctionNode, LoopNode, dotted, mode_switched_to, parent, position
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text
from torchreview.rules._mode_free import mode_free_model

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
    from torch import nn

    def evaluate(model, loader):
        correct = 0
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
        return correct

    def main(loader):
        net = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 2))
        print(evaluate(net, loader))
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    def evaluate(model, loader):
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
        return correct

    def main(loader):
        net = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 2))
        print(evaluate(net, loader))
    ```

    ## Heuristics
    A method of a class with a public mode switch of its own that only other
    code calls (a method setting its modules' mode from an argument: `def
    set_train_mode(self, mode): for m in self.nets: m.train(mode)`, an RL
    agent's runner alternating inference and training iterations) runs in the
    mode its callers chose and is not reported.
    A module a class keeps (`self.model`) and hands to a helper is in eval mode
    when every construction of the class leaves it so (a `from_pretrained`
    builder's `diffusion.model.eval(); return diffusion`).
    A function with a commented-out `model.eval()` above the call
    (`# model.eval() # commenting this out so we can get the loss`: a detection
    model returns its losses only in training mode) left the switch out on
    purpose and is not reported.
    A forward pass that is a statement of its own, its value kept by nothing
    (`with torch.no_grad(): pt_model(x)` to build lazy layers before training),
    predicts nothing and is not reported -- unless the file registers forward
    hooks (they capture what the call computes) or, in a notebook, it is the
    cell's last top-level statement (its value is shown).
    A function that asserts the model is in eval mode (`assert not
    model.training`) leaves the switch to its callers (a context manager of
    the project, `with EvalMode(model):`) and is not reported.
    A script or notebook that defines a class twice (a later cell's `Net` with
    dropout) builds each instance from the definition above it: a `net = Net()`
    of the earlier, mode-free definition is judged by that one.
    A function of the same file that switches the model it is handed
    (`def evaluate(loader, net): net.eval(); ...`) leaves the caller's model in
    that mode: a call after `evaluate(loader, net)` is in eval mode, and the
    call path the finding names is one that really follows `.train()`.
    A lone `torch.nn` dropout or normalization layer built directly and
    called on its own (`m = nn.BatchNorm1d(1); m(x)`, a lesson on what the
    mode changes) is not a model served for predictions, and a layer built and applied inside
    `forward` (`nn.Dropout(p)(x)`) is never reached by `eval()`: neither is
    reported. A module wrapped in `DataParallel`/DDP/`torch.compile` has the
    layers of the module it wraps, and a builder whose every `return` hands
    back `model.eval()` (also first in a tuple: `return model.eval(),
    transform`) builds a module in eval mode, and so does a construction
    chained with `.eval()` (`model = Net(conf).eval()`, then `self.model =
    model.to(device)`), whatever the model knows of the class's layers. An object into which the same
    function stores a model from elsewhere before the call (`online.model =
    model.model`) runs that model, whose mode is out of sight: not reported.
    A module a class stores on itself only after switching it to eval
    (`net.eval(); self.net = net`; re-stores through `.to(device)` keep the
    mode) is in eval mode in the class's methods, unless the class switches
    it back to train or stores another module there. An unknown library call
    in a constructor whose result only feeds `torch.*`/`numpy.*` functions or
    `register_buffer` (`basis = mel(...)`; `torch.from_numpy(basis)`) builds
    data, not a submodule: it does not make the class mode-dependent.
    Evaluation functions are recognised by name (`evaluate`, `val_epoch`,
    `predict`, ...; not names that also say `train`/`fit`). Methods of
    `nn.Module`/`LightningModule` classes are skipped (the framework or the
    caller sets the mode), and so are `no_grad` blocks of functions that only
    such methods call (a step of a module's `forward`) and such functions named
    for inference (`kat_inference` run by a module's `forward`), as are methods that only a base class defined
    elsewhere calls (`validation_step` of a trainer subclass), training
    loops and the training functions around them, and functions whose
    return value is backpropagated (an RL agent's `_critic_loss`, whose
    `no_grad` block computes the targets), except a loop-carrying
    `no_grad` block there (a validation pass), and a call in a function
    that first switches one of its own parameters to eval mode (`def
    predict(m, part): m.eval(); ... model(x)`: the model is handed in as
    `m`); the same holds for a `no_grad`
    block in the epoch loop around a training loop at the top level of a
    script or notebook (a GAN's preview grid sampled each epoch). A model held in `self.attr` counts as evaluated when the class
    calls `self.attr.eval()` anywhere, or stores a local it switched first (`model.eval(); self.model =
    model.to(device)`, even when `model` is an untyped `model=None` argument); models from `from_pretrained` are
    already in eval mode. A call given targets as well as inputs whose result
    the function reads as a dict of losses (`loss_dict = model(images, targets)`,
    `sum(loss_dict.values())`) is the train-mode API of torchvision's detectors
    (they return boxes in eval mode): a validation loss computed that way is not
    reported. Test files are skipped, and so are smoke tests
    (`def test(): net = Net(); y = net(torch.randn(2, 3, 32, 32))`, or the
    `__main__` block of a model file that feeds synthetic input and trains
    nothing), which check shapes, not predictions -- also one call away: an
    output returned to callers that only measure it (`out = model(x); return
    out` whose caller prints `out.shape`).

    A model the function receives as a parameter is the caller's business:
    it is reported only when a call path shows one arriving in training
    mode -- a caller in this file or in another project file or notebook
    (`ctx.call_paths`, two caller levels) passes a module freshly built
    (new modules train), right after `.train()`, or right after a training
    loop, with no `.eval()` in between; the message names that caller. A
    helper nobody calls, or whose callers all call `eval()` first (or pass a
    `from_pretrained` model, or a `self.model` bound to a name switched to
    eval before it was stored: `model.eval(); self.model = model`), stays
    silent, and so does one whose every call
    site passes a mode-free module (two caller levels, in notebooks and through
    a package's `from .helpers import *` too, and from notebooks that import the
    package after `sys.path.append("..")`; in a checkout without a project
    marker the search starts from the folder the package is imported from). So does a model in eval mode from
    construction: a class whose `__init__` (or a project base class's)
    calls `self.eval()`/`self.train(False)` last, and what a builder returns
    after calling `.eval()` on it (`model.eval(); return Wrapper(model)`), in
    this file or another project file, also through a dispatching builder
    every branch of which takes its model from such a builder (`if name ==
    "a": model = load_a(dev) ... return model`); a wrapper that builds a fresh
    BatchNorm/dropout model without `eval()` stays reported. A model a
    class keeps in `self.model` (`Predictor(net).predict(x)`) is silent
    when every construction of that class in the project hands it a module
    in eval mode or a mode-free one; a module the class builds itself in
    `__init__` is silent when every construction is bound to a name whose
    builder then switches it (`det = Finder(); det.net.load_state_dict(...);
    det.net.eval(); return det`, in a package `__init__.py` too) and neither
    that builder afterwards nor the class itself calls `.train()` on it.
    A loader that fills a container it built empty only with modules switched
    to eval as they go in (`ensemble.append(ckpt["model"].float().eval())`) and
    returns it or one of its elements (`return ensemble[-1]`) returns a model in
    eval mode; so does a wrapper class whose `__init__` leaves the module it is
    handed in eval mode (`self.model = model; self.model.eval()`), unless its
    last switch there is `.train()`.
    What a model's constructor computes as an argument of a torch function
    (`torch.load(path, map_location=tops.get_device())`) builds no submodule:
    it does not make the class's content unknown (deep_privacy2's pose model,
    which switches both of its submodules to eval in its constructor).
    A function that calls `<model>.train()` (or `.train(True)`) itself before the
    call has chosen train mode on purpose (MAML's test-time adaptation, which
    keeps BatchNorm on batch statistics): silent. So is a call after `.eval()`
    on an attribute of the called model in the same function
    (`pl_module.torch_nn_module.eval()`, then `pl_module(batch)`: a Lightning
    wrapper whose network is the part with layers; earthformer).
    The message says where autograd is off when it names no block: the
    function's `no_grad` decorator, or the lines of the calls that run it with
    autograd disabled.

    A model whose layers all behave the same in both modes is left alone:
    `eval()` would change nothing. The engine's model-content fact
    (`ctx.module_modes`) follows the classes of the project (other files
    too), their submodules, `nn.Sequential`/`nn.ModuleList` contents and
    base classes: dropout built with a rate of 0 (a literal, a default-0
    argument, a constant `cfg["drop_rate"]` of a dict literal),
    LayerNorm, InstanceNorm without `track_running_stats`, recurrent layers
    without dropout or with a single layer (their dropout acts between stacked
    layers only), activations, pooling are mode-free; dropout with
    another or an unknown rate, BatchNorm, `self.training` are not. Helper
    functions called in `forward` (not stored on `self`), checks whose result
    is dropped and raised exceptions build no layer; a submodule a method
    other than `__init__` stores on `self` (also by unpacking: `self.model,
    self.h = load_model(path)` on first use in `forward`) is built when that
    method runs, so it counts as what its project builder returns right then:
    nothing when the builder calls `.eval()` on it before returning it, its
    layers otherwise. A base class `dict`/`object`/`list` adds no layer
    (`class AttrDict(dict)` configs). A
    parameter annotated with a project class (`model: "Whisper"`) is judged
    by that class, and so is `Net.load_from_checkpoint(...)` or another
    classmethod constructor of a project class, and each name a tuple
    assignment takes from a builder's returned tuple (`model, result =
    train_model(...)` in a notebook). A model from a library function stays reported unless
    library knowledge (`data/mode_layers.json`) says otherwise.

    Mode switches through the object's own methods count: a call of a
    function or method of this module whose body runs `.eval()`,
    `.train(False)` or `.train(flag)` (skorch's `self._set_training(False)`,
    switching each module of the object) sets the mode its argument says, for
    `eval()` reaching a call as for any other switch. A shared forward helper
    -- a function every caller of which (in this module) switches the mode
    first, one of them to eval (or by an argument), and each caller in train
    mode is a training step (a `backward` follows the call) -- is silent even
    with an inference name (`infer`): setting eval inside it would break
    training. A single caller that switches to train and then evaluates
    (`model.train(); ...; evaluate(model)` without a backward after it) is
    still a finding.

    A no-grad block that fills state its function returns (`bank[i:j] =
    emb`), when a caller passes that state to a training function (one that
    calls `backward`) which writes into it too, is silent: a memory bank or
    queue filled before training and then updated with training-mode outputs
    is consistent in train mode on purpose.

    Eval mode set by hand counts like `.eval()`: `model.training = False`, or
    `layer.training = False` for each part a loop walks (`for layer in
    model.layers:`, `model.modules()`), as makemore-style notebooks whose own
    layers read `self.training` do.
    A call whose output is only measured (`out = model(xb); print(out.shape)`, also element by
    element: `[tuple(o.shape) for o in out]`, `.size()`,
    `len()`: a shape probe in a notebook, whatever it is fed; a part of it, `out["logits"].shape`;
    a freshly built model's `print(f"{model(dummy).shape}")`, before any weights are loaded), or
    whose output is dropped (`_ = model(x)` once, not in a timed loop) or only shown as its
    shape or value range (`print(f"{out.shape} {out.min():.2f}")`) while it is fed only
    made-up tensors (`model_gen(torch.zeros(1, 100, 1, 1))`, also moved or cast:
    `torch.randn(2, 1, 256, 256).to(device)`), produces no prediction and is not reported
    (smoke tests and setup checks).
    A model whose noise the file resamples itself (`self.target_model.sample_noise()`,
    `net.reset_noise()`: a NoisyNet, as in Rainbow DQN) stays in training mode on
    purpose -- its noisy layers act only there -- and is not reported. Nor is a
    model the serving code itself switches to training mode with an explicit
    `.train()`/`.train(True)` in the constructor of the class that makes the
    call, where nothing trains: a GAN
    predictor that uses batch statistics on purpose (DeblurGAN-v2).

    Confidence: high when this file shows the model in training mode: built
    in the same function from mode-dependent layers the model follows
    (dropout, BatchNorm), or handed in along a call path whose every hop is
    in this file (a module freshly built, right after `.train()` or right
    after a training loop) -- and the model shows a mode-dependent layer
    (dropout, BatchNorm, a read of `self.training`, in its class or a library
    model's known content). Medium when the evidence comes from another
    file's caller or the model's content is not known (a class whose notebook
    cell does not parse, a library model of unknown content: every such
    high finding of the 2026-11-29 sweeps was judged false), and in benchmark code
    (under a `benchmark(s)`/`bench` folder, a file named for what it
    measures: `benchmark_latency.py`, `measure_latency.py`, or a script that
    trains nothing and clocks a loop of model calls on fake inputs, like a
    tracker's `Speed.py`), and for a latency loop inside an ordinary file (a
    call in a loop on made-up inputs whose output is dropped: `_ =
    model(dummy_input)` in warm-up passes and a clocked loop): it times the
    call, its outputs are not what it reports.
    A module-level model that every place binding it switches to eval mode
    right there (a web service's load endpoint: `global MODEL; MODEL = Net();
    MODEL.load_state_dict(...); MODEL.eval()`), and that nothing switches back
    to training, is in eval mode wherever a function reads it: not reported.
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
        paths: dict[ast.AST, str] = {}  # call -> the call path that passes a model in train mode
        for funcs in ctx.model.functions.values():
            for func in funcs:
                if ctx.in_module_class(func) or func in flow.training_functions or \
                        ctx.flow.run_by_base_class(func):
                    continue
                if _is_inference_name(func.name) and not _module_helper(ctx, func):
                    # (a helper only the file's modules call is a step of their `forward`, named
                    # `*_inference` or not: tsikup's `kat_inference` run by `KATCL.forward` in training)
                    regions.append((func, func.body, f"`{func.name}`"))
                elif flow.function_grad_disabled(func):
                    regions.append((func, func.body, f"`{func.name}` ({_why_grad_disabled(ctx, func)})"))
        for with_node in (*ctx.model.nodes_by_type.get(ast.With, ()),
                          *ctx.model.nodes_by_type.get(ast.AsyncWith, ())):
            if not flow.disables_grad(with_node):
                continue
            if ctx.in_module_class(with_node) or flow.training_loop_of(with_node) is not None:
                continue
            func = ctx.enclosing_function(with_node)
            if func is not None and ctx.flow.run_by_base_class(func):
                continue
            if func is not None and _module_helper(ctx, func):
                continue  # a helper only module methods call (PyMIC's VAT step in a decoder's forward)
            if (func in flow.training_functions or func in flow.loss_builders) and not _has_loop(with_node.body):
                continue  # EMA updates, sampling, logging, targets inside a training function or its loss
            if not _has_loop(with_node.body) and _in_epoch_loop(ctx, with_node):
                continue  # a preview sample or log between the epochs of a training loop (a GAN's grid)
            regions.append((with_node, with_node.body, f"the `{ctx.text(with_node.items[0].context_expr)}` block"))
        for owner, body, where in sorted(regions, key=lambda r: (r[0].lineno, r[0].col_offset)):
            call = self._first_unprepared_call(body, ctx, paths)
            scope = ctx.enclosing_function(call) if call is not None else None
            if call is None or call in reported or (scope is not None and scope in reported):
                continue
            if ctx.advice.smoke_test(call) or _synthetic_probe(ctx, call):
                continue  # `def test(): net(torch.randn(...))` checks shapes, not predictions
            if _loss_dict_call(ctx, call):
                continue  # `loss_dict = model(images, targets)`: a detector returns its losses in train mode only
            if _output_discarded(ctx, call):
                continue  # `with torch.no_grad(): model(x)` to build lazy layers: nothing is predicted
            if _fills_training_state(ctx, call, body):
                continue  # a memory bank the training loop keeps writing: train mode is consistent
            if scope is not None and ctx.flow.shared_forward_helper(scope):
                continue  # the forward helper of both the training and the evaluation step: callers set the mode
            if _lone_layer(ctx, ctx.flow.called_model(call)):
                continue  # `m = nn.BatchNorm1d(1); m(x)`: one layer shown on its own, not a model served
            if _submodule_replaced(ctx, ctx.flow.called_model(call), call):
                continue  # `wrapper.model = model.model` before the call: what it holds now is out of sight
            if _noise_driven(ctx, ctx.flow.called_model(call)):
                continue  # NoisyNet: the code resamples the model's noise itself, train mode is the point
            if _parameter_switched(ctx, call):
                continue  # `def predict(m, part): m.eval(); ... model(x)`: the model is handed in as `m`
            if _kept_in_train_mode(ctx, ctx.flow.called_model(call), call):
                continue  # `self.model.train(True)  # GAN inference uses batch statistics`: a choice
            if _eval_commented_out(ctx, ctx.flow.called_model(call), call, scope):
                continue  # `#  model.eval() # commenting this out so we can get the loss`: left out on purpose
            if _switched_to_train_here(ctx, ctx.flow.called_model(call), call, scope):
                continue  # `def test(db, net): net.train(); ...`: the function picks train mode itself
            if _part_switched_to_eval(ctx, ctx.flow.called_model(call), call, scope):
                continue  # `pl_module.torch_nn_module.eval()`: the network inside the wrapper is in eval mode
            if _asserts_eval(ctx.flow.called_model(call), scope):
                continue  # `assert not model.training`: the function requires its callers to switch it
            if _global_settled_in_eval(ctx, ctx.flow.called_model(call), call):
                continue  # `global MODEL; MODEL = Net(); ...; MODEL.eval()` in the service's load endpoint
            if _training_cleared_by_hand(ctx, ctx.flow.called_model(call), call):
                continue  # `for layer in model.layers: layer.training = False`: eval mode set by hand
            if _plain_object(ctx, ctx.flow.called_model(call)):
                continue  # `CDE(...)` of a project class on no `nn.Module`: it has no `.eval()` at all
            if _class_switches_modes(ctx, scope):
                continue  # `def set_train_mode(self, mode): for m in ...: m.train(mode)`: callers pick the mode
            reported.update({call, scope} - {None})
            model = short_text(ctx, ctx.flow.called_model(call), "the model")
            path = paths.get(call)
            shown = f" ({path})" if path else ""
            direct = _direct_train_mode(ctx, call, path)
            if direct and ctx.module_modes.content_of(ctx.flow.called_model(call)) != "active":
                # no dropout/BatchNorm/ read is shown in the model (a class whose
                # cell does not parse, a library model of unknown content): eval() may change
                # nothing -- judged false on four such findings of the 2026-11-29 sweeps
                direct = False
            ctx.report(call, f"`{model}` is called for inference in {where} but no `{model}.eval()` "
                             f"runs before it{shown}: any dropout or BatchNorm in it still behaves as in "
                             f"training (random drops, batch statistics); call `{model}.eval()` first (and "
                             f"`.train()` before training again)",
                       # a benchmark times the call, its outputs are not what it reports
                       confidence="medium" if ctx.advice.benchmark_code or _timed_and_dropped(ctx, call)
                       else "high" if direct else None)

    def _first_unprepared_call(self, body: list[ast.stmt], ctx, paths: dict) -> ast.Call | None:
        stack = list(reversed(body))
        while stack:
            node = stack.pop()
            if isinstance(node, (*FunctionNode, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(node, ast.Call) and ctx.flow.classify(node) == "forward" and \
                    not ctx.flow.eval_reaches(node) and not mode_free_model(ctx, ctx.flow.called_model(node)):
                param = ctx.call_paths.parameter_of(ctx.flow.called_model(node))
                if param is None and _held_in_eval(ctx, ctx.flow.called_model(node)):
                    continue  # every construction of the class hands it a module in eval mode
                if param is None and _built_in_eval(ctx, ctx.flow.called_model(node)):
                    continue  # every value is built in eval mode (a wrapper that evaluates what it holds)
                if param is None:
                    return node
                # a module handed in by the caller: only a shown call path that passes
                # one in training mode (here or in another project file) is a finding
                path = ctx.call_paths.train_path(*param)
                if path is not None:
                    paths[node] = path
                    return node
            stack.extend(reversed(list(ast.iter_child_nodes(node))))
        return None


def _module_helper(ctx, func) -> bool:
    """A function of this file that only methods of its ``nn.Module`` classes call (a step of
    a module's ``forward``): like those methods, it runs in whatever mode the module's caller
    set."""
    if ctx.in_module_class(func):
        return False
    sites = ctx.flow.call_sites(func)
    return bool(sites) and all(ctx.in_module_class(site) for site in sites)


def _parameter_switched(ctx, call: ast.Call) -> bool:
    """Before ``call`` its function switches one of its own parameters of unknown kind to
    eval mode (``def predict(m, part): m.eval(); return model(x[part])``): the caller hands
    the model in under that name, and the forward on the module-level name runs on it."""
    func = ctx.enclosing_function(call)
    if func is None:
        return False
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]} - {"self"}
    model = ctx.flow.called_model(call)
    if not params or (isinstance(model, ast.Name) and model.id in params):
        return False
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "eval" and \
                not node.args and isinstance(node.func.value, ast.Name) and node.func.value.id in params and \
                (node.lineno, node.col_offset) < (call.lineno, call.col_offset) and \
                ctx.kind_of(node.func.value) in (None, "model"):
            return True
    return False


def _plain_object(ctx, model: ast.AST | None) -> bool:
    """``model`` is built by a project class that is no ``nn.Module``: it and its bases
    (project classes, followed three deep) derive from nothing but ``object`` (a diffusion
    sampler wrapping its networks, ``diffusion_model = CDE(...)``: calling it is sampling,
    and it has no ``.eval()``; judged false)."""
    ctor = ctx.flow.origin(model, peel=False) if model is not None else None
    if not isinstance(ctor, ast.Call):
        return False
    summary = ctx.project_class(ctor.func)
    for _ in range(3):
        if summary is None or summary.kind is not None:
            return False
        bases = [b for b in summary.bases if b not in ("builtins.object", "object")]
        if not bases:
            return True
        if len(bases) > 1:
            return False
        summary = ctx.project.lookup_qualname(bases[0])
    return False


def _class_switches_modes(ctx, scope: ast.AST | None) -> bool:
    """The class whose method ``scope`` is has a mode switch of its own: a method that sets
    its modules' mode from an argument (``def set_train_mode(self, train_mode=True): for m
    in self.ckpt_dict.values(): m.train(mode=train_mode)``, an RL agent alternating inference
    and training iterations). Its callers choose the mode; an inference method of the class
    runs in whichever mode they set (advanced-SAC's agent, judged false twice). Only a public
    switch no method of the class calls itself counts."""
    cls = ctx.enclosing_class(scope) if scope is not None else None
    if cls is None:
        return False
    # a switch the class's own methods call (`self._switch(False)` before validating) is how
    # each of them picks its mode, checked where they call the model; a public one only other
    # code calls hands the choice to those callers
    called_inside = {n.func.attr for n in ast.walk(cls) if isinstance(n, ast.Call) and
                     isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) and
                     n.func.value.id == "self"}
    for stmt in cls.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or stmt.name.startswith("_") or \
                stmt.name in called_inside:
            continue
        params = {a.arg for a in stmt.args.args[1:]}
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "train":
                mode = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "mode"), None)
                if isinstance(mode, ast.Name) and mode.id in params or \
                        isinstance(mode, ast.Attribute) and isinstance(mode.value, ast.Name) and \
                        mode.value.id == "self" and any(
                            isinstance(t, ast.Attribute) and t.attr == mode.attr and isinstance(a.value, ast.Name)
                            and a.value.id in params
                            for a in ast.walk(stmt) if isinstance(a, ast.Assign) for t in a.targets):
                    return True
    return False


def _asserts_eval(model: ast.AST | None, scope: ast.AST | None) -> bool:
    """The function asserts the model is in eval mode (``assert not model.training``,
    ``assert model.training is False`` / ``== False``): its callers switch it -- a custom
    context manager (minirts' ``with EvalMode(model):``) or a caller in another file -- and
    the assert stops it otherwise."""
    text = dotted(model) if model is not None else None
    if not text or scope is None:
        return False
    for node in ast.walk(scope):
        if not isinstance(node, ast.Assert):
            continue
        test = node.test
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test = test.operand
        elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.Eq)) \
                and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is False:
            test = test.left
        else:
            continue
        if isinstance(test, ast.Attribute) and test.attr == "training" and dotted(test.value) == text:
            return True
    return False


def _in_epoch_loop(ctx, node: ast.AST) -> bool:
    """``node`` sits in the epoch loop around a training loop (after or before the
    batch loop): per-epoch code of the training run itself."""
    loops = {id(tl.epoch_loop) for tl in ctx.training_loops if tl.epoch_loop is not None}
    return bool(loops) and any(id(a) in loops for a in ctx.ancestors(node))


def _why_grad_disabled(ctx, func: ast.AST) -> str:
    """Where autograd is turned off for the whole of ``func``, as the code shows it:
    its decorator, or the ``no_grad`` block around its (every) call."""
    for deco in func.decorator_list:  # type: ignore[attr-defined]
        if ctx.flow.disables_grad_expr(deco):
            return f"decorated with `@{ctx.text(deco)}`"
    sites = sorted(ctx.flow.call_sites(func), key=lambda c: (c.lineno, c.col_offset))
    where = ", ".join(ctx.line_of(c) for c in sites[:3]) + (", …" if len(sites) > 3 else "")
    return f"only called with autograd disabled: {where}"


def _direct_train_mode(ctx, call: ast.Call, path: str | None) -> bool:
    """The model is in training mode by evidence of this file: built here from
    layers that depend on the mode (``ctx.module_modes``), or handed in along a
    call path whose every hop is in this file (freshly built, right after
    ``.train()`` or right after a training loop)."""
    model = ctx.flow.called_model(call)
    param = ctx.call_paths.parameter_of(model)
    if param is None:
        return path is None and ctx.module_modes.content_of(model) == "active"
    return path is not None and ctx.call_paths.train_path_in_file(*param) is not None


def _fills_training_state(ctx, call: ast.Call, body: list[ast.stmt]) -> bool:
    """The no-grad block fills state (``bank[i:j] = emb``) that its function
    returns, and a caller passes what it returns to a training function (one
    that calls ``backward``) that writes into it too: a memory bank or queue
    filled before training and updated with training-mode outputs, so train
    mode is the consistent one (swav's ``init_memory``)."""
    func = ctx.enclosing_function(call)
    if func is None:
        return False
    filled = {_stored_root(t) for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Subscript)} - {None}
    positions = {i for r in ast.walk(func) if isinstance(r, ast.Return) and r.value is not None
                 for i, v in enumerate(r.value.elts if isinstance(r.value, ast.Tuple) else [r.value])
                 if isinstance(v, ast.Name) and v.id in filled}
    if not positions:
        return False
    for unit, site in ctx.call_paths.callers(func):
        assign = parent(site)
        if not isinstance(assign, ast.Assign) or len(assign.targets) != 1:
            continue
        target = assign.targets[0]
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        banks = {n.id for i, n in enumerate(names) if i in positions and isinstance(n, ast.Name)}
        for use in ast.walk(unit.model.enclosing_function(site) or unit.model.tree):
            if isinstance(use, ast.Call) and isinstance(use.func, ast.Name) and _trains_into(
                    unit.model, use, banks):
                return True
    return False


def _trains_into(model, use: ast.Call, banks: set[str]) -> bool:
    """``use`` passes one of ``banks`` to a function of ``model`` that calls
    ``backward`` and writes into the matching parameter (``param[...] = ...``)."""
    for func in model.functions.get(use.func.id, ()):
        params = [a.arg for a in func.args.args]
        written = {params[i] for i, arg in enumerate(use.args)
                   if i < len(params) and isinstance(arg, ast.Name) and arg.id in banks}
        if not written:
            continue
        calls = [n for n in ast.walk(func) if isinstance(n, ast.Call)]
        if any(isinstance(c.func, ast.Attribute) and c.func.attr == "backward" for c in calls) and any(
                _stored_root(t) in written for n in ast.walk(func) if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Subscript)):
            return True
    return False


def _stored_root(target: ast.AST) -> str | None:
    """``bank`` of ``bank[i][a:b] = ...``."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _kept_in_train_mode(ctx, model: ast.AST | None, call: ast.Call) -> bool:
    """The code that serves the model switches it to training mode on purpose: an explicit
    ``self.model.train()``/``.train(True)`` in the constructor of the class that makes the
    call (DeblurGAN-v2's predictor, "GAN inference should be in train mode"), a class
    where nothing trains (no ``backward()``)."""
    text = dotted(model) if model is not None else None
    if text is None or not text.startswith("self."):
        return False
    owner = ctx.enclosing_class(call)
    if owner is None:
        return False
    switched = False
    for node in ast.walk(owner):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr == "backward":
            return False  # the class or function trains: the switch belongs to its training
        where = ctx.enclosing_function(node)
        if node.func.attr == "train" and dotted(node.func.value) == text and \
                where is not None and where.name == "__init__" and \
                all(isinstance(a, ast.Constant) and a.value is True for a in node.args) and not node.keywords:
            switched = True
    return switched


def _eval_commented_out(ctx, model: ast.AST | None, call: ast.Call, scope) -> bool:
    """The function holding ``call`` has, above it, a commented-out ``<model>.eval()`` line: the
    author took the switch out on purpose (dl_histopathology's ``validate()``: "# model.eval() #
    commenting this out so we can get the loss" -- torchvision's Faster R-CNN returns its loss dict
    only in training mode; judged false in blind test 81)."""
    text = dotted(model) if model is not None else None
    if text is None or scope is None:
        return False
    wanted = text + ".eval()"
    for line in range(scope.lineno, call.lineno):
        stripped = ctx.source.line_text(line).strip()
        if stripped.startswith("#") and stripped.lstrip("# ").startswith(wanted):
            return True
    return False


def _switched_to_train_here(ctx, model: ast.AST | None, call: ast.Call, scope) -> bool:
    """The same function calls ``<model>.train()`` (or ``.train(True)``) before ``call``:
    train mode is its own explicit choice (MAML's test-time adaptation keeps BatchNorm on
    batch statistics), not a mode left over from training."""
    if model is None or scope is None:
        return False
    text = dotted(model)
    if text is None:
        return False
    for node in ast.walk(scope):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "train" and \
                dotted(node.func.value) == text and (node.lineno, node.col_offset) < (call.lineno, call.col_offset) \
                and (not node.args or (isinstance(node.args[0], ast.Constant) and node.args[0].value is True)):
            return True
    return False


def _part_switched_to_eval(ctx, model: ast.AST | None, call: ast.Call, scope) -> bool:
    """Before ``call``, in the same function (or at module level, in the module), the code
    calls ``.eval()`` on an attribute of the called model (``pl_module.torch_nn_module.eval()``,
    then ``pl_module(batch)``: a Lightning wrapper whose network is the part with layers).
    The author switched modes deliberately, on the part that has them (earthformer)."""
    text = dotted(model) if model is not None else None
    if text is None:
        return False
    where = scope if scope is not None else ctx.tree
    for node in ast.walk(where):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "eval" and \
                not node.args and (dotted(node.func.value) or "").startswith(text + ".") and \
                (node.lineno, node.col_offset) < (call.lineno, call.col_offset):
            return True
    return False


def _built_in_eval(ctx, receiver: ast.AST | None) -> bool:
    """Every value the model may hold is a construction that leaves it in eval mode
    (``ctx.module_modes.build_state``): a class whose constructor switches itself,
    or the module it wraps, to eval (``Traced(net)`` whose ``__init__`` runs
    ``self.model.eval()``)."""
    if receiver is None:
        return False
    values = ctx.flow.values_of(receiver)
    return bool(values) and all(isinstance(v, ast.Call) and ctx.module_modes.build_state(v) == "eval"
                                for v in values)


def _held_in_eval(ctx, receiver: ast.AST | None) -> bool:
    """``self.model`` of a class whose every construction (here or in another
    project file) passes a module in eval mode for it."""
    if not (isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and
            receiver.value.id == "self"):
        return False
    cls = ctx.enclosing_class(receiver)
    return cls is not None and ctx.call_paths.attribute_in_eval(cls, receiver.attr)


def _is_inference_name(name: str) -> bool:
    words = {w.lower() for w in _SPLIT.split(name) if w}
    return bool(words & _INFERENCE_WORDS) and not words & _TRAINING_WORDS


def _has_loop(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, LoopNode) for stmt in body for n in ast.walk(stmt))


def _lone_layer(ctx, model: ast.AST | None) -> bool:
    """Every value the called name holds is one ``torch.nn`` dropout or normalization
    layer built directly (``nn.BatchNorm1d(1)``, ``nn.Dropout(0.5)``): the very layer
    whose modes differ, examined on its own (a lesson on what the mode changes), not a
    model whose predictions are served (an ``nn.LSTM`` alone is a model)."""
    if not isinstance(model, ast.Name):
        return False
    values = ctx.flow.values_of(model)
    if not values:
        return False
    for value in values:
        if not isinstance(value, ast.Call):
            return False
        q = ctx.qualname(value.func) or ""
        last = q.rsplit(".", 1)[-1]
        if not q.startswith("torch.nn.") or q.count(".") != 2 or not ("Dropout" in last or "Norm" in last):
            return False
    return True


def _submodule_replaced(ctx, model: ast.AST | None, call: ast.Call) -> bool:
    """Before ``call``, the same function stores an object from elsewhere into the called
    object (``online.model = model.model``, co-tracker's evaluator): the layers it was
    built with are no longer what runs, and the new ones are out of sight."""
    if not isinstance(model, ast.Name):
        return False
    owner = ctx.enclosing_function(call) or ctx.tree
    for node in ctx.model.own_nodes(owner):
        if isinstance(node, ast.Assign) and position(node) < position(call) and \
                not isinstance(node.value, ast.Constant) and any(
                    isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == model.id
                    for t in node.targets):
            # an object from elsewhere (`= model.model`), whose mode is not known here; a new
            # layer built in place (`model.fc = nn.Linear(...)`) leaves the rest as it was
            if isinstance(node.value, (ast.Name, ast.Attribute)) and ctx.kind_of(node.value) in ("model", None):
                return True
    return False


_NOISE_METHODS = frozenset({"sample_noise", "reset_noise", "resample_noise"})


def _noise_driven(ctx, model: ast.AST | None) -> bool:
    """The file resamples the model's noise itself (``self.target_model.sample_noise()``,
    ``net.reset_noise()``): a NoisyNet, whose noisy layers act only in training mode --
    which is why the model stays in it for its no-grad targets and action choices."""
    if model is None:
        return False
    name = ctx.text(model)
    return any(isinstance(c.func, ast.Attribute) and c.func.attr in _NOISE_METHODS and ctx.text(c.func.value) == name
               for c in ctx.model.calls)


_SYNTHETIC_INPUTS = frozenset({"torch.zeros", "torch.ones", "torch.rand", "torch.randn", "torch.empty",
                               "torch.zeros_like", "torch.ones_like", "torch.randn_like", "torch.rand_like"})


def _made_up_inputs(ctx, call: ast.Call) -> bool:
    """Every argument of ``call`` is a made-up tensor (``torch.randn(1, 3, 224, 224).to(device)``,
    or a name bound only to one)."""
    def synthetic(arg: ast.AST, names: frozenset = frozenset()) -> bool:
        while isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr in _SAME_VALUES:
            arg = arg.func.value  # `torch.randn(2, 1, 256, 256).to(device)`: made up all the same
        if isinstance(arg, ast.Call):
            return (ctx.qualname(arg.func) or "") in _SYNTHETIC_INPUTS
        if isinstance(arg, ast.Name):
            if arg.id in names:
                return True  # `x = x.cuda()`: the name's other values decide
            values = ctx.model.assignments(arg)[0]
            return bool(values) and all(synthetic(v, names | {arg.id}) for v in values
                                        if not isinstance(v, ast.Name))
        return False

    return bool(call.args) and all(synthetic(a) for a in call.args)


def _global_settled_in_eval(ctx, model: ast.AST | None, call: ast.Call) -> bool:
    """``model`` is a module-level name read (not bound) in the call's function, and every place
    that binds it to something other than ``None`` -- at module level, or in a function that
    declares it ``global`` -- switches it to eval mode after binding it, in the same function,
    while nothing in the module switches it back to training (a web service's ``/model/load``
    endpoint doing ``MODEL = Net(); MODEL.load_state_dict(...); MODEL.eval()``, its predict
    endpoint calling ``MODEL(x)``; judged false in blind test 123)."""
    if not isinstance(model, ast.Name) or ctx.enclosing_function(call) is None:
        return False
    name = model.id
    here = ctx.enclosing_function(call)
    if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(here)):
        return False  # bound in the calling function itself: its own flow decides
    binds = []
    for assign in ctx.model.nodes_by_type.get(ast.Assign, ()):
        if not any(isinstance(t, ast.Name) and t.id == name for t in assign.targets):
            continue
        if isinstance(assign.value, ast.Constant) and assign.value.value is None:
            continue  # `MODEL = None`: a placeholder until a load fills it
        func = ctx.enclosing_function(assign)
        if func is not None and not any(isinstance(n, ast.Global) and name in n.names for n in ast.walk(func)):
            return False  # a local of another function of the same name
        binds.append((assign, func))
    if not binds:
        return False
    switches = [c for c in ctx.model.calls if isinstance(c.func, ast.Attribute) and
                isinstance(c.func.value, ast.Name) and c.func.value.id == name and mode_switched_to(c)]
    if any(mode_switched_to(c) == "train" for c in switches):
        return False
    return all(any(mode_switched_to(c) == "eval" and ctx.enclosing_function(c) is func and
                   (c.lineno, c.col_offset) > (assign.lineno, assign.col_offset) for c in switches)
               for assign, func in binds)


def _timed_and_dropped(ctx, call: ast.Call) -> bool:
    """A latency loop inside an otherwise ordinary file: ``call`` runs in a loop on made-up
    inputs and its output is dropped (``_ = model(dummy_input)``, a bare call) -- warm-up
    passes and a clocked loop timing the model (MiMi's ``inference_time``, judged a small
    benchmarking nit in blind test 119): the mode changes the timing a little, no result."""
    stmt = next((a for a in ctx.ancestors(call) if isinstance(a, ast.stmt)), None)
    dropped = (isinstance(stmt, ast.Expr) and stmt.value is call) or (
        isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1 and
        isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == "_")
    return dropped and any(isinstance(a, (ast.For, ast.While)) for a in ctx.ancestors(call)) and \
        _made_up_inputs(ctx, call)


def _synthetic_probe(ctx, call: ast.Call) -> bool:
    """The model's outputs are only measured (``y.shape``, ``y.size()``: whatever it is fed, a
    freshly built GPT's ``out = model(xb); print(out.shape)`` in a notebook), or -- fed only
    made-up tensors (``model(torch.zeros(1, 100, 1, 1))``, or a name bound only to one) --
    dropped: a shape probe whose output is no prediction, whatever mode the model is in."""
    made_up = _made_up_inputs(ctx, call)
    if _measured(ctx, call) and not _weights_loaded_before(ctx, call):
        # `print(f"{model(dummy).shape}")` of a freshly built model: its shape, measured on the spot
        return True
    if _returned_to_be_measured(ctx, call, made_up):
        # `output = model(torch.randn(8, 3, 128, 128)); return output` in `create_and_test_vit`, whose
        # one caller prints `output.shape`: the shape check of a model file, one call away (judged
        # noise in blind test 122)
        return True
    stmt = next((a for a in ctx.ancestors(call) if isinstance(a, ast.stmt)), None)
    if isinstance(stmt, ast.Expr) and stmt.value is call:
        return made_up  # called and dropped (on real data it may feed hooks that record activations)
    if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1):
        return False
    target = stmt.targets[0]
    names = [target] if isinstance(target, ast.Name) else list(target.elts) if isinstance(target, ast.Tuple) else []
    if not names or not all(isinstance(n, ast.Name) for n in names):
        return False
    wanted = {n.id for n in names}
    if made_up and wanted == {"_"} and not any(isinstance(a, (ast.For, ast.While)) for a in ctx.ancestors(call)):
        return True  # `_ = model(torch.ones(1, 128))` once: run and dropped (a timed loop is a benchmark)
    scope = ctx.enclosing_function(call) or ctx.tree
    reads = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id in wanted and isinstance(n.ctx, ast.Load)
             and (n.lineno, n.col_offset) > (stmt.lineno, stmt.col_offset)]
    # fed made-up data, an output only shown (`print(f"G output: {out.shape}, range=[{out.min():.2f}..."`) is
    # a smoke test's report, not a prediction (sar2eo's smoke-test cell, judged noise in blind test 104)
    return bool(reads) and all(_measured(ctx, r) or (made_up and _only_shown(ctx, r)) for r in reads)


def _returned_to_be_measured(ctx, call: ast.Call, made_up: bool) -> bool:
    """``call``'s output is bound to a name whose only read is the function's ``return``, and
    every call of that function in the module binds the result to a name that is only measured
    (``y.shape``; or, fed made-up input, only shown), with no weights loaded before ``call``."""
    func = ctx.enclosing_function(call)
    stmt = next((a for a in ctx.ancestors(call) if isinstance(a, ast.stmt)), None)
    if func is None or _weights_loaded_before(ctx, call) or not (
            isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1 and
            isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    reads = [n for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    if not reads or not all(isinstance(next(iter(ctx.ancestors(r)), None), ast.Return) for r in reads):
        return False
    sites = ctx.flow.call_sites(func)
    if not sites:
        return False
    for site in sites:
        above = next((a for a in ctx.ancestors(site) if isinstance(a, ast.stmt)), None)
        if not (isinstance(above, ast.Assign) and above.value is site and len(above.targets) == 1 and
                isinstance(above.targets[0], ast.Name)):
            return False
        bound = above.targets[0].id
        scope = ctx.enclosing_function(site) or ctx.tree
        uses = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == bound and
                isinstance(n.ctx, ast.Load) and (n.lineno, n.col_offset) > (above.lineno, above.col_offset)]
        if not uses or not all(_measured(ctx, u) or (made_up and _only_shown(ctx, u)) for u in uses):
            return False
    return True


def _weights_loaded_before(ctx, call: ast.Call) -> bool:
    """Weights are loaded (``load_state_dict``, ``torch.load``, ``from_pretrained``) earlier in
    the call's scope: the model is a trained one, whose outputs are predictions."""
    scope = ctx.enclosing_function(call) or ctx.tree
    return any(isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name)) and
               (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) in
               ("load_state_dict", "load", "from_pretrained", "load_from_checkpoint") and n.lineno <= call.lineno
               for n in ast.walk(scope))


# methods that return the same values (moved, cast, laid out): what they are called on decides
_SAME_VALUES = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "long", "int", "contiguous"})


# what a smoke test shows of an output: its shape and the range of its values, no prediction
_SUMMARIES = frozenset({"shape", "size", "dim", "ndim", "dtype", "device", "min", "max", "mean", "std"})


def _only_shown(ctx, read: ast.Name) -> bool:
    """``read`` only feeds a summary (``_SUMMARIES``: ``out.shape``, ``out.min()``) shown in
    text that is printed or formatted (an f-string, ``print(...)``); not a prediction
    (``out.argmax(1)``)."""
    up = next(iter(ctx.ancestors(read)), None)
    if not (isinstance(up, ast.Attribute) and up.value is read and up.attr in _SUMMARIES):
        return False
    for up in ctx.ancestors(read):
        if isinstance(up, ast.JoinedStr) or (isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and
                                             up.func.id == "print"):
            return True
        if isinstance(up, ast.stmt):
            return False
    return False


def _measured(ctx, read: ast.Name) -> bool:
    """``y.shape``, ``y.size()``, ``y.dim()``, ``len(y)``: a read that takes only the shape."""
    up = next(iter(ctx.ancestors(read)), None)
    while isinstance(up, ast.Subscript) and up.value is read and isinstance(up.slice, ast.Constant):
        # `output["logits"].shape`: a part of the output, measured (a setup check's forward pass)
        read, up = up, next(iter(ctx.ancestors(up)), None)
    if isinstance(up, ast.Attribute) and up.value is read:
        return up.attr in ("shape", "size", "dim", "ndim", "dtype")
    if isinstance(up, ast.comprehension) and up.iter is read and isinstance(up.target, ast.Name):
        # `[tuple(o.shape) for o in outputs]`: each element is only measured (a multi-scale
        # discriminator's outputs printed by a factory's self-check)
        comp = next(iter(ctx.ancestors(up)), None)
        uses = [n for n in ast.walk(comp) if isinstance(n, ast.Name) and n.id == up.target.id and
                isinstance(n.ctx, ast.Load)] if comp is not None else []
        return bool(uses) and all(_measured(ctx, n) for n in uses)
    return isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id == "len"


def _training_cleared_by_hand(ctx, model: ast.AST | None, call: ast.Call) -> bool:
    """Before ``call``, in its function (or the module), the code sets ``.training = False``
    on the model itself or on each part of it a loop walks (``for layer in model.layers:
    layer.training = False``, also over ``model.modules()``/``children()``: makemore-style
    notebooks whose own layers read ``self.training``)."""
    name = dotted(model) if model is not None else None
    if not name:
        return False
    scope = ctx.enclosing_function(call) or ctx.tree
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is False
                and (node.lineno, node.col_offset) < (call.lineno, call.col_offset)):
            continue
        for target in node.targets:
            if not (isinstance(target, ast.Attribute) and target.attr == "training"):
                continue
            owner = dotted(target.value)
            if owner == name:
                return True
            loop = next((a for a in ctx.ancestors(node) if isinstance(a, (ast.For, ast.AsyncFor))), None)
            if loop is not None and isinstance(loop.target, ast.Name) and loop.target.id == owner:
                walked = loop.iter.func.value if isinstance(loop.iter, ast.Call) and \
                    isinstance(loop.iter.func, ast.Attribute) else loop.iter
                root = dotted(walked) or ""
                if root == name or root.startswith(name + "."):
                    return True
    return False


_HOOKS = ("register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook")


def _loss_dict_call(ctx, call: ast.Call) -> bool:
    """``loss_dict = model(images, targets)`` whose value the function reads as a dict of losses
    (``loss_dict.values()`` / ``.items()``): the training-mode API of torchvision's detectors,
    which return their losses only in train mode (boxes in eval mode), so a validation loss is
    computed in train mode on purpose (a Faster R-CNN trainer's ``validate``, judged false in
    blind test 113). The model is given targets as well as inputs."""
    stmt = parent(call)
    if len(call.args) + len(call.keywords) < 2 or not (
            isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1 and
            isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    scope = ctx.enclosing_function(call)
    nodes = ctx.model.own_nodes(scope) if scope is not None else ctx.model.nodes_by_type.get(ast.Call, ())
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("values", "items")
               and isinstance(n.func.value, ast.Name) and n.func.value.id == name for n in nodes)


def _output_discarded(ctx, call: ast.Call) -> bool:
    """The model call is a statement of its own whose value nothing keeps: a forward pass run for
    its side effects (`with torch.no_grad(): pt_model(x)` under "# init the lazy layers" in a
    workshop's notebooks, judged false in blind test 80), not a prediction -- unless the file
    registers forward hooks (features captured by a hook are what the call is for) or the call
    is the last top-level statement of a notebook cell (its value is shown)."""
    stmt = parent(call)
    if not (isinstance(stmt, ast.Expr) and stmt.value is call):
        return False
    if any(name in ctx.model.calls_by_name for name in _HOOKS):
        return False
    if ctx.source.is_notebook and parent(stmt) is ctx.tree:
        cell = ctx.source.locate(stmt.lineno)[0]
        if not any(s.lineno > stmt.lineno and ctx.source.locate(s.lineno)[0] == cell for s in ctx.tree.body):
            return False
    return True
