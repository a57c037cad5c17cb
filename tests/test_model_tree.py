"""Model concept: the tree index (the one walk: nodes by type, definitions,
calls, bindings, slices of the walk order), built alone on a snippet."""

from __future__ import annotations

import ast
import textwrap

from torchreview.engine.model.tree import TreeIndex

CODE = """
import torch
from torch import nn as N

class Net(N.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = N.Linear(width, width)

    def forward(self, x):
        def inner(y):
            return y * 2
        return inner(self.fc(x))

for epoch in range(3):
    a, b = 1, 2
    total = a + b
"""


class _Imports:
    """An honest stand-in for the names concept: records what the walk tells it."""

    def __init__(self):
        self.told: list[str] = []

    def add_import(self, node, top=False):
        self.told.append("import " + ", ".join(a.name for a in node.names) + (" (module body)" if top else ""))

    def add_import_from(self, node, top=False):
        self.told.append(f"from {node.module}" + (" (module body)" if top else ""))

    def maybe_alias(self, name, value):
        self.told.append(f"alias? {name}")


def _indexed(code: str = CODE) -> tuple[TreeIndex, _Imports]:
    index = TreeIndex(ast.parse(textwrap.dedent(code)))
    told = _Imports()
    index.walk(told)
    return index, told


def test_definitions_calls_and_nodes_by_type():
    index, _ = _indexed()
    assert set(index.classes) == {"Net"}
    assert set(index.functions) == {"__init__", "forward", "inner"}
    assert {"Linear", "range", "inner", "__init__", "super", "fc"} <= set(index.calls_by_name)
    assert len(index.calls) == sum(len(v) for v in index.calls_by_name.values())
    assert len(index.nodes_by_type[ast.FunctionDef]) == 3
    assert [type(n) for n in index.loops] == [ast.For]
    assert {"Module", "Linear", "fc"} <= index.attribute_names


def test_binding_sites_name_parameters_loops_self_attributes_and_pairs():
    index, _ = _indexed()
    sites = {(name, how) for _, name, _, how in index.binding_sites}
    assert {("width", "param"), ("x", "param"), ("y", "param")} <= sites
    assert ("self", "param") not in sites  # self/cls are not bound
    assert {("for", None), ("self.fc", None), ("a", None), ("b", None), ("total", None)} <= sites


def test_names_are_told_imports_and_module_level_assignments():
    _, told = _indexed()
    assert "import torch (module body)" in told.told and "from torch (module body)" in told.told
    # an import inside a function or a `try` is no statement of the module body
    _, nested = _indexed("try:\n    import torch\nexcept ImportError:\n    torch = None\n"
                         "def f():\n    from torch import nn\n")
    assert sorted(t for t in nested.told if not t.startswith("alias?")) == ["from torch", "import torch"]
    # only a Name assigned at module level may be an alias: not ``self.fc``, not the pair ``a, b``
    assert [t for t in told.told if t.startswith("alias?")] == ["alias? total"]


def test_subtree_is_ast_walk_and_own_nodes_skip_nested_bodies():
    index, _ = _indexed()
    forward = index.functions["forward"][0]
    tokens = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)  # shared singletons: not indexed
    assert {id(n) for n in index.subtree(forward)} == {id(n) for n in ast.walk(forward) if not isinstance(n, tokens)}
    own = index.own_nodes(forward)
    inner = index.functions["inner"][0]
    assert inner in own  # the nested function itself runs here (it is defined) ...
    assert not any(isinstance(n, ast.BinOp) for n in own)  # ... its body does not
    loop = index.loops[0]
    assert [n.targets[0].id for n in index.own_nodes(loop) if isinstance(n, ast.Assign)
            and isinstance(n.targets[0], ast.Name)] == ["total"]


def test_parent_links_are_set_by_the_walk():
    index, _ = _indexed()
    call = index.calls_by_name["Linear"][0]
    assert isinstance(call._tr_parent, ast.Assign)  # type: ignore[attr-defined]
