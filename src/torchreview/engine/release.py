"""Freeing a finished file's tree and model at once, by reference counting.

The semantic model stores each node's parent on the node (``_tr_parent``), and the
model's parts refer to each other: a finished file's tree is a cycle that only the
cyclic garbage collector frees, and that collector then scans every node of every
finished tree (on a large repository about a tenth of a run, and the trees pile up
in memory until it runs). ``release`` drops the parent links of every node the
model indexed and empties the given objects, so the tree dies as soon as the last
reference to it goes. Only for objects nothing reads afterwards.
"""

from __future__ import annotations


def release(model, *others) -> None:
    """Forget ``model`` (a ``SemanticModel``) and ``others`` (objects built on it).
    Best effort: whatever it cannot empty is left to the cyclic collector."""
    by_type = getattr(model, "nodes_by_type", None)
    for bucket in by_type.values() if isinstance(by_type, dict) else ():
        for node in bucket:
            node.__dict__.pop("_tr_parent", None)
    for part in (*others, model):
        state = getattr(part, "__dict__", None)
        if isinstance(state, dict):
            state.clear()
