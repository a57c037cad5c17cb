"""Does a module hold parameters? (the parameter fact)

The output of a module call carries an autograd graph only when the module has
parameters that require grad or its input does: ``Swish()(torch.linspace(...))``
and a colour-map module that only indexes a constant table give plain tensors.

``build_is_parameter_free(unit, call)`` answers for one construction expression
(``Swish()``, ``K.color.ApplyColorMap(colormap=cmap)``, ``nn.ReLU()``): True only
when the class is known to hold none -- a torch.nn layer without weights, or a
project class (of this file, or of another project file through the project
index's import resolution) whose body creates no ``nn.Parameter``, registers none,
and assigns to ``self`` only constants, arithmetic on names, tensors built without
``requires_grad=True``, parameter-free layers and plain (non-``nn.Module``) project
objects; an ``__init__`` argument stored on ``self`` is judged at the construction
site, unless the class uses it in arithmetic (``(self.kernel_size - 1) // 2``: a
number, never a module). ``buffers=True`` also asks that no ``register_buffer``
runs anywhere in it (the module then holds no state at all). Anything unknown (a library class, ``setattr``, an attribute of another
object) answers False: the output is then assumed to require grad, as before.
"""

from __future__ import annotations

import ast
import contextvars

from torchreview.engine.module_modes import Unit, locate_class
from torchreview.engine.model.kinds import _UNKNOWN_ARG
from torchreview.engine.model.kinds import _argument as call_argument
from torchreview.engine.semantic_common import FunctionNode

# torch.nn layers that hold no parameters (activations, pooling, padding, dropout, reshaping)
PARAMETER_FREE_LAYERS = frozenset(f"torch.nn.{name}" for name in (
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "CELU", "SELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh",
    "Hardtanh", "Hardsigmoid", "Hardswish", "Hardshrink", "Softshrink", "Tanhshrink", "Softplus",
    "Softsign", "LogSigmoid", "Softmax", "Softmax2d", "LogSoftmax", "Softmin", "GLU", "Threshold",
    "Identity", "Flatten", "Unflatten", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
    "FeatureAlphaDropout", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
    "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d",
    "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
    "CircularPad2d", "CircularPad3d", "Fold", "Unfold", "CosineSimilarity", "PairwiseDistance",
    "LocalResponseNorm",
))
# normalization layers whose weights and running statistics are switched by constructor flags:
# (the affine flag, its position without self, its default), (the running-statistics flag, ...)
_AFFINE_BN, _TRACK_BN = ("affine", 3, True), ("track_running_stats", 4, True)
_AFFINE_IN, _TRACK_IN = ("affine", 3, False), ("track_running_stats", 4, False)
_NORM_FLAGS = {
    **{f"torch.nn.BatchNorm{d}d": (_AFFINE_BN, _TRACK_BN) for d in (1, 2, 3)},
    "torch.nn.SyncBatchNorm": (_AFFINE_BN, _TRACK_BN),
    **{f"torch.nn.InstanceNorm{d}d": (_AFFINE_IN, _TRACK_IN) for d in (1, 2, 3)},
    "torch.nn.GroupNorm": (("affine", 3, True), None),
    "torch.nn.LayerNorm": (("elementwise_affine", 2, True), None),
}
_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
_PARAMETER_MAKERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.ParameterList",
                               "torch.nn.ParameterDict", "torch.nn.UninitializedParameter"})
_PLAIN_BUILTINS = frozenset({"builtins.int", "builtins.float", "builtins.str", "builtins.bool", "builtins.list",
                             "builtins.tuple", "builtins.dict", "builtins.set", "builtins.len", "builtins.max",
                             "builtins.min", "builtins.abs", "builtins.round"})
_DEPTH = 3
_UNKNOWN = ast.Name(id="<splat>")  # an argument passed through `*args`/`**kwargs`: unknown
# True while asking for "no parameters and no buffers" (``build_is_stateless``)
_NO_BUFFERS: contextvars.ContextVar[bool] = contextvars.ContextVar("no_buffers", default=False)


def build_is_stateless(unit: Unit, call: ast.Call) -> bool:
    """``call`` constructs a module that holds no parameters and registers no buffers:
    ``parameters()``, ``state_dict()`` and ``.to()`` have nothing of it to reach."""
    token = _NO_BUFFERS.set(True)
    try:
        return build_is_parameter_free(unit, call)
    finally:
        _NO_BUFFERS.reset(token)


# methods of nn.Module that return the module itself: `Gate(n).to(device)` is a `Gate`
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "eval", "train",
                             "requires_grad_", "share_memory"})


def constructed(call: ast.Call) -> ast.Call:
    """The construction under a chain of module methods that return the module
    itself (``Gate(n).to(device).eval()`` -> ``Gate(n)``)."""
    while isinstance(call.func, ast.Attribute) and call.func.attr in _SELF_RETURNING and \
            isinstance(call.func.value, ast.Call):
        call = call.func.value
    return call


def build_is_parameter_free(unit: Unit, call: ast.Call, depth: int = _DEPTH) -> bool:
    """``call`` constructs a module (or plain object) that holds no parameters."""
    if depth <= 0:
        return False
    call = constructed(call)
    q = unit.model.qualname(call.func) or ""
    if q in PARAMETER_FREE_LAYERS or _norm_without_weights(call, q):
        return True
    found = _class_of(unit, call.func, q)
    if found is None:
        return False
    owner, cls = found
    stored = _class_stored_args(owner, cls, depth)
    if stored is None:
        return False
    init = _init_of(cls)
    return all(_harmless_argument(unit, _argument(call, init, name), depth - 1) for name in stored)


def _flag(call: ast.Call, flag: tuple[str, int, bool]) -> bool | None:
    """The constant value a construction gives a boolean flag (its default when omitted),
    or None when it is not a constant."""
    name, position, default = flag
    given = next((k.value for k in call.keywords if k.arg == name), None)
    if given is None and len(call.args) > position:
        given = call.args[position]
    if given is None:
        return None if any(k.arg is None for k in call.keywords) or \
            any(isinstance(a, ast.Starred) for a in call.args) else default
    return given.value if isinstance(given, ast.Constant) and isinstance(given.value, bool) else None


def _norm_without_weights(call: ast.Call, q: str) -> bool:
    """A normalization layer built without weights (``affine=False``,
    ``elementwise_affine=False``) -- and, when buffers count (``build_is_stateless``),
    without running statistics (``track_running_stats=False``; InstanceNorm's default)."""
    flags = _NORM_FLAGS.get(q)
    if flags is None:
        return False
    affine, track = flags
    if _flag(call, affine) is not False:
        return False
    return not _NO_BUFFERS.get() or track is None or _flag(call, track) is False


def _memo(unit: Unit) -> dict[str, frozenset[str] | None]:
    memo = getattr(unit, "parameter_facts", None)
    if memo is None:
        memo = {}
        unit.parameter_facts = memo  # type: ignore[attr-defined]
    return memo


def _class_of(unit: Unit, func: ast.AST, q: str) -> tuple[Unit, ast.ClassDef] | None:
    if isinstance(func, ast.Name) and func.id in unit.model.classes:
        return unit, unit.model.classes[func.id]
    return locate_class(unit, q) if q else None


def _init_of(cls: ast.ClassDef) -> ast.AST | None:
    return next((s for s in cls.body if isinstance(s, FunctionNode) and s.name == "__init__"), None)


def _class_stored_args(unit: Unit, cls: ast.ClassDef, depth: int) -> frozenset[str] | None:
    """None when ``cls`` may hold parameters; else the ``__init__`` parameters it
    stores on ``self`` (their construction arguments decide)."""
    memo = _memo(unit)
    # the depth is part of the key: a class judged near the depth limit (through
    # another class) may answer "unknown" where a direct question settles it
    key = f"{cls.name}@{cls.lineno}/{depth}{'/stateless' if _NO_BUFFERS.get() else ''}"
    if key in memo:
        return memo[key]
    memo[key] = None  # a recursive reference: unknown
    result = _judge_class(unit, cls, depth)
    memo[key] = result
    return result


def _judge_class(unit: Unit, cls: ast.ClassDef, depth: int) -> frozenset[str] | None:
    m = unit.model
    module = False
    init = _init_of(cls)
    params = frozenset(a.arg for a in ([*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs]
                                       if init is not None else ()))
    stored: dict[str, set[str]] = {}  # __init__ parameter -> the self attributes holding it
    for base in cls.bases:
        bq = m.qualname(base) or ""
        if bq in _MODULE_BASES:
            module = True
            continue
        found = _class_of(unit, base, bq)
        inherited = _class_stored_args(found[0], found[1], depth - 1) if found is not None else None
        if inherited is None:
            return None  # a library base, or a project base whose own content is not settled
        if inherited:  # what the base stores comes from this class's `super().__init__(...)`
            passed = _passed_to_base(unit, cls, init, found[1], inherited, params, depth - 1)
            if passed is None:
                return None
            for name, attrs in passed.items():
                stored.setdefault(name, set()).update(attrs)
        module = True
    if not module:
        return None  # a plain class is judged as an argument (``_harmless_argument``), not as a module
    registering = ("register_parameter", "register_module", "add_module") + \
        (("register_buffer",) if _NO_BUFFERS.get() else ())
    for node in ast.walk(cls):
        if isinstance(node, ast.Call):
            q = m.qualname(node.func) or ""
            if q in _PARAMETER_MAKERS or q == "builtins.setattr" or (
                    isinstance(node.func, ast.Attribute) and node.func.attr in registering):
                return None
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        value = getattr(node, "value", None)
        pairs = [(t, value) for t in targets]
        for target in targets:
            if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and \
                    len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
                # `self.radius, self.nsample = radius, nsample`: element by element
                pairs = [p for p in pairs if p[0] is not target] + list(zip(target.elts, value.elts))
        for target, value in pairs:
            for sub in ast.walk(target):
                if not (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self"
                        and isinstance(sub.ctx, ast.Store)):
                    continue  # (`buf[:, :self.d] = ...` reads `self.d` in an index: it stores nothing on self)
                if value is not None and not isinstance(target, ast.Attribute) and \
                        _own_method_result(cls, value, init):
                    continue  # `self.mag, self.phase = self.transform(x)` in a later method
                if value is None or not isinstance(target, ast.Attribute):
                    return None  # unpacking into self attributes: unknown
                for choice in _choices(value):
                    if isinstance(choice, ast.Name) and choice.id in params:
                        stored.setdefault(choice.id, set()).add(target.attr)
                    elif not _harmless_value(unit, choice, params, depth - 1):
                        return None
    return frozenset(name for name, attrs in stored.items() if not _numeric(cls, name, attrs))


def _passed_to_base(unit: Unit, cls: ast.ClassDef, init, base: ast.ClassDef, names: frozenset[str],
                    params: frozenset[str], depth: int) -> dict[str, set[str]] | None:
    """What ``cls`` hands its project base for the base's stored ``__init__``
    parameters ``names`` (``super().__init__(d, n)``): each becomes one of ``cls``'s
    own parameters (judged where ``cls`` is constructed, and by how ``cls`` uses
    ``self.<name>``), or a harmless value; None when it cannot tell."""
    base_init = _init_of(base)
    call = next((n for n in ast.walk(init) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == "__init__" and (
                     (isinstance(n.func.value, ast.Call) and isinstance(n.func.value.func, ast.Name)
                      and n.func.value.func.id == "super") or
                     (isinstance(n.func.value, ast.Name) and n.func.value.id == base.name))), None) \
        if init is not None else None
    if base_init is None or call is None:
        return None
    explicit = isinstance(call.func.value, ast.Name)  # `Base.__init__(self, ...)`
    positional = [a.arg for a in [*base_init.args.posonlyargs, *base_init.args.args]][1:]
    args = call.args[1:] if explicit else call.args
    if any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in call.keywords):
        return None
    given = dict(zip(positional, args))
    given.update({k.arg: k.value for k in call.keywords})
    out: dict[str, set[str]] = {}
    for name in names:
        value = given.get(name)
        if value is None:
            continue  # the base's default: judged with the base
        if isinstance(value, ast.Name) and value.id in params:
            out.setdefault(value.id, set()).add(name)  # the base keeps it as `self.<name>`
        elif not _harmless_value(unit, value, params, depth):
            return None
    return out


def _own_method_result(cls: ast.ClassDef, value: ast.AST, init: ast.AST | None) -> bool:
    """``value`` is the result of one of the class's own methods, unpacked outside
    ``__init__`` (``self.magnitude, self.phase = self.transform(x)`` in ``forward``):
    intermediate outputs kept for later, never a layer or a parameter being built."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name) and value.func.value.id == "self"):
        return False
    if init is not None and any(sub is value for sub in ast.walk(init)):
        return False
    return any(isinstance(s, FunctionNode) and s.name == value.func.attr and s.name != "__init__"
               for s in cls.body)


def _choices(value: ast.AST) -> list[ast.AST]:
    """The values an assignment may store: each branch of a conditional expression
    (``win if win else n_fft``) and each operand of ``or`` (``hop or n // 4``)."""
    if isinstance(value, ast.IfExp):
        return [*_choices(value.body), *_choices(value.orelse)]
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        return [c for v in value.values for c in _choices(v)]
    return [value]


def _numeric(cls: ast.ClassDef, name: str, attrs: set[str]) -> bool:
    """The ``__init__`` parameter ``name`` (stored as ``self.<attrs>``) is an operand
    of arithmetic or a comparison somewhere in the class (``(self.kernel_size - 1) // 2``,
    ``if dim > 0``; the bare name inside ``__init__``): a number, never a module,
    whatever a construction passes."""
    init = _init_of(cls)
    in_init = {id(sub) for sub in ast.walk(init)} if init is not None else set()
    for node in ast.walk(cls):
        if isinstance(node, ast.BinOp):
            operands = [node.left, node.right]
            if any(isinstance(o, (ast.List, ast.Tuple, ast.ListComp)) for o in operands):
                continue  # `[layer] * n` repeats a list, it computes nothing
        elif isinstance(node, ast.Compare) and not any(isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn))
                                                       for o in node.ops):
            operands = [node.left, *node.comparators]
        else:
            continue
        for operand in operands:
            if (isinstance(operand, ast.Name) and operand.id == name and id(operand) in in_init) or (
                    isinstance(operand, ast.Attribute) and isinstance(operand.value, ast.Name)
                    and operand.value.id == "self" and operand.attr in attrs):
                return True
    return False


def _harmless_value(unit: Unit, value: ast.AST, params: frozenset[str], depth: int) -> bool:
    """A value stored on ``self`` that adds no parameter."""
    if isinstance(value, (ast.Constant, ast.JoinedStr)):
        return True
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return all(_harmless_value(unit, e, params, depth) for e in value.elts)
    if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Compare)):
        # arithmetic and comparisons compute numbers, never modules, whatever they read
        # (`self.n_fft // 4`); only a call inside may build something
        return not any(isinstance(sub, ast.Call) and (unit.model.qualname(sub.func) or "") not in _PLAIN_BUILTINS
                       for sub in ast.walk(value))
    if isinstance(value, (ast.BoolOp, ast.IfExp)):
        return not any(isinstance(sub, (ast.Call, ast.Attribute, ast.Subscript)) for sub in ast.walk(value))
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        return True  # another attribute of the same object: judged where it is assigned
    if isinstance(value, ast.Call):
        value = constructed(value)
        q = unit.model.qualname(value.func) or ""
        if q in _PLAIN_BUILTINS:
            return True
        if q.startswith("torch.") and not q.startswith("torch.nn."):  # a tensor built in place
            flag = next((k.value for k in value.keywords if k.arg == "requires_grad"), None)
            return flag is None or (isinstance(flag, ast.Constant) and flag.value is False)
        return build_is_parameter_free(unit, value, depth) or _plain_object(unit, value, depth)
    return False


def _harmless_argument(unit: Unit, value: ast.AST | None, depth: int) -> bool:
    """A construction argument stored on ``self``: a constant (or the default), a
    parameter-free module, or a plain project object (not an ``nn.Module``)."""
    if value is _UNKNOWN:
        return False
    if value is None or isinstance(value, ast.Constant):
        return True
    if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.JoinedStr)):
        return True  # arithmetic's result (`win - 2 * i`) is never a module or an nn.Parameter
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        return _plain_self_attribute(unit, value, depth)
    given = value
    if isinstance(value, ast.Name) and unit.flow is not None:
        reaching = unit.flow.reaching_value(value)
        if reaching is None or reaching is value:
            return _number_by_default(value)
        value = reaching
    if isinstance(value, ast.Call):
        value = constructed(value)
        return build_is_parameter_free(unit, value, depth) or _plain_object(unit, value, depth)
    return isinstance(value, ast.Constant) or (isinstance(given, ast.Name) and _number_by_default(given))


def _numbers(node: ast.AST | None) -> bool:
    """A number literal, or a literal tuple/list of them (``(0.01, 0.02)``)."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return bool(node.elts) and all(_numbers(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _number_by_default(name: ast.Name) -> bool:
    """``name`` is a parameter of its function whose default is a number (``radius=0.05``), or
    the target of a ``for`` over a literal of numbers or over such a parameter (``for h in
    hmax_list`` with ``hmax_list=[0.01, 0.02]``): its default says it holds a number, which is
    never a module (a caller handing a module to a parameter with a numeric default is not
    assumed)."""
    from torchreview.engine.semantic_common import ancestors, parameter_default

    func = next((a for a in ancestors(name) if isinstance(a, (*FunctionNode, ast.Lambda))), None)
    if func is None:
        return False
    loop = next((a for a in ancestors(name) if isinstance(a, ast.For) and isinstance(a.target, ast.Name)
                 and a.target.id == name.id), None)
    if loop is not None:
        source = loop.iter
        if _numbers(source):
            return True
        return isinstance(source, ast.Name) and _numbers(parameter_default(func.args, source.id))
    if any(isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)) and
           any(isinstance(t, ast.Name) and t.id == name.id for t in ast.walk(getattr(n, "target", None) or n.targets[0]))
           for n in ast.walk(func) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For))):
        return False  # rebound in the function: its default is not what it holds
    return _numbers(parameter_default(func.args, name.id))


def _plain_self_attribute(unit: Unit, attr: ast.Attribute, depth: int) -> bool:
    """``self.n_fft`` passed on to a constructor inside a class: harmless when every
    assignment of that attribute in the class stores a harmless value (a constant,
    arithmetic, a default-``None`` parameter chosen against arithmetic)."""
    from torchreview.engine.semantic_common import ancestors

    cls = next((a for a in ancestors(attr) if isinstance(a, ast.ClassDef)), None)
    if cls is None or depth <= 0:
        return False
    init = _init_of(cls)
    params = frozenset(a.arg for a in ([*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs]
                                       if init is not None else ()))
    seen = False
    for node in ast.walk(cls):
        if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(isinstance(t, ast.Attribute) and t.attr == attr.attr and isinstance(t.value, ast.Name)
                   and t.value.id == "self" for t in targets):
            continue
        if node.value is None:
            return False
        seen = True
        for choice in _choices(node.value):
            if isinstance(choice, ast.Name) and choice.id in params:
                if not (_numeric(cls, choice.id, {attr.attr}) or isinstance(_default(init, choice.id), ast.Constant)):
                    return False
            elif not _harmless_value(unit, choice, params, depth - 1):
                return False
    return seen


def _plain_object(unit: Unit, call: ast.Call, depth: int) -> bool:
    """``call`` builds an instance of a project class that is no ``nn.Module``
    (its bases are none, ``object``, or such classes): it registers no parameters."""
    if depth <= 0:
        return False
    q = unit.model.qualname(call.func) or ""
    found = _class_of(unit, call.func, q)
    if found is None:
        return False
    owner, cls = found
    for base in cls.bases:
        bq = owner.model.qualname(base) or ""
        if bq in ("builtins.object", "object"):
            continue
        inner = _class_of(owner, base, bq)
        if inner is None or not _plain_object_class(owner, inner[1], depth - 1):
            return False
    return True


def _plain_object_class(unit: Unit, cls: ast.ClassDef, depth: int) -> bool:
    if depth <= 0:
        return False
    for base in cls.bases:
        bq = unit.model.qualname(base) or ""
        if bq in ("builtins.object", "object"):
            continue
        inner = _class_of(unit, base, bq)
        if inner is None or not _plain_object_class(inner[0], inner[1], depth - 1):
            return False
    return True


def _argument(call: ast.Call, init: ast.AST | None, name: str) -> ast.AST | None:
    """The argument ``call`` passes for the ``__init__`` parameter ``name`` (its
    default when it passes none, ``_UNKNOWN`` behind a splat)."""
    positional = [a.arg for a in [*init.args.posonlyargs, *init.args.args]][1:] if init is not None else []
    value = call_argument(call, name, positional.index(name) if name in positional else None)
    if value is _UNKNOWN_ARG:
        return _UNKNOWN
    if value is None and init is not None:
        return _default(init, name)
    return value


def _default(init: ast.AST, name: str) -> ast.AST | None:
    """The default of the ``__init__`` parameter ``name`` (None when it has none)."""
    args = init.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults)) + \
        [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return next((d for a, d in pairs if a.arg == name), None)
