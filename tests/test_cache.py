"""A cache can only cost time: a damaged or crafted entry is a miss and is rewritten.

Each case first runs `check` cold (entry written), then damages the entry on
disk, then runs again: the report and the exit code must be those of the cold
run, and the entry must be valid again afterwards.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from torchreview import cache, cache_schema
from torchreview.cli import main

SOURCE = "import torch\nstate = torch.load('m.pt')\n\nfor x in range(3):\n    y = torch.zeros(3)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    # torch < 2.6 targeted: the missing `weights_only` is a (shown) TR102 defect there
    (tmp_path / "pyproject.toml").write_text('[tool.torchreview]\ntarget-torch = "2.4"\nmin-confidence = "medium"\n')
    (tmp_path / "a.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys) -> tuple[int, dict]:
    code = main(["check", "a.py", "--format", "json"])
    captured = capsys.readouterr()
    assert "internal error" not in captured.err and "Traceback" not in captured.err
    report = json.loads(captured.out)
    report["summary"].pop("seconds")
    return code, report


def entry(root: Path) -> Path:
    found = [p for p in (root / cache.CACHE_DIR_NAME).rglob("*.json")]
    assert len(found) == 1, found
    return found[0]


def mutate(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _set_line(doc):
    doc["findings"][0]["line"] = "2"


def _set_severity(doc):
    doc["findings"][0]["severity"] = 5


def _set_review(doc):
    doc["findings"][0]["review"] = "SR"


def _set_edit(doc):
    doc["findings"][0]["fix"]["edits"][0]["column"] = None


def _bool_line(doc):
    doc["findings"][0]["line"] = True


def _negative_line(doc):
    doc["findings"][0]["line"] = -4


def _counts(doc):
    doc["facts"]["hparams"] = {"LR": "many"}


def _anchor(doc):
    doc["facts"]["training_loop"] = "abcde"


def _extra(doc):
    doc["facts"]["__class__"] = 1


def _extra_type(doc):
    doc["facts"]["imports"] = "torch"


def _flags(doc):
    doc["facts"]["flags"] = [["nested"]]


def _missing_fact(doc):
    del doc["facts"]["devices"]


def _negative_anchor_line(doc):
    doc["facts"]["training_loop"] = ["a.py", -1, 0, None, "x"]


def _other_path(doc):
    for f in doc["findings"]:
        f["path"] = "elsewhere.py"


def _error(doc):
    doc["errors"] = [{"path": "a.py", "message": 3}]


def _findings_dict(doc):
    doc["findings"] = {"0": doc["findings"][0]}


def _schema(doc):
    doc["schema"] = "2"


def _reviewed(doc):
    doc["reviewed"] = "yes"


def _moderately_nested(doc):
    # Parses fine, but far deeper than any entry torchreview writes.
    value = []
    for _ in range(200):
        value = [value]
    doc["facts"]["imports"] = value


def _top_level_list(doc):
    doc.clear()


def _old_schema(doc):
    # an entry written before typed facts: schema 2 with flag strings and keyed anchors
    doc["schema"] = 2
    doc["facts"] = {"path": "a.py", "is_notebook": False, "has_torch": True, "flags": ["trains"],
                    "anchors": {"download:0": ["a.py", 2, 1, None, "x"]}, "counts": {"downloads": 1},
                    "module_classes": [], "extra": {}}


WRONG_TYPED = [_set_line, _set_severity, _set_review, _set_edit, _bool_line, _negative_line, _counts, _anchor,
               _extra, _extra_type, _flags, _missing_fact, _negative_anchor_line, _other_path, _error,
               _findings_dict, _schema, _old_schema, _reviewed, _moderately_nested, _top_level_list]


def _check_recovers(project, capsys, damage) -> None:
    cold = run(capsys)
    assert cold[0] == 1 and {f["code"] for f in cold[1]["findings"]} >= {"TR102"}
    path = entry(project)
    damage(path)
    assert run(capsys) == cold
    # rewritten: valid again, and a third run is served from it
    assert cache.load(str(project / cache.CACHE_DIR_NAME), entry(project).stem) is not None
    assert run(capsys) == cold


@pytest.mark.parametrize("change", WRONG_TYPED, ids=lambda f: f.__name__.strip("_"))
def test_wrong_typed_entry_is_a_miss(project, capsys, change):
    _check_recovers(project, capsys, lambda p: mutate(p, change))


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 7)


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _deeply_nested(path: Path) -> None:
    # the decoder would recurse 200,000 levels: RecursionError before the fix
    path.write_text('{"schema":2,"findings":' + "[" * 200_000 + "]" * 200_000 + "}")


def _deeply_nested_object(path: Path) -> None:
    path.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)


def _json_null(path: Path) -> None:
    path.write_text("null")


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "x").write_text("{}")


def _latin1(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"torch", b"t\xf6rch"))


@pytest.mark.parametrize("damage", [_truncate, _garbage, _empty, _deeply_nested, _deeply_nested_object,
                                    _json_null, _latin1], ids=lambda f: f.__name__.strip("_"))
def test_damaged_entry_is_a_miss(project, capsys, damage):
    _check_recovers(project, capsys, damage)


def test_directory_in_place_of_entry_costs_only_time(project, capsys):
    cold = run(capsys)
    _directory(entry(project))
    assert run(capsys) == cold  # cannot be rewritten, still never an error
    assert run(capsys) == cold


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_in_place_of_entry_does_not_block(project, capsys):
    cold = run(capsys)
    path = entry(project)
    path.unlink()
    os.mkfifo(path)
    assert run(capsys) == cold  # opening it for reading would block forever
    assert stat.S_ISREG(entry(project).stat().st_mode)  # rewritten as a regular file


def test_symlinked_entry_is_not_followed(project, capsys, tmp_path_factory):
    cold = run(capsys)
    path = entry(project)
    outside = tmp_path_factory.mktemp("outside") / "planted.json"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)
    assert run(capsys) == cold
    assert not entry(project).is_symlink()


def test_depth_check_ignores_brackets_inside_strings():
    assert not cache_schema.too_deep(b'{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "b": "\\"[[[[[[[[[[[["}')
    assert cache_schema.too_deep(b"[" * (cache_schema.MAX_DEPTH + 1))
    assert not cache_schema.too_deep(b"[" * cache_schema.MAX_DEPTH)


def test_every_entry_written_for_the_examples_validates(tmp_path, monkeypatch, capsys):
    """What torchreview writes, it accepts: a new fact field of a shape the
    validator does not know would silently turn every entry into a miss."""
    import shutil

    examples = Path(__file__).resolve().parent.parent / "examples"
    shutil.copytree(examples, tmp_path / "examples")
    (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    main(["check", "examples", "-q"])
    capsys.readouterr()
    folder = tmp_path / cache.CACHE_DIR_NAME
    entries = sorted(folder.rglob("*.json"))
    assert len(entries) >= 3
    rejected = [p.name for p in entries if cache.load(str(folder), p.stem) is None]
    assert rejected == []


# --- advice a run hides is not examined for reachability (engine/runner.py): its cached
# result must not serve a run that shows that advice ------------------------------------

UNUSED_HELPER = '''import torch
from torch import nn


def helper(model):
    for p in model.parameters():
        p.data.mul_(0.5)


def main():
    model = nn.Linear(4, 1)
    model(torch.randn(2, 4)).sum().backward()


if __name__ == "__main__":
    main()
'''


def test_settings_key_depends_on_the_advice_shown():
    from dataclasses import replace

    from torchreview.engine.runner import Settings

    base = Settings(rule_codes=("TR410",))
    keys = {cache.settings_key(replace(base, advice_codes=codes)) for codes in (None, (), ("TR410",))}
    assert len(keys) == 3


def test_cached_result_of_hidden_advice_does_not_serve_a_run_showing_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "run.py").write_text(UNUSED_HELPER)
    monkeypatch.chdir(tmp_path)

    def tr410(*extra):
        main(["check", "run.py", "--format", "json", *extra])
        return [(f["line"], f["confidence"], "nothing in the project calls `helper`" in f["message"])
                for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "TR410"]

    assert tr410() == []  # advice hidden: the file's result is cached so
    assert list((tmp_path / cache.CACHE_DIR_NAME).rglob("*.json"))
    # the same rules with the advice shown: low confidence, for code that never runs
    assert tr410("--show-advice", "--min-confidence", "low") == [(7, "low", True)]
