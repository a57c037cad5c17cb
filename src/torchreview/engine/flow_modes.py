"""Flow facts about repetition (batch and epoch loops), train/eval modes and
device placement."""

from __future__ import annotations

import ast

from torchreview.engine import names as N
from torchreview.engine.semantic import (  # noqa: F401
    FunctionNode, LoopNode, SemanticModel, ancestors, call_name, dotted, parent, position,
)
from torchreview.engine.flow_common import (  # noqa: F401
    MAX_INLINE_DEPTH, _ITER_WRAPPERS, Event, TrainingLoop, _alive, _field_of, _root_name,
    _walk_same_function, names_accumulation,
)


_SCALAR_BUILTINS = frozenset(("int", "float", "bool", "len"))
_SCALAR_METHODS = frozenset(("item", "numel", "dim", "ndimension", "element_size", "nelement"))

def _constant_mode(value: ast.AST | None) -> str:
    if isinstance(value, ast.Constant) and value.value in (True, False, 0, 1):
        return "train" if value.value else "eval"
    return "set"


def _switch(call: ast.Call, m) -> str | None:
    """``x.eval()`` -> "eval"; ``x.train()`` / ``x.train(True)`` -> "train"; ``x.train(False)``
    -> "eval"; ``x.train(flag)`` -> the name "flag" (or "?" for another expression);
    None for anything else (``clf.train(X, y)``, ``torch.*``)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("eval", "train") or \
            (isinstance(func.value, (ast.Name, ast.Attribute)) and
             (m.qualname(func.value) or "").startswith(("torch.", "builtins."))):
        return None
    args = [*call.args, *(k.value for k in call.keywords if k.arg == "mode")]
    if len(call.args) + len(call.keywords) != len(args) or len(args) > 1:
        return None
    if func.attr == "eval":
        return None if args else "eval"
    if not args:
        return "train"
    if isinstance(args[0], ast.Constant):
        return _constant_mode(args[0])
    return args[0].id if isinstance(args[0], ast.Name) else "?"


def _rooted(expr: ast.AST, outer: set[str]) -> bool:
    """``self.net``, ``self.modules()``, ``getattr(self, name)``, ``[self.a, self.b]``,
    ``model.encoder``: an expression reading an object of ``outer`` names."""
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return any(_rooted(e, outer) for e in expr.elts)
    while True:
        if isinstance(expr, (ast.Attribute, ast.Subscript)):
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            expr = expr.func.value  # self.modules()
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "getattr" \
                and expr.args:
            expr = expr.args[0]
        else:
            return isinstance(expr, ast.Name) and expr.id in outer


def _reaches_outside(receiver: ast.AST, func: ast.AST, outer: set[str]) -> bool:
    """The switched object comes from outside ``func``: rooted in ``self`` or a
    parameter, directly or through a local name bound from one (``module =
    getattr(self, name)``, ``for m in self.modules():``); not a module the
    function builds itself."""
    if _rooted(receiver, outer):
        return True
    root = receiver
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    if not isinstance(root, ast.Name):
        return False
    for node in ast.walk(func):
        value = node.value if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == root.id for t in node.targets) else \
            node.iter if isinstance(node, ast.For) and any(
                isinstance(t, ast.Name) and t.id == root.id for t in ast.walk(node.target)) else None
        if value is not None and _rooted(value, outer):
            return True
    return False


class ModesMixin:
    """Part of :class:`torchreview.engine.flow.Flow` (uses ``self.m``, the semantic model)."""

    # -------------------------------------------------------- repetition
    def iterables_of(self, loop: ast.AST) -> list[ast.AST]:
        """What a ``for`` loop iterates, unwrapping ``enumerate``/``zip``/``iter``/``tqdm``."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return []
        out, stack = [], [loop.iter]
        while stack:
            expr = stack.pop()
            if isinstance(expr, ast.Call) and expr.args and (
                    self.m.qualname(expr.func) in _ITER_WRAPPERS or call_name(expr) in ("tqdm", "track")):
                stack.extend(expr.args if self.m.qualname(expr.func) == "builtins.zip" else expr.args[:1])
            else:
                out.append(expr)
        return out

    def is_batch_loop(self, loop: ast.AST) -> bool:
        """A training loop, or a ``for`` loop over a DataLoader (through names,
        ``self`` attributes, parameters and iteration wrappers)."""
        if any(tl.node is loop for tl in self.training_loops):
            return True
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        return bool(self.iterated_loaders(loop)) or any(
            self.m.kind_of(it) == "loader" for it in self.iterables_of(loop))

    def is_epoch_loop(self, loop: ast.AST, strict: bool = False) -> bool:
        """The epoch loop of a training loop, a loop spelled over epochs
        (``for epoch in ...``, ``range(args.epochs)``, ``while epoch < n``), or
        (unless ``strict``) a loop whose body runs a batch loop (directly or in a
        same-module callee; e.g. a loop over hyper-parameter trials)."""
        if any(tl.epoch_loop is loop for tl in self.training_loops):
            return True
        head = [loop.target, loop.iter] if isinstance(loop, (ast.For, ast.AsyncFor)) else [loop.test]
        for sub in (n for h in head for n in ast.walk(h)):
            word = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else ""
            if "epoch" in word.lower():
                return True
        if strict:
            return False
        for sub in self.m.own_nodes(loop):
            if isinstance(sub, LoopNode) and self.is_batch_loop(sub):
                return True
            if isinstance(sub, ast.Call):
                callee = self.resolve_local_call(sub)
                if callee is not None and any(isinstance(n, LoopNode) and self.is_batch_loop(n)
                                              for n in self.m.own_nodes(callee)):
                    return True
        return False

    def repeating_loop(self, node: ast.AST, depth: int = 3, strict: bool = False,
                       _caller: bool = False) -> ast.AST | None:
        """The batch or epoch loop that runs ``node`` over and over: an enclosing
        loop in its function, or (through same-module callers, up to ``depth``
        hops) a batch/epoch loop around a call site. None when it runs once.
        With ``strict``, loops around call sites must be epoch loops in the
        strict sense (``is_epoch_loop(strict=True)``) or batch loops."""
        for anc in ancestors(node):
            if isinstance(anc, LoopNode) and (self.is_batch_loop(anc) or
                                              self.is_epoch_loop(anc, strict=strict and _caller)):
                return anc
            if isinstance(anc, (ast.Lambda, ast.ClassDef)):
                return None
            if isinstance(anc, FunctionNode):
                if depth <= 0:
                    return None
                for site in self.call_sites(anc):
                    found = self.repeating_loop(site, depth - 1, strict, True)
                    if found is not None:
                        return found
                return None
        return None

    # -------------------------------------------------------- modes
    def mode_calls_before(self, node: ast.AST, mode: str, _depth: int = 4) -> bool:
        """Is a ``model.eval()``/``train()`` call (``mode``) seen before ``node``
        in its function, or before every call site of that function? A call of a
        function of this module that switches modes (``self._set_training(False)``,
        see ``own_mode``) counts as the mode it leaves."""
        func = self.m.enclosing_function(node)
        scope_body = func if func is not None else self.m.tree
        target = position(node)
        for call in self.m.subtree(scope_body):
            if isinstance(call, ast.Call) and position(call) < target and (
                    self.classify(call) == mode or self.imported_mode(call) == mode or self.own_mode(call) == mode):
                if func is None or self.m.enclosing_function(call) is func:
                    return True
        if func is None or _depth <= 0:
            return False
        sites = self.call_sites(func)
        return bool(sites) and all(self.mode_calls_before(site, mode, _depth - 1) for site in sites)

    def own_mode(self, call: ast.AST) -> str | None:
        """The mode a call of a function of this module leaves the modules it switches
        in: ``self._set_training(False)`` whose body runs ``module.train(training)``
        (for each module of the object) gives "eval"; "train" for ``.train()`` /
        ``.train(True)``; "set" when the argument is not a constant; None when the
        callee switches no mode (its last ``.eval()``/``.train(...)`` decides)."""
        if not isinstance(call, ast.Call):
            return None
        memo = self._own_modes
        if id(call) in memo:
            return memo[id(call)]
        memo[id(call)] = None  # recursion guard
        func = self.resolve_local_call(call)
        mode = None
        if func is not None:
            params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
            if isinstance(parent(func), ast.ClassDef) and params:
                params = params[1:]  # self
            defaults = dict(zip(reversed(params), reversed(func.args.defaults)))
            outer = {"self", *params} if isinstance(parent(func), ast.ClassDef) else set(params)
            for sub in sorted((n for n in self.m.own_nodes(func) if isinstance(n, ast.Call)), key=position):
                found = _switch(sub, self.m)
                if found is None or not _reaches_outside(sub.func.value, func, outer):
                    continue  # a module the callee builds itself is not the caller's
                if isinstance(found, str) and found in params:  # `.train(training)`: the caller's argument
                    i = params.index(found)
                    value = next((k.value for k in call.keywords if k.arg == found), None)
                    if value is None and i < len(call.args) and \
                            not any(isinstance(a, ast.Starred) for a in call.args[: i + 1]):
                        value = call.args[i]
                    value = defaults.get(found) if value is None and not call.keywords else value
                    found = _constant_mode(value)
                elif isinstance(found, str) and found not in ("eval", "train"):
                    found = "set"
                mode = found
        memo[id(call)] = mode
        return mode

    def sets_mode_before(self, node: ast.AST) -> str | None:
        """The kind of the last mode switch before ``node`` in its function
        (eval/train, or "set" for a switch decided by an argument), or None."""
        func = self.m.enclosing_function(node)
        owner = func if func is not None else self.m.tree
        target, best, mode = position(node), None, None
        for sub in self.m.own_nodes(owner):
            if isinstance(sub, ast.Call) and position(sub) < target and (best is None or position(sub) > best):
                kind = self.classify(sub) if self.classify(sub) in ("eval", "train") else None
                kind = kind or self.imported_mode(sub) or self.own_mode(sub)
                if kind is not None:
                    best, mode = position(sub), kind
        return mode

    def shared_forward_helper(self, func: ast.AST) -> bool:
        """A function both training and evaluation call for their forward pass, each
        setting the mode first: every call site of this module switches a mode before
        it, at least one to eval (or by an argument), and each call site after a
        switch to train is a training step (a ``backward`` follows it in its function).
        Its own mode is its callers' business (skorch's ``infer``)."""
        owner_class = parent(func) if isinstance(parent(func), ast.ClassDef) else None
        sites = [s for s in self.call_sites(func) if owner_class is None or self.m.enclosing_class(s) is owner_class]
        if not sites:
            return False
        modes = []
        for site in sites:
            mode = self.sets_mode_before(site)
            if mode is None:
                return False
            if mode == "train":
                owner = self.m.enclosing_function(site)
                if owner is None or not any(
                        isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "backward"
                        and position(c) > position(site) for c in self.m.own_nodes(owner)):
                    return False
            modes.append(mode)
        return any(m in ("eval", "set") for m in modes) and "train" in modes

    @staticmethod
    def called_model(call: ast.Call) -> ast.AST:
        """The model a forward call runs: ``net`` in ``net(x)`` / ``net.forward(x)``."""
        func = call.func
        return func.value if isinstance(func, ast.Attribute) and func.attr == "forward" else func

    def eval_reaches(self, call: ast.Call) -> bool:
        """Is the model of this forward call in eval mode when it runs, as far as this
        module shows? An ``eval()`` before it (function or every caller); for
        ``self.attr`` an ``eval()`` of it anywhere in the class; for a global, one at
        import time; or its value was built/stored after ``eval()`` (``net.eval();
        self.model = net.to(d)``, ``Net().eval()``), or loaded by ``from_pretrained``
        / ``torch.jit.load`` (already in eval mode)."""
        if self.mode_calls_before(call, "eval"):
            return True
        receiver = self.called_model(call)
        text = dotted(receiver)
        evals = [c for name in ("eval", "train") for c in self.m.calls_by_name.get(name, ())
                 if self.classify(c) == "eval" and isinstance(c.func, ast.Attribute)]
        if text and text.startswith("self."):
            cls = self.m.enclosing_class(call)
            if any(dotted(c.func.value) == text and self.m.enclosing_class(c) is cls for c in evals):
                return True
        if isinstance(receiver, ast.Name) and self.m.enclosing_function(call) is not None:
            if any(dotted(c.func.value) == text and self.m.enclosing_function(c) is None for c in evals):
                return True
        for value in self.values_of(receiver):
            if value is not receiver and self.mode_calls_before(value, "eval"):
                return True
            for sub in ast.walk(value):
                if not isinstance(sub, ast.Call):
                    continue
                q = self.m.qualname(sub.func) or ""
                if q.endswith(".from_pretrained") or q == "torch.jit.load" or self.classify(sub) == "eval":
                    return True
                if self.m.project is not None and getattr(self.m.project.function(q), "returns_mode", None) \
                        == "eval":
                    return True  # built by a project helper that returns it in eval mode
        return False

    def run_by_base_class(self, func: ast.AST) -> bool:
        """A method of a class with base classes that nothing in this module calls:
        a base class defined elsewhere drives it (``validation_step`` of a trainer
        subclass), together with whatever mode or grad setup surrounds it."""
        cls = parent(func)
        return isinstance(cls, ast.ClassDef) and bool(cls.bases) and not self.call_sites(func)

    def mode_at(self, node: ast.AST, _depth: int = 3) -> str | None:
        """``"eval"``/``"train"``: the last ``model.eval()``/``.train()`` call that
        precedes ``node`` in source order in its function (nested functions
        excluded); with none there, the mode every same-module call site agrees on.
        None when unknown."""
        func = self.m.enclosing_function(node)
        owner = func if func is not None else self.m.tree
        target, best, mode = position(node), None, None
        for sub in self.m.own_nodes(owner):
            if isinstance(sub, ast.Call) and position(sub) < target and (best is None or position(sub) > best):
                kind = self.classify(sub) or self.imported_mode(sub)
                if kind in ("eval", "train"):
                    best, mode = position(sub), kind
        if mode is not None or func is None or _depth <= 0:
            return mode
        modes = {self.mode_at(site, _depth - 1) for site in self.call_sites(func)}
        return modes.pop() if len(modes) == 1 else None

    # -------------------------------------------------------- placement
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

    def wrapping_call(self, expr: ast.AST, qualnames, hops: int = 6) -> ast.Call | None:
        """The call of one of ``qualnames`` (e.g. ``DistributedDataParallel``) that
        built what ``expr`` may hold, or None: followed through names, ``self``
        attributes, ``.to()``/``.cuda()``, parameters (arguments at same-module call
        sites, and of ``Cls(...)`` for the parameters of ``Cls.__init__``)."""
        stack: list[tuple[ast.AST, int]] = [(expr, 0)]
        seen: set[int] = set()
        while stack:
            value, depth = stack.pop()
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                    value.func.attr in N.MODEL_RETURNING_METHODS:
                value = value.func.value
            if id(value) in seen or depth > hops:
                continue
            seen.add(id(value))
            if isinstance(value, ast.Call):
                if self.m.qualname(value.func) in qualnames:
                    return value
            elif isinstance(value, (ast.Name, ast.Attribute)):
                found = [v for v in self.values_of(value, depth=1) if v is not value]
                if not found and isinstance(value, ast.Name):
                    found = self._constructor_arguments(value)
                stack.extend((v, depth + 1) for v in found)
        return None

    def _constructor_arguments(self, name: ast.Name) -> list[ast.AST]:
        """What ``Cls(...)`` calls of this module pass for a parameter of ``Cls.__init__``."""
        values, func = self.m.assignments(name)
        cls = parent(func) if func is not None else None
        if values or not isinstance(cls, ast.ClassDef) or func.name != "__init__":
            return []
        params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]][1:]
        out = []
        for site in self.m.calls_by_name.get(cls.name, ()):
            if not (isinstance(site.func, ast.Name) and site.func.id == cls.name):
                continue
            kw = next((k.value for k in site.keywords if k.arg == name.id), None)
            if kw is not None:
                out.append(kw)
            elif name.id in params and params.index(name.id) < len(site.args) and \
                    not any(isinstance(a, ast.Starred) for a in site.args):
                out.append(site.args[params.index(name.id)])
        return out

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

    def raw_batch_names(self, loop: ast.AST, at: ast.AST) -> set[str]:
        """Names that, where ``at`` runs in the body of the ``for`` loop ``loop``, still
        hold what the loop iterates exactly as it was yielded: the loop target (the
        item of ``enumerate``), and names unpacked or indexed from it without any call
        (``x, y = batch``, ``ids = batch["ids"]``). A reassignment from anything else
        (``x = x.to(device)``) or an item assignment (``batch[k] = ...``) ends it."""
        timeline = self.__dict__.setdefault("_batch_timelines", {}).get(id(loop))
        if timeline is None:
            timeline = self._batch_timeline(loop)
            self._batch_timelines[id(loop)] = timeline
        return _alive(timeline, position(at))

    def _batch_timeline(self, loop) -> list[tuple[tuple[int, int], str, bool]]:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return []
        target = loop.target
        if isinstance(loop.iter, ast.Call) and self.m.qualname(loop.iter.func) == "builtins.enumerate" and \
                isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target = target.elts[1]
        timeline = [(position(loop), n.id, True) for n in ast.walk(target) if isinstance(n, ast.Name)]
        stmts = sorted((n for n in self.m.own_nodes(loop)
                        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))), key=position)
        for node in stmts:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            unpacks = value is not None and not isinstance(node, ast.AugAssign) and \
                not any(isinstance(v, ast.Call) for v in ast.walk(value)) and \
                _root_name(value) in _alive(timeline, position(node))
            done = (node.end_lineno, node.end_col_offset)  # the value is computed first
            for t in targets:
                timeline += [(done, n.id, unpacks) for n in ast.walk(t)
                             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
                if isinstance(t, (ast.Subscript, ast.Attribute)) and _root_name(t):
                    timeline.append((done, _root_name(t), False))
        return timeline
