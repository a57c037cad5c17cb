from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules._helpers import TORCH_LOAD

# they download the file and pass map_location on to torch.load
_URL_LOADERS = frozenset({"torch.hub.load_state_dict_from_url", "torch.utils.model_zoo.load_url",
                          "torch.hub.load_url"})


class TorchLoadWithoutMapLocation(Rule):
    """
    ## What it does
    Flags `torch.load` calls without `map_location`, and the URL loaders
    `torch.hub.load_state_dict_from_url` / `torch.utils.model_zoo.load_url`
    (which call `torch.load` on the download) without it.

    ## Why is this bad?
    A checkpoint remembers the device of every tensor it holds. Without
    `map_location`, tensors saved from a GPU are restored onto that same GPU:
    on a CPU-only machine the load fails (`Attempting to deserialize object
    on a CUDA device`), and on a multi-GPU host every process piles its copy
    onto `cuda:0`. Naming the target device makes the load portable.

    ## Example
    ```python
    import torch

    state = torch.load("checkpoint.pt", weights_only=True)
    ```

    ## Use instead
    ```python
    import torch

    state = torch.load("checkpoint.pt", map_location="cpu", weights_only=True)
    ```

    ## Heuristics
    `map_location` given by keyword or by position (second argument of
    `torch.load`, third of the URL loaders) or possibly through `**kwargs`
    counts; a starred positional argument is not judged.

    ## Fix safety
    Adding `map_location="cpu"` is unsafe: code that relied on the tensors
    coming back on the GPU they were saved from now gets CPU tensors (usually
    harmless before `load_state_dict`, which copies into the model's device,
    but not for tensors used directly).
    """

    code = "TR409"
    name = "torch-load-without-map-location"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = (
        "Portability: a GPU-saved checkpoint fails to load on a CPU-only machine, with a clear error."
    )
    needs_torch = False
    fixable = "unsafe"
    summary = "`torch.load` without `map_location` fails on machines without the saving device"
    root_cause = "torch-load"
    node_types = (ast.Call,)
    call_qualnames = frozenset({TORCH_LOAD, *_URL_LOADERS})

    def check(self, node: ast.Call, ctx) -> None:
        q = ctx.qualname(node.func)
        if q != TORCH_LOAD and q not in _URL_LOADERS:
            return
        if ctx.arg(node, "map_location", 1 if q == TORCH_LOAD else 2) is not None or ctx.has_kwargs_splat(node):
            return
        if any(isinstance(a, ast.Starred) for a in node.args):
            return
        from torchreview.fixes import insert_keyword

        source = ctx.text(node.args[0]) if node.args else "the file"
        if len(source) > 40:
            source = source[:37] + "..."
        call = "torch.load" if q == TORCH_LOAD else q.rsplit(".", 1)[-1]
        ctx.report(node, f"`{call}({source})` without `map_location`: tensors saved on a GPU come "
                         f"back on that GPU and the load fails on a CPU-only machine; pass "
                         f"`map_location=\"cpu\"` (or the target device)",
                   fix=insert_keyword(node, ctx, 'map_location="cpu"', 'add `map_location="cpu"`', "unsafe"))
