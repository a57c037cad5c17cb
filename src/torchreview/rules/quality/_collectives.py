"""Collectives over NCCL on tensors made on the host (TR403).

NCCL moves only CUDA tensors: ``dist.all_reduce(torch.tensor([...]))`` in a
process group initialised with ``backend="nccl"`` raises at the call. The file
must name the backend literally; a tensor counts as on the host when what
produced it is a torch factory without ``device=`` (or a legacy
``torch.FloatTensor([...])`` constructor) and nothing moved it since.
"""

from __future__ import annotations

import ast

_DIST = "torch.distributed."
# collective -> position of the tensor it sends (all_gather: the second argument)
_COLLECTIVES = {"all_reduce": 0, "reduce": 0, "broadcast": 0, "all_gather": 1, "all_gather_into_tensor": 1,
                "reduce_scatter_tensor": 1, "gather": 0, "scatter": 0, "all_to_all_single": 1}
_KEYWORD = {"all_gather": "tensor", "all_gather_into_tensor": "input_tensor",
            "reduce_scatter_tensor": "input", "all_to_all_single": "input"}
_LEGACY = frozenset({"torch.FloatTensor", "torch.LongTensor", "torch.DoubleTensor", "torch.IntTensor",
                     "torch.Tensor", "torch.HalfTensor", "torch.ByteTensor", "torch.BoolTensor"})


def nccl_backend(ctx) -> ast.AST | None:
    """The ``init_process_group`` call of this file that names ``"nccl"`` as its backend."""
    for call in ctx.model.calls_by_name.get("init_process_group", []):
        backend = ctx.arg(call, "backend", 0)
        if isinstance(backend, ast.Constant) and backend.value == "nccl":
            return call
    return None


def host_collectives(ctx, factories):
    """``(collective call, tensor expression, factory call)`` for collectives whose
    tensor a host factory made, in a file that initialises NCCL."""
    if nccl_backend(ctx) is None:
        return
    for name, pos in _COLLECTIVES.items():
        for call in ctx.model.calls_by_name.get(name, []):
            if not (ctx.qualname(call.func) or "").startswith(_DIST):
                continue
            if ctx.arg(call, "group") is not None:
                continue  # a gloo group of its own, perhaps
            tensor = ctx.arg(call, _KEYWORD.get(name, "tensor"), pos)
            if tensor is None:
                continue
            made = ctx.flow.origin(tensor, peel=False)
            if not isinstance(made, ast.Call):
                continue
            q = ctx.qualname(made.func) or ""
            if (q in factories or q in _LEGACY) and ctx.arg(made, "device") is None and \
                    not ctx.has_kwargs_splat(made):
                yield call, tensor, made
