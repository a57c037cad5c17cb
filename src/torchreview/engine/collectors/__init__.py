"""The collectors of project facts: one function per ``FileFacts`` field.

A new fact is a field on ``FileFacts`` (engine/facts.py) and a function here
decorated ``@collects("<field>")`` that returns its value from the file's context
(in the module of its theme, or a new module imported below). ``collect_facts``
(called by the runner) runs every collector once; tests/test_project_facts.py
checks that every field has exactly one collector.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchreview.engine.collectors import (  # noqa: F401  (each module registers its collectors)
    devices, downloads, hparams, inference, randomness, resume, structure, training,
)
from torchreview.engine.collectors.registry import COLLECTORS, CallNames
from torchreview.engine.facts import FileFacts

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext

__all__ = ["COLLECTORS", "collect_facts"]


def collect_facts(ctx: "FileContext") -> FileFacts:
    calls = CallNames(ctx)
    values = {name: collect(ctx, calls) for name, collect in COLLECTORS.items()}
    return FileFacts(path=ctx.path, is_notebook=ctx.source.is_notebook, has_torch=ctx.has_torch, **values)
