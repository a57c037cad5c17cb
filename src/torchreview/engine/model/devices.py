"""Model concept: devices (what a device argument names, where a module runs).

``Devices`` is composed into the semantic model (``SemanticModel.devices``) and
receives what it asks of the other concepts in its constructor; it calls no other
concept through ``self``. The assignments of names (a scopes fact) still live in
``ScopesMixin`` below until the scopes concept moves here.
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import Callable

from torchreview.engine import names as N
from torchreview.engine.semantic_common import FunctionNode, parent, position, _is_cuda_literal  # noqa: F401


class Devices:
    """Devices of one module.

    ``qualname``, ``kind_of``, ``assignments`` and ``enclosing_class`` are the names,
    kinds and scopes questions it asks; ``class_attrs`` (class -> attribute -> kind),
    ``calls`` (every call) and ``pending`` (every assignment seen by the walk) are
    the tables of the model's one walk."""

    def __init__(self, *, qualname: Callable, kind_of: Callable, assignments: Callable,
                 enclosing_class: Callable, class_attrs: dict, calls: list, pending: list) -> None:
        self.qualname = qualname
        self.kind_of = kind_of
        self.assignments = assignments
        self.enclosing_class = enclosing_class
        self._class_attrs = class_attrs
        self.calls = calls
        self._pending = pending

    # ------------------------------------------------------------ devices
    def device_kind(self, node: ast.AST | None, scope: ast.AST | None = None, _depth: int = 0) -> str | None:
        """What a device-like argument (``.to(X)``, ``device=X``) names:
        ``"accelerator"`` (literal cuda/mps/xpu, ``torch.device("cuda")``, an int
        ordinal), ``"cpu"``, ``"follows"`` (another tensor's placement: ``x.device``,
        ``next(self.parameters()).device``, or a tensor as in ``.to(other)``),
        ``"variable"`` (a configured device: ``device``, ``args.device``, a
        ``self.device`` the class assigns, ``"cuda" if ... else "cpu"``),
        ``"dtype"`` -- or None when it cannot tell."""
        if node is None or _depth > 4:
            return None
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                head = node.value.split(":")[0].strip().lower()
                return "accelerator" if head in N.ACCELERATOR_DEVICE_TYPES else "cpu" if head == "cpu" else None
            if isinstance(node.value, int) and not isinstance(node.value, bool):
                return "accelerator"
            return None
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            if isinstance(first, ast.Constant) and str(first.value).split(":")[0] in N.ACCELERATOR_DEVICE_TYPES:
                return "accelerator"
            return None
        if isinstance(node, ast.IfExp):
            kinds = {self.device_kind(node.body, scope, _depth + 1), self.device_kind(node.orelse, scope, _depth + 1)}
            if len(kinds) == 1:
                return kinds.pop()
            # `"cuda" if ok else "cpu"` is a configured device; a mix with an input's
            # device (`self.device if self.device else x.device`) is left unknown
            return "variable" if None not in kinds and "follows" not in kinds and "dtype" not in kinds else None
        q = self.qualname(node.func if isinstance(node, ast.Call) else node)
        if q and q.startswith("torch.") and q.count(".") == 1 and q[6:] in N.DTYPE_NAMES \
                and not isinstance(node, ast.Call):
            return "dtype"
        if isinstance(node, ast.Call):
            if q == "torch.device":
                first = node.args[0] if node.args else next(
                    (kw.value for kw in node.keywords if kw.arg == "type"), None)
                kind = self.device_kind(first, scope, _depth + 1)
                return kind if kind in ("accelerator", "cpu", "follows") else "variable"
            if q in ("torch.cuda.current_device", "torch.accelerator.current_accelerator"):
                return "accelerator"
            return None
        if isinstance(node, ast.Attribute):
            if node.attr == "dtype":
                return "dtype"
            if node.attr == "device" or N.DEVICE_NAME.match(node.attr):
                base = node.value
                if isinstance(base, ast.Name) and base.id == "self":
                    cls = self.enclosing_class(scope or node)
                    assigned = cls is not None and node.attr in self._class_attrs.get(cls, {})
                    return "variable" if assigned else "follows"
                last = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""
                if N.CONFIG_HOLDER.match(last) or node.attr != "device":
                    return "variable"
                return "follows"
            return None
        if isinstance(node, ast.Name):
            values = [v for v in self.assignments(node)[0] if not isinstance(v, ast.Name)]
            kinds = {self.device_kind(v, scope, _depth + 1) for v in values}
            if kinds in ({"follows"}, {"dtype"}):
                return kinds.pop()  # `device = x.device`, `dt = torch.float16`
            if "follows" in kinds or any(isinstance(v, ast.IfExp) and self.device_kind(v, scope, _depth + 1) is None
                                         for v in values):
                return None  # sometimes the input's device: cannot tell
            kind = self.kind_of(node, scope)
            if kind == "device" or N.DEVICE_NAME.match(node.id):
                return "variable"
            if kind in ("tensor", "parameter"):
                return "follows"
            if node.id.lower() in N.DTYPE_NAMES or node.id.lower().endswith("dtype"):
                return "dtype"
        return None

    def to_call_device(self, call: ast.Call) -> ast.expr | None:
        """The device a ``t.to(...)`` call moves to: the ``device=`` keyword or the
        first positional argument unless that names a dtype. None otherwise."""
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "to"):
            return None
        for kw in call.keywords:
            if kw.arg == "device":
                return kw.value
        if call.args and not isinstance(call.args[0], ast.Starred) and \
                self.device_kind(call.args[0]) != "dtype":
            return call.args[0]
        return None

    @cached_property
    def cuda_evidence(self) -> ast.AST | None:
        """The first call showing this module runs on CUDA: ``x.cuda()``,
        ``.to("cuda")``, ``torch.device("cuda")``, ``device="cuda"``,
        ``torch.cuda.is_available()``/``set_device``/``device_count``,
        ``torch.accelerator.*``. None for modules with no such sign."""
        for call in sorted(self.calls, key=position):
            q = self.qualname(call.func) or ""
            if q in N.CUDA_QUERIES or q.startswith("torch.accelerator."):
                return call
            if isinstance(call.func, ast.Attribute) and call.func.attr == "cuda" and not q.startswith("torch."):
                return call
            is_to = isinstance(call.func, ast.Attribute) and call.func.attr == "to"
            candidates = list(call.args[:1]) if (is_to or q == "torch.device") else []
            candidates += [kw.value for kw in call.keywords if kw.arg == "device"]
            if any(_is_cuda_literal(c) for c in candidates):
                return call
        for scope, name, value, _ in self._pending:
            if value is not None and "dev" in name.lower() and _is_cuda_literal(value):
                return value
        return None


class ScopesMixin:
    """Part of :class:`torchreview.engine.semantic.SemanticModel`: what names are
    assigned in the scope that binds them, and the tensors that evidence shows."""

    def is_forward_input(self, node: ast.AST) -> bool:
        """A Name that is a parameter of the ``forward`` of an ``nn.Module`` it is used in
        (inputs of ``forward`` are tensors unless annotated otherwise or defaulting to
        a literal such as ``k=3``)."""
        if not isinstance(node, ast.Name):
            return False
        func = self.enclosing_function(node)
        if func is None or func.name != "forward" or not isinstance(parent(func), ast.ClassDef) \
                or parent(func).name not in self.module_classes:
            return False
        args = func.args
        positional = [*args.posonlyargs, *args.args]
        defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
        defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
        for arg in [*positional, *args.kwonlyargs][1:]:
            if arg.arg == node.id:
                default = defaults.get(arg.arg)
                if isinstance(default, ast.Constant) and default.value is not None:
                    return False  # `k=3`, `return_all=False`: an option, not an input tensor
                ann = self.qualname(arg.annotation) if arg.annotation is not None else None
                return arg.annotation is None or ann == "torch.Tensor"
        return False

    def tensor_by_evidence(self, expr: ast.AST) -> bool:
        """A tensor by evidence, not by its name alone (a parameter called ``target``
        may well be a list): a ``forward`` input, an ``nn.Parameter``, an expression
        derived from a tensor, a name assigned a tensor, or a ``torch.Tensor``-annotated
        parameter."""
        if self.is_forward_input(expr) or self.kind_of(expr) == "parameter":
            return True
        if self.kind_of(expr) != "tensor":
            return False
        if not isinstance(expr, (ast.Name, ast.Attribute)):
            return True
        values, func = self.assignments(expr)
        if values:
            return any(self.kind_of(v) in ("tensor", "parameter") for v in values)
        if func is not None and isinstance(expr, ast.Name):
            args = func.args  # type: ignore[attr-defined]
            arg = next((a for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.arg == expr.id), None)
            return arg is not None and arg.annotation is not None and \
                self.qualname(arg.annotation) == "torch.Tensor"
        return False

    # ------------------------------------------------------------ assignments
    @cached_property
    def _assigned(self) -> dict[tuple[ast.AST, str], list[tuple[ast.AST | None, str | None]]]:
        table: dict[tuple[ast.AST, str], list[tuple[ast.AST | None, str | None]]] = {}
        for scope, name, value, how in self._pending:
            if name != "for":
                table.setdefault((scope, name), []).append((value, how))
        return table

    @cached_property
    def _assigned_self(self) -> dict[tuple[int, str], list[ast.AST]]:
        """``self.attr`` assignments by (enclosing class, attr), in table order: one
        lookup per question instead of a scan of every assignment (large files)."""
        table: dict[tuple[int, str], list[ast.AST]] = {}
        for (scope, name), entries in self._assigned.items():
            if name.startswith("self."):
                values = table.setdefault((id(self.enclosing_class(scope)), name[5:]), [])
                values.extend(v for v, _ in entries if v is not None)
        return table

    def assignments(self, node: ast.AST) -> tuple[list[ast.AST], ast.AST | None]:
        """What a Name (or ``self.attr``) is assigned in the scope that binds it:
        ``(assigned expressions, function)`` where ``function`` is set when the
        name is a parameter of that function. Unknown names give ``([], None)``."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            cls = self.enclosing_class(node)
            return list(self._assigned_self.get((id(cls), node.attr), ())), None
        if not isinstance(node, ast.Name):
            return [], None
        probe: ast.AST | None = self.scope_of(node)
        while probe is not None:
            entries = self._assigned.get((probe, node.id))
            if entries or node.id in self._bindings.get(probe, {}):
                entries = entries or []
                func = probe if any(how == "param" for _, how in entries) else None
                return [v for v, _ in entries if v is not None], func
            if probe is self.tree:
                break
            probe = self.scope_of(probe)
        return [], None
