"""Small helpers shared by rules (questions about calls that are not model facts)."""

from __future__ import annotations

import ast
import re

from torchreview.engine.context import parent

TORCH_LOAD = "torch.load"


def is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def is_false(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def known_false(ctx, node: ast.AST | None) -> bool:
    """A literal ``False``, or a parameter every call site of an entry script's function
    (or of a function no other project file names) passes ``False`` (``GradScaler(enabled=amp)`` in ``def train(..., amp=True)`` only
    ever called with ``amp=False``)."""
    if is_false(node):
        return True
    if node is None:
        return False
    # a function of a module other files import, but that none of them names (LVM-Med's
    # `train_net`, called only by the module's own `train_2d_R50`): its call sites are here
    known, value = ctx.flow.parameter_constant(
        node, called_only_here=lambda func: not ctx.call_paths.mentioned_elsewhere(func.name))
    return known and value is False


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


def torch_nn_spelling(ctx, node: ast.AST) -> str | None:
    """How the file spells ``torch.nn`` for code inserted at ``node``: as in the
    enclosing class's base (``nn.Module`` -> ``nn``), else an alias of ``torch.nn``
    (``nn`` preferred), else ``<torch alias>.nn``. None when torch is not imported."""
    cls = ctx.enclosing_class(node)
    for base in cls.bases if cls is not None else ():
        if isinstance(base, ast.Attribute) and ctx.qualname(base.value) == "torch.nn":
            return ctx.text(base.value)
    aliases = sorted(local for local, qual in ctx.model.aliases.items() if qual == "torch.nn")
    if aliases:
        return "nn" if "nn" in aliases else aliases[0]
    torch_aliases = sorted(local for local, qual in ctx.model.aliases.items() if qual == "torch")
    return torch_aliases[0] + ".nn" if torch_aliases else None


def has_weights_only(ctx) -> bool:
    """Whether the targeted torch has ``torch.load(weights_only=...)`` (added in 1.13;
    on older releases the keyword is a ``TypeError``)."""
    return ctx.torch_at_least(1, 13)


NO_WEIGHTS_ONLY = ("the targeted torch predates `weights_only` (added in torch 1.13), so there is no safe "
                   "way to load a pickle here: load only files you trust, or move to torch >= 1.13 and "
                   "pass `weights_only=True` (or load a safetensors file)")


def add_weights_only_fix(call: ast.Call, ctx):
    """The (unsafe) fix shared by TR101 and TR102: add ``weights_only=True``; None
    when the targeted torch has no such keyword (before 1.13)."""
    from torchreview.fixes import insert_keyword

    if not has_weights_only(ctx):
        return None
    return insert_keyword(call, ctx, "weights_only=True", "add `weights_only=True`", "unsafe")


def load_repeat_key(finding, top_level: bool = False) -> str:
    """``Rule.repeat_key`` of the ``torch.load`` rules: one function's loads with the same
    message once the loaded expression and the line of its source are left out (`of `<path>``
    and "(line N)" name the place, not the problem). With ``top_level``, the loads at the top
    level of one file fold too (a converter script reading shard after shard from the paths
    its command line names); otherwise each top-level load stays apart."""
    message = re.sub(r"^`torch\.load` of `[^`]*`", "`torch.load` of a path", finding.message)
    message = re.sub(r" \(line \d+\)", "", message)
    where = finding.context or ("<top level>" if top_level else f"line {finding.line}")
    return f"{finding.path}|{finding.cell}|{where}|{finding.kind}|{finding.severity.label}|{message}"


_FILLS = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})


def attribute_never_read(ctx, attr: str, owner: str) -> bool:
    """Nothing reads an attribute of this name: in this file no code loads ``<x>.<attr>``
    except to fill it (``self.layers.append(m)``), no string spells it (``getattr(self,
    "pointer")``, a state-dict key), and no neighbouring project file -- the modules this
    file imports and the files naming its module, where a subclass or code holding an
    instance would be -- spells both the identifier and the name of the class ``owner``
    that stores it (``ctx.call_paths.neighbours_mention``; an unrelated class elsewhere
    with an attribute of the same name does not count).
    What such an attribute holds
    reaches no forward, optimizer or checkpoint, so how it is stored loses nothing
    (rl4co's ``self.pointer`` list, SSLRec's ``self.beh_embedding``: judged noise)."""
    for node in ctx.model.nodes_by_type.get(ast.Attribute, ()):
        if node.attr != attr or not isinstance(node.ctx, ast.Load):
            continue
        up = parent(node)
        if isinstance(up, ast.Attribute) and up.attr in _FILLS and isinstance(parent(up), ast.Call):
            continue
        return False
    for node in ctx.model.nodes_by_type.get(ast.Constant, ()):
        if isinstance(node.value, str) and attr in node.value:
            return False
    return not set(ctx.call_paths.neighbours_mention([attr])) & set(ctx.call_paths.neighbours_mention([owner]))
