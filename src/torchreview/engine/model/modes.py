"""Model concept: modes (train or eval where a model runs).

``Modes`` answers which mode a node runs in (``mode_at``: the last
``.eval()``/``.train()`` before it in its function, else what every caller
agrees on), whether a mode switch comes before a node (``mode_calls_before``),
whether a forward call's model is in eval mode (``eval_reaches``: also
``self.attr`` put in eval mode elsewhere in its class, values built after
``eval()``, ``from_pretrained``/``torch.jit.load`` results, project helpers that
return a model in eval mode), which names are put in eval mode anywhere
(``eval_targets``), the mode a call of the module's own function leaves
(``own_mode``: ``self._set_training(False)``) and forward helpers shared by
training and evaluation (``shared_forward_helper``). It receives the semantic
model, the call graph (``CallGraph``), the events (``Loops.classify``) and
values (``Values.values_of``) in its constructor.
"""

from __future__ import annotations

import ast
from functools import cached_property

from torchreview.engine.library import loads_in_eval
from torchreview.engine.project_index import local_builder_mode
from torchreview.engine.semantic_common import argument_for, dotted, mode_switched_to, parent, placed_module, \
    position, switches_to_eval

_MOVED = frozenset(("to", "cuda", "cpu", "half", "float", "double", "bfloat16"))


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


def _constant_arguments(call: ast.Call, params: list[str], defaults: dict) -> dict[str, object]:
    """The constant value each parameter gets at ``call`` (argument or default)."""
    out: dict[str, object] = {}
    for i, name in enumerate(params):
        value = next((k.value for k in call.keywords if k.arg == name), None)
        if value is None and i < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: i + 1]):
            value = call.args[i]
        if value is None:
            value = defaults.get(name)
        if isinstance(value, ast.Constant):
            out[name] = value.value
    return out


def _test_value(test: ast.AST, given: dict[str, object]) -> bool | None:
    """``mode in ["eval", "test"]`` / ``mode == "train"`` / ``mode != ...`` / ``not ...`` with
    ``mode`` a parameter of known constant value: the test's outcome, None when unknown."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _test_value(test.operand, given)
        return None if inner is None else not inner
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and test.left.id in given):
        return None
    value, op, right = given[test.left.id], test.ops[0], test.comparators[0]
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.List, ast.Tuple, ast.Set)) and \
            all(isinstance(e, ast.Constant) for e in right.elts):
        inside = value in [e.value for e in right.elts]
        return inside if isinstance(op, ast.In) else not inside
    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
        return (value == right.value) if isinstance(op, ast.Eq) else (value != right.value)
    return None


def _branch_not_taken(node: ast.AST, func: ast.AST, given: dict[str, object]) -> bool:
    """``node`` sits in an ``if``/``elif``/``else`` branch of ``func`` that the constant
    arguments rule out."""
    if not given:
        return False
    child = node
    for anc in _ancestors_until(node, func):
        if isinstance(anc, ast.If) and child is not anc.test:
            outcome = _test_value(anc.test, given)
            if outcome is not None and (child in anc.body) != outcome:
                return True
        child = anc
    return False


def _ancestors_until(node: ast.AST, stop: ast.AST):
    current = parent(node)
    while current is not None and current is not stop:
        yield current
        current = parent(current)


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


class Modes:
    def __init__(self, model, *, calls, loops, values) -> None:
        self.m = model
        self.call_sites = calls.call_sites
        self.resolve_local_call = calls.resolve_local_call
        self.imported_mode = calls.imported_mode
        self.classify = loops.classify
        self.values_of = values.values_of
        self._own_modes: dict[int, str | None] = {}
        self._param_modes: dict[int, list[tuple[ast.AST, str]]] = {}

    @cached_property
    def eval_targets(self) -> frozenset[str]:
        """Dotted names put in eval mode anywhere in the module (``net.eval()``,
        ``self.model.train(False)``), whatever their inferred kind: an object with
        ``.eval()`` that is also called is, in practice, an ``nn.Module``."""
        out = set()
        for name in ("eval", "train"):
            for call in self.m.calls_by_name.get(name, ()):
                func = call.func
                if mode_switched_to(call) != "eval":
                    continue
                # `self.model.cuda().eval()`: the module the chain returns is the one switched
                receiver = placed_module(func.value)
                target = dotted(receiver)
                if target and not (self.m.qualname(receiver) or "").startswith(("torch.", "builtins.")):
                    out.add(target)
        return frozenset(out)

    def is_model_call(self, call: ast.Call) -> bool:
        """A forward call of a model: by inferred kind, or a callee put in eval mode here."""
        if self.classify(call) == "forward":
            return True
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        target = dotted(func)
        return target is not None and target in self.eval_targets

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
        callee switches no mode (its last ``.eval()``/``.train(...)`` decides). The
        callee may also be a method of a class of this module called on an instance
        built here (``net = Net().to(d); net.set_mode("test")``); switches in branches
        that the call's constant arguments rule out (``if mode in ["eval", "test"]:
        self.eval() elif mode == "train": self.train()``) do not count."""
        if not isinstance(call, ast.Call):
            return None
        memo = self._own_modes
        if id(call) in memo:
            return memo[id(call)]
        memo[id(call)] = None  # recursion guard
        func = self.resolve_local_call(call) or self._instance_method(call)
        mode = None
        if func is not None:
            params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
            if isinstance(parent(func), ast.ClassDef) and params:
                params = params[1:]  # self
            defaults = dict(zip(reversed(params), reversed(func.args.defaults)))
            outer = {"self", *params} if isinstance(parent(func), ast.ClassDef) else set(params)
            given = _constant_arguments(call, params, defaults)
            for sub in sorted((n for n in self.m.own_nodes(func) if isinstance(n, ast.Call)), key=position):
                found = _switch(sub, self.m)
                if found is None or not _reaches_outside(sub.func.value, func, outer):
                    continue  # a module the callee builds itself is not the caller's
                if _branch_not_taken(sub, func, given):
                    continue  # `if mode in ["eval", "test"]: self.eval()` for `set_mode("train")`
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

    def param_mode_calls(self, call: ast.AST) -> list[tuple[ast.AST, str]]:
        """A call of a plain function of this module that switches modes of its parameters
        (``def evaluate(loader, encoder): encoder.eval(); ...``): one ``(argument, mode)`` pair
        per ``<param>.eval()``/``<param>.train(...)`` of the callee, in order (the same-module
        counterpart of the project index's ``imported_mode_calls``); [] otherwise."""
        if not isinstance(call, ast.Call):
            return []
        memo = self._param_modes
        if id(call) in memo:
            return memo[id(call)]
        out: list[tuple[ast.AST, str]] = []
        func = self.resolve_local_call(call)
        if func is not None and not isinstance(parent(func), ast.ClassDef):
            params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
            for sub in sorted((n for n in self.m.own_nodes(func) if isinstance(n, ast.Call)), key=position):
                target = sub.func
                if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id in params):
                    continue
                mode = mode_switched_to(sub)
                if mode is None:
                    continue
                arg = argument_for(call, func, target.value.id)
                if arg is not None:
                    out.append((arg, mode))
        memo[id(call)] = out
        return out

    def _instance_method(self, call: ast.Call) -> ast.AST | None:
        """``net.set_mode("test")`` where every value ``net`` holds is a construction of
        one class of this module (``net = Net()``): that class's method of the name."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)) or func.value.id == "self":
            return None
        values = []
        for v in self.values_of(func.value):
            while isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and \
                    v.func.attr in ("to", "cuda", "cpu", "float", "half", "double"):
                v = v.func.value  # `Net().to(device)`: the same object, moved
            values.append(v)
        if not values or any(not (isinstance(v, ast.Call) and isinstance(v.func, ast.Name)) for v in values):
            return None
        names = {v.func.id for v in values}
        cls = self.m.classes.get(names.pop()) if len(names) == 1 else None
        if not isinstance(cls, ast.ClassDef):
            return None
        return next((s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and s.name == func.attr), None)

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
            # `self.model.eval()` anywhere in the class, also moved first (`self.model.cuda().eval()`)
            if any(dotted(placed_module(c.func.value)) == text and self.m.enclosing_class(c) is cls for c in evals):
                return True
        if isinstance(receiver, ast.Name) and self.m.enclosing_function(call) is not None:
            if any(dotted(placed_module(c.func.value)) == text and self.m.enclosing_function(c) is None
                   for c in evals):
                return True
        for value in self.values_of(receiver):
            if value is not receiver and self.mode_calls_before(value, "eval"):
                return True
            if value is not receiver and isinstance(value, ast.Name) and self._unpacked_from_eval_builder(value):
                return True  # `net, stats = _load(...)`, then `self.net = net`
            if value is not receiver and self._switched_source(value):
                return True
            for sub in ast.walk(value):
                if not isinstance(sub, ast.Call):
                    continue
                q = self.m.qualname(sub.func) or self._through_alias(sub.func)
                # an eval-mode loader of the library tables (`X.from_pretrained`, `torch.jit.load`,
                # a torchaudio bundle's `get_model()`: data/library_models.json `eval_loaders`)
                if loads_in_eval(q) or self.classify(sub) == "eval":
                    return True
                if self.m.project is not None and getattr(self.m.project.function(q), "returns_mode", None) \
                        == "eval":
                    return True  # built by a project helper that returns it in eval mode
                if sub is value and local_builder_mode(self.m, sub, 2) == "eval":
                    return True  # ... or by a builder of this file that does
        if isinstance(receiver, ast.Name) and self._unpacked_from_eval_builder(receiver):
            return True  # `model, hparams = _load_fold_model(...)`, which runs `model.eval()` first
        # an alias assigned as written (`self.sv_fn = self.campplus_model`), where `values_of`
        # follows on to the construction: the alias of a module switched just before it
        # (every assignment, and nothing switches the alias back to train)
        assigned = self.m.assignments(receiver)[0]
        if assigned and all(self._switched_source(v) for v in assigned) and not any(
                isinstance(c.func, ast.Attribute) and dotted(c.func.value) == text and not switches_to_eval(c, text)
                for c in self.m.calls_by_name.get("train", ())):
            return True
        return False

    def _through_alias(self, func: ast.AST) -> str:
        """``bundle.get_model`` where ``bundle`` is bound once, in its scope, to a library object
        (``bundle = torchaudio.pipelines.HDEMUCS_HIGH_MUSDB``): the method's qualified name through
        that binding; "" otherwise."""
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return ""
        values, param_of = self.m.assignments(func.value)
        if len(values) != 1 or param_of is not None:
            return ""
        base = self.m.qualname(values[0])
        return f"{base}.{func.attr}" if base else ""

    def _unpacked_from_eval_builder(self, name: ast.Name) -> bool:
        """Every binding of ``name`` in its function unpacks a tuple that a function of this
        file returns (``model, hparams = load(...)``), and in every ``return a, b`` of that
        function the element at ``name``'s place is a local switched to eval mode before the
        return (``model.eval(); return model, hparams``), with no ``.train()`` after it, or is
        only ever loaded there by an eval-mode loader (``from_pretrained``)."""
        scope = self.m.enclosing_function(name) or self.m.tree
        binds = [a for a in self.m.own_nodes(scope) if isinstance(a, ast.Assign) and len(a.targets) == 1 and
                 isinstance(a.targets[0], ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name.id
                                                             for e in a.targets[0].elts)]
        plain = [a for a in self.m.own_nodes(scope) if isinstance(a, ast.Assign) and
                 any(isinstance(t, ast.Name) and t.id == name.id for t in a.targets)]
        if not binds or plain:
            return False
        for bind in binds:
            elts = bind.targets[0].elts
            index = next(i for i, e in enumerate(elts) if isinstance(e, ast.Name) and e.id == name.id)
            if not isinstance(bind.value, ast.Call):
                return False
            func = self.resolve_local_call(bind.value)
            if func is None:
                return False
            returns = [r for r in self.m.own_nodes(func) if isinstance(r, ast.Return) and r.value is not None]
            if not returns:
                return False
            for ret in returns:
                if not (isinstance(ret.value, ast.Tuple) and len(ret.value.elts) == len(elts)):
                    return False
                held = ret.value.elts[index]
                if not isinstance(held, ast.Name):
                    return False
                switches = [c for c in (*self.m.calls_by_name.get("eval", ()), *self.m.calls_by_name.get("train", ()))
                            if self.m.enclosing_function(c) is func and position(c) < position(ret) and
                            isinstance(c.func, ast.Attribute) and dotted(c.func.value) == held.id]
                if switches:
                    if not switches_to_eval(max(switches, key=position), held.id):
                        return False
                elif not self._loaded_in_eval_here(held, func):
                    return False
        return True

    def _loaded_in_eval_here(self, held: ast.Name, func: ast.AST) -> bool:
        """Every assignment of ``held`` in ``func`` is a load of the library's eval-mode loaders
        (``AutoModelForCausalLM.from_pretrained(...)``, also moved: ``.to(device)``): a helper's
        ``return model, tokenizer`` hands back a model in eval mode."""
        values = [v for v in self.m.assignments(held)[0] if self.m.enclosing_function(v) is func]
        if not values:
            return False
        for value in values:
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _MOVED:
                value = value.func.value
            if not (isinstance(value, ast.Call) and loads_in_eval(self.m.qualname(value.func) or "")):
                return False
        return True

    def _switched_source(self, value: ast.AST) -> bool:
        """``value`` moves a local name (``model.to(d)``, ``model.half()``) on which
        ``.eval()`` / ``.train(False)`` ran earlier in the same function, whatever the
        name's kind is known to be (``model.eval(); self.model = model.to(d)`` with a
        ``model=None`` parameter)."""
        root = value
        while isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute) and root.func.attr in _MOVED:
            root = root.func.value
        # a local name, or an attribute of `self` (`self.sv_fn = self.campplus_model` after
        # `self.campplus_model.eval()`: seed-vc's trainer)
        if isinstance(root, ast.Name):
            text = root.id
        elif isinstance(root, ast.Attribute) and isinstance(root.value, ast.Name) and root.value.id == "self":
            text = f"self.{root.attr}"
        else:
            return False
        scope = self.m.enclosing_function(value)
        switches = [c for name in ("eval", "train") for c in self.m.calls_by_name.get(name, ())
                    if switches_to_eval(c, text) and self.m.enclosing_function(c) is scope and
                    position(c) < position(value)]
        if not switches:
            return False
        last = max(switches, key=position)
        return not any(isinstance(c.func, ast.Attribute) and c.func.attr == "train" and dotted(c.func.value) == text
                       and not switches_to_eval(c, text) and self.m.enclosing_function(c) is scope and
                       position(last) < position(c) < position(value)
                       for c in self.m.calls_by_name.get("train", ()))

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
