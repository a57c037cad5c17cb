"""The package's shape, read from its source with ``ast`` (nothing is imported).

1. No import cycles in ``src/torchreview``: module-level and function-level
   imports count (a lazy import inside a function that dodges a cycle is still a
   cycle); relative imports are resolved; imports under ``if TYPE_CHECKING:`` do
   not run and do not count. ``from pkg import name`` is an edge to the submodule
   ``pkg.name`` when there is one, else to ``pkg`` (its ``__init__``).
2. Rule modules (shared ``_helpers`` too) import only the rules' facade and
   take from ``engine.context`` only the names of its ``__all__``; the context
   members they use (``ctx.x``, ``ctx.model.y`` ...) are documented in
   docs/WRITING_RULES.md ("The model's public API"), which documents every
   public member of the facade and nothing that does not exist. No allow-list.
3. Rules know nothing about each other: no module under ``rules/`` reads
   ``ctx.active_codes``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "torchreview"

# Import edges that still close a cycle. Empty: every cycle is broken, and a new
# one fails test_no_import_cycles (never add an entry here; break the cycle).
KNOWN_CYCLE_EDGES: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                skip.update(id(n) for n in ast.walk(stmt))
    return skip


def _imports(module: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """The package modules ``module`` imports -> the first line that does."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in modules else base)
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != module:
                out.setdefault(target, node.lineno)
    return out


def import_graph() -> dict[str, dict[str, int]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif state.get(child) == 1:
                return path[path.index(child):] + [child]
            elif not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(graph.get(child, {})))))
    return None


def _describe(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    return "\n".join(f"  {a} -> {b} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:]))


def test_graph_reader_sees_function_level_and_relative_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "torchreview"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from torchreview.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from .. import a\nfrom typing import TYPE_CHECKING\n"
                                      "if TYPE_CHECKING:\n    from torchreview.sub import c\n")
    (pkg / "sub" / "c.py").write_text("from . import b\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    graph = import_graph()
    assert graph["torchreview.a"] == {"torchreview.sub.b": 2}
    assert graph["torchreview.sub.b"] == {"torchreview.a": 1}  # TYPE_CHECKING import not counted
    assert graph["torchreview.sub.c"] == {"torchreview.sub.b": 1}
    assert _find_cycle(graph) == ["torchreview.a", "torchreview.sub.b", "torchreview.a"]


def test_no_import_cycles():
    graph = import_graph()
    for a, b in KNOWN_CYCLE_EDGES:
        assert b in graph.get(a, {}), f"{a} -> {b} no longer exists: remove it from KNOWN_CYCLE_EDGES"
    pruned = {a: {b: line for b, line in deps.items() if (a, b) not in KNOWN_CYCLE_EDGES}
              for a, deps in graph.items()}
    cycle = _find_cycle(pruned)
    assert cycle is None, "import cycle in src/torchreview:\n" + _describe(cycle, pruned)


def test_known_cycle_edges_still_close_a_cycle():
    """An allowed edge whose cycle is gone must leave the list (it only shrinks)."""
    graph = import_graph()
    for a, b in KNOWN_CYCLE_EDGES:
        others = {x: {y: n for y, n in deps.items() if (x, y) != (a, b)} for x, deps in graph.items()}
        seen, todo = set(), [b]
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            todo.extend(others.get(node, {}))
        assert a in seen, f"{a} -> {b} closes no cycle any more: remove it from KNOWN_CYCLE_EDGES"


# --- what a rule may import -------------------------------------------------

FACADE = ("torchreview.catalog", "torchreview.findings", "torchreview.fixes", "torchreview.engine.context")
WRITING_RULES = PACKAGE.parent.parent / "docs" / "WRITING_RULES.md"


def _allowed(target: str) -> bool:
    if target in FACADE:
        return True
    parts = target.split(".")
    # shared helpers: torchreview.rules._x, torchreview.rules.<category>._x
    return parts[:2] == ["torchreview", "rules"] and len(parts) >= 3 and parts[-1].startswith("_")


def _rule_modules() -> dict[str, Path]:
    """Every module under ``rules/``: rules and their shared ``_helpers`` alike."""
    return {name: path for name, path in _modules().items() if name.startswith("torchreview.rules.")}


def rule_import_violations() -> set[str]:
    """``rules/<file> -> <what>`` for each import a rule module makes outside the facade,
    and for each name it takes from ``engine.context`` that is not in its ``__all__``."""
    from torchreview.engine import context

    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    modules = _modules()
    out = set()
    for name, path in _rule_modules().items():
        rel = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skip or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.ImportFrom) and node.level:
                continue  # relative: inside rules/
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                base = node.module or ""
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
                if base == "torchreview.engine.context":
                    out.update(f"{rel} -> torchreview.engine.context.{a.name} (not in __all__)"
                               for a in node.names if a.name not in context.__all__)
            for target in names:
                if target.split(".")[0] not in stdlib and not _allowed(target):
                    out.add(f"{rel} -> {target}")
    return out


def test_rules_import_only_the_facade():
    found = sorted(rule_import_violations())
    assert not found, ("rule modules import outside the facade (docs/WRITING_RULES.md, "
                       "'The model's public API'):\n  " + "\n  ".join(found))


def test_the_import_check_sees_a_violation(tmp_path, monkeypatch):
    """The check above can fail: an engine import in a rule (or in a shared helper)
    and a name that ``engine.context`` does not list are both reported."""
    pkg = tmp_path / "torchreview"
    (pkg / "rules" / "bugs").mkdir(parents=True)
    (pkg / "engine").mkdir()
    for init in ("__init__.py", "rules/__init__.py", "rules/bugs/__init__.py", "engine/__init__.py"):
        (pkg / init).write_text("")
    (pkg / "engine" / "semantic.py").write_text("def parent(n): pass\n")
    (pkg / "engine" / "context.py").write_text("")
    (pkg / "rules" / "bugs" / "tr999_x.py").write_text(
        "from torchreview.engine.semantic import parent\n"
        "from torchreview.engine.context import _hidden\n"
        "from torchreview.engine.context import parent as p\n")
    (pkg / "rules" / "_shared.py").write_text("import torchreview.engine.semantic\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    assert rule_import_violations() == {
        "rules/bugs/tr999_x.py -> torchreview.engine.semantic",
        "rules/bugs/tr999_x.py -> torchreview.engine.context._hidden (not in __all__)",
        "rules/_shared.py -> torchreview.engine.semantic",
    }


# --- the model's public API: documented, and all that rules use ------------------

# the context's attributes that lead to a documented sub-API (``ctx.model.calls``)
SUB_APIS = ("model", "flow", "autograd", "inputs", "advice", "project", "source")


def _documented() -> set[str]:
    """Every ``ctx.x``/``ctx.x.y`` and bare name written in backticks in the API
    section of docs/WRITING_RULES.md."""
    import re

    text = WRITING_RULES.read_text(encoding="utf-8")
    section = text[text.index("## The model's public API"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    out = set()
    for code in re.findall(r"`([^`]+)`", section):
        for m in re.finditer(r"(?<![\w.])(ctx(?:\.\w+){1,2}|\w+)", code):
            out.add(m.group(1))
    return out


def _ctx_uses(tree: ast.AST) -> set[str]:
    """``ctx.member`` and ``ctx.sub.member`` (also through ``self.ctx`` and names
    bound to ``ctx.model``/``ctx.flow``/...) used by one rule module."""

    def is_ctx(node) -> bool:
        return (isinstance(node, ast.Name) and node.id == "ctx") or \
            (isinstance(node, ast.Attribute) and node.attr == "ctx")

    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and \
                is_ctx(node.value.value) and node.value.attr in SUB_APIS:
            for t in node.targets:
                if isinstance(t, ast.Name):
                    aliases[t.id] = node.value.attr
    out = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        if is_ctx(node.value):
            out.add(f"ctx.{node.attr}")
        elif isinstance(node.value, ast.Attribute) and is_ctx(node.value.value) and node.value.attr in SUB_APIS:
            out.add(f"ctx.{node.value.attr}.{node.attr}")
        elif isinstance(node.value, ast.Name) and node.value.id in aliases:
            out.add(f"ctx.{aliases[node.value.id]}.{node.attr}")
    return out


def rule_api_uses() -> dict[str, set[str]]:
    return {path.relative_to(PACKAGE).as_posix(): _ctx_uses(ast.parse(path.read_text(encoding="utf-8")))
            for path in _rule_modules().values()}


def test_rules_use_only_the_documented_api():
    documented = _documented()
    undocumented = sorted(f"{rel}: {use}" for rel, uses in rule_api_uses().items() for use in uses
                          if use not in documented)
    assert not undocumented, ("rules use model members that docs/WRITING_RULES.md does not document "
                              "('The model's public API'); document them there or ask "
                              "a documented question:\n  " + "\n  ".join(undocumented))
    private = sorted(f"{rel}: {use}" for rel, uses in rule_api_uses().items() for use in uses
                     if any(part.startswith("_") for part in use.split(".")[1:]))
    assert not private, "rules reach into private members:\n  " + "\n  ".join(private)


def test_every_public_member_of_the_facade_is_documented():
    from torchreview.engine import context
    from torchreview.engine.context import FileContext

    documented = _documented()
    missing = sorted(name for name in context.__all__ if name not in documented)
    members = {n for n in vars(FileContext) if not n.startswith("_")}
    init = next(f for f in ast.walk(ast.parse(Path(context.__file__).read_text(encoding="utf-8")))
                if isinstance(f, ast.FunctionDef) and f.name == "__init__")
    members |= {t.attr for n in ast.walk(init) if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Attribute) and not t.attr.startswith("_")}
    missing += sorted(f"ctx.{m}" for m in members if f"ctx.{m}" not in documented)
    assert not missing, "public members of the rules' facade not documented in WRITING_RULES.md:\n  " + \
        "\n  ".join(missing)


def test_documented_members_exist():
    """The map is true: each documented ``ctx.x`` / ``ctx.sub.y`` exists on a context."""
    from torchreview.engine.context import FileContext
    from torchreview.engine.source import SourceFile

    source = SourceFile(path="x.py", text="import torch\n")
    ctx = FileContext(source, ast.parse(source.text), target_torch=None, has_torch=True)
    stale = []
    for name in sorted(n for n in _documented() if n.startswith("ctx.")):
        obj = ctx
        for part in name.split(".")[1:]:
            if not hasattr(obj, part):
                stale.append(name)
                break
            obj = getattr(obj, part)
    assert not stale, "documented in WRITING_RULES.md but not on the context:\n  " + "\n  ".join(stale)


# Rules that still ask which other rules run. This list must SHRINK (never add one).
KNOWN_ACTIVE_CODES_READERS = {
    "rules/quality/tr423_deprecated_torch_api.py",
}


def test_rules_do_not_read_which_other_rules_are_active():
    readers = set()
    for path in sorted((PACKAGE / "rules").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "active_codes":
                readers.add(path.relative_to(PACKAGE).as_posix())
    stale = KNOWN_ACTIVE_CODES_READERS - readers
    assert not stale, f"no longer reads active_codes, remove from KNOWN_ACTIVE_CODES_READERS: {sorted(stale)}"
    offenders = sorted(readers - KNOWN_ACTIVE_CODES_READERS)
    assert not offenders, ("rules ask which other rules run; declare `supersedes` instead "
                           "(docs/WRITING_RULES.md):\n  " + "\n  ".join(offenders))


# --- one catalog ------------------------------------------------------------

def test_runtime_and_artifact_rules_are_listed_from_the_one_registry(capsys):
    import json

    from torchreview.catalog import rule_by_code
    from torchreview.cli import main

    main(["rules", "--format", "json"])
    listed = {r["code"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    for code in ("TR601", "TR602", "TR603", "TR604", "TR605", "TR606"):
        assert "runtime" in listed[code]["scope"], code
    assert "artifact" in listed["TR108"]["scope"]
    assert set(listed) == set(rule_by_code())


def test_runtime_findings_take_their_metadata_from_the_rule():
    from torchreview.catalog import rule_by_code
    from torchreview.runtime._env import Site
    from torchreview.runtime.codes import runtime_finding

    assert not hasattr(__import__("torchreview.runtime.codes", fromlist=["x"]), "_FALLBACK")
    for code in ("TR201", "TR401", "TR604", "TR606"):
        rule = rule_by_code()[code]
        f = runtime_finding(code, "seen", Site("train.py", 3, "loss.backward()"))
        assert (f.name, f.severity, f.detection) == (rule.name, rule.severity, "runtime")


# --- the model by concept ---------------------------------------------------------

def test_model_concepts_import_nothing_that_composes_them():
    """A module under ``engine/model/`` is composed by ``engine/semantic.py`` /
    ``engine/flow.py`` (and reached through the facade): it never imports them, nor
    the facade or anything above it."""
    above = ("torchreview.engine.semantic", "torchreview.engine.flow", "torchreview.engine.context",
             "torchreview.engine.runner", "torchreview.catalog")
    graph = import_graph()
    concepts = {name: deps for name, deps in graph.items() if name.startswith("torchreview.engine.model.")}
    assert concepts, "engine/model/ holds no module: the check would be empty"
    upward = sorted(f"{name} -> {dep} (line {line})" for name, deps in concepts.items()
                    for dep, line in deps.items() if dep in above)
    assert not upward, "engine/model/ imports what composes it:\n  " + "\n  ".join(upward)


def test_model_concepts_are_composed_not_mixed():
    """Every class under ``engine/model/`` stands alone (no base class: nothing is mixed
    in, it asks other concepts through what its constructor received), and the roots
    ``SemanticModel`` / ``Flow`` derive from nothing and define only ``__init__`` (which
    composes the concepts) and properties that hand a concept's answer on."""
    import importlib
    import inspect
    import pkgutil

    import torchreview.engine.model as package
    from torchreview.engine.flow import Flow
    from torchreview.engine.semantic import SemanticModel

    mixed = []
    concepts = 0
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                concepts += 1
                if cls.__bases__ != (object,):
                    mixed.append(f"{module.__name__}.{name} derives from {cls.__bases__}")
    assert concepts >= 12, f"engine/model/ holds {concepts} classes: the check would be empty"
    for root in (SemanticModel, Flow):
        if root.__bases__ != (object,):
            mixed.append(f"{root.__name__} derives from {root.__bases__}")
        own = [n for n, v in vars(root).items() if callable(v) and n != "__init__"]
        mixed += [f"{root.__name__}.{n} is a method of the root" for n in own]
    assert not mixed, "the model is mixed, not composed:\n  " + "\n  ".join(mixed)
    # concepts are handed their collaborators: none imports another
    crossing = sorted(f"{name} -> {dep}" for name, deps in import_graph().items()
                      if name.startswith("torchreview.engine.model.")
                      for dep in deps if dep.startswith("torchreview.engine.model."))
    assert not crossing, "a model concept imports another instead of being handed it:\n  " + \
        "\n  ".join(crossing)

