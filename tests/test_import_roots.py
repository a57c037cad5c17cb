"""Where a module reference leads without a project marker: the folder a package is
imported from, and folders a notebook/script puts on sys.path itself."""
import json

from torchreview.engine import project_index as P


def _tree(tmp_path):
    pkg = tmp_path / "book" / "kit"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .tools import *\n")
    (pkg / "tools.py").write_text("def helper():\n    return 1\n")
    lesson = tmp_path / "book" / "ch1"
    lesson.mkdir()
    return pkg, lesson


def test_markerless_package_root_is_the_folder_it_is_imported_from(tmp_path):
    pkg, lesson = _tree(tmp_path)
    assert P.project_root(str(pkg)) == str(tmp_path / "book")
    assert P.project_root(str(lesson)) == str(lesson)  # not a package: the folder itself


def test_sys_path_addition_resolves_a_parent_package(tmp_path):
    pkg, lesson = _tree(tmp_path)
    script = lesson / "run.py"
    script.write_text('import sys\nsys.path.insert(0, "..")\nimport kit\n')
    assert P.resolve(str(script), "kit") == str(pkg / "__init__.py")
    plain = lesson / "plain.py"
    plain.write_text("import kit\n")
    assert P.resolve(str(plain), "kit") is None  # no sys.path edit: not this project's package
    absolute = lesson / "absolute.py"
    absolute.write_text('import sys\nsys.path.append("/opt/elsewhere")\nimport kit\n')
    assert P.resolve(str(absolute), "kit") is None


def test_sys_path_addition_in_a_notebook_with_escaped_quotes(tmp_path):
    pkg, lesson = _tree(tmp_path)
    nb = lesson / "lesson.ipynb"
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                         "source": ['import sys\n', 'sys.path.append("../")\n', 'import kit.tools\n']}],
                              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert P.resolve(str(nb), "kit.tools") == str(pkg / "tools.py")
