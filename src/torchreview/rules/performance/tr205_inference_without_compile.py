from __future__ import annotations

import os

from torchreview.catalog import Rule
from torchreview.findings import Severity


class InferenceWithoutCompile(Rule):
    """
    ## What it does
    Flags inference/serving code -- a module that calls a model after
    `.eval()` with autograd disabled and never trains -- in a project that
    never compiles or exports a model (`torch.compile`, TorchScript,
    `torch.export`, ONNX, TensorRT). Reported once per inference module, at
    its first inference function. Only when the targeted torch is 2.0 or
    newer.

    ## Why is this bad?
    Eager execution launches every operator separately from Python. For a
    model served over and over with the same shapes, `torch.compile` fuses
    operators and removes most of that overhead, and exported graphs
    (`torch.export`, ONNX, TensorRT) unlock dedicated inference runtimes.
    Leaving production inference in eager mode gives up latency and
    throughput for free.

    ## Example
    ```python
    import torch
    import torchvision

    model = torchvision.models.resnet50(weights="DEFAULT")
    model.eval()

    @torch.inference_mode()
    def predict(batch):
        return model(batch).argmax(-1)
    ```

    ## Use instead
    ```python
    import torch
    import torchvision

    model = torchvision.models.resnet50(weights="DEFAULT")
    model.eval()
    compiled = torch.compile(model)

    @torch.inference_mode()
    def predict(batch):
        return compiled(batch).argmax(-1)
    ```

    ## Heuristics
    An inference module has no training loop and no `backward` call, puts a
    model in eval mode (`.eval()` anywhere outside `nn.Module` classes) and
    calls a model with autograd off (`no_grad`/`inference_mode` blocks or
    decorators, or functions only called under them). Validation passes of
    training scripts are never reported, nor are modules that a training
    module imports (an `evaluate.py` that `train.py` calls) and test files.
    Any compile/export/TorchScript/ONNX Runtime/TensorRT use anywhere in the
    checked tree (including `model.compile()`) silences the rule. The advice
    is for deployment paths: smoke tests (`def test(): net(torch.randn(...))`),
    the validation function of a module that trains (or one its training loop
    calls) and evaluation scripts of GPU-only distributed research code stay
    quiet.
    """

    code = "TR205"
    name = "inference-without-compile"
    severity = Severity.LOW
    severity_reason = "A possible speed-up for serving; the model works as it is (catalog: high)."
    scope = ("project",)
    summary = "inference code in a project that never compiles or exports its model"

    def check_project(self, project) -> None:
        if not project.torch_at_least(2, 0) or any(f.compiles for f in project.files):
            return
        used_by_training = {part for f in project.files if f.trains
                            for name in f.imports for part in name.split(".") if part}
        for facts in sorted(project.files, key=lambda f: f.path):
            if facts.inference_entry is None or facts.trains or facts.is_test_file or facts.gpu_only_research:
                continue  # deployment advice: not for research evaluation on GPU clusters
            if os.path.splitext(os.path.basename(facts.path))[0] in used_by_training:
                continue  # the validation pass of a training script, kept in its own module
            project.report(facts.inference_entry,
                           "this inference path runs the model eagerly and nothing in the project "
                           "compiles or exports it; wrap the model with `torch.compile(model)` (or "
                           "export it with `torch.export`/ONNX) for deployment")
