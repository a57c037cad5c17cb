"""Model concept: placement (where a value lives: moved off the CPU, or nowhere).

``Placement`` answers whether the object an expression names is moved off the
CPU (``moved_to_device``: ``.to(device)``/``.cuda()`` in the scope that holds it,
or in what it was assigned), whether an expression is a plain Python value
that lives on no device (``python_scalar``), whether a value only indexes or
masks a subscript (``index_only``: host indices index a tensor on any device),
and whether a tensor is combined with other values (``meets_other_tensors``). It receives the semantic model
(names, scopes, devices) and the values concept (``Values.reaching_value``) in
its constructor.
"""

from __future__ import annotations

import ast

from torchreview.engine.flow_common import _root_name
from torchreview.engine.semantic_common import FunctionNode, LoopNode, ancestors, dotted, parent, position

_SCALAR_BUILTINS = frozenset(("int", "float", "bool", "len"))
_SCALAR_METHODS = frozenset(("item", "numel", "dim", "ndimension", "element_size", "nelement"))


class Placement:
    def __init__(self, model, *, values) -> None:
        self.m = model
        self.reaching_value = values.reaching_value

    def moved_to_device(self, expr: ast.AST, hops: int = 4) -> bool:
        """Is the object ``expr`` names (a model, a tensor) moved off the CPU?
        ``x.to(device)``/``x.cuda()`` statements in the scope that holds it (the same
        function; the same class for ``self.x``), or a ``.to()``/``.cuda()`` in the
        expression it was assigned, followed through names and one caller."""
        probe = expr
        for _ in range(hops):
            name = dotted(probe)
            if name is None:
                return False
            key = self._placement_key(probe, name)
            for call in self.m.calls_by_name.get("to", []) + self.m.calls_by_name.get("cuda", []):
                if not isinstance(call.func, ast.Attribute):
                    continue  # a function of the project named `to` (`to(xs, device)`), not a move
                if dotted(call.func.value) == name and self._placement_key(call, name) == key and \
                        self._to_device(call) and not self._placed_later_once(call, probe):
                    return True
            value = self.reaching_value(probe)
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                moved = self._to_device(value)
                if moved is not None:
                    return moved
                value = value.func.value
            if not isinstance(value, (ast.Name, ast.Attribute)):
                return False
            probe = value
        return False

    def _placed_later_once(self, call: ast.AST, use: ast.AST) -> bool:
        """At module level (a script, a notebook's cells in order) statements run
        once: a placement after the use, outside any loop that also holds the use,
        never reaches it (a notebook that trains on the CPU in one cell and moves
        the model in a later one)."""
        if self.m.scope_of(use) is not self.m.tree or position(call) <= position(use):
            return False
        use_loops = {id(a) for a in ancestors(use) if isinstance(a, LoopNode)}
        return not any(id(a) in use_loops for a in ancestors(call))

    def _placement_key(self, node: ast.AST, name: str):
        return (self.m.enclosing_class(node) if name.startswith("self.") else self.m.scope_of(node)), name

    def _to_device(self, call: ast.Call) -> bool | None:
        """True for ``.cuda()`` / ``.to(<not the CPU>)``, False for ``.to("cpu")``, None otherwise."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            return None
        if call.func.attr == "cuda":
            return True
        if call.func.attr == "to":
            device = self.m.to_call_device(call)
            return device is not None and self.m.device_kind(device) in ("accelerator", "variable")
        return None

    def python_scalar(self, expr: ast.AST, hops: int = 4) -> bool:
        """A plain Python value, never a tensor on a device: a constant, ``t.item()``,
        ``int(...)``/``float(...)``/``len(...)``, ``t.size(i)``/``t.shape[i]``/
        ``t.numel()``/``t.dim()``, arithmetic of those, or a name assigned one."""
        if isinstance(expr, ast.Constant):
            return True
        if isinstance(expr, ast.UnaryOp):
            return self.python_scalar(expr.operand, hops)
        if isinstance(expr, ast.BinOp):
            return self.python_scalar(expr.left, hops) and self.python_scalar(expr.right, hops)
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Name) and func.id in _SCALAR_BUILTINS and func.id not in self.m.functions:
                return True
            if isinstance(func, ast.Attribute) and func.attr in _SCALAR_METHODS:
                return True
            return (self.m.qualname(func) or "").startswith("math.")
        if isinstance(expr, ast.Subscript):
            base = expr.value
            return isinstance(base, ast.Attribute) and base.attr == "shape" or \
                isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and base.func.attr == "size"
        if isinstance(expr, ast.Attribute):
            return expr.attr in ("ndim", "is_cuda", "requires_grad")
        if isinstance(expr, ast.Name) and hops > 0:
            value = self.reaching_value(expr)
            return value is not None and value is not expr and self.python_scalar(value, hops - 1)
        return False

    def index_only(self, expr: ast.AST, hops: int = 2) -> bool:
        """Is the value of ``expr`` only ever used as an index or mask of a subscript
        (``x[expr]``, ``x[:, expr]``, ``x[~expr & m]``, or a name bound to it and used only
        so)? Advanced indexing accepts host (CPU) indices for a tensor on any device
        (unlike ``index_select``/``gather``/``masked_fill``, which need one device)."""
        node = expr
        while True:
            above = parent(node)
            if isinstance(above, ast.UnaryOp) and isinstance(above.op, (ast.Invert, ast.Not)) or \
                    isinstance(above, ast.BinOp) and isinstance(above.op, (ast.BitAnd, ast.BitOr, ast.BitXor)) or \
                    isinstance(above, (ast.Tuple, ast.List)):
                node = above
                continue
            break
        if isinstance(above, ast.Subscript) and above.slice is node:
            return True
        if isinstance(above, ast.Assign) and above.value is node and len(above.targets) == 1 and \
                isinstance(above.targets[0], ast.Name) and hops > 0:
            name, scope = above.targets[0].id, self.m.scope_of(above)
            uses = [n for n in self.m.nodes_by_type.get(ast.Name, ()) if n.id == name and isinstance(n.ctx, ast.Load)
                    and self.m.scope_of(n) is scope and position(n) > position(above)]
            return bool(uses) and all(self.index_only(u, hops - 1) for u in uses)
        return False

    def _module_setting(self, expr: ast.AST) -> bool:
        """``self.cls_pos`` / ``self.pooler.cls_token_position``: an attribute of the module
        that is not a tensor, a parameter or a registered buffer -- a setting (a number)."""
        if not (isinstance(expr, ast.Attribute) and (dotted(expr) or "").startswith("self.")) or \
                self.m.kind_of(expr) in ("tensor", "parameter"):
            return False
        cls = self.m.enclosing_class(expr)
        buffers = {c.args[0].value for c in self.m.calls_by_name.get("register_buffer", ())
                   if c.args and isinstance(c.args[0], ast.Constant) and (cls is None or
                                                                          self.m.enclosing_class(c) is cls)}
        return expr.attr not in buffers

    def meets_other_tensors(self, use: ast.AST) -> bool:
        """Is the tensor expression ``use`` combined with other values: arithmetic or a
        comparison with a non-constant, an argument of a ``torch.*`` function with other
        non-constant arguments (``torch.cat([a, b])``), of a submodule call
        (``self.layer(t)``, ``self.lstm(x, (h0, c0))``), or of a method of another
        tensor (``x.masked_fill(t, 0)``)? Method chains on ``use`` (``.unsqueeze(0)``,
        slicing) are followed; one that moves it (``.to``, ``.cuda``, ``.type_as``)
        answers False, and so does use as an index (``x[idx]``)."""
        top = use
        while True:
            above = parent(top)
            if isinstance(above, ast.Attribute) and isinstance(parent(above), ast.Call) and parent(above).func is above:
                if above.attr in ("to", "cuda", "type_as", "to_device"):
                    return False
                top = parent(above)
            elif isinstance(above, ast.Subscript) and above.value is top:
                top = above
            else:
                break
        above = parent(top)
        while isinstance(above, (ast.List, ast.Tuple, ast.Starred, ast.keyword)):
            top, above = above, parent(above)
        if isinstance(above, (ast.BinOp, ast.Compare)) and self.index_only(above):
            # `hidden[:, torch.arange(n) != k]`: an index or mask on the host indexes a tensor on any
            # device; only a partner known to be a tensor (it may live on a GPU) still mixes
            partners = [above.left, above.right] if isinstance(above, ast.BinOp) else [above.left, *above.comparators]
            return not all(self.python_scalar(o) or self._module_setting(o) for o in partners if o is not top)
        if isinstance(above, ast.BinOp):
            return not self.python_scalar(above.right if above.left is top else above.left)
        if isinstance(above, ast.Compare):
            return not all(self.python_scalar(o) for o in [above.left, *above.comparators] if o is not top)
        if not isinstance(above, ast.Call) or above.func is top:
            return False
        func, q = above.func, self.m.qualname(above.func) or ""
        others = [a for a in [*above.args, *(k.value for k in above.keywords)]
                  if a is not top and a is not getattr(top, "value", None)]
        if q.startswith("torch.") and not q.startswith(("torch.nn.init", "torch.Size")):
            return isinstance(top, (ast.List, ast.Tuple)) or any(not self.python_scalar(a) for a in others)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            cls = self.m.enclosing_class(above)
            methods = {s.name for s in cls.body if isinstance(s, FunctionNode)} if cls is not None else set()
            return func.attr not in methods  # a submodule, not a helper method
        if isinstance(func, ast.Attribute) and (func.attr in ("copy_", "new_tensor", "to", "type_as") or (
                func.attr in ("index_put_", "index_put") and above.args and above.args[0] is top)):
            return False  # these cross devices (and host indices index any device), unlike index_select
        if isinstance(func, ast.Attribute) and not q and isinstance(func.value, (ast.Name, ast.Attribute)) and \
                _root_name(func.value) != _root_name(use):
            return self.m.kind_of(func.value) in ("tensor", "parameter", None)
        return False
