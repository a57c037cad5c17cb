from __future__ import annotations

import ast
from types import SimpleNamespace

from torchreview.catalog import Rule
from torchreview.engine.context import TENSOR_FACTORIES
from torchreview.findings import Severity

# Bases that are known not to be nn.Module (anything else unresolved keeps the rule quiet).
_PLAIN_BASES = frozenset({"builtins.object", "abc.ABC", "typing.Generic", "typing.Protocol"})
_SKIP_BASES = frozenset({"typing.NamedTuple", "enum.Enum", "enum.IntEnum", "builtins.Exception",
                         "pydantic.BaseModel", "builtins.dict", "builtins.tuple"})
_DATACLASS = ("dataclasses.dataclass", "attr.s", "attr.define", "attrs.define", "attr.attrs",
              "pydantic.dataclasses.dataclass")


class ModelNotNnModule(Rule):
    """
    ## What it does
    Flags classes that behave like a model (define `forward` or `__call__`)
    and build `nn` layers, `nn.Parameter`s or `requires_grad=True` tensors in
    their attributes, but do not subclass `nn.Module`.

    ## Why is this bad?
    Outside an `nn.Module`, the layers are not registered: `parameters()`
    does not exist (so the optimizer is fed by hand and easily misses some),
    `state_dict()`/`load_state_dict()` cannot save or restore the model,
    `.to(device)` and `.train()`/`.eval()` do not reach the layers, and hooks,
    DDP and `torch.compile` do not apply.

    ## Example
    ```python
    import torch
    from torch import nn

    class Classifier:
        def __init__(self):
            self.hidden = nn.Linear(784, 128)
            self.out = nn.Linear(128, 10)

        def forward(self, x):
            return self.out(torch.relu(self.hidden(x)))
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = nn.Linear(784, 128)
            self.out = nn.Linear(128, 10)

        def forward(self, x):
            return self.out(torch.relu(self.hidden(x)))
    ```

    ## Heuristics
    Bases are resolved inside the file, also through other local classes;
    a base imported from elsewhere that is not known to be a plain class
    keeps the rule quiet (it may be an `nn.Module`). Dataclasses, named
    tuples, enums and mixins used as a base of a local `nn.Module` are
    skipped. Wrappers that only hold an already-built model (a predictor
    around `torchvision.models.resnet18()`) are not reported: the layers must
    be constructed from `torch.nn` in the class.
    """

    code = "TR301"
    name = "model-not-nn-module"
    severity = Severity.MEDIUM
    confidence = "medium"
    severity_reason = (
        "Structure with consequences: parameters are invisible to `.parameters()`, `.to()` and "
        "`state_dict()`. A layout opinion is never high (catalog: high)."
    )
    summary = "class with `forward` that holds layers or parameters but is not an `nn.Module`"

    def check_file(self, ctx) -> None:
        m = ctx.model
        mixins = {b.id for name in m.module_classes for b in m.classes[name].bases if isinstance(b, ast.Name)}
        for cls in m.nodes_by_type.get(ast.ClassDef, ()):
            if cls.name in m.module_classes or cls.name in mixins:
                continue
            methods = {s.name for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
            entry = "forward" if "forward" in methods else "__call__" if "__call__" in methods else None
            if entry is None or self._skipped(cls, ctx, set()):
                continue
            held = self._held(cls, ctx)
            if held is None:
                continue
            attr, what = held
            line = ctx.source.line_text(cls.lineno)
            spot = SimpleNamespace(lineno=cls.lineno, col_offset=cls.col_offset, end_lineno=cls.lineno,
                                   end_col_offset=len(line.encode()))
            ctx.report(spot, f"`{cls.name}` defines `{entry}` and holds {what} (`self.{attr}`) but is not an "
                             "`nn.Module`: its parameters are invisible to `parameters()`, `state_dict()`, "
                             "`.to(device)` and `train()`/`eval()`; subclass `nn.Module` and call "
                             "`super().__init__()`")

    def _skipped(self, cls: ast.ClassDef, ctx, seen: set[str]) -> bool:
        """True when a base is unresolved (maybe a Module) or marks a non-model class."""
        if cls.name in seen:
            return True
        seen.add(cls.name)
        for deco in cls.decorator_list:
            q = ctx.qualname(deco.func if isinstance(deco, ast.Call) else deco) or ""
            if q in _DATACLASS:
                return True
        for base in cls.bases:
            target = base.value if isinstance(base, ast.Subscript) else base
            q = ctx.qualname(target)
            if q in _PLAIN_BASES:
                continue
            if isinstance(target, ast.Name) and target.id in ctx.model.classes:
                if self._skipped(ctx.model.classes[target.id], ctx, seen):
                    return True
                continue
            return True  # unknown base (maybe an nn.Module elsewhere), or a known non-model base
        return False

    def _held(self, cls: ast.ClassDef, ctx) -> tuple[str, str] | None:
        for node in ast.walk(cls):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                        target.value.id == "self":
                    what = self._builds(node.value, ctx)
                    if what:
                        return target.attr, what
        return None

    def _builds(self, value: ast.AST, ctx) -> str | None:
        values = [value]
        if isinstance(value, (ast.List, ast.Tuple)):
            values = list(value.elts)
        elif isinstance(value, (ast.ListComp, ast.GeneratorExp)):
            values = [value.elt]
        for v in values:
            if not isinstance(v, ast.Call):
                continue
            q = ctx.qualname(v.func) or ""
            if q == "torch.nn.Parameter":
                return "an `nn.Parameter`"
            if q.startswith("torch.nn.") and ctx.kind_of(v) == "model":
                return f"`nn.{q.rsplit('.', 1)[-1]}` layers"
            if isinstance(v.func, ast.Name) and v.func.id in ctx.model.module_classes:
                return f"`{v.func.id}` sub-modules"
            grad = next((kw.value for kw in v.keywords if kw.arg == "requires_grad"), None)
            if q in TENSOR_FACTORIES and isinstance(grad, ast.Constant) and grad.value is True:
                return "a `requires_grad=True` tensor"
            if isinstance(v.func, ast.Attribute) and v.func.attr == "requires_grad_" and \
                    ctx.qualname(getattr(v.func.value, "func", None)) in TENSOR_FACTORIES:
                return "a `requires_grad_()` tensor"
        return None
