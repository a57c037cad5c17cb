from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import FunctionNode, parent
from torchreview.findings import Severity

# torch.nn classes that hold parameters (or containers that may): an unused one
# wastes memory and trips DDP; parameter-free layers (Dropout, ReLU) do not.
_WITH_PARAMETERS = ("Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                    "ConvTranspose2d", "ConvTranspose3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
                    "SyncBatchNorm", "LayerNorm", "GroupNorm", "RMSNorm", "Embedding", "EmbeddingBag",
                    "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "MultiheadAttention",
                    "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
                    "TransformerDecoderLayer", "PReLU", "Sequential", "ModuleList", "ModuleDict",
                    "ParameterList", "ParameterDict")
_DYNAMIC = frozenset({"getattr", "children", "named_children", "modules", "named_modules", "_modules",
                      "__dict__", "vars", "get_submodule"})
# What ``__init__`` itself may use to walk its layers (weight init) without "using" them.
_INIT_WALKS = frozenset({"children", "named_children", "modules", "named_modules"})


class UnusedSubmodule(Rule):
    """
    ## What it does
    Flags sub-modules with parameters that an `nn.Module`'s `__init__` creates
    (`self.proj = nn.Linear(...)`) but that no method of the class (or of a
    subclass in the same file) ever reads.

    ## Why is this bad?
    The layer's parameters are still registered: they take memory, are saved
    in every checkpoint, get weight decay and optimizer state, and never
    receive a gradient. Under `DistributedDataParallel` that last point is an
    error ("Expected to have finished reduction in the prior iteration") unless
    `find_unused_parameters=True` is paid for on every step. Usually the layer
    was meant to be used and the forward pass is wrong.

    ## Example
    ```python
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 8)
            self.norm = nn.LayerNorm(8)

        def forward(self, x):
            return self.body(x)
    ```

    ## Use instead
    ```python
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 8)
            self.norm = nn.LayerNorm(8)

        def forward(self, x):
            return self.norm(self.body(x))
    ```

    ## Heuristics
    Any read of `self.<name>` outside its own assignment counts as a use
    (loops over `[self.a, self.b]`, helpers returning it, other methods,
    methods of same-file base classes and subclasses, other layers in
    `__init__` built from it). Classes that reach their
    sub-modules dynamically (`getattr`, `self.children()`, `self.modules()`,
    `self._modules`, ...), classes without a `forward`, parameter-free layers,
    containers that only wrap layers the class already holds
    (`nn.Sequential(*self.stages)`) and test files are skipped.

    A read through an enclosing module counts too: `self.net.fine_matcher(...)`
    (or `refiner.refine_head(...)`) where `self.net` / `refiner` is assigned an
    instance of the class, in this file or a neighbouring project file (the
    modules it imports and the files that import it) that names the class.

    A likely defect only where an unused parameter breaks training: this file
    or a neighbouring project file wraps a model in `DistributedDataParallel`
    without `find_unused_parameters=True`. Elsewhere (no DDP nearby, or a DDP
    wrapper that passes `find_unused_parameters=True`) the dead layer costs
    only memory, checkpoint size and optimizer state: low advice, hidden by
    default. A class whose `forward` is a stub left to be written (only a
    docstring, `pass`, `...`, `raise NotImplementedError` or `return x`
    unchanged -- an exercise skeleton) is not reported.

    Kept for a pretrained checkpoint: when the class's methods (or a function
    that builds it) load a state dict strictly (`load_state_dict` without
    `strict=False`) together with a download of weights
    (`load_state_dict_from_url`, `load_url`, `hf_hub_download`,
    `from_pretrained`) or an `__init__` taking `pretrained` -- or a
    neighbouring file that names the class does both -- removing the layer
    breaks loading, so the finding is low advice, hidden by default. A model
    resumed from the project's own checkpoint, or loaded with `strict=False`,
    is judged by the DDP rule above.
    """

    code = "TR516"
    name = "unused-submodule"
    severity = Severity.MEDIUM
    kind = "likely-defect"
    severity_reason = (
        "Parameters trained for nothing, and DDP without find_unused_parameters=True raises on unused "
        "parameters. A likely defect only when such a DDP wrapper is in this file or a neighbouring one "
        "(the module may still be used by code we cannot follow); elsewhere the dead weights cost only "
        "memory and optimizer state: low advice. Low advice too when a pretrained checkpoint is loaded "
        "strictly into the class: the layer must stay for loading. Silent when forward is a stub."
    )
    summary = "Sub-module created in `__init__` but never used"
    node_types = (ast.ClassDef,)

    def check(self, node: ast.ClassDef, ctx) -> None:
        if node.name not in ctx.model.module_classes or ctx.is_test_file:
            return
        methods = {s.name: s for s in node.body if isinstance(s, FunctionNode)}
        init = methods.get("__init__")
        if init is None or "forward" not in methods or _is_stub(methods["forward"]):
            return  # a skeleton's forward (``pass``, ``...``, ``return x``): the layers are for later
        created = [t for stmt in ctx.model.subtree(init) if isinstance(stmt, ast.Assign)
                   for t in stmt.targets if isinstance(t, ast.Attribute) and _is_self(t.value)
                   and _has_parameters(stmt.value, ctx)]
        if not created:
            return  # nothing with parameters is created: no need to read the class
        family = _family(node, ctx)
        reads: set[str] = set()
        name_t, attribute_t = ast.Name, ast.Attribute  # the parser's exact types: no subclasses
        for cls in family:
            for sub in ctx.model.subtree(cls):
                t = type(sub)
                if t is name_t:
                    if sub.id in _DYNAMIC:
                        return
                elif t is attribute_t:
                    if sub.attr in _DYNAMIC and _is_self(sub.value) and not (
                            sub.attr in _INIT_WALKS and ctx.enclosing_function(sub) is init):
                        return
                    if _is_self(sub.value) and not _is_own_store(sub):
                        reads.add(sub.attr)
        pretrained = ddp = None
        for target in created:
            if target.attr in reads or ctx.call_paths.reads_through_instance(node.name, target.attr):
                continue  # an enclosing module reads it: ``self.net.fine_matcher(...)``
            if pretrained is None:
                pretrained = _loads_pretrained(node, family, ctx)
            if pretrained:
                # kept so a pretrained checkpoint loads strictly: removing it breaks loading
                ctx.report(target, f"`self.{target.attr}` is never used by `{node.name}`, but the pretrained "
                                   "checkpoint loaded into it (strictly) holds its weights: keep it for loading, "
                                   "and pass `find_unused_parameters=True` if it is ever trained under DDP",
                           kind="advice", severity=Severity.LOW)
                continue
            if ddp is None:
                ddp = ctx.call_paths.strict_ddp_nearby()
            if not ddp:
                ctx.report(target, f"`self.{target.attr}` is created in `__init__` but never used by "
                                   f"`{node.name}`: dead parameters (memory, checkpoint size, optimizer "
                                   "state); remove it, or use it in `forward`",
                           kind="advice", severity=Severity.LOW)
                continue
            ctx.report(target, f"`self.{target.attr}` is created in `__init__` but never used by "
                                   f"`{node.name}`: its parameters are trained by nothing, and the "
                                   "DistributedDataParallel wrapper nearby (without "
                                   "`find_unused_parameters=True`) fails on unused parameters; use it in "
                                   "`forward` or remove it")


# Calls that fetch pretrained weights (a downloaded state dict or a hub model).
_PRETRAINED = frozenset({"load_state_dict_from_url", "load_url", "hf_hub_download", "from_pretrained",
                         "load_from_checkpoint"})


def _loads_pretrained(cls: ast.ClassDef, family, ctx) -> bool:
    """The class (or code that builds it) loads pretrained weights strictly: in
    the class's methods (and its same-file family's) or a function of this file
    that builds it, a strict ``load_state_dict`` together with a download of
    weights (or an ``__init__`` taking ``pretrained``); or a neighbouring project
    file that names the class, calls ``load_state_dict`` and downloads weights."""
    scopes = list(family)
    for call in ctx.model.calls_by_name.get(cls.name, ()):
        builder = ctx.enclosing_function(call)
        if builder is not None and builder not in scopes:
            scopes.append(builder)
    inside = {id(n) for scope in scopes for n in ctx.model.subtree(scope) if isinstance(n, ast.Call)}
    strict = [c for c in ctx.model.calls_by_name.get("load_state_dict", ())
              if id(c) in inside and not _false(ctx.arg(c, "strict", 1))]
    if strict:
        if any(id(c) in inside for name in _PRETRAINED for c in ctx.model.calls_by_name.get(name, ())):
            return True
        for member in family:
            init = next((s for s in member.body if isinstance(s, FunctionNode) and s.name == "__init__"), None)
            if init is not None and any(a.arg == "pretrained" for a in (*init.args.args, *init.args.kwonlyargs)):
                return True
    near = ctx.call_paths.neighbours_mention([cls.name])
    return any(p in ctx.call_paths.neighbours_mention(["load_state_dict"]) and
               p in ctx.call_paths.neighbours_mention(sorted(_PRETRAINED)) for p in near)


def _is_stub(func) -> bool:
    """A body left to be written: only a docstring, ``pass``, ``...``,
    ``raise NotImplementedError`` or ``return <a parameter>`` unchanged."""
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)} - {"self"}
    for stmt in func.body:
        if isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Raise) and stmt.exc is not None and "NotImplementedError" in ast.dump(stmt.exc):
            continue
        if isinstance(stmt, ast.Return) and (stmt.value is None or isinstance(stmt.value, ast.Name)
                                             and stmt.value.id in params):
            continue
        return False
    return True


def _false(value) -> bool:
    return isinstance(value, ast.Constant) and value.value is False


def _is_self(node) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _is_own_store(attr: ast.Attribute) -> bool:
    """``self.x`` as an assignment target (a plain or tuple store, not ``self.x.y = ...``)."""
    return isinstance(attr.ctx, (ast.Store, ast.Del)) or (
        isinstance(parent(attr), ast.AugAssign) and parent(attr).target is attr)


def _has_parameters(value, ctx) -> bool:
    if not isinstance(value, ast.Call) or ctx.kind_of(value) != "model":
        return False
    for arg in [*value.args, *(k.value for k in value.keywords)]:
        arg = arg.value if isinstance(arg, ast.Starred) else arg
        if isinstance(arg, ast.Attribute) and _is_self(arg.value):
            return False  # wraps layers the class already holds (and uses through them)
    q = ctx.qualname(value.func) or ""
    if q.startswith("torch.nn."):
        return q.rsplit(".", 1)[-1] in _WITH_PARAMETERS
    return isinstance(value.func, ast.Name) and value.func.id in ctx.model.module_classes or \
        q.startswith(("torchvision.models.", "timm.", "transformers."))


def _family(cls: ast.ClassDef, ctx) -> list[ast.ClassDef]:
    """The class, its same-file base classes and its same-file subclasses."""
    classes = ctx.model.classes
    out, todo = [cls], [cls]
    while todo:
        current = todo.pop()
        for base in current.bases:
            found = classes.get(base.id) if isinstance(base, ast.Name) else None
            if found is not None and found not in out:
                out.append(found)
                todo.append(found)
    names = {cls.name}
    changed = True
    while changed:
        changed = False
        for other in classes.values():
            if other not in out and any(isinstance(b, ast.Name) and b.id in names for b in other.bases):
                out.append(other)
                names.add(other.name)
                changed = True
    return out
