from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity



class NoMixedPrecision(Rule):
    """
    ## What it does
    Flags a project that trains on CUDA but never uses mixed precision:
    no `torch.autocast`/`torch.amp`, no `GradScaler`, no `.half()`/
    `.bfloat16()`, no half-precision `dtype=`, no `precision=`/`fp16`/`bf16`
    option. Reported once per training module, at its first training loop.

    ## Why is this bad?
    Tensor cores run float16/bfloat16 matrix multiplications several times
    faster than float32, and half-width activations halve the memory they
    take, which also allows larger batches. Training purely in float32 on a
    modern GPU leaves most of that throughput unused.

    ## Example
    ```python
    import torch

    device = torch.device("cuda")
    model = model.to(device)
    for x, y in loader:
        loss = criterion(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    import torch

    device = torch.device("cuda")
    model = model.to(device)
    for x, y in loader:
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = criterion(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    ```

    ## Heuristics
    "Trains on CUDA" needs a training loop in a module that shows CUDA use
    (`.cuda()`, a `"cuda"` device, `torch.cuda.is_available()`), or that
    moves work with `.to(device)` in a project where CUDA appears. Any
    mixed-precision sign anywhere in the checked tree (including a
    `--amp`/`--fp16` command-line switch) silences the rule; so do trainer
    frameworks, whose precision is often set from a launcher or config
    file, CPU-only projects and test files. GPU-only distributed research code (a module that sets up a process group or
    follows the `LOCAL_RANK` launcher convention and places tensors with bare
    `.cuda()`) is written for GPU clusters on purpose: the
    paper's precision is part of what it reproduces, so it is not reported there.
    """

    code = "TR206"
    name = "no-mixed-precision"
    severity = Severity.MEDIUM
    severity_reason = (
        "Waste on the hot path: fp32 math on tensor-core GPUs is often twice as slow and uses more "
        "memory."
    )
    scope = ("project",)
    summary = "CUDA training with no mixed precision anywhere in the project"
    root_cause = "training-setup"

    def check_project(self, project) -> None:
        if any(f.mixed_precision or f.trainer_framework or f.managed_training for f in project.files):
            return
        cuda_project = any(f.cuda_explicit for f in project.files)
        on_cuda = [f for f in project.files
                   if f.trains and not f.is_test_file and f.hardcoded_cpu_device is None
                   and not f.gpu_only_research and (f.cuda_explicit or (cuda_project and f.uses_cuda))]
        if not on_cuda:
            return
        for facts in sorted(on_cuda, key=lambda f: f.path):
            project.report(facts.training_loop,
                           "this loop trains on CUDA in full float32 and the project never enables "
                           "mixed precision; run forward and loss under "
                           '`torch.autocast("cuda", dtype=torch.bfloat16)` (or float16 with '
                           "`torch.amp.GradScaler`)")
