"""The file's shape: the Module classes it defines, what it imports, whether it is a test."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchreview.engine.collectors.registry import CallNames, collects

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext


@collects("module_classes")
def module_classes(ctx: "FileContext", calls: CallNames) -> tuple[str, ...]:
    return tuple(sorted(ctx.model.module_classes))


@collects("imports")
def imports(ctx: "FileContext", calls: CallNames) -> tuple[str, ...]:
    """Every imported module, every imported name, and the module each name comes from."""
    m = ctx.model
    return tuple(sorted(m.imported_modules | {q.rsplit(".", 1)[0] for q in m.aliases.values()}
                        | set(m.aliases.values())))


@collects("is_test_file")
def is_test_file(ctx: "FileContext", calls: CallNames) -> bool:
    return ctx.is_test_file


@collects("target_torch")
def target_torch(ctx: "FileContext", calls: CallNames) -> tuple[int, ...]:
    return tuple(ctx.target_torch) if ctx.target_torch else ()


@collects("legacy_torch")
def legacy_torch(ctx: "FileContext", calls: CallNames) -> bool:
    from torchreview.config import written_for_legacy_torch

    return written_for_legacy_torch(ctx.source.written_text)
