"""Small helpers shared by rules (questions about calls that are not model facts)."""

from __future__ import annotations

import ast

TORCH_LOAD = "torch.load"


def is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def is_false(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def is_literal(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant)


def int_value(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def short_text(ctx, expr: ast.AST | None, fallback: str = "it", limit: int = 40) -> str:
    """A one-line, length-limited source rendering of ``expr`` for messages."""
    if expr is None:
        return fallback
    text = " ".join(ctx.text(expr).split())
    if not text:
        return fallback
    return text if len(text) <= limit else text[: limit - 3] + "..."
