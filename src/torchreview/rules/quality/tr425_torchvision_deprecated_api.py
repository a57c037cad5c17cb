from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Fix, Severity
from torchreview.fixes import insert_keyword, replace_node
from torchreview.rules.quality._apis import spell

_OLD_ARGS = {"pretrained": "weights", "pretrained_backbone": "weights_backbone"}
# Builders whose "DEFAULT" weights are newer than what `pretrained=True` loaded (IMAGENET1K_V1).
_NEWER_DEFAULT = frozenset({
    "mobilenet_v2", "mobilenet_v3_large", "resnet50", "resnet101", "resnet152", "resnext50_32x4d",
    "resnext101_32x8d", "wide_resnet50_2", "wide_resnet101_2", "efficientnet_b1", "regnet_x_400mf",
    "regnet_x_800mf", "regnet_x_1_6gf", "regnet_x_3_2gf", "regnet_x_8gf", "regnet_x_16gf", "regnet_x_32gf",
    "regnet_y_400mf", "regnet_y_800mf", "regnet_y_1_6gf", "regnet_y_3_2gf", "regnet_y_8gf",
    "regnet_y_16gf", "regnet_y_32gf",
})
# deprecated/removed transform -> (message, replacement for a rename fix or None, extra keyword)
_TRANSFORMS = {
    "torchvision.transforms.v2.ToTensor": (
        "use `v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`", None, None),
    "torchvision.transforms.v2.ConvertImageDtype": (
        "use `v2.ToDtype(dtype, scale=True)`", "torchvision.transforms.v2.ToDtype", "scale=True"),
    "torchvision.transforms.v2.functional.to_tensor": (
        "use `to_image(...)` followed by `to_dtype(..., scale=True)`", None, None),
    "torchvision.transforms.v2.functional.get_image_size": (
        "use `get_size(...)`, which returns `[h, w]` instead of `[w, h]`", None, None),
    "torchvision.transforms.Scale": ("it was removed: use `transforms.Resize`", "torchvision.transforms.Resize", None),
    "torchvision.transforms.RandomSizedCrop": (
        "it was removed: use `transforms.RandomResizedCrop`", "torchvision.transforms.RandomResizedCrop", None),
}


class TorchvisionDeprecatedApi(Rule):
    """
    ## What it does
    Flags torchvision model builders called with `pretrained=`/`pretrained_backbone=`
    (also through `torchvision.models.get_model` and `torch.hub.load("pytorch/vision", ...)`)
    and deprecated or removed transforms: `v2.ToTensor`, `v2.ConvertImageDtype`,
    `v2.functional.to_tensor`/`get_image_size`, `transforms.functional_tensor`,
    `transforms.Scale`, `transforms.RandomSizedCrop`.

    ## Why is this bad?
    `pretrained=` has been deprecated since torchvision 0.13 in favour of
    `weights=`, which names the exact checkpoint (and its preprocessing via
    `weights.transforms()`); the boolean form warns and will be removed.
    `v2.ToTensor` is deprecated (its scaling rules depend on the input type)
    and `functional_tensor` was removed in torchvision 0.17, so code importing
    it no longer runs.

    ## Example
    ```python
    import torchvision

    model = torchvision.models.resnet18(pretrained=True)
    ```

    ## Use instead
    ```python
    import torchvision

    model = torchvision.models.resnet18(weights="DEFAULT")
    ```

    ## Fix safety
    `pretrained=False` -> `weights=None` is safe, and so is `pretrained=True`
    -> `weights="DEFAULT"` for builders whose default weights are the ones
    `pretrained=True` loaded. For builders that gained better weights later
    (`resnet50`, `mobilenet_v2`, `regnet_*` ...) `"DEFAULT"` picks the newer
    checkpoint (different accuracy and preprocessing), so that fix is unsafe;
    use `weights="IMAGENET1K_V1"` to keep the old ones. `pretrained_backbone=True`
    -> `weights_backbone="DEFAULT"` is unsafe for the same reason (ResNet-50
    and MobileNet-V3 backbones have newer defaults). Non-literal values get
    no fix. `ConvertImageDtype(d)` -> `ToDtype(d, scale=True)` is safe;
    `v2.ToTensor()` -> `Compose([ToImage(), ToDtype(float32, scale=True)])` is
    unsafe (equal up to float precision).

    ## Heuristics
    Copied utility code repeats the same nit many times: this rule reports one
    finding per project and severity (engine/merge.py), at the first occurrence,
    with a count and the other places as related locations (SARIF
    `relatedLocations`); `--fix` still rewrites every place.
    The targeted torch decides what a removal is (README, "Targeted torch"):
    `functional_tensor` is a crash (high, defect) from torch 2.2 (torchvision
    0.17), a deprecation for torch 2.0-2.1, and not reported for a project pinned
    below 2.0 (StableSR's `torch==1.13.1`, where it is the supported module);
    `Scale`/`RandomSizedCrop` are a crash from torch 1.11 (torchvision 0.12,
    which removed them after their deprecation in 0.2).
    """

    code = "TR425"
    name = "torchvision-deprecated-api"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = (
        "Deprecated but working. A module removed from torchvision fails at import: that finding is "
        "high and a defect."
    )
    fixable = "safe"
    summary = "torchvision `pretrained=` (use `weights=`) and deprecated transforms"
    summarize = "project"
    node_types = (ast.Call,)
    # the transforms, the model builders (``_is_builder``) and hub loads of torchvision
    call_qualnames = frozenset({*_TRANSFORMS, "torch.hub.load"})
    call_prefixes = ("torchvision.transforms.functional_tensor.", "torchvision.models.")

    def check(self, node: ast.Call, ctx) -> None:
        q = ctx.qualname(node.func) or ""
        if q in _TRANSFORMS or q.startswith("torchvision.transforms.functional_tensor."):
            self._transform(node, q, ctx)
        elif _is_builder(node, q, ctx) and not ctx.model.in_compat_branch(node):
            builder = q.rsplit(".", 1)[-1]
            if q == "torch.hub.load":
                second = node.args[1] if len(node.args) > 1 else None
                builder = second.value if isinstance(second, ast.Constant) else ""
            for kw in node.keywords:
                if kw.arg in _OLD_ARGS:
                    self._pretrained(node, kw, kw.value, builder, ctx)
            if q.startswith("torchvision.models.") and builder != "get_model" and node.args and \
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, bool):
                self._pretrained(node, node.args[0], node.args[0], builder, ctx, positional=True)

    def _pretrained(self, call, where, value, builder, ctx, positional=False) -> None:
        old = "pretrained" if positional else where.arg
        new = _OLD_ARGS[old]
        fix = None
        if isinstance(value, ast.Constant) and isinstance(value.value, bool) and \
                (not positional or len(call.args) == 1):
            text = f'{new}="DEFAULT"' if value.value else f"{new}=None"
            unsafe = value.value and (old == "pretrained_backbone" or builder in _NEWER_DEFAULT)
            fix = Fix("unsafe" if unsafe else "safe", (replace_node(ctx, where, text),), f"use `{text}`")
        shown = f"`{old}={ctx.text(value)}`" if not positional else f"positional `pretrained` (`{ctx.text(value)}`)"
        ctx.report(where, f"{shown} is deprecated since torchvision 0.13: pass `{new}=` "
                          f"(`\"DEFAULT\"`, a weights enum, or `None`)", fix=fix)

    def _transform(self, call: ast.Call, q: str, ctx) -> None:
        if q.startswith("torchvision.transforms.functional_tensor."):
            # deprecated in torchvision 0.15 (torch 2.0), removed in 0.17 (torch 2.2): a project
            # pinned to an older torch (StableSR's torch==1.13.1 / torchvision==0.14.1) has it
            if not ctx.torch_at_least(2, 0):
                return
            if ctx.torch_at_least(2, 2):
                ctx.report(call, f"`{q}`: `torchvision.transforms.functional_tensor` was removed in torchvision "
                                 "0.17; use `torchvision.transforms.functional`", severity=Severity.HIGH,
                           kind="defect")
            else:
                ctx.report(call, f"`{q}` is deprecated: `torchvision.transforms.functional_tensor` warns from "
                                 "torchvision 0.15 and was removed in 0.17; use `torchvision.transforms.functional`")
            return
        message, replacement, extra = _TRANSFORMS[q]
        fix = None
        if replacement and spell(ctx, replacement):
            edits = [replace_node(ctx, call.func, spell(ctx, replacement))]
            if extra:
                added = insert_keyword(call, ctx, extra, "", "safe")
                edits += list(added.edits) if added else []
            fix = Fix("safe", tuple(edits), f"use `{replacement}`")
        elif q.endswith("v2.ToTensor") and not call.args and not call.keywords:
            v2, torch = spell(ctx, "torchvision.transforms.v2.ToImage"), ctx.model.module_alias("torch")
            if v2 and torch:
                v2 = v2.rsplit(".", 1)[0]
                text = f"{v2}.Compose([{v2}.ToImage(), {v2}.ToDtype({torch}.float32, scale=True)])"
                fix = Fix("unsafe", (replace_node(ctx, call, text),), "use `ToImage` + `ToDtype`")
        # calling it raises -- from torchvision 0.12 (torch 1.11) on, pytorch/vision#5386; code
        # written for an older torch (a pin, or torch-0.3 idioms) still has it: a deprecation there
        gone = message.startswith("it was removed")
        removed = gone and ctx.torch_at_least(1, 11)
        if gone:  # one statement of the API's state: removed on the targeted torch, else deprecated
            use = message.split(": ", 1)[1]
            text = (f"`{q}` was removed in torchvision 0.12 (torch 1.11): calling it raises; {use}" if removed
                    else f"`{q}` is deprecated (removed in torchvision 0.12, torch 1.11): {use}")
        else:
            text = f"`{q}` is deprecated: {message}"
        ctx.report(call, text, fix=fix,
                   severity=Severity.HIGH if removed else None, kind="defect" if removed else None)


def _is_builder(call: ast.Call, q: str, ctx) -> bool:
    if q.startswith("torchvision.models.") and q.rsplit(".", 1)[-1][:1].islower():
        return True
    first = call.args[0] if call.args else None
    return q == "torch.hub.load" and isinstance(first, ast.Constant) and \
        str(first.value).startswith("pytorch/vision")
