"""Class or function, from source text only (``artifacts.callables``)."""

from __future__ import annotations

import sys
import textwrap

import pytest

from torchreview.artifacts.callables import CLASS, FUNCTION, UNKNOWN, kind_of

PROJECT = {
    "proj/__init__.py": "from .models import Net as PublicNet\nfrom .tools import *\n",
    "proj/models.py": """
        import os
        open(os.path.join(os.path.dirname(__file__), "IMPORTED"), "w").close()

        class Net:
            class Config:
                pass

            def __setstate__(self, state):
                pass

            def forward(self):
                pass

        def make():
            pass

        Alias = Net
        made = make()
        Later = None

        class Later:
            pass

        try:
            from fastlib import Thing
        except ImportError:
            def Thing():
                pass
    """,
    "proj/tools.py": "__all__ = ['helper']\n\ndef helper():\n    pass\n",
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    for name, text in PROJECT.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("module,name,kind,why", [
    ("proj.models", "Net", CLASS, "a class defined at proj/models.py:5"),
    ("proj.models", "Net.Config", CLASS, "nested"),
    ("proj.models", "Net.forward", FUNCTION, "a method of the class Net"),
    ("proj.models", "Net.missing", UNKNOWN, "not defined in the class Net"),
    ("proj.models", "make", FUNCTION, "a function defined at"),
    ("proj.models", "Alias", CLASS, "a class defined at"),
    ("proj.models", "made", UNKNOWN, "bound by an assignment"),
    ("proj.models", "Later", CLASS, "a class defined at"),
    ("proj.models", "Thing", FUNCTION, "a function defined at"),
    ("proj.models", "nothing", UNKNOWN, "not found"),
    ("proj", "PublicNet", CLASS, "proj/models.py"),
    ("proj", "helper", FUNCTION, "proj/tools.py"),
    ("proj", "models.Net", CLASS, "proj/models.py"),
    ("proj.models", "os", UNKNOWN, "a module, not a callable"),
])
def test_project_names(project, module, name, kind, why):
    found = kind_of(module, name)
    assert (found.kind, why in found.why) == (kind, True), found
    assert not (project / "proj" / "IMPORTED").exists()
    assert "proj" not in sys.modules and "proj.models" not in sys.modules


@pytest.mark.parametrize("module,name,kind", [
    ("logging.config", "dictConfig", FUNCTION),
    ("pathlib", "Path", CLASS),
    ("pathlib", "Path.write_text", FUNCTION),
    ("os.path", "join", FUNCTION),  # os.path is a name bound inside os, not a file
    ("builtins", "dict", CLASS),
    ("builtins", "eval", FUNCTION),
    ("_codecs", "decode", FUNCTION),
    ("collections", "OrderedDict", CLASS),  # re-exported from the C module _collections
    ("enum", "Enum", CLASS),  # "Enum = None" placeholder first, class later
    ("torch.utils.model_zoo", "load_url", FUNCTION),  # an import alias of torch.hub's function
    ("torch", "Tensor", CLASS),
    ("torch._C", "Generator", CLASS),  # an extension module read through its .pyi stub
    ("not_a_module_anywhere", "X", UNKNOWN),
    ("os", "__class__", UNKNOWN),
    ("a b", "c", UNKNOWN),
])
def test_installed_names(module, name, kind):
    if module.startswith("torch"):
        pytest.importorskip("torch")
    assert kind_of(module, name).kind == kind


def test_resolving_imports_nothing():
    for module in ("mailcap", "lib2to3.pgen2.grammar", "_osx_support", "doctest"):
        if module in sys.modules:
            continue
        kind_of(module, "x")
        assert module not in sys.modules


def test_nested_namespace_packages_resolve(tmp_path, monkeypatch):
    """Folders without __init__.py, two deep (TCN's `TCN/word_cnn/utils.py`, the classes of its
    pickled corpus): importlib asks sys.modules for the parent of a dotted namespace name, which
    nothing imported here; the lookup goes by folder instead (it was a KeyError)."""
    (tmp_path / "Top" / "inner").mkdir(parents=True)
    (tmp_path / "Top" / "inner" / "utils.py").write_text("class Corpus:\n    pass\n\ndef build():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    assert "Top" not in sys.modules
    assert kind_of("Top.inner.utils", "Corpus").kind == CLASS
    assert kind_of("Top.inner.utils", "build").kind == FUNCTION
    assert kind_of("Top.missing.utils", "Corpus").kind == UNKNOWN
