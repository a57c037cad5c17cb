from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity

_OOM_TYPES = frozenset({"torch.cuda.OutOfMemoryError", "torch.OutOfMemoryError"})
_BROAD_TYPES = frozenset({"builtins.RuntimeError", "builtins.Exception", "builtins.BaseException"})
_FRAMEWORKS = ("lightning", "accelerate", "deepspeed", "transformers", "ignite", "composer",
               "mmengine", "mmcv", "detectron2", "fastai", "catalyst", "pytorch_lightning")


class UnhandledCudaOom(Rule):
    """
    ## What it does
    Flags a training entry point (a script or notebook that runs a training
    loop) in which nothing catches `torch.cuda.OutOfMemoryError` or a
    `RuntimeError` whose message says "out of memory". Reported once per file,
    at the first training loop.

    ## Why is this bad?
    An out-of-memory error in the middle of a run kills the process with a
    long CUDA traceback, and whatever the run learned since the last checkpoint
    is gone. Catching it lets the script save a checkpoint, log the batch
    shape that failed, free the cache and retry with a smaller batch, or at
    least exit with a message that says what to change.

    ## Example
    ```python
    import torch

    if __name__ == "__main__":
        model.cuda()
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x.cuda()), y.cuda()).backward()
            optimizer.step()
    ```

    ## Use instead
    ```python
    import torch

    if __name__ == "__main__":
        model.cuda()
        try:
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x.cuda()), y.cuda()).backward()
                optimizer.step()
        except torch.cuda.OutOfMemoryError:
            torch.save(model.state_dict(), "last.pt")
            raise SystemExit("CUDA out of memory: lower --batch-size")
    ```

    ## Heuristics
    An entry point is a file with a training loop that is a notebook, has an
    `if __name__ == "__main__":` block, or runs the loop at module level;
    library modules whose loop is driven from elsewhere are left alone, and so
    are scripts that show no sign of running on CUDA (no `.cuda()`,
    `.to("cuda")`, `torch.cuda.is_available()`, ...). Files
    that import a training framework (Lightning, Accelerate, DeepSpeed,
    transformers, Ignite, ...) are skipped, as are test files. Any handler of
    an OOM type, or a broad handler that mentions "out of memory"/OOM, counts.
    GPU-only distributed research code (a module that sets up a process group or
    follows the `LOCAL_RANK` launcher convention and places tensors with bare
    `.cuda()`) is written for GPU clusters on purpose: its jobs are
    sized for the cluster and a crash is the expected report, so it is not
    reported there.
    """

    code = "TR506"
    name = "unhandled-cuda-oom"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = "Robustness: an out-of-memory error ends the run with a clear message."
    summary = "Training entry point with no handling of CUDA out-of-memory errors"
    root_cause = "training-setup"

    def check_file(self, ctx) -> None:
        loops = ctx.training_loops
        if not loops or ctx.is_test_file or any(ctx.model.imports_module(f) for f in _FRAMEWORKS) or \
                ctx.advice.gpu_only_research:
            return
        if ctx.model.cuda_evidence is None:
            return  # a CPU-only script cannot run out of CUDA memory
        if not (ctx.source.is_notebook or _has_main_guard(ctx.tree)
                or any(ctx.enclosing_function(tl.node) is None for tl in loops)):
            return
        for handler in ctx.model.nodes_by_type.get(ast.ExceptHandler, ()):  # (any: the order does not matter)
            if _handles_oom(handler, ctx):
                return
        first = loops[0]
        ctx.report(first.node, "this training script never handles CUDA out-of-memory errors: catch "
                               "`torch.cuda.OutOfMemoryError` around the training loop to save a "
                               "checkpoint and report (or retry with) a smaller batch")


def _has_main_guard(tree: ast.Module) -> bool:
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare):
            names = [n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)]
            consts = [n.value for n in ast.walk(stmt.test) if isinstance(n, ast.Constant)]
            if "__name__" in names and "__main__" in consts:
                return True
    return False


def _handles_oom(handler: ast.ExceptHandler, ctx) -> bool:
    if handler.type is None:
        types = []
    elif isinstance(handler.type, ast.Tuple):
        types = handler.type.elts
    else:
        types = [handler.type]
    names = {ctx.qualname(t) or ctx.text(t) for t in types}
    if names & _OOM_TYPES or any("OutOfMemory" in n for n in names):
        return True
    if handler.type is not None and not names & _BROAD_TYPES:
        return False
    for sub in ast.walk(handler):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and \
                ("out of memory" in sub.value.lower() or "oom" in sub.value.lower().split()):
            return True
    return False
