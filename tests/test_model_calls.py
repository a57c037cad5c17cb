"""Model concept: the call graph (callees and callers in one module, import time,
methods a base class drives), asked of a ``CallGraph`` built on the semantic model alone."""

from __future__ import annotations

import ast

from model_snippets import ctx_of, node
from torchreview.engine.model.calls import CallGraph

CODE = """
import torch

def helper(x):
    return x

def twice(x):
    return x
def twice(x):
    return x

class Trainer(Base):
    def step(self, batch):
        return self.compute(batch)
    def compute(self, batch):
        return helper(batch)
    def validation_step(self, batch):
        return batch

helper(1)
twice(2)

if __name__ == "__main__":
    Trainer().step(3)
"""


def test_resolve_local_call_and_call_sites():
    ctx = ctx_of(CODE)
    graph = CallGraph(ctx.model)
    assert graph.resolve_local_call(node(ctx, "helper(batch)")).name == "helper"
    assert graph.resolve_local_call(node(ctx, "self.compute(batch)")).name == "compute"
    assert graph.resolve_local_call(node(ctx, "twice(2)")) is None  # two definitions: ambiguous
    assert graph.resolve_local_call(node(ctx, "Trainer().step(3)")) is None  # a method of another object
    helper = ctx.model.functions["helper"][0]
    assert sorted(ctx.text(c) for c in graph.call_sites(helper)) == ["helper(1)", "helper(batch)"]
    compute = ctx.model.functions["compute"][0]
    assert [ctx.text(c) for c in graph.call_sites(compute)] == ["self.compute(batch)"]


def test_runs_at_import_and_the_main_guard():
    ctx = ctx_of(CODE)
    graph = CallGraph(ctx.model)
    assert graph.runs_at_import(node(ctx, "helper(1)"))
    assert not graph.runs_at_import(node(ctx, "Trainer().step(3)"))  # under the main guard
    # compute is called only from step, which runs only under the guard
    assert not graph.runs_at_import(node(ctx, "helper(batch)", ast.Call))
    assert CallGraph.is_main_guard(ast.parse('"__main__" == __name__', mode="eval").body)


def test_run_by_base_class():
    ctx = ctx_of(CODE)
    graph = CallGraph(ctx.model)
    methods = {f.name: f for f in ctx.model.classes["Trainer"].body}
    assert graph.run_by_base_class(methods["validation_step"])  # nothing here calls it
    assert not graph.run_by_base_class(methods["compute"])  # step calls it
    assert not graph.run_by_base_class(ctx.model.functions["helper"][0])  # not a method


def test_a_local_function_switches_no_imported_modes():
    ctx = ctx_of(CODE)
    graph = CallGraph(ctx.model)
    call = node(ctx, "helper(1)")
    assert graph.imported_mode_calls(call) == []  # helper is local, not another project module's
    assert graph.imported_mode(call) is None
    assert ctx.flow.call_graph.resolve_local_call(call) is ctx.model.functions["helper"][0]
