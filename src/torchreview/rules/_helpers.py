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
