"""Command-line options of a script, and what they hold when the script runs with its defaults.

Research scripts switch whole code paths with options: ``--gradient_accumulation_steps``
(default 1), ``--flip_on`` (default False), ``--amp``. A defect on such a path shows only
when someone turns the option on, and a reviewer writes "when ``--x`` is set", or nothing
at all when the shipped scripts never set it. Rules ask this module what an option
expression evaluates to at the defaults, and lower their confidence when the defect needs
a non-default value.

``default_of(expr)`` answers for ``args.name`` -- an attribute read of a value the inputs
model traces to ``parse_args()`` / ``parse_known_args()`` in this file (through names,
parameters of same-file functions and ``self`` attributes) -- when this file declares
``name`` with ``add_argument``: ``dest=``, or the first long flag with dashes made
underscores, or a positional's name. The default is the constant ``default=`` (or the
literal a module constant it names holds: ``default=ITER_SIZE`` with ``ITER_SIZE = 1``); ``None``
when there is none; ``False``/``True`` for ``store_true``/``store_false``; the constant of a
``set_defaults(name=...)`` when one is given. In a module that declares no option itself
and is handed the parsed arguments (``def train_epoch(model, loader, args)``, ``self.args =
args`` in ``__init__``), ``args.name`` answers the default that the project files next to it
declare -- the modules it imports (a shared ``arguments.py``) and those that import it (the
entry script): the files its result cache key covers; a module two imports away is not read
-- when they agree and none of them, nor this file, assigns ``args.name``. Anything else
answers ``NOT_KNOWN``: a name declared twice with different defaults, a computed default, a
receiver that is neither the command line nor a configuration. Static: nothing is imported or run.

A read of a configuration mapping -- ``config["ACCUMULATION_STEPS"]``, ``cfg.trainer.use_fp16``,
``config.get("amp")`` -- answers what every YAML file the project ships sets for that key path
(engine/shipped_configs.py) when the mapping is one this file is handed (a parameter, ``self.cfg``
assigned from one, a name imported from a project module: ``from config import config``) or
loads with a YAML library (``yaml.safe_load``, ``OmegaConf.load``, wrapped or not in an
``EasyDict``) or gets from a call handed a YAML file's path (``load_config(args.config)`` with
``--config`` defaulting to ``configs/default.yaml``; ``cfg = merge(cfg, args.override)`` keeps it;
``int(...)`` of a read is the same read; a project function every return of which is a YAML
load, ``config = get_config(path)``), this file never assigns that key, and it is not a command-line option this file
declares. ``option_of`` follows a parameter to what every same-file call passes for it
(``train_one_epoch(..., accumulation_steps=config["ACCUMULATION_STEPS"])``).
"""

from __future__ import annotations

import ast
from functools import cached_property

from torchreview.engine.semantic_common import COMPARE_OPS, ancestors, argument_for

class _NotKnown:
    """The answer when an option's default is not known here."""

    def __repr__(self) -> str:
        return "NOT_KNOWN"


NOT_KNOWN = _NotKnown()
_PARSE = ("command-line arguments",)
# libraries whose loads build a configuration mapping from a YAML file
_CONFIG_LOADERS = ("yaml.", "omegaconf.", "ruamel.yaml.")


class Options:
    """The options this file declares, and their defaults (``ctx.options``)."""

    def __init__(self, model, inputs, project_declarations=None, shipped=None, project_defined=None,
                 project_function=None) -> None:
        self.m = model
        self._inputs = inputs
        # key path -> what every shipped YAML config sets it to (``shipped_configs.shipped_value``)
        self._shipped = shipped
        # qualified name -> is it defined by a module of the project (``from config import cfg``)
        self._project_defined = project_defined
        self._project_function = project_function
        # attribute name -> what the project's other files declare for it (``project_defaults``)
        self._project_declarations = project_declarations
        self._project_memo: dict[str, object] = {}

    @cached_property
    def declared(self) -> dict[str, object]:
        """Option name -> its default (a Python constant) or ``NOT_KNOWN``."""
        out: dict[str, object] = {}
        constants = None
        for call in self.m.calls_by_name.get("add_argument", ()):
            name = _dest(call)
            if name is None:
                continue
            if constants is None:
                constants = module_constants(self.m.tree)
            value = _default(call, constants)
            if name in out and out[name] is not value and out[name] != value:
                value = NOT_KNOWN  # declared twice (two parsers of one file) with different defaults
            out[name] = value
        for call in self.m.calls_by_name.get("set_defaults", ()):
            for kw in call.keywords:
                if kw.arg is None:
                    continue
                out[kw.arg] = _literal(kw.value)
        return out

    def default_of(self, expr: ast.AST | None):
        """What ``expr`` (``args.name``, ``config["key"]``) holds at the script's defaults (its
        command-line defaults, the project's shipped configurations), or ``NOT_KNOWN``."""
        if isinstance(expr, ast.Attribute):
            if expr.attr not in self.declared:
                answer = self._declared_elsewhere(expr)
                if answer is NOT_KNOWN:
                    answer = self._configured(expr)
                if answer is NOT_KNOWN:
                    answer = self._set_at_module_level(expr)
                return answer if answer is not NOT_KNOWN else self._class_constant(expr)
            source = self._inputs.source_of(expr.value)
            if source is None or not source.kind.startswith(_PARSE):
                return NOT_KNOWN
            return self.declared[expr.attr]
        if isinstance(expr, (ast.Subscript, ast.Call)):
            return self._configured(expr)
        return NOT_KNOWN

    def _set_at_module_level(self, expr: ast.Attribute):
        """``config.num_workers`` where ``config`` is a module-level settings object (``config =
        Config()``) -- read directly, or through a parameter of a module-level function that every
        call of this file hands that very name (``main(config)``) -- whose attribute the module
        sets exactly once, at its top level, to a literal (``config.num_workers = 0``), and that
        nothing else in the file assigns: that literal. ``NOT_KNOWN`` otherwise."""
        base = expr.value
        if not isinstance(base, ast.Name) or (None, expr.attr) not in self._module_settings:
            return NOT_KNOWN
        name = self._module_object(base)
        return self._module_settings.get((name, expr.attr), NOT_KNOWN) if name is not None else NOT_KNOWN

    def _class_constant(self, expr: ast.Attribute):
        """``Config.num_workers`` read from a class of the module itself, used as a settings
        namespace (``class Config: num_workers = 0`` in a Kaggle notebook): the literal its body
        assigns once, when nothing in the file stores that attribute of any object.
        ``NOT_KNOWN`` otherwise."""
        base = expr.value
        if not isinstance(base, ast.Name) or self.m.aliases.get(base.id):
            return NOT_KNOWN
        defs = self.m.index.redefined.get(base.id, [])
        if len(defs) != 1 or any(n.id == base.id and isinstance(n.ctx, ast.Store)
                                 for n in self.m.nodes_by_type.get(ast.Name, ())):
            return NOT_KNOWN
        if expr.attr in self._stored_attributes:
            return NOT_KNOWN
        found = [stmt for stmt in defs[0].body if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and any(
            isinstance(t, ast.Name) and t.id == expr.attr
            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]))]
        if len(found) != 1 or found[0].value is None:
            return NOT_KNOWN
        return _literal(found[0].value)

    @cached_property
    def _stored_attributes(self) -> dict[str, list[ast.AST]]:
        """Attribute name -> the statements of the file that store it on any object
        (``x.attr = ...``, ``x.attr += ...``)."""
        stored: dict[str, list[ast.AST]] = {}
        for kind in (ast.Assign, ast.AugAssign, ast.AnnAssign):
            for node in self.m.nodes_by_type.get(kind, ()):
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    if isinstance(t, ast.Attribute):
                        stored.setdefault(t.attr, []).append(node)
        return stored

    @cached_property
    def _module_settings(self) -> dict:
        """(object name, attribute) -> the literal of a top-level ``X.attr = literal`` for each
        attribute name stored exactly once in the whole file (``(None, attribute)`` marks the
        attribute names so set, for a quick miss)."""
        stored = self._stored_attributes
        top = {id(stmt) for stmt in self.m.tree.body}
        out: dict = {}
        for attr, nodes in stored.items():
            node = nodes[0]
            if len(nodes) != 1 or not isinstance(node, ast.Assign) or id(node) not in top or \
                    len(node.targets) != 1 or not isinstance(node.targets[0].value, ast.Name):
                continue
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, (int, float, str, bool, type(None))):
                out[(node.targets[0].value.id, attr)] = value.value
                out[(None, attr)] = True
        return out

    def _module_object(self, base: ast.Name) -> str | None:
        """The module-level name ``base`` stands for: itself when it is bound once, at the top
        level, to a call (``config = Config()``) and not a parameter where it is read; or, for a
        parameter of a module-level function, the one such name every call of the function in
        this file passes for it."""
        def settings_object(name: str) -> bool:
            binds = [n for n in self.m.nodes_by_type.get(ast.Assign, ()) for t in n.targets
                     if isinstance(t, ast.Name) and t.id == name]
            return len(binds) == 1 and binds[0] in self.m.tree.body and isinstance(binds[0].value, ast.Call)

        values, func = self.m.assignments(base)
        if func is None:
            return base.id if self.m.scope_of(base) is self.m.tree and settings_object(base.id) else None
        if values or func not in self.m.tree.body:
            return None
        if base.id not in [a.arg for a in (*func.args.posonlyargs, *func.args.args)]:
            return None
        sites = [c for c in self.m.calls_by_name.get(func.name, ()) if isinstance(c.func, ast.Name)]
        passed = set()
        for site in sites:
            arg = argument_for(site, func, base.id)
            if not isinstance(arg, ast.Name):
                return None
            passed.add(arg.id)
        if len(passed) != 1:
            return None
        name = passed.pop()
        return name if settings_object(name) else None

    def values_at_defaults(self, expr: ast.AST | None):
        """Every value ``expr`` may hold at the defaults: ``(default,)`` for a command-line
        option, what each shipped YAML config sets for a configuration read (they may differ:
        ``val`` and ``list/val.lst``), or ``NOT_KNOWN``."""
        if expr is None:
            return NOT_KNOWN
        if isinstance(expr, ast.Attribute):
            answer = self.default_of(expr)
            if answer is not NOT_KNOWN:
                return (answer,)
        values = self._configured_values(expr)
        return values

    def _configured(self, expr: ast.AST):
        """What a configuration read holds in every shipped YAML config (see the module's
        docstring): the one value they all agree on, or ``NOT_KNOWN``."""
        values = self._configured_values(expr)
        if values is NOT_KNOWN:
            return NOT_KNOWN
        first = values[0]  # type: ignore[index]
        if any(type(v) is not type(first) or v != first for v in values):  # type: ignore[union-attr]
            return NOT_KNOWN
        return first

    def _configured_values(self, expr: ast.AST):
        """What each shipped YAML config sets for a configuration read, or ``NOT_KNOWN``."""
        if self._shipped is None or not isinstance(expr, (ast.Attribute, ast.Subscript, ast.Call)):
            return NOT_KNOWN
        chain = config_chain(expr)
        if chain is None:
            return NOT_KNOWN
        keys, root = chain
        if keys[-1] in self.declared or self._overridden(keys) or not self._config_root(root):
            return NOT_KNOWN
        key = ("config",) + keys
        if key not in self._project_memo:
            self._project_memo[key] = self._shipped(keys)  # type: ignore[index]
        return self._project_memo[key]  # type: ignore[index]

    @cached_property
    def _assigned_keys(self) -> tuple[tuple[str, ...], ...]:
        """Key paths this file assigns on some mapping or object other than ``self``
        (``cfg.lr = ...``, ``config["amp"] = ...``, ``config.unet.use_fp16 = ...``): an
        override of whatever a shipped config says."""
        out = []
        for node in [*self.m.nodes_by_type.get(ast.Attribute, ()), *self.m.nodes_by_type.get(ast.Subscript, ())]:
            if isinstance(node.ctx, ast.Store):
                chain = config_chain(node)
                if chain is not None:
                    out.append(chain[0])
        return tuple(out)

    def _overridden(self, keys: tuple[str, ...]) -> bool:
        """The file assigns the key path ``keys`` (or one that ends with it, or that it ends
        with: ``cfg.use_fp16 = ...`` for a read of ``config.trainer.use_fp16``)."""
        return any(k[-len(keys):] == keys or keys[-len(k):] == k for k in self._assigned_keys)

    def _config_root(self, root: ast.AST, depth: int = 2) -> bool:
        """``root`` is a configuration mapping: handed in, imported from a project module, or
        built by a YAML library's load (possibly wrapped: ``EasyDict(yaml.safe_load(f))``)."""
        if isinstance(root, ast.Call):
            name = self.m.qualname(root.func) or ""
            if name.startswith(_CONFIG_LOADERS):
                return True
            if root.args and self._names_config_file(root.args[0]):
                # a project helper handed a YAML file (`load_config(args.config)`, `--config`
                # defaulting to "configs/default.yaml"): what it returns is read from that file
                return True
            found = self._project_function(name) if name and self._project_function is not None else None
            if found is not None and (found.returns_ctor or "").startswith(_CONFIG_LOADERS):
                # a project helper whose every return is a YAML load (`def get_config(path): with
                # open(path) as f: config = yaml.safe_load(f); return config`, in utils.py)
                return True
            return depth > 0 and len(root.args) == 1 and not root.keywords and \
                self._config_root(root.args[0], depth - 1)
        if isinstance(root, ast.Attribute):
            return _handed_in(self.m, root)
        if not isinstance(root, ast.Name):
            return False
        values, func = self.m.assignments(root)
        if not values:
            if func is not None:
                return root.id in _parameters(func)
            name = self.m.qualname(root)
            return bool(name and name != root.id and self._project_defined is not None
                        and self._project_defined(name))
        # `cfg = merge_cli_overrides(cfg, args.override)`: the mapping updated from itself is the same
        # configuration (at the defaults nothing overrides it)
        values = [v for v in values if not (isinstance(v, ast.Call) and v.args and isinstance(v.args[0], ast.Name)
                                            and v.args[0].id == root.id)] or values
        return depth > 0 and all(self._config_root(v, depth - 1) for v in values)

    def _names_config_file(self, expr: ast.AST) -> bool:
        """``expr`` is a YAML file's path: a literal ending in ``.yaml``/``.yml``, or an option
        whose default is one."""
        if isinstance(expr, ast.Constant):
            value = expr.value
        elif isinstance(expr, ast.Attribute) and expr.attr in self.declared:
            value = self.default_of(expr)
        else:
            return False
        return isinstance(value, str) and value.lower().endswith((".yaml", ".yml"))

    def _declared_elsewhere(self, expr: ast.Attribute):
        """``args.name`` in a module the entry script hands its parsed arguments to
        (``def train(args, model): ... args.accumulate_grad_batches``; ``self.args.use_amp``
        with ``self.args = args`` from ``__init__``), or bound to what a project function
        returns (``args = get_arguments()``): the default the project's other files
        -- the modules this one imports and those that import it -- declare for ``name``
        with ``add_argument``, when they all agree, none of them or this file assigns the
        attribute (``args.amp = True``), and this file declares no option and parses no
        arguments itself. ``NOT_KNOWN`` otherwise."""
        if self._project_declarations is None or not (_handed_in(self.m, expr.value) or
                                                      self._from_project_call(expr.value)):
            return NOT_KNOWN
        if self.declared and self._inputs.source_of(expr.value) is not None:
            # this file's own parsed arguments, without that option: not known here (a file that
            # parses options and is handed another object, `train(config, ...)` with `config` a
            # project configuration object, still asks the files next to it)
            return NOT_KNOWN
        name = expr.attr
        if name in self._project_memo:
            return self._project_memo[name]
        answer = NOT_KNOWN
        if not any(isinstance(n, ast.Attribute) and n.attr == name and isinstance(n.ctx, ast.Store)
                   for n in self.m.nodes_by_type.get(ast.Attribute, ())):
            answer = self._project_declarations(name)
        self._project_memo[name] = answer
        return answer

    def _from_project_call(self, receiver: ast.AST) -> bool:
        """``receiver`` is a name every binding of which is a call of a function of the
        project's own modules (``args = get_arguments()`` from ``configs/train_config.py``):
        the options it holds are those the project files next to this one declare."""
        if not isinstance(receiver, ast.Name) or self._project_defined is None:
            return False
        values, func = self.m.assignments(receiver)
        if not values or func is not None:
            return False
        for value in values:
            name = self.m.qualname(value.func) if isinstance(value, ast.Call) else None
            if not (name and self._project_defined(name)):
                return False
        return True

    def test_at_defaults(self, test: ast.AST):
        """What ``test`` evaluates to at the script's option defaults: True/False, or None when
        not known. The test reads one option, directly, negated, or compared with a literal
        (``args.local_rank == -1``; literals are read, never run)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.test_at_defaults(test.operand)
            return None if inner is None else not inner
        option = self.option_of(test)
        if option is not None:
            default = self.default_of(option)
            return None if default is NOT_KNOWN else bool(default)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            option = self.option_of(test.left)
            compare = COMPARE_OPS.get(type(test.ops[0]))
            right = _literal(test.comparators[0])
            default = self.default_of(option) if option is not None else NOT_KNOWN
            if compare is None or right is NOT_KNOWN or default is NOT_KNOWN:
                return None
            try:
                return bool(compare(default, right))
            except TypeError:
                return None
        return None

    def ruling_test(self, node: ast.AST) -> ast.AST | None:
        """The test of an enclosing ``if`` or conditional expression (in ``node``'s own
        function) that rules ``node`` out at the script's defaults: ``node`` in the body of a
        test that is false there, or in the ``else`` of one that is true (``DistributedSampler(ds)``
        in ``... if args.local_rank == -1 else ...``); None when none is known to."""
        child = node
        for anc in ancestors(node):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return None
            if isinstance(anc, (ast.If, ast.IfExp)) and child is not anc.test:
                value = self.test_at_defaults(anc.test)
                body = anc.body if isinstance(anc.body, list) else [anc.body]
                orelse = anc.orelse if isinstance(anc.orelse, list) else [anc.orelse]
                if value is not None and ((any(child is b for b in body) and not value) or
                                          (any(child is b for b in orelse) and value)):
                    return anc.test
            child = anc
        return None

    def option_of(self, expr: ast.AST | None, depth: int = 2) -> ast.Attribute | None:
        """The option read ``expr`` holds: ``expr`` itself, or a local name bound only to one
        (``accum = args.accum_steps``), followed ``depth`` assignments; a number conversion of
        one (``int(cfg["train"].get("grad_accum_steps", 1))``) holds the same option."""
        if isinstance(expr, (ast.Attribute, ast.Subscript, ast.Call)) and self.default_of(expr) is not NOT_KNOWN:
            return expr
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("int", "float") \
                and len(expr.args) == 1 and not expr.keywords and not self.m.aliases.get(expr.func.id):
            return self.option_of(expr.args[0], depth)
        if isinstance(expr, ast.Name) and depth > 0:
            values, func = self.m.assignments(expr)
            if len(values) == 1 and func is None:
                return self.option_of(values[0], depth - 1)
            if not values and func is not None:
                return self._passed_option(expr.id, func, depth - 1)
        return None

    def _passed_option(self, name: str, func: ast.AST, depth: int):
        """The option every same-file call of ``func`` passes for its parameter ``name``,
        when they all pass one and its defaults agree; None otherwise."""
        calls = self.m.calls_by_name.get(getattr(func, "name", ""), ())
        found = None
        for call in calls:
            arg = argument_for(call, func, name)
            option = self.option_of(arg, depth) if arg is not None else None
            if option is None:
                return None
            if found is not None:
                a, b = self.default_of(found), self.default_of(option)
                if type(a) is not type(b) or a != b:
                    return None
            found = found or option
        return found


def config_chain(expr: ast.AST) -> tuple[tuple[str, ...], ast.AST] | None:
    """The key path an expression reads and the mapping it reads it from: ``cfg.a.b`` ->
    (("a", "b"), cfg); ``config["a"]``, ``config.get("a", 1)``; ``self.cfg["a"]`` reads
    ``("a",)`` from ``self.cfg``. None when it reads no constant key."""
    keys: list[str] = []
    node = expr
    while True:
        if isinstance(node, ast.Attribute) and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
            keys.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
                isinstance(node.slice.value, str):
            keys.append(node.slice.value)
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and \
                1 <= len(node.args) <= 2 and not node.keywords and isinstance(node.args[0], ast.Constant) and \
                isinstance(node.args[0].value, str) and not keys:
            keys.append(node.args[0].value)
            node = node.func.value
        else:
            break
    if not keys or node is expr:
        return None
    return tuple(reversed(keys)), node


def _literal(node: ast.AST):
    """A constant written as a literal (``-1``, ``1e-3``, ``"adam"``, ``(1, 2)``: read, never
    run), else ``NOT_KNOWN``."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_KNOWN


def _dest(call: ast.Call) -> str | None:
    for kw in call.keywords:
        if kw.arg == "dest":
            return kw.value.value if isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str) \
                else None
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not flags or len(flags) != len(call.args):
        return None
    long = next((f for f in flags if f.startswith("--")), None)
    if long is not None:
        return long[2:].replace("-", "_") or None
    if flags[0].startswith("-"):
        return flags[0].lstrip("-").replace("-", "_") or None
    return flags[0]


def module_constants(tree: ast.Module) -> dict[str, object]:
    """Names the module binds exactly once, at its top level, to a literal and never rebinds
    (``ITER_SIZE = 1`` above ``add_argument("--iter-size", default=ITER_SIZE)``): name -> value."""
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
    out: dict[str, object] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and \
                counts.get(stmt.targets[0].id) == 1:
            value = _literal(stmt.value)
            if value is not NOT_KNOWN:
                out[stmt.targets[0].id] = value
    return out


def _default(call: ast.Call, constants: dict | None = None):
    action = next((kw.value for kw in call.keywords if kw.arg == "action"), None)
    default = next((kw.value for kw in call.keywords if kw.arg == "default"), None)
    if default is not None:
        if isinstance(default, ast.Name) and constants and default.id in constants:
            return constants[default.id]  # `default=ITER_SIZE`, a module constant
        return _literal(default)
    if isinstance(action, ast.Constant):
        if action.value == "store_true":
            return False
        if action.value == "store_false":
            return True
    if action is not None and not isinstance(action, ast.Constant):
        return NOT_KNOWN  # a custom action class may set anything
    return None


def _handed_in(model, receiver: ast.AST) -> bool:
    """``receiver`` is a value this file is handed, not one it builds: a parameter of its
    function (``args``), or ``self.<attr>`` that the class only ever assigns from a parameter
    of a method (``self.args = args`` in ``__init__``)."""
    if isinstance(receiver, ast.Name):
        values, func = model.assignments(receiver)
        return not values and func is not None and receiver.id in _parameters(func)
    if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self":
        cls = next((a for a in ancestors(receiver) if isinstance(a, ast.ClassDef)), None)
        if cls is None:
            return False
        stores = [n for n in ast.walk(cls) if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == receiver.attr and isinstance(t.value, ast.Name)
            and t.value.id == "self" for t in n.targets)]
        if not stores:
            return False
        for store in stores:
            method = next((a for a in ancestors(store) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
            if not (isinstance(store.value, ast.Name) and method is not None and store.value.id in _parameters(method)
                    and not any(isinstance(n, ast.Name) and n.id == store.value.id and isinstance(n.ctx, ast.Store)
                                for n in ast.walk(method))):
                return False
        return True
    return False


def _parameters(func: ast.AST) -> set[str]:
    args = getattr(func, "args", None)
    if args is None:
        return set()
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}


def declared_in(tree: ast.Module, name: str):
    """What the module ``tree`` declares as the default of option ``name`` (``add_argument``
    with that destination, a ``set_defaults(name=...)``, or a class attribute of that name
    in a configuration class's body: ``class Config: gradient_accumulation_steps = 1``): the
    literal, ``NOT_KNOWN`` for a computed default or conflicting declarations, or None when
    it declares no such option. ``args.name = ...`` anywhere in the module answers
    ``NOT_KNOWN`` (an override)."""
    found: list[object] = []
    constants = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "add_argument" and _dest(node) == name:
                if constants is None:
                    constants = module_constants(tree)
                found.append(_default(node, constants))
            elif node.func.attr == "set_defaults":
                found += [_literal(k.value) for k in node.keywords if k.arg == name]
        elif isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Store):
            return NOT_KNOWN
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                        for t in stmt.targets):
                    found.append(_literal(stmt.value))
                elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
                        stmt.target.id == name and stmt.value is not None:
                    found.append(_literal(stmt.value))
    if not found:
        return None
    first = found[0]
    if any(v is NOT_KNOWN or type(v) is not type(first) or v != first for v in found):
        return NOT_KNOWN
    return first
