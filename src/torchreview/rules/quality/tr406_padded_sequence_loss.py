from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules._helpers import int_value, short_text

_FLATTEN = frozenset({"view", "reshape", "flatten", "ravel", "transpose", "permute"})


class PaddedSequenceLoss(Rule):
    """
    ## What it does
    Flags token-level cross-entropy (`CrossEntropyLoss`/`F.cross_entropy` on
    flattened `(batch * time, vocab)` scores or `(batch, vocab, time)`
    transposed ones) with no `ignore_index` and no mask, in a module that pads
    sequences (`pad_sequence`, `padding_value=`, tokenizer `padding=`,
    `F.pad(ids, ..., value=pad_id)`, a collate appending `[pad_id] * k`).

    ## Why is this bad?
    Padding positions are counted as real targets: the model is trained to
    predict the pad token, the mean loss is diluted by however much padding a
    batch has, and longer-padded batches weigh differently. Perplexity and
    accuracy computed from that loss are wrong as well.

    ## Example
    ```python
    import torch.nn.functional as F
    from torch.nn.utils.rnn import pad_sequence

    targets = pad_sequence(batch_targets, batch_first=True, padding_value=0)
    loss = F.cross_entropy(logits.view(-1, vocab_size), targets.view(-1))
    ```

    ## Use instead
    ```python
    import torch.nn.functional as F
    from torch.nn.utils.rnn import pad_sequence

    targets = pad_sequence(batch_targets, batch_first=True, padding_value=0)
    loss = F.cross_entropy(logits.view(-1, vocab_size), targets.view(-1), ignore_index=0)
    ```

    ## Heuristics
    Only token-level losses are checked: the scores must be reshaped to
    `(-1, classes)`, flattened over two dimensions, or transposed/permuted (a
    sentence-level classifier on padded inputs has unpadded targets, even if
    it flattens them with `labels.view(-1)`). The rule is quiet when the loss
    uses `reduction="none"` (masking is then done by hand), when an argument
    is indexed by a mask, when the module pads targets with `-100` (the
    default `ignore_index`), or when it packs sequences
    (`pack_padded_sequence`), which drops the padding. Evidence of padding
    must be a padding operation: a pad token's name (`pad_token_id`,
    `padding_idx=` of an embedding) or a special-token string (`"<|pad|>"`) is
    not, since a tokenizer that can pad says nothing about the batches (a
    sliding-window language-model dataset has no padding at all); `F.pad`
    counts only with a fill `value=` that is not a float (images and audio are
    padded with 0.0 or by reflection).
    """

    code = "TR406"
    name = "padded-sequence-loss"
    severity = Severity.MEDIUM
    severity_reason = (
        "Silently wrong training: padding tokens count in the loss. A likely defect: a mask may be "
        "applied where we cannot see it."
    )
    summary = "Cross-entropy over padded sequences without `ignore_index` or a mask"
    node_types = (ast.Call,)
    call_losses = frozenset({"cross_entropy"})  # only the calls computing that loss (ctx.flow.loss_call)

    def check(self, node: ast.Call, ctx) -> None:
        loss = ctx.flow.loss_call(node)
        if loss is None or loss[0] != "cross_entropy":
            return
        name, ctor = loss
        setup = ctor if ctor is not None else node
        position = 2 if ctor is not None else 4  # CrossEntropyLoss(weight, size_average, ignore_index)
        if ctx.arg(setup, "ignore_index", position) is not None or ctx.has_kwargs_splat(setup):
            return
        reduction = ctx.arg(setup, "reduction")
        if isinstance(reduction, ast.Constant) and reduction.value == "none" or \
                reduction is not None and not isinstance(reduction, ast.Constant):
            return
        args = [a for a in (ctx.arg(node, "input", 0), ctx.arg(node, "target", 1)) if a is not None]
        if len(args) < 2 or any(_masked(a) for a in args) or not _token_level(ctx, args[0]):
            return
        if not _pads(ctx) or _ignores_padding(ctx):
            return
        ctx.report(node, f"`{short_text(ctx, node.func)}` averages over every token position in a module "
                         f"that pads sequences, with no `ignore_index` or mask: padding counts in the loss; "
                         f"pass `ignore_index=<pad id>`"
                         + (" to the `CrossEntropyLoss(...)`" if ctor is not None else ""))


def _token_level(ctx, expr) -> bool:
    for candidate in (expr, ctx.flow.reaching_value(expr) if isinstance(expr, ast.Name) else None):
        probe = candidate
        while isinstance(probe, ast.Call) and isinstance(probe.func, ast.Attribute):
            attr = probe.func.attr
            if attr in ("transpose", "permute") or (attr == "flatten" and len(probe.args) == 2) or (
                    attr in ("view", "reshape") and len(probe.args) >= 2 and _minus_one(probe.args[0])):
                return True  # (batch * time, classes) scores, or classes moved to dim 1
            probe = probe.func.value
    return False


def _minus_one(node) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and int_value(node.operand) == 1


def _masked(expr) -> bool:
    return isinstance(expr, ast.Subscript) and not isinstance(expr.slice, (ast.Slice, ast.Tuple, ast.Constant))


def _pads(ctx) -> bool:
    """The module runs a padding operation: ``pad_sequence``/``pad_packed_sequence``,
    a call given ``padding_value=`` or a tokenizer's ``padding=True/"longest"/"max_length"``,
    ``F.pad`` of ids with a fill ``value=``, or a collate that pads a list by hand
    (``seq + [pad_id] * (n - len(seq))``, ``seq.extend([pad] * k)``). Names
    (``pad_token_id``, ``padding_idx=``) and special-token strings (``"<|pad|>"``)
    are not evidence: a tokenizer or an embedding can pad without the data being padded."""
    m = ctx.model
    if "pad_sequence" in m.calls_by_name or "pad_packed_sequence" in m.calls_by_name:
        return True
    for call in m.calls:
        for kw in call.keywords:
            if kw.arg == "padding_value" or (kw.arg == "padding" and isinstance(kw.value, ast.Constant)
                                             and kw.value.value in (True, "max_length", "longest")):
                return True
        if ctx.qualname(call.func) == "torch.nn.functional.pad" and _fills_ids(ctx, call):
            return True
    grown = [n.right for n in m.nodes_by_type.get(ast.BinOp, ()) if isinstance(n.op, ast.Add)] + \
        [n.left for n in m.nodes_by_type.get(ast.BinOp, ()) if isinstance(n.op, ast.Add)] + \
        [n.value for n in m.nodes_by_type.get(ast.AugAssign, ()) if isinstance(n.op, ast.Add)] + \
        [c.args[0] for c in m.calls_by_name.get("extend", ()) if c.args]
    return any(_filler(n) for n in grown)


def _fills_ids(ctx, call) -> bool:
    """``F.pad(ids, (0, n), value=pad_id)``: a fill value that is not a float (images
    and audio are padded with 0.0 or by reflection, token ids with an id)."""
    value = ctx.arg(call, "value", 3)
    if value is None:
        return False
    return not (isinstance(value, ast.Constant) and isinstance(value.value, float))


def _filler(node) -> bool:
    """``[pad] * (n - len(seq))``: a one-item list repeated (what a hand-written
    collate appends to each sequence)."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and any(
        isinstance(s, ast.List) and len(s.elts) == 1 and not isinstance(s.elts[0], (ast.List, ast.Tuple))
        for s in (node.left, node.right))


def _ignores_padding(ctx) -> bool:
    m = ctx.model
    if any(n in m.calls_by_name for n in ("pack_padded_sequence", "pack_sequence")):
        return True
    return any(isinstance(u.op, ast.USub) and int_value(u.operand) == 100 for u in m.nodes_by_type.get(ast.UnaryOp, ()))
