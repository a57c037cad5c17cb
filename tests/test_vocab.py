"""The model's vocabularies are closed: every kind, event, device label, mode and
split the engine answers over the fixture files is a member of its enum
(engine/vocab.py), and members compare equal to their words."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from torchreview.engine.context import FileContext
from torchreview.engine.source import SourceFile
from torchreview.engine.vocab import DeviceKind, EntryKind, EventKind, Kind, Mode, Split

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _contexts():
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        # a path outside any project: the project index finds nothing to read
        yield FileContext(SourceFile(path="/nonexistent/" + path.name, text=text), tree, target_torch=None,
                          has_torch=True)


def test_the_engine_answers_only_in_its_vocabularies():
    seen = {"kind": set(), "event": set(), "device": set(), "mode": set(), "split": set()}
    files = 0
    for ctx in _contexts():
        files += 1
        for node in ctx.model.nodes_by_type.get(ast.Name, ()):
            seen["kind"].add(ctx.kind_of(node))
            if isinstance(node.ctx, ast.Load):
                seen["split"].add(ctx.flow.data_split(node))
        for loop in ctx.training_loops:
            seen["event"].update(e.kind for e in loop.events)
        for call in ctx.model.calls:
            if isinstance(call.func, ast.Attribute) and call.func.attr == "to":
                seen["device"].add(ctx.model.device_kind(ctx.model.to_call_device(call)))
            if call.func is not None and ctx.model.kind_of(call.func) == "model" or \
                    isinstance(call.func, ast.Name) and call.func.id in ("model", "net"):
                seen["mode"].add(ctx.flow.mode_at(call))
    assert files > 100
    vocab = {"kind": Kind, "event": EventKind, "device": DeviceKind, "mode": Mode, "split": Split}
    for name, enum in vocab.items():
        words = seen[name] - {None}
        assert words, f"no {name} answered over the fixtures: the check would be empty"
        outside = sorted(words - {m.value for m in enum})
        assert not outside, f"the engine answers {name} {outside}, not in engine/vocab.py {enum.__name__}"


def test_members_are_their_words():
    assert Kind.OPTIMIZER == "optimizer" and f"{Kind.OPTIMIZER}" == "optimizer"
    assert {"model": 1}[Kind.MODEL] == 1
    assert json.dumps([EntryKind.MODEL_STATE]) == '["model_state"]'
    assert str(DeviceKind.ACCELERATOR) == "accelerator"
