"""Shared pieces of the flow concepts: events, training loops, small tree helpers.

A *training loop* is the innermost loop whose iteration runs a backward pass and
an optimizer step (directly, in nested blocks, or through functions of the same
module). Its *events* (zero_grad, backward, step, clip, ...) are kept in source
order with the conditions they run under, so ordering rules read them instead
of re-walking the tree (``engine/model/loops.py`` finds them).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property

from torchreview.engine.semantic_common import FunctionNode, position, root_name

MAX_INLINE_DEPTH = 3

# Wrappers a for loop iterates through to reach the real iterable (Flow.iterables_of).
_ITER_WRAPPERS = frozenset({
    "builtins.enumerate", "builtins.zip", "builtins.iter", "builtins.reversed", "tqdm.tqdm",
    "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "itertools.islice", "rich.progress.track",
})


def _walk_same_function(body: list[ast.stmt]):
    """Nodes of ``body``, not descending into nested functions, lambdas or classes."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (*FunctionNode, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _root_name(expr: ast.AST) -> str | None:
    """``batch`` of ``batch["x"]`` / ``batch.x`` / ``batch``."""
    return root_name(expr)


def _alive(timeline, pos) -> set[str]:
    """Names whose last (position, name, holds) entry before ``pos`` says they hold it."""
    state: dict[str, bool] = {}
    for p, name, holds in sorted(timeline, key=lambda t: t[0]):
        if p < pos:
            state[name] = holds
    return {n for n, held in state.items() if held}


def _field_of(owner: ast.AST, child: ast.AST) -> str | None:
    """Which field of ``owner`` (``body``, ``orelse``, ``test`` ...) holds ``child``."""
    for name, value in ast.iter_fields(owner):
        if value is child or (isinstance(value, list) and any(v is child for v in value)):
            return name
    return None


def names_accumulation(node: ast.AST) -> bool:
    """A name/attribute such as ``accum_steps``, ``grad_accumulation``, ``micro_batches``."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    name = name.lower()
    return "accum" in name or name.startswith("micro") or "_micro" in name


@dataclass(frozen=True)
class Event:
    kind: str  # backward | step | zero_grad | sched_step | clip | unscale | eval | train | forward
    node: ast.AST  # the call (or assignment) itself, possibly inside a callee
    anchor: ast.AST  # the node in the loop's own body (the call site when inlined)
    conditions: tuple[ast.expr, ...]  # If tests between the loop and the event
    depth: int  # loops between the training loop and the event (0 = directly in it)

    @property
    def pos(self) -> tuple[int, int]:
        return position(self.anchor)

    @property
    def conditional(self) -> bool:
        return bool(self.conditions)


@dataclass
class TrainingLoop:
    node: ast.AST
    function: ast.AST | None
    events: list[Event] = field(default_factory=list)
    epoch_loop: ast.AST | None = None
    # Every node of the loop (the model's recorded subtree), when known.
    nodes: list[ast.AST] | None = field(default=None, repr=False, compare=False)

    def of(self, kind: str, *, own: bool = True) -> list[Event]:
        return [e for e in self.events if e.kind == kind and (not own or e.depth == 0)]

    def has(self, kind: str) -> bool:
        return any(e.kind == kind for e in self.events)

    @cached_property
    def accumulates(self) -> bool:
        """Gradient accumulation: an optimizer step gated by a modulo/accumulation
        counter, backward in a micro-batch loop nested under the step, or an
        ``accum``-named value (``loss / accum_steps``) in the loop. Never when every backward
        starts from zeroed gradients (a ``zero_grad()`` before it, in the same branch at the
        same depth): nothing accumulates in ``.grad`` then, whatever a hand-kept buffer sums
        (kgTransformer's ``g += t.grad`` after each micro-step)."""
        steps = [e for e in self.events if e.kind == "step"]
        backwards = [e for e in self.events if e.kind == "backward"]
        zeros = [e for e in self.events if e.kind == "zero_grad"]
        if backwards and all(any(z.depth == b.depth and z.conditions == b.conditions and z.pos < b.pos
                                 for z in zeros) for b in backwards):
            return False
        if steps and backwards and min(b.depth for b in backwards) > min(s.depth for s in steps):
            return True
        for e in steps:
            for cond in e.conditions:
                if any(isinstance(n, ast.Mod) or names_accumulation(n) for n in ast.walk(cond)):
                    return True
        nodes = self.nodes if self.nodes is not None else ast.walk(self.node)
        return any(names_accumulation(n) for n in nodes if type(n) in (ast.Name, ast.Attribute))
