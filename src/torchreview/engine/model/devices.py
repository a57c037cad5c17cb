"""Model concept: devices (what a device argument names, where a module runs).

``Devices`` is composed into the semantic model (``SemanticModel.devices``) and
receives what it asks of the other concepts in its constructor; it calls no other
concept through ``self``.
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import Callable

from torchreview.engine import names as N
from torchreview.engine.semantic_common import position, _is_cuda_literal


class Devices:
    """Devices of one module.

    ``qualname``, ``kind_of``, ``assignments`` and ``enclosing_class`` are the names,
    kinds and scopes questions it asks; ``class_attrs`` (the kinds concept's class ->
    attribute -> kind), ``calls`` (every call) and ``binding_sites`` (every binding
    seen by the walk) are tables of the model's one walk; ``tree`` is the module, whose
    top-level statements say which GPUs the process may see."""

    def __init__(self, *, qualname: Callable, kind_of: Callable, assignments: Callable,
                 enclosing_class: Callable, class_attrs: dict, calls: list, binding_sites: list,
                 tree: ast.Module | None = None) -> None:
        self._tree = tree
        self.qualname = qualname
        self.kind_of = kind_of
        self.assignments = assignments
        self.enclosing_class = enclosing_class
        self._class_attrs = class_attrs
        self.calls = calls
        self._binding_sites = binding_sites

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
            if kinds in ({"follows"}, {"dtype"}, {"cpu"}, {"variable"}, {"accelerator"}):
                # `device = x.device`, `dt = torch.float16`, `device = "cpu"` (only ever),
                # `gpu = "cuda" if ok else "cpu"` (a configured device whatever the name says)
                return "variable" if kinds == {"accelerator"} else kinds.pop()
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

    def string_test_value(self, test: ast.AST) -> bool | None:
        """The value of ``device == "cuda"`` (or ``!=``) when ``device`` is a ``torch.device``
        object (built by ``torch.device(...)``): a device never equals a string, so ``==`` is
        always False and ``!=`` always True (``if device == 'cuda': net = DataParallel(net)``
        never wraps). None for anything else (a device held as a string compares fine)."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
            return None
        left, right = test.left, test.comparators[0]
        for value, other in ((left, right), (right, left)):
            if isinstance(other, ast.Constant) and isinstance(other.value, str) and \
                    isinstance(value, (ast.Name, ast.Attribute)) and self.kind_of(value) == "device":
                return isinstance(test.ops[0], ast.NotEq)
        return None

    @cached_property
    def visible_gpus(self) -> int | None:
        """How many GPUs the module's own top-level statements leave visible: ``os.environ[
        "CUDA_VISIBLE_DEVICES"] = "0"`` (a literal, the last such assignment) gives 1, ``"0,1"``
        gives 2. None when the module does not set it to a literal at its top level."""
        count = None
        for stmt in getattr(self._tree, "body", ()):
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            target = stmt.targets[0]
            if isinstance(target, ast.Subscript) and self.qualname(target.value) == "os.environ" and \
                    isinstance(target.slice, ast.Constant) and target.slice.value == "CUDA_VISIBLE_DEVICES":
                value = stmt.value
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    count = len([p for p in value.value.split(",") if p.strip()])
                else:
                    count = None  # set from an option: not known
        return count

    def device_count_test_value(self, test: ast.AST) -> bool | None:
        """The value of a multi-GPU test (``torch.cuda.device_count() > 1``, ``>= 2``, also on a
        name assigned once from the call) when the module pins the visible GPUs to one
        (``visible_gpus``): always False -- ``if torch.cuda.device_count() > 1: model =
        nn.DataParallel(model)`` never wraps there. None for anything else."""
        if self.visible_gpus != 1 or not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if not (isinstance(right, ast.Constant) and type(right.value) is int):
            return None
        if not ((isinstance(op, ast.Gt) and right.value >= 1) or (isinstance(op, ast.GtE) and right.value >= 2)):
            return None
        counted = left
        if isinstance(left, ast.Name):
            values = self.assignments(left)[0]
            counted = values[0] if len(values) == 1 else None
        if isinstance(counted, ast.Call) and self.qualname(counted.func) == "torch.cuda.device_count":
            return False
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
        # The first such call by position (as in ``sorted(self.calls, key=position)``, ties
        # in walk order): the calls are scanned in walk order, none sorted (most modules have
        # none, and sorting every call cost more than the scan).
        qualname, queries = self.qualname, N.CUDA_QUERIES
        first, first_at = None, None
        for call in self.calls:
            func = call.func
            q = qualname(func) or ""
            if not (q in queries or q.startswith("torch.accelerator.")):
                attr = func.attr if isinstance(func, ast.Attribute) else None
                if not (attr == "cuda" and not q.startswith("torch.")) and not (
                        (attr == "to" or q == "torch.device") and call.args and _is_cuda_literal(call.args[0])):
                    for kw in call.keywords:
                        if kw.arg == "device" and _is_cuda_literal(kw.value):
                            break
                    else:
                        continue
            at = position(call)
            if first is None or at < first_at:
                first, first_at = call, at
        if first is not None:
            return first
        for scope, name, value, _ in self._binding_sites:
            if value is not None and "dev" in name.lower() and _is_cuda_literal(value):
                return value
        return None
