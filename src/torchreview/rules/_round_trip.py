"""Loads of what the same function has just written (a round trip), shared by the
deserialization rules: the loaded bytes were made by this process a few lines up,
so they are as trusted as the code itself.

``own_round_trip(call, ctx)``: the load ``call`` (``pickle.load``/``loads``,
``dill``/``joblib``/``cloudpickle`` loads, ``torch.load``) reads what the same
function serialized earlier: ``loads(dumps(x))``, ``blob = dumps(x)`` then
``loads(blob)``, an ``io.BytesIO`` that a ``dump``/``torch.save`` filled, a path (or
an ``open(path, "w")`` handle) that a ``dump``/``torch.save`` wrote before the load
(``path = tmp_path / "m.pt"; torch.save(obj, path); torch.load(path)``; a parameter
``model_path`` the function saves to in its loop and loads after it), or a
path a pytest fixture of the same file wrote and returned to the test that loads it.
"""

from __future__ import annotations

import ast

from torchreview.engine.context import ancestors

PICKLE_MODULES = ("pickle", "_pickle", "cPickle", "dill", "cloudpickle", "joblib")
_READ_MODES = ("r", "rb")
_TORCH_LOAD = "torch.load"
_TORCH_SAVE = "torch.save"


def own_round_trip(call: ast.Call, ctx) -> bool:
    """What ``call`` loads was serialized by the same function just before (see module doc)."""
    torch_load = ctx.qualname(call.func) == _TORCH_LOAD
    first = ctx.arg(call, "f", 0) if torch_load else (call.args[0] if call.args else None)
    if first is None:
        return False
    expr, name = _resolve(first, call, ctx)
    func = ctx.enclosing_function(call)
    if _written_by_fixture(expr, func, ctx):
        return True
    writers = _writers_before(func if func is not None else ctx.tree, call, ctx)
    if torch_load and _same_target(first, expr, writers, ctx):
        return True
    if not isinstance(expr, ast.Call):
        return False
    q = ctx.qualname(expr.func) or ""
    if q.endswith(".dumps") and q.rsplit(".", 1)[0] in PICKLE_MODULES:
        return True
    path = opened_path(expr, ctx, _READ_MODES)
    if path is not None and _written_by_fixture(path, func, ctx):
        return True
    if not writers:
        return False
    if q in ("io.BytesIO", "_io.BytesIO") and name is not None:
        return any(isinstance(target, ast.Name) and target.id == name.id for target in writers)
    return path is not None and _same_target(path, path, writers, ctx)


def _written_by_fixture(expr: ast.AST, func, ctx) -> bool:
    """``def test_x(weights_path): torch.load(weights_path)`` where ``weights_path`` is a
    pytest fixture of the same file whose body writes a file with ``torch.save`` or a
    pickle ``dump`` and returns (or yields) that same path: the test reads what the
    test session itself made (``torch.save(model.state_dict(), path); return path``)."""
    if not (isinstance(expr, ast.Name) and isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))):
        return False
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)]
    if expr.id not in params:
        return False
    for fixture in ctx.tree.body:
        if not (isinstance(fixture, (ast.FunctionDef, ast.AsyncFunctionDef)) and fixture.name == expr.id and
                any(_is_fixture_decorator(d, ctx) for d in fixture.decorator_list)):
            continue
        written = set()
        for target in _writers_before(fixture, _End(), ctx):
            handle = with_target(target, target) if isinstance(target, ast.Name) else None
            path = opened_path(handle, ctx, None) if isinstance(handle, ast.Call) else None
            written.add(ctx.text(path if path is not None else target))
        given = [n.value for n in ast.walk(fixture) if isinstance(n, (ast.Return, ast.Yield)) and n.value is not None]
        return bool(given) and all(isinstance(v, ast.Name) and v.id in written for v in given)
    return False


class _End:
    """A position after every line (``_writers_before`` of a whole function)."""
    lineno = float("inf")


def _is_fixture_decorator(decorator: ast.AST, ctx) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    q = ctx.qualname(target) or ""
    return q in ("pytest.fixture", "_pytest.fixtures.fixture") or (
        isinstance(target, ast.Name) and target.id == "fixture")


def _resolve(expr: ast.AST, call: ast.Call, ctx):
    """Follow a name to the value it holds (``with ... as f``, assignments; 3 hops):
    (that value, the last name on the way or None)."""
    name = None
    for _ in range(3):
        if not isinstance(expr, ast.Name):
            break
        name = expr
        bound = with_target(expr, call)
        if bound is None:
            bound = ctx.flow.reaching_value(expr)
        if bound is None or bound is expr:
            break
        expr = bound
    return expr, name


def _writers_before(scope: ast.AST, call: ast.Call, ctx) -> list[ast.AST]:
    """The targets (second argument) of the pickle ``dump``s and ``torch.save``s of
    ``scope`` that come before ``call``."""
    targets = []
    for sub in ast.walk(scope):
        if not isinstance(sub, ast.Call) or sub.lineno >= call.lineno:
            continue
        q = ctx.qualname(sub.func) or ""
        if q == _TORCH_SAVE:
            target = ctx.arg(sub, "f", 1)
        elif q.endswith(".dump") and q.rsplit(".", 1)[0] in PICKLE_MODULES and len(sub.args) >= 2:
            target = sub.args[1]
        else:
            continue
        if target is not None:
            targets.append(target)
    return targets


def _same_target(text_node: ast.AST, resolved: ast.AST, writers: list[ast.AST], ctx) -> bool:
    """A writer wrote the file (or buffer) ``text_node`` names: the same expression
    text, or a handle opened for writing on that path."""
    wanted = {ctx.text(text_node), ctx.text(resolved)}
    for target in writers:
        if ctx.text(target) in wanted and not isinstance(target, ast.Constant):
            if not isinstance(target, ast.Name) or _resolve(target, target, ctx)[0] is resolved:
                return True  # a name counts when it is the same binding (two `as f` handles are not)
            if isinstance(resolved, ast.Name) and _resolve(target, target, ctx)[0].__class__ is ast.Name and \
                    resolved.id == target.id and _never_rebound(resolved.id, ctx.enclosing_function(target)):
                return True  # a parameter (`model_path`) the function never rebinds: one file
        if isinstance(target, ast.Name):
            target = with_target(target, target) or ctx.flow.reaching_value(target) or target
        written = opened_path(target, ctx, None) if isinstance(target, ast.Call) else None
        if written is not None and ctx.text(written) in wanted:
            return True
    return False


def _never_rebound(name: str, func) -> bool:
    """``name`` is a parameter of ``func`` that its body never assigns."""
    if func is None:
        return False
    a = func.args
    if name not in {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}:
        return False
    for node in ast.walk(func):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)) else []
        if any(isinstance(t, ast.Name) and t.id == name for tt in targets for t in ast.walk(tt)):
            return False
    return True


def opened_path(call: ast.Call, ctx, modes):
    """The path of ``open(path, mode)`` (read modes when ``modes`` is given, else write modes)."""
    q = ctx.qualname(call.func) or ""
    if not (q in ("builtins.open", "open", "io.open") or (isinstance(call.func, ast.Name) and call.func.id == "open")) \
            or not call.args:
        return None
    mode = ctx.arg(call, "mode", 1)
    text = mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else ("r" if mode is None
                                                                                             else None)
    if text is None:
        return None
    if modes is not None and text not in modes:
        return None
    if modes is None and not any(c in text for c in "wax"):
        return None
    return call.args[0]


def with_target(name: ast.Name, call: ast.AST):
    """``with open(...) as f: pickle.load(f)``: the expression bound to ``f``."""
    for anc in ancestors(call):
        if isinstance(anc, (ast.With, ast.AsyncWith)):
            for item in anc.items:
                if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name.id:
                    return item.context_expr
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
    return None


def _dumped_path(dump: ast.Call, ctx):
    """The file a pickle-family dump writes: ``pickle.dump(obj, open(path, "wb"))`` (also
    through ``with open(path, "wb") as f``), ``joblib.dump(obj, path)``,
    ``frame.to_pickle(path)``, ``pandas.to_pickle(obj, path)``; None otherwise."""
    q = ctx.qualname(dump.func) or ""
    if isinstance(dump.func, ast.Attribute) and dump.func.attr == "to_pickle":
        target = dump.args[0] if dump.args and not q.startswith("pandas.") else ctx.arg(dump, "path", 1)
    elif q.endswith(".dump") and q.rsplit(".", 1)[0] in PICKLE_MODULES and len(dump.args) >= 2:
        target = dump.args[1]
    else:
        return None
    if isinstance(target, ast.Name):  # a handle: `with open(p, "wb") as f` or `f = open(p, "wb")`
        bound = with_target(target, dump) or ctx.flow.reaching_value(target)
        if isinstance(bound, ast.Call):
            opened = opened_path(bound, ctx, None)
            # a path variable (`df_qa_path = os.path.join(root, "df_qa.pkl")`, STaRK's cache)
            # is the path itself, as the load spells it
            return opened if opened is not None else target
    if isinstance(target, ast.Call):
        return opened_path(target, ctx, None)
    return target


def own_file_written(call: ast.Call, ctx) -> bool:
    """The file ``call`` (a ``pickle.load``/``joblib.load``/``pandas.read_pickle`` of a file)
    reads is one this module writes with a pickle-family dump: the same path expression
    (``self.path`` read in ``__init__``, written by ``to_pickle`` in ``update``), or the same
    string constant or CONSTANT; a plain variable counts only within one function."""
    first = call.args[0] if call.args else ctx.arg(call, "filepath_or_buffer", 0)
    if first is None:
        return False
    path = first
    if isinstance(path, ast.Name):
        path = with_target(path, call) or path
    if isinstance(path, ast.Call):
        path = opened_path(path, ctx, _READ_MODES)
        if path is None:
            return False
    wanted = ctx.text(path)
    func = ctx.enclosing_function(call)
    for sub in ast.walk(ctx.tree):
        if not isinstance(sub, ast.Call) or sub is call:
            continue
        written = _dumped_path(sub, ctx)
        if written is None or ctx.text(written) != wanted:
            continue
        if isinstance(written, ast.Name) and not written.id.isupper() and ctx.enclosing_function(sub) is not func:
            continue  # `path` in two functions may name two files (a CONSTANT names one)
        return True
    return False
