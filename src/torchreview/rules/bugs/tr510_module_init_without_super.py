from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import parent
from torchreview.findings import Severity

# Module API calls that need the state Module.__init__ creates.
_MODULE_API = frozenset({"register_buffer", "register_parameter", "add_module", "register_module",
                         "to", "cuda", "apply", "parameters", "modules", "children", "train", "eval"})


class ModuleInitWithoutSuper(Rule):
    """
    ## What it does
    Flags an `__init__` of an `nn.Module` subclass that never calls
    `super().__init__()` (or `Base.__init__(self)`), and sub-modules,
    parameters or buffers assigned before that call.

    ## Why is this bad?
    `nn.Module.__init__` creates the dictionaries that hold parameters,
    buffers, sub-modules and hooks. Assigning a layer or an `nn.Parameter`
    before it runs raises `AttributeError: cannot assign module before
    Module.__init__() call`; skipping it entirely breaks the first layer
    assignment or, for a class with only plain attributes, the first call of
    the module.

    ## Example
    ```python
    from torch import nn

    class Head(nn.Module):
        def __init__(self, dim):
            self.proj = nn.Linear(dim, dim)
            super().__init__()
    ```

    ## Use instead
    ```python
    from torch import nn

    class Head(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
    ```

    ## Heuristics
    Before the base `__init__` call, only assignments that need the module
    state are reported (layers, `nn.Parameter`s, `register_buffer` and other
    `nn.Module` API calls on `self`): a plain value such as `self.dim = dim`
    set early on purpose, so that the parent's `__init__` can read it, works.
    A mixin is not reported: a class of the file that lists it among several
    bases and calls `Mixin.__init__(self, ...)` explicitly (after another
    base's `__init__` set the module up), in this file or in a neighbouring project file
    (a LoRA mixin its `nn.Linear` subclasses set up by hand). Test files are skipped, and so are `@typing.overload` signatures of
    `__init__` (a stub whose body is `...`; the real definition follows). A class redefined later at module level (a
    notebook or script that shows a class, then defines it again before using
    it) is judged by its last definition, and a pure outline -- several
    methods, every body `...`, `pass` or a docstring -- is not code that runs:
    neither is reported (a lone `__init__` whose body is `pass` is, it is an
    empty constructor, and so is a `...` constructor beside a real `forward`;
    a class whose only methods are `...` stubs -- `class Encoder(nn.Module):
    def __init__(self, ...): ...`, creative_ml's transformer exercise cell --
    is a placeholder and is not),
    nor is a course skeleton whose `__init__` is only `pass` and whose
    `forward` only returns a name nothing sets (`return out` under "PUT YOUR
    CODE HERE"), nor a class whose methods hold `...` where code goes -- beside other
    statements, or as an assigned value (`self.encoder = ...`): an exercise
    template for the learner to fill in (a method whose whole body is `...`
    is a declared stub and does not count). An `__init__` that calls a
    method of the class that itself starts with the base `__init__` call
    (`self._init_from_views(...)`) does call it.
    A class nothing names -- no call, base, `isinstance` or string in its file
    and no other project file spelling it -- that is not a public class of an
    installable package is medium confidence: a stale copy or a stub left
    behind, whose crash needs code that does not exist.
    A constructor that stores plain values only (no layer, parameter or
    buffer) in a class with its own `__call__` never reaches the missing
    registries (consistent_depth's loss term): not reported; one whose class
    has other methods but no `forward` (a module in name only: pytorch-translate's
    generator that overrides `cuda()`) is medium confidence.
    A constructor that stores plain values only and has a `forward` is
    medium too, unless the file calls an instance (`head = Head(2.0)`;
    `head(x)`): nothing it assigns needs the registries, so only calling,
    moving or saving an instance fails, which the file then does not show
    (NVIDIA's FLIP metric copied into R2L, whose instances only run
    `compute_flip`: judged noise in blind test 56). So is a class whose name
    is only ever read for its class attributes and class methods
    (`HyenaDNAPreTrainedModel.from_pretrained(...)` returning another class's
    instance) -- in its file, never constructed, subclassed or passed on, and
    named by no other project file: its `__init__` never runs.
    A class that defines its own `__setattr__` never reaches `nn.Module`'s
    registries when it assigns (PyTorch3D's `TensorAccessor`, a proxy that
    forwards attribute access to another object): not reported.
    A class with a metaclass other than `abc.ABCMeta` -- its own, or inherited
    from a base of this file or of another project module, followed a few
    modules deep -- is not reported: the metaclass decides how instances are
    initialised (fastai v1's `Module` has a metaclass that calls
    `nn.Module.__init__` before every subclass's `__init__`, so its subclasses
    never call it themselves; fastai's `Module` is known as library data, also through
    `from fastai.vision.all import *`).
    A misspelt base initialiser (`super().__int__()`, `super()._init_()`) is named in the
    message: it is the bug, and it raises an AttributeError before anything is set up.
    """

    code = "TR510"
    name = "module-init-without-super"
    severity = Severity.HIGH
    severity_reason = (
        "Crash: assigning to the module before `Module.__init__` raises an AttributeError."
    )
    summary = "`nn.Module` subclass `__init__` without `super().__init__()` before assigning attributes"
    node_types = (ast.FunctionDef,)

    def check(self, node: ast.FunctionDef, ctx) -> None:
        cls = ctx.in_module_class(node)
        if node.name != "__init__" or cls is None or parent(node) is not cls or ctx.is_test_file or \
                any("dataclass" in ctx.text(d) for d in cls.decorator_list) or \
                ctx.model.class_replaced_later(cls) or ctx.model.is_outline_class(cls) or \
                any(ctx.qualname(d) in _OVERLOAD for d in node.decorator_list):
            return  # a later definition of the class (or an `@overload` signature) is not what runs
        lead = node.body[1] if len(node.body) > 1 and isinstance(node.body[0], ast.Expr) and \
            isinstance(node.body[0].value, ast.Constant) else node.body[0]
        if _calls_base_init(lead, cls, ctx):
            return  # the base first (after a docstring at most): nothing comes before it
        if ctx.init_by_metaclass(cls):
            return  # fastai's `Module`: its metaclass runs `nn.Module.__init__` before this one
        statements = list(_own_statements(node.body))
        if all(_ellipsis_only(m) for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))):
            return  # `class Encoder(nn.Module): def __init__(self, ...): ...` alone: a placeholder (an exercise cell)
        if _template(cls):
            return  # `...` where code goes: an exercise template for the learner to fill in
        if _skeleton(node, cls):
            return  # `__init__: pass` and a `forward` returning a name never set: a course skeleton
        init_at = next((i for i, stmt in enumerate(statements) if _calls_base_init(stmt, cls, ctx)), None)
        if init_at is None and _init_through_helper(node, cls, ctx):
            return  # `__init__` hands off to `self._init_from_views(...)`, which calls `super().__init__()`
        if init_at is None and (_mixin_init(cls, ctx) or ctx.call_paths.mixin_initialised_elsewhere(cls.name)):
            return  # `Pairwise.__init__(self, ...)` called by a subclass after another base's __init__
        if init_at is None and any(isinstance(m, ast.FunctionDef) and m.name == "__setattr__" for m in cls.body):
            return  # its own `__setattr__` takes every assignment (PyTorch3D's TensorAccessor proxy)
        if init_at is None:
            plain = not any(_needs_module_state(stmt, ctx) for stmt in statements)
            methods = {m.name for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
            if plain and "__call__" in methods:
                return  # plain attributes only, and its own `__call__`: nothing reaches the missing registries
            if any(_touches_self(stmt) for stmt in statements) or _no_raise(statements):
                typo = _misspelt_init(node)
                lead = (f"`{cls.name}.__init__` calls `{ctx.text(typo.func)}()`, a misspelling of "
                        f"`__init__` (an AttributeError there), so it never initialises the module"
                        if typo is not None else f"`{cls.name}.__init__` never calls `super().__init__()`")
                ctx.report(node, f"{lead}: the module "
                                 "has no parameter, buffer or sub-module registry, so assigning a "
                                 "layer or calling the module fails; call `super().__init__()` first",
                           # a class nothing builds, subclasses or names (a stale copy, a stub left
                           # behind), or one with plain attributes and no `forward` (never called as a
                           # module): the crash needs code that does not exist -- medium
                           confidence="medium" if _unreferenced(cls, ctx) or
                           (plain and "forward" not in methods and methods - {"__init__"}) or
                           (plain and _stores_on_self(statements) and not _instance_called(cls, ctx)) or
                           _class_attributes_only(cls, ctx) else None)
            return
        for stmt in statements[:init_at]:
            what = _needs_module_state(stmt, ctx)
            if what:
                ctx.report(stmt, f"{what} before `super().__init__()` in `{cls.name}.__init__`: "
                                 "`nn.Module` raises because its registries do not exist yet; "
                                 "call `super().__init__()` first")


_OVERLOAD = frozenset({"typing.overload", "typing_extensions.overload"})


def _mixin_init(cls: ast.ClassDef, ctx) -> bool:
    """A class of this file lists ``cls`` among several bases and calls
    ``cls.__init__(self, ...)`` explicitly: a mixin whose ``__init__`` runs after the
    other base initialised the module (botorch's pairwise samplers)."""
    for node in ctx.model.nodes_by_type.get(ast.Call, ()):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "__init__" and isinstance(func.value, ast.Name) and \
                func.value.id == cls.name and node.args and isinstance(node.args[0], ast.Name) and \
                node.args[0].id == "self":
            sub = ctx.enclosing_class(node)
            if sub is not None and sub is not cls and len(sub.bases) > 1:
                return True
    return False


def _unreferenced(cls: ast.ClassDef, ctx) -> bool:
    """Nothing names the class but its definition: not this file (a call, a base, an
    ``isinstance``, a string) and no other file of the project -- and it is no public
    name of an installable package, which its users import."""
    name = cls.name
    if not name.startswith("_") and ctx.advice.one_off(cls) is None:
        return False  # a package's public class: its users build it
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Name) and node.id == name or \
                isinstance(node, ast.Attribute) and node.attr == name or \
                isinstance(node, ast.Constant) and isinstance(node.value, str) and name in node.value:
            return False
    return not ctx.call_paths.mentioned_elsewhere(name)


def _is_ellipsis(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _ellipsis_only(method) -> bool:
    """The method's body is ``...`` (after a docstring at most)."""
    body = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                           and isinstance(s.value.value, str))]
    return bool(body) and all(isinstance(s, ast.Expr) and _is_ellipsis(s.value) for s in body)


def _template(cls: ast.ClassDef) -> bool:
    """A method of the class holds ``...`` where code goes: beside other statements
    (``...`` then ``return x``) or as an assigned value (``self.encoder = ...``) -- an
    exercise template (TorchLeet's question notebooks). A method whose whole body is
    ``...`` is a declared stub (an abstract method, an empty constructor), not this."""
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef):
            continue
        statements = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                      and isinstance(s.value.value, str))]
        for stmt in _own_statements(method.body):
            if isinstance(stmt, ast.Expr) and _is_ellipsis(stmt.value) and len(statements) > 1:
                return True
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _is_ellipsis(stmt.value):
                return True
    return False


def _init_through_helper(init: ast.FunctionDef, cls: ast.ClassDef, ctx) -> bool:
    """``__init__`` calls a method of the class (``self._init_from_views(...)``) whose own
    first statements call the base ``__init__`` (dust3r's ``BasePCOptimizer``): the base
    is initialised there, so "never calls" would be wrong."""
    methods = {m.name: m for m in cls.body if isinstance(m, ast.FunctionDef)}
    for stmt in _own_statements(init.body):
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and
                isinstance(call.func.value, ast.Name) and call.func.value.id == "self"):
            continue
        method = methods.get(call.func.attr)
        if method is None:
            continue
        for inner in _own_statements(method.body):
            if _calls_base_init(inner, cls, ctx):
                return True
            if _touches_self(inner):
                break
    return False


def _own_statements(body):
    """Statements of ``body`` in order, entering compound statements but not nested defs."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from _own_statements(inner)
        for handler in getattr(stmt, "handlers", []):
            yield from _own_statements(handler.body)


def _misspelt_init(init: ast.FunctionDef) -> ast.Call | None:
    """A call in ``init``'s own body of ``super().<name>()`` (or ``Base.<name>(self)``) whose
    name is a misspelling of ``__init__`` (``super().__int__()``, ``super()._init_()``), if any:
    the author meant to initialise the module (judged true in blind test 105, where the
    message should have named the typo)."""
    from difflib import SequenceMatcher

    for stmt in init.body:
        for sub in ast.walk(stmt):
            if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)):
                continue
            attr, receiver = sub.func.attr, sub.func.value
            on_base = (isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and
                       receiver.func.id == "super") or (
                sub.args and isinstance(sub.args[0], ast.Name) and sub.args[0].id == "self")
            if on_base and attr != "__init__" and (attr.strip("_") == "init" or (
                    attr.startswith("__") and attr.endswith("__") and
                    SequenceMatcher(None, attr, "__init__").ratio() >= 0.8)):
                return sub  # `_init_`, `__init`, `__int__`, `__inti__`: not `init_weights`, `__call__`
    return None


def _calls_base_init(stmt, cls: ast.ClassDef, ctx) -> bool:
    if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
        return False
    for sub in ctx.model.subtree(stmt):  # (any hit: the order does not matter)
        if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "__init__"):
            continue
        receiver = sub.func.value
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
            return True
        if sub.args and isinstance(sub.args[0], ast.Name) and sub.args[0].id == "self":
            return True  # Base.__init__(self, ...), nn.Module.__init__(self)
    return False


def _touches_self(stmt) -> bool:
    return any(isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self"
               for sub in ast.walk(stmt))


def _no_raise(statements) -> bool:
    return not any(isinstance(s, ast.Raise) for s in statements)


def _needs_module_state(stmt, ctx) -> str | None:
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                    target.value.id == "self" and stmt.value is not None and \
                    ctx.kind_of(stmt.value) in ("model", "loss_fn", "parameter") and \
                    not ctx.known_by_name_only(stmt.value):  # `self.d_model = d_model`: an int by its use
                return f"`self.{target.attr}` is assigned a module or parameter"
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == "self" and func.attr in _MODULE_API:
            return f"`self.{func.attr}(...)` is called"
    return None


def _body(func: ast.AST) -> list[ast.stmt]:
    """A function's statements without its docstring."""
    body = list(func.body)  # type: ignore[attr-defined]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
            isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def _stores_on_self(statements: list) -> bool:
    """The constructor assigns at least one ``self.<attr>`` (values it keeps; not only ``pass``
    or a bare ``super(Cls)`` that forgets ``.__init__()``)."""
    return any(isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and any(
        isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        for t in (s.targets if isinstance(s, ast.Assign) else [s.target])) for s in statements)


def _instance_called(cls: ast.ClassDef, ctx) -> bool:
    """The file calls an instance of the class as a module: ``Cls(...)(x)``, or a name or
    ``self`` attribute bound to ``Cls(...)`` called (``head = Head(2.0)``; ``head(x)``)."""
    held: set[str] = set()
    for call in ctx.model.calls:
        func = call.func
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == cls.name:
            return True
        if isinstance(func, ast.Name) and func.id == cls.name:
            assign = parent(call)
            if isinstance(assign, ast.Assign):
                held.update(ctx.text(t) for t in assign.targets)
    return bool(held) and any(ctx.text(call.func) in held for call in ctx.model.calls)


def _class_attributes_only(cls: ast.ClassDef, ctx) -> bool:
    """Every read of the class's name in its file is ``Cls.<attribute>`` (a class method, a
    class attribute: ``Cls.from_pretrained(...)``), there is at least one, and no other
    project file names it: no instance is ever built, so its ``__init__`` never runs."""
    reads = [n for n in ctx.model.nodes_by_type.get(ast.Name, ()) if n.id == cls.name and isinstance(n.ctx, ast.Load)]
    if not reads or any(not isinstance(parent(n), ast.Attribute) for n in reads):
        return False
    return not ctx.call_paths.mentioned_elsewhere(cls.name)


def _skeleton(init: ast.FunctionDef, cls: ast.ClassDef) -> bool:
    """An exercise skeleton: the constructor's body is only ``pass`` and ``forward`` only
    returns a name nothing sets (``return out`` under "PUT YOUR CODE HERE", uvadlc's
    MLP): the learner writes both, ``super().__init__()`` included."""
    if not all(isinstance(s, ast.Pass) for s in _body(init)) or not _body(init):
        return False
    forward = next((m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and m.name == "forward"), None)
    if forward is None:
        return False
    body = _body(forward)
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Name):
        return False
    name = body[0].value.id
    params = {a.arg for a in [*forward.args.posonlyargs, *forward.args.args, *forward.args.kwonlyargs]}
    return name not in params
