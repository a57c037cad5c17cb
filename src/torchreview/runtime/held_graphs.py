"""TR507 for graphs that chain across steps without a model output in them.

The forward-output markers of ``memory`` see losses and outputs kept alive.
A value rebuilt every step from its own previous value with autograd on
(an EMA copy ``shadow = shadow * d + p * (1 - d)``, an RNN state never
detached, a running statistic of a parameter) holds a graph that grows by a
few nodes per step and contains no forward output: memory grows by the
nodes (and whatever they save) only, far too slowly for RSS to show on a
short run.

Every ``EVERY`` optimizer steps the user's frames, the ``__main__`` globals
and the attributes of the objects found there (one level) are scanned for
tensors with a ``grad_fn`` (directly, or among the first ``ITEMS`` values of
a dict/list/tuple).  Each such tensor's node gets a tag (holder label, step)
in its ``metadata``.  At the next scan, a holder whose node is new is walked
back (at most ``BUDGET`` nodes): reaching the node the *same holder* had at
the previous scan means the new value was computed from the old one through
autograd, i.e. the graph chains across steps.  Two scans in a row that see
this report TR507.  A value computed once and reused (same node), a fresh
per-step loss kept in a variable (a new graph that does not reach the old
one) and a tensor built from another holder's old value stay silent.
"""

from __future__ import annotations

import functools
import linecache
import re
import sys
import types
from collections import deque
from itertools import islice
from typing import TYPE_CHECKING

from torchreview.findings import Finding
from torchreview.runtime._env import Site, display_path, is_internal
from torchreview.runtime.codes import runtime_finding

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.runtime.watcher import Watcher

EVERY = 5
ITEMS = 64
BUDGET = 500
MAX_ROOTS = 256
_KEY = "torchreview.held"


def graph_tags(starts, key: str, budget: int):
    """The values stored under ``key`` in the metadata of autograd nodes reached
    walking back from ``starts`` (each node once, at most ``budget`` nodes)."""
    seen = set()
    todo = list(starts)
    while todo and budget > 0:
        cur = todo.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        budget -= 1
        try:
            tag = cur.metadata.get(key)
        except (AttributeError, RuntimeError):
            tag = None
        if tag is not None:
            yield tag
        todo.extend(fn for fn, _ in getattr(cur, "next_functions", ()))


def _reaches(node, label: str, step: int) -> bool:
    """Whether walking back from ``node`` reaches a node tagged (label, step)."""
    starts = [fn for fn, _ in getattr(node, "next_functions", ())]
    return any(tag == (label, step) for tag in graph_tags(starts, _KEY, BUDGET))


class _Holder:
    __slots__ = ("label", "tensor", "owner", "attr", "code", "filename", "line")

    def __init__(self, label, tensor, owner, attr, code, filename, line):
        self.label, self.tensor, self.owner, self.attr = label, tensor, owner, attr
        self.code, self.filename, self.line = code, filename, line


class HeldGraphs:
    def __init__(self, watcher: "Watcher") -> None:
        self.w = watcher
        self.previous: int | None = None  # step of the previous scan
        self.hits = 0
        self.first_hit: int | None = None
        self.found: dict | None = None

    def on_step(self, step: int, frame) -> None:
        if self.found is not None or step % EVERY:
            return
        torch = self.w.torch
        holders = list(_holders(torch, frame))
        hit = None
        if self.previous is not None:
            for h in holders:
                node = h.tensor.grad_fn
                if node.metadata.get(_KEY) is not None:
                    continue  # the same node as at an earlier scan: not rebuilt
                if _reaches(node, h.label, self.previous):
                    hit = h
                    break
        for h in holders:
            h.tensor.grad_fn.metadata[_KEY] = (h.label, step)
        if hit is None:
            self.hits, self.first_hit = 0, None
        else:
            self.hits += 1
            if self.first_hit is None:
                self.first_hit = self.previous
            if self.hits >= 2:
                self._report(hit, step)
        self.previous = step

    def _report(self, h: _Holder, step: int) -> None:
        site = _site(h)
        kind = "value" if h.owner is None else "values"
        self.found = {"step": step, "since": self.first_hit, "label": h.label, "site": site,
                      "kind": kind}
        self.w.warn("TR507", f"`{h.label}` is rebuilt from its previous value with autograd on: "
                             "its graph grows every step", site, step=step)

    def findings(self) -> list[Finding]:
        f = self.found
        if f is None:
            return []
        return [runtime_finding("TR507", (
            f"`{f['label']}` is computed every step from its own previous value with autograd "
            f"on, so each step's graph is chained onto the last one (seen from step {f['since']} "
            f"to step {f['step']}): the graph, and the memory it holds, grows for the whole run "
            "and a backward through it would reach every earlier step. Do the update under "
            "`torch.no_grad()` (e.g. decorate the EMA/statistics update) or store "
            "`value.detach()`."), f["site"])]


def user_scopes(frame) -> list[tuple]:
    """(namespace, code, filename, line) of the user's frames from ``frame`` out,
    then ``__main__``'s globals when no frame ran in them."""
    scopes = []
    seen_globals = set()
    while frame is not None:
        filename = frame.f_code.co_filename
        if not is_internal(filename):
            scopes.append((frame.f_locals, frame.f_code, filename, frame.f_lineno))
            seen_globals.add(id(frame.f_globals))
        frame = frame.f_back
    main = sys.modules.get("__main__")
    if main is not None and id(vars(main)) not in seen_globals and getattr(main, "__file__", None):
        scopes.append((vars(main), None, main.__file__, 1))
    return scopes


def _holders(torch, frame):
    """(label, tensor with grad_fn, ...) held by the user's frames, __main__ and their objects."""
    Tensor = torch.Tensor
    scopes = user_scopes(frame)
    count = 0
    seen_objects = set()
    for mapping, code, filename, line in scopes:
        for name, value in list(mapping.items()):
            if name.startswith("__"):
                continue
            for label, tensor in _tensors(name, value, Tensor):
                yield _Holder(label, tensor, None, name, code, filename, line)
                count += 1
                if count >= MAX_ROOTS:
                    return
            if isinstance(value, _SKIP) or id(value) in seen_objects:
                continue
            attrs = getattr(value, "__dict__", None)
            if not isinstance(attrs, dict) or type(value).__module__.startswith("torch"):
                continue
            seen_objects.add(id(value))
            for attr, inner in list(islice(attrs.items(), ITEMS)):
                if attr.startswith("_"):
                    continue
                for label, tensor in _tensors(f"{name}.{attr}", inner, Tensor):
                    yield _Holder(label, tensor, value, attr, None, None, line)
                    count += 1
                    if count >= MAX_ROOTS:
                        return


_SKIP = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
         functools.partial)


def _tensors(name: str, value, Tensor):
    if isinstance(value, Tensor):
        if value.grad_fn is not None:
            yield name, value
        return
    if isinstance(value, dict):
        items = [(f"{name}[{k!r}]", v) for k, v in list(islice(value.items(), ITEMS))]
    elif isinstance(value, (list, tuple, deque)):
        items = [(f"{name}[{i}]", v) for i, v in enumerate(list(islice(value, ITEMS)))]
    else:
        return
    for label, v in items:
        if isinstance(v, Tensor) and v.grad_fn is not None:
            yield label, v


_GROWS = r"(\s*\[.*\])?\s*(\+|-|\*)?=(?!=)"


def _site(h: _Holder) -> Site:
    """The line that assigns the holder (an attribute: in its class's file)."""
    if h.owner is not None:
        module = sys.modules.get(type(h.owner).__module__)
        filename = getattr(module, "__file__", None)
        pattern = re.compile(rf"\.{re.escape(h.attr)}\b{_GROWS}")
        start, stop = 1, None
    else:
        filename = h.filename
        pattern = re.compile(rf"(?<![.\w]){re.escape(h.attr)}\b{_GROWS}")
        start, stop = 1, None
        if h.code is not None and h.code.co_name != "<module>":
            numbers = [n for _, _, n in h.code.co_lines() if n]
            if numbers:
                start, stop = min(numbers), max(numbers)
    if not filename:
        return Site("<unknown>", 1)
    lines = linecache.getlines(filename)
    stop = min(stop or len(lines), len(lines))
    best = None
    for number in range(start, stop + 1):
        text = lines[number - 1]
        found = pattern.search(text)
        if found and (best is None or not best[1]):  # the first update, else the last assignment
            best = (number, bool(found.group(1) or found.group(2)))
    line = best[0] if best else h.line
    return Site(display_path(filename), line, linecache.getline(filename, line).strip())
