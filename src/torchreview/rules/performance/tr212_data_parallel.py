from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text

_DATA_PARALLEL = ("torch.nn.DataParallel", "torch.nn.parallel.data_parallel")


class DataParallelUsed(Rule):
    """
    ## What it does
    Flags uses of `nn.DataParallel` (wrapping a model, or subclassing it) and
    of the functional `torch.nn.parallel.data_parallel`.

    ## Why is this bad?
    `DataParallel` runs one Python process that drives every GPU from a
    single thread: each step it scatters the batch, replicates the model
    onto every device, gathers all outputs back on GPU 0 and reduces there.
    The GIL, the per-step replication and the overloaded first GPU make it
    slower than `DistributedDataParallel` even on one machine, and the
    PyTorch documentation recommends DDP instead. It also does not scale
    beyond one node.

    ## Example
    ```python
    import torch.nn as nn

    model = nn.DataParallel(nn.Linear(512, 10)).cuda()
    ```

    ## Use instead
    ```python
    import os

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("nccl")  # one process per GPU, launched by torchrun
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(nn.Linear(512, 10).cuda(), device_ids=[local_rank])
    ```
    """

    code = "TR212"
    name = "data-parallel"
    severity = Severity.MEDIUM
    severity_reason = (
        "Waste on the hot path: DataParallel replicates the model every step in one process and is "
        "slower than DDP."
    )
    summary = "`nn.DataParallel` is slower than `DistributedDataParallel`; use DDP"
    node_types = (ast.Call, ast.ClassDef)
    call_qualnames = frozenset(_DATA_PARALLEL)

    def check(self, node, ctx) -> None:
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                if ctx.qualname(base) == _DATA_PARALLEL[0]:
                    ctx.report(base, f"class `{node.name}` extends `nn.DataParallel`: single-process "
                                     "multi-GPU is slower than `DistributedDataParallel`; build on DDP")
            return
        q = ctx.qualname(node.func)
        if q == _DATA_PARALLEL[0]:
            wrapped = short_text(ctx, node.args[0] if node.args else None, "model")
            ctx.report(node, f"`nn.DataParallel({wrapped})` drives all GPUs from one process and "
                             "gathers on GPU 0; wrap the model in `DistributedDataParallel` "
                             "(one process per GPU, e.g. with torchrun)")
        elif q == _DATA_PARALLEL[1]:
            ctx.report(node, "`data_parallel(...)` replicates the module on every call from a single "
                             "process; use `DistributedDataParallel` instead")
