from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity



class TrainingOnCpu(Rule):
    """
    ## What it does
    Flags training loops in a project that never places work on an
    accelerator -- no `.cuda()`, no `.to(device)`/`device=` with a CUDA, MPS
    or XPU device, no `torch.cuda.is_available()`-style check -- and
    training modules that hard-code their device to `"cpu"`.

    ## Why is this bad?
    Without a device choice every tensor stays on the CPU, so training runs
    10-100x slower than it would on a GPU that may well be sitting idle on
    the same machine. A hard-coded `device = "cpu"` has the same effect even
    where CUDA is available.

    ## Example
    ```python
    import torch
    from torch import nn

    model = nn.Linear(128, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(128, 10).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    ```

    ## Heuristics
    Any device handling anywhere in the checked tree (`.to(device)`,
    `device=...`, `.cuda()`, an availability check, DDP) counts as
    selecting an accelerator. Projects that use a trainer framework
    (Lightning, Accelerate, DeepSpeed, Hugging Face `Trainer`) are skipped:
    the framework places devices. A hard-coded CPU device is a name such as
    `device` bound once, outside any `if`/`try`, to `"cpu"` or
    `torch.device("cpu")` in a module that trains and shows no CUDA use.
    Training loops in test files are ignored, and so are reinforcement
    learning modules that step a Gym/Gymnasium environment in a project
    without convolution layers: the environment runs on the CPU one step at
    a time and a small policy network gains nothing from a GPU (the usual
    advice for MLP policies).
    """

    code = "TR201"
    name = "training-on-cpu"
    severity = Severity.MEDIUM
    severity_reason = (
        "Waste on the hot path: training on CPU next to an accelerator is many times slower, but the "
        "results are right; performance advice is never above medium (catalog: critical)."
    )
    scope = ("project",)
    summary = "training runs on the CPU: no accelerator is ever selected"

    def check_project(self, project) -> None:
        if any(f.trainer_framework or f.managed_training for f in project.files):
            return
        training = sorted((f for f in project.files if f.trains and not f.is_test_file), key=lambda f: f.path)
        if not training:
            return
        for facts in training:
            if facts.hardcoded_cpu_device is not None and not facts.cuda_explicit:
                project.report(facts.hardcoded_cpu_device,
                               "the device of this training module is hard-coded to the CPU: training "
                               "never uses a GPU even when one is present; pick the device with "
                               '`torch.device("cuda" if torch.cuda.is_available() else "cpu")` '
                               "or from configuration")
        if any(f.uses_cuda or f.checks_accelerator or f.cuda_explicit for f in project.files):
            return
        convolutional = any(f.builds_conv_layers for f in project.files)
        for facts in training:
            if facts.steps_environment and not convolutional:
                continue  # a policy MLP fed by a CPU environment: a GPU would not help
            project.report(facts.training_loop,
                           "this training loop runs on the CPU: nothing in the project moves the model "
                           "or batches to an accelerator; select a device "
                           '(`torch.device("cuda" if torch.cuda.is_available() else "cpu")`) and '
                           "`.to(device)` the model and each batch")
