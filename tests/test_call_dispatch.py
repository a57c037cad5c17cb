"""Rules that subscribe to calls by callee (``Rule.call_qualnames``, ``call_prefixes``,
``call_attrs``): the engine's one pass gives each such rule only the calls it asked
for (engine/runner.py ``calls_by_rule``), and a declaration never hides a call the
rule would act on (checked on every fixture of each subscribing rule)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from fixture_harness import FIXTURES
from model_snippets import ctx_of
from torchreview.catalog import Rule, all_rules
from torchreview.engine.context import FileContext
from torchreview.engine.runner import calls_by_rule
from torchreview.engine.source import load_source

SUBSCRIBING = [r for r in all_rules() if r.subscribes_to_calls()]


class _ByName(Rule):
    code, node_types = "TR990", (ast.Call,)
    call_qualnames = frozenset({"torch.load"})


class _ByPrefix(Rule):
    code, node_types = "TR991", (ast.Call, ast.Name)
    call_prefixes = ("numpy.", "torch.cuda.")


class _ByAttr(Rule):
    code, node_types = "TR992", (ast.Call,)
    call_qualnames = frozenset({"torch.squeeze"})
    call_attrs = frozenset({"squeeze"})


class _Every(Rule):
    code, node_types = "TR993", (ast.Call,)


_SNIPPET = """
import numpy as np
import torch
from torch import load as fetch

a = torch.load("a.pt")
b = fetch("b.pt")
c = np.zeros(3)
d = torch.squeeze(a)
e = a.squeeze()
torch.cuda.synchronize()
f = open("x")
"""


def _spelled(ctx, calls):
    return [ctx.text(c) for c in calls]


def test_each_rule_gets_only_the_calls_it_asked_for_in_walk_order():
    ctx = ctx_of(_SNIPPET)
    rules = [_ByName(), _ByPrefix(), _ByAttr(), _Every()]
    calls = ctx.model.nodes_by_type[ast.Call]
    got = calls_by_rule(rules, calls, ctx.model.qualname)
    assert id(rules[3]) not in got  # no subscription: the runner gives it every call
    by_name, by_prefix, by_attr = (got[id(r)] for r in rules[:3])
    # an alias (`fetch` is torch.load) is found by its qualified name, not its spelling
    assert sorted(_spelled(ctx, by_name)) == ['fetch("b.pt")', 'torch.load("a.pt")']
    assert sorted(_spelled(ctx, by_prefix)) == ["np.zeros(3)", "torch.cuda.synchronize()"]
    # matched by name and by attribute: given once
    assert sorted(_spelled(ctx, by_attr)) == ["a.squeeze()", "torch.squeeze(a)"]
    for chosen in (by_name, by_prefix, by_attr):  # the order of the engine's walk
        assert chosen == [c for c in calls if any(c is x for x in chosen)]


class _ByLoss(Rule):
    code, node_types = "TR994", (ast.Call,)
    call_losses = frozenset({"cross_entropy"})


class _ByLossAndName(Rule):
    code, node_types = "TR995", (ast.Call,)
    call_qualnames = frozenset({"torch.nn.functional.cross_entropy", "torch.zeros"})
    call_losses = frozenset({"cross_entropy", "nll_loss"})


_LOSSES = """
import torch
import torch.nn as nn
import torch.nn.functional as F

criterion = nn.CrossEntropyLoss()
nll = nn.NLLLoss()
x = torch.zeros(3)
a = F.cross_entropy(x, x)
b = criterion(x, x)
c = nll(x, x)
d = F.mse_loss(x, x)
"""


def test_rules_subscribing_by_loss_get_the_calls_computing_it_once_in_walk_order():
    ctx = ctx_of(_LOSSES)
    rules = [_ByLoss(), _ByLossAndName()]
    calls = ctx.model.nodes_by_type[ast.Call]
    got = calls_by_rule(rules, calls, ctx.model.qualname, ctx.flow.loss_call)
    assert sorted(_spelled(ctx, got[id(rules[0])])) == ["F.cross_entropy(x, x)", "criterion(x, x)"]
    # by name and by loss (F.cross_entropy both): given once
    assert sorted(_spelled(ctx, got[id(rules[1])])) == ["F.cross_entropy(x, x)", "criterion(x, x)",
                                                        "nll(x, x)", "torch.zeros(3)"]
    for chosen in got.values():
        assert chosen == [c for c in calls if any(c is x for x in chosen)]
    # without the loss question, or when it fails on a call, the rule is given the call
    assert calls_by_rule(rules[:1], calls, ctx.model.qualname)[id(rules[0])] == list(calls)

    def failing(call):
        raise ValueError("no")

    assert calls_by_rule(rules[:1], calls, ctx.model.qualname, failing)[id(rules[0])] == list(calls)


@pytest.mark.parametrize("code", [_LOSSES, _SNIPPET, "import torch\ny = model(x)\nz = torch.relu(y)\nw = y.sum()\n",
                                  "import torch.nn as nn\nc = nn.MSELoss()\nv = c(a, b)\nu = f(v)\n"])
def test_loss_questions_skipped_only_where_the_answer_is_none(code):
    """With ``builds_loss_modules`` the runner does not ask ``loss_call`` of calls whose
    answer is None at once; the rules get the same calls as when every call is asked."""
    ctx = ctx_of(code)
    rules = [_ByLoss(), _ByLossAndName()]
    calls = ctx.model.nodes_by_type.get(ast.Call, [])
    asked = calls_by_rule(rules, calls, ctx.model.qualname, ctx.flow.loss_call)
    ctx = ctx_of(code)  # a fresh model: nothing asked yet
    calls = ctx.model.nodes_by_type.get(ast.Call, [])
    skipped = calls_by_rule(rules, calls, ctx.model.qualname, ctx.flow.loss_call, ctx.flow.builds_loss_modules)
    assert [[ctx.text(c) for c in got] for got in skipped.values()] == \
        [[ctx.text(c) for c in got] for got in asked.values()]


def test_no_calls_no_subscribers():
    ctx = ctx_of("x = 1\n")
    rule = _ByName()
    assert calls_by_rule([rule], [], ctx.model.qualname) == {id(rule): []}
    assert calls_by_rule([_Every()], ctx.model.nodes_by_type.get(ast.Call, []), ctx.model.qualname) == {}


@pytest.mark.parametrize("rule", SUBSCRIBING, ids=lambda r: r.code)
def test_subscription_is_declared_on_calls(rule):
    assert ast.Call in rule.node_types, f"{rule.code} subscribes to calls but does not list ast.Call"
    assert all(isinstance(q, str) and q for q in rule.call_qualnames)
    assert all(isinstance(p, str) and p.endswith(".") for p in rule.call_prefixes)
    assert all(isinstance(a, str) and a.isidentifier() for a in rule.call_attrs)
    assert all(isinstance(n, str) and n.isidentifier() for n in rule.call_losses)


def _fixture_files(code: str) -> list[Path]:
    out = []
    for entry in sorted(FIXTURES.rglob(f"{code}*")):
        files = [entry] if entry.is_file() else sorted(entry.rglob("*"))
        out.extend(f for f in files if f.suffix in (".py", ".ipynb") and f.is_file())
    return out


def _fixture_contexts(code: str):
    """(path, context) of each fixture file of the rule ``code`` that parses."""
    files = _fixture_files(code)
    assert files, f"no fixtures for {code}"
    for path in files:
        source = load_source(str(path), os.path.relpath(path))  # fixtures/..., sample code
        try:
            tree = ast.parse(source.text)
        except SyntaxError:
            continue
        yield path, FileContext(source, tree, target_torch=None, has_torch=True, real_path=str(path))


def _findings(rule_cls, ctx: FileContext, calls) -> list[tuple]:
    ctx.raw = []
    ctx.rule = rule_cls
    rule = rule_cls()
    for call in calls:
        rule.check(call, ctx)
    return [(line, f.code, f.message, f.column) for line, f in ctx.raw]


@pytest.mark.parametrize("rule", SUBSCRIBING, ids=lambda r: r.code)
def test_declaration_hides_no_call_the_rule_acts_on(rule):
    """On every fixture of the rule, checking every call finds exactly what checking
    the subscribed calls finds: the declaration is a superset of what ``check`` uses."""
    reported = 0
    for path, ctx in _fixture_contexts(rule.code):
        calls = ctx.model.nodes_by_type.get(ast.Call, [])
        every = _findings(rule, ctx, calls)
        chosen = _findings(rule, ctx, calls_by_rule([rule], calls, ctx.model.qualname, ctx.flow.loss_call)[id(rule)])
        assert chosen == every, f"{rule.code} on {path.name}"
        reported += len(every)
    assert reported, f"{rule.code}: its fixtures report nothing through calls (test would prove nothing)"


ATTRIBUTE_SUBSCRIBERS = [r for r in all_rules() if r.attribute_names]


@pytest.mark.parametrize("rule", ATTRIBUTE_SUBSCRIBERS, ids=lambda r: r.code)
def test_attribute_subscription_hides_no_attribute_the_rule_acts_on(rule):
    """``Rule.attribute_names``: on every fixture of the rule, checking every attribute finds
    exactly what checking the attributes of those names finds."""
    assert ast.Attribute in rule.node_types
    assert all(isinstance(a, str) and a.isidentifier() for a in rule.attribute_names)
    reported = 0
    for path, ctx in _fixture_contexts(rule.code):
        attributes = ctx.model.nodes_by_type.get(ast.Attribute, [])
        every = _findings(rule, ctx, attributes)
        assert _findings(rule, ctx, [a for a in attributes if a.attr in rule.attribute_names]) == every, path.name
        reported += len(every)
    assert reported, f"{rule.code}: its fixtures report nothing through attributes"


def test_runner_gives_attribute_subscribers_their_attributes_in_walk_order():
    from torchreview.engine.runner import Settings, review_source
    from torchreview.engine.source import SourceFile

    seen: list[tuple[str, str]] = []

    class _ByAttribute(Rule):
        code, node_types = "TR996", (ast.Attribute, ast.Name)
        attribute_names = frozenset({"data", "grad"})

        def check(self, node, ctx):
            seen.append((type(node).__name__, node.attr if isinstance(node, ast.Attribute) else node.id))

    text = "import torch\nx = torch.zeros(2)\ny = x.data + x.grad + x.shape[0]\nz = y.data\n"
    review_source(SourceFile(path="m.py", text=text), Settings(rule_codes=("TR996",)), rules=[_ByAttribute])
    attrs = [n for n in seen if n[0] == "Attribute"]
    assert sorted(attrs) == [("Attribute", "data"), ("Attribute", "data"), ("Attribute", "grad")]
    assert [n for n in seen if n[0] == "Name"] and seen.index(attrs[0]) < seen.index(("Name", "x"))


GATED = [r for r in all_rules() if ast.Call in r.node_types and r.wants_calls is not Rule.wants_calls]


def test_gated_rules_take_every_call_otherwise():
    assert {r.code for r in GATED} >= {"TR104", "TR501", "TR519"}
    assert not [r.code for r in GATED if r.subscribes_to_calls()]  # a gate or a subscription, not both


@pytest.mark.parametrize("rule", GATED, ids=lambda r: r.code)
def test_a_file_the_gate_refuses_has_no_call_the_rule_acts_on(rule):
    """``Rule.wants_calls``: on every fixture file of every rule, a file whose calls the
    gate refuses gives no finding when each of its calls is checked (the gate only
    skips calls ``check`` would not act on); the rule's own fixtures report through
    calls where the gate lets them through."""
    reported = refused = 0
    for code in sorted({r.code for r in all_rules()}):
        if not _fixture_files(code):
            continue
        for path, ctx in _fixture_contexts(code):
            calls = ctx.model.nodes_by_type.get(ast.Call, [])
            found = _findings(rule, ctx, calls)
            if not rule().wants_calls(ctx):
                refused += 1
                assert not found, f"{rule.code} refuses the calls of {path.name}, which report {found}"
            elif code == rule.code:
                reported += len(found)
    assert reported and refused, f"{rule.code}: the fixtures do not exercise the gate both ways"
