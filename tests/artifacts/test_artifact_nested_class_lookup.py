"""Protocol 2 stores a class nested in another as `getattr(<outer class>, "<Inner>")`: a project's
pickled config holding its `Task.Name` enum (ai-vision's `config.pkl`: TR108 critical judged false in
blind test 66). The lookup on constants names exactly what a protocol-4 dotted global `Task.Name`
names, so it is judged as that global (a project class: needs trust, medium); a lookup that reaches a
denied module's attribute, or a dunder, stays critical. Every payload is crafted here and only handed
to the scanner (pickle's loaders are replaced by a trap)."""
from __future__ import annotations

import artifact_craft as craft


def _lookup_then_call(module: str, name: str, attribute: str) -> bytes:
    """`getattr(<module.name>, attribute)("value")`."""
    return (craft.PROTO(2) + craft.glob("builtins", "getattr") + craft.glob(module, name) + craft.ustr(attribute) +
            craft.TUPLE2 + craft.REDUCE + craft.ustr("value") + craft.TUPLE1 + craft.REDUCE + craft.STOP)


TASK = "import enum\n\n\nclass Task:\n    class Name(enum.Enum):\n        CLASSIFICATION = 'value'\n"


def _project(tmp_path) -> None:
    """The project's own package beside the pickle: `aibox.lib.task.Task.Name`, a nested enum class."""
    for folder in ("aibox", "aibox/lib"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "aibox" / "lib" / "task.py").write_text(TASK)


def test_a_nested_class_of_the_project_is_a_global_that_needs_trust(tmp_path, monkeypatch):
    _project(tmp_path)
    findings, _ = craft.scan_bytes(tmp_path, monkeypatch, _lookup_then_call("aibox.lib.task", "Task", "Name"),
                                   "config.pkl")
    assert findings and not craft.critical(findings)
    assert "aibox.lib.task.Task.Name" in findings[0].message


def test_a_lookup_into_a_denied_module_stays_critical(tmp_path, monkeypatch):
    findings, _ = craft.scan_bytes(tmp_path, monkeypatch, _lookup_then_call("os", "path", "join"), "config.pkl")
    assert craft.critical(findings)


def test_a_dunder_lookup_stays_critical(tmp_path, monkeypatch):
    _project(tmp_path)
    findings, _ = craft.scan_bytes(tmp_path, monkeypatch, _lookup_then_call("aibox.lib.task", "Task", "__init__"),
                                   "config.pkl")
    assert craft.critical(findings)
