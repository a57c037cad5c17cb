from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import ancestors
from torchreview.findings import Fix, Severity
from torchreview.rules._helpers import short_text


class NumpyWithoutDetach(Rule):
    """
    ## What it does
    Flags `.numpy()` on a tensor that may still be attached to the autograd
    graph (it comes from a model or loss call, a parameter, or a
    `requires_grad=True` tensor, with no `.detach()` on the way), and
    `.numpy()` on a tensor that may live on CUDA with no `.cpu()` first.

    ## Why is this bad?
    `.numpy()` shares memory with the tensor, so it refuses both cases at run
    time: `Can't call numpy() on Tensor that requires grad` and `can't convert
    cuda:0 device type tensor to numpy`. The crash usually hides in logging or
    metric code that only runs at the end of an epoch, or only on the GPU box.

    ## Example
    ```python
    import torch
    from torch import nn

    model = nn.Linear(4, 2)
    scores = model(torch.randn(8, 4))
    table = scores.numpy()
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    model = nn.Linear(4, 2)
    scores = model(torch.randn(8, 4))
    table = scores.detach().cpu().numpy()
    ```

    ## Fix safety
    Inserting `.detach()` and/or `.cpu()` before `.numpy()` is safe: it is what
    the call needs to succeed, and the numpy array no longer shares memory with
    a tensor autograd tracks (which `.numpy()` refused anyway).

    ## Heuristics
    In a method that only a base class defined in another file calls (a
    `forward` its base's `@torch.no_grad() __call__` drives), whether grad is
    enabled is out of sight: a missing `.detach()` there is medium confidence,
    as it is when the graph comes from a callee that is a model only by its
    name (an untyped parameter `model`, which may be an inference engine).
    The tensor's origin must be visible in the same scope -- or, for a
    function parameter, in what every same-module call site passes for it
    (`as_array(outputs["boxes"])`, one level): a model/loss call
    made with grad enabled, a parameter, or `.cuda()`/`.to(device)` on the way
    (a `device` that is not literally `"cpu"`), or a model the module moves to
    such a device. `nn.Module.to()`/`.cpu()`/`.cuda()` move a module in place:
    the last such placement made earlier in the same function on every path to
    the call decides (a plotting helper that starts with `model.to("cpu")` is
    on the CPU; a `model.cuda()` in a branch after it keeps the finding).
    A name rebound since its last plain assignment by unpacking or a loop
    target (`x, y = fake_data()` in a notebook that used `y` for a graph
    earlier) holds an unknown value there: not reported. A global read inside
    a function sees every assignment of it, except module-level ones that a
    plain top-level assignment replaced before the function was defined (a
    notebook cell `y_pred = list()` after an earlier cell's
    `y_pred = model(X)`: a helper defined later reads the list).
    A `.numpy()` in the branch of an `if` whose other branch is the same code
    with `.cuda()`/`.cpu()` added (`if self.use_gpu: ...cpu().numpy() else:
    ....numpy()`, mjrl) is on the CPU path. `.sample()` of what a model
    returned (a `torch.distributions` object: it draws under no_grad) carries
    no graph; `.rsample()` does. Under `torch.no_grad()`/`inference_mode()` only the device
    half is checked; `.numpy(force=True)` is never reported.
    A module call carries a graph only when the module has trainable parameters or
    its input requires grad: a module whose weights are all `nn.Parameter`s built
    with `requires_grad` False for that call (`requires_grad=(not fix)`, `fix=True`
    kept: PHASEN's STFT kernels) is frozen; a module known to hold none (a parameter-free
    torch.nn layer, or a project class of this or another project file
    without `nn.Parameter`s or parameterised submodules, its constructor
    arguments judged at the call site) on constant inputs (`linspace`,
    `arange`, `zeros` without `requires_grad=True`) is silent
    (engine/module_params.py). The output of a method of an object (a metric,
    a helper) whose tensor arguments are proven CPU tensors -- `.numpy()`,
    which raises on CUDA, is called on them in the same scope with no
    rebinding in between -- is on the CPU, whatever `device=` the object took.
    In a notebook cell that the stored notebook shows ran to the end without
    an error (executed, no `error` output, outputs kept), the finding is low
    confidence (`claims_raise`): the author's own run refutes the crash there.
    A conversion in the body of a `try` whose handler catches every error and
    does nothing (`except: pass`) cannot raise visibly: medium confidence.
    A line inside a `try` whose handler names the error (`except RuntimeError
    as e: print(e)`, a lesson provoking it) is not reported (engine/runner.py);
    a broad `except Exception` is no such evidence.
    A function whose every call -- in this file and in the project's other
    files, at least one of them elsewhere -- runs under `torch.no_grad()`
    (`with torch.no_grad(): validate_softmax(...)` in test.py and train_fold.py)
    produces no graph there: not reported.
    Several findings needing the same insertion in one function or notebook
    cell (twelve lines reading `output[i][j]...numpy()`; `y_pred.numpy()` and
    then `loss.numpy()` computed from it) are one finding, the other lines kept
    as related locations.
    Confidence: a tensor said to live on CUDA is high only when a literal
    accelerator puts it there (`.cuda()`, `.to("cuda")`, `device="cuda:0"`, a
    model moved so); a device held in a variable (`.to(device)`, `args.device`,
    a parameter) is medium, hidden by default: real code often sets it to the
    CPU for that path, and every such finding of the sweeps (17) was judged
    false or noise.
    Confidence: a tensor said to require grad because a model produced it is high only
    where the model's construction is visible and has trainable weights (a `torch.nn`
    layer with weights, a container of them, a module class of this file that builds
    one); a model handed in, a library model or a class of unknown content makes it
    medium (the model may hold buffers only, or be frozen elsewhere). The same
    evidence is asked of model calls inside torch calls
    (`torch.view_as_complex(wf(x).squeeze(1))`: DeepFilterNet's parameter-free
    Wiener filter, judged false).
    """

    code = "TR502"
    name = "numpy-without-detach"
    severity = Severity.HIGH
    claims_raise = True
    summarize = "scope"
    severity_reason = "Crash: `.numpy()` raises on a tensor that requires grad or lives on CUDA."
    fixable = "safe"
    summary = "`.numpy()` on a tensor that may require grad or live on CUDA"
    node_types = (ast.Call,)
    call_attrs = frozenset({"numpy"})

    def check(self, node: ast.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "numpy") or node.args or \
                any(kw.arg == "force" for kw in node.keywords):
            return
        receiver = func.value
        detached, on_cpu = _chain_state(receiver)
        needs_detach = not detached and not ctx.in_grad_disabled(node) and \
            ctx.autograd.may_require_grad(receiver) and not ctx.autograd.grad_guarded(node, _chain_root(receiver))
        if needs_detach:
            # every call of the function, in this file and the project's others, runs under
            # `torch.no_grad()` (BraTS-DMFNet's `validate_softmax` from test.py and train_fold.py)
            owner = ctx.enclosing_function(node)
            needs_detach = owner is None or not ctx.call_paths.callers_disable_grad(owner)
        needs_cpu = not on_cpu and ctx.autograd.may_be_on_accelerator(receiver) and \
            not ctx.autograd.cpu_guarded(node)
        if not (needs_detach or needs_cpu):
            return
        name = short_text(ctx, receiver)
        if needs_detach and needs_cpu:
            problem = "may require grad and may live on CUDA"
        elif needs_detach:
            problem = "may still require grad (it comes from a model, loss or parameter)"
        else:
            problem = "may live on CUDA"
        insert = (".detach()" if needs_detach else "") + (".cpu()" if needs_cpu else "")
        # a method a base class of another file drives (`forward` called by the base's
        # `@torch.no_grad() __call__`): whether grad is on there is out of sight
        func = ctx.enclosing_function(node)
        unseen = needs_detach and not needs_cpu and func is not None and ctx.flow.run_by_base_class(func)
        # the graph comes from a callee that is a model only by its name (an untyped
        # parameter `model` -- a TensorRT engine in efficientvit): a guess, medium
        start = origin = ctx.flow.origin(receiver)
        while isinstance(origin, (ast.Call, ast.Attribute, ast.Subscript)) and not (
                isinstance(origin, ast.Call) and isinstance(origin.func, (ast.Name, ast.Attribute))
                and ctx.kind_of(origin.func) == "model"):
            origin = origin.func if isinstance(origin, ast.Call) else origin.value
        if needs_detach and isinstance(origin, ast.Call) and ctx.known_by_name_only(origin.func):
            unseen = True
        # the graph claim rests on the model holding trainable weights: without a visible
        # construction that has them (a parameter, a library model, a class of unknown
        # content, buffers only) it is a guess -- judged false on 10 of 10 such findings
        # of the 2026-11-29 sweeps -- medium
        if needs_detach and not needs_cpu and not (isinstance(origin, ast.Call) and
                                                   ctx.kind_of(origin.func) == "model"):
            # the model call sits inside torch calls (`torch.view_as_complex(wf(...).squeeze(1))`):
            # the same evidence is asked of the model calls the value is computed from
            inner = [c for c in ast.walk(start) if isinstance(c, ast.Call) and
                     isinstance(c.func, (ast.Name, ast.Attribute)) and ctx.kind_of(c.func) == "model"] \
                if start is not None else []
            if inner and not any(ctx.autograd.holds_parameters(c.func) for c in inner):
                unseen = True
        if needs_detach and not needs_cpu and isinstance(origin, ast.Call) and \
                ctx.kind_of(origin.func) == "model" and not ctx.autograd.holds_parameters(
                    origin.func.value if isinstance(origin.func, ast.Attribute) and origin.func.attr == "forward"
                    else origin.func):
            unseen = True
        # the CUDA claim rests on a device held in a variable (`device`, `args.device`, a
        # parameter), which real code often sets to the CPU for this path (a plotting helper,
        # an evaluation run on the CPU, callers that pass `torch.device("cpu")`): judged false
        # or noise on all 17 such findings of the sweeps -- medium, unless the tensor reaches
        # the call through a literal accelerator (`.cuda()`, `"cuda"`)
        if needs_cpu and not needs_detach and not ctx.autograd.may_be_on_accelerator(receiver, strict=True):
            unseen = True
        # inside a `try` whose handler swallows every error (`except: pass`, `except Exception:
        # pass`): the conversion cannot raise visibly, the block is skipped instead (ngp-pl) -- medium
        if _swallowed(node):
            unseen = True
        # one function or cell that converts graph tensors for plotting or logging (`y_pred`,
        # then `loss` derived from it): one missing `.detach()` habit, one finding -- folded
        # per kind of fix, the other lines kept as related locations
        ctx.report(node, f"`{name}.numpy()`: the tensor {problem}, so `.numpy()` raises; "
                         f"call `{insert}` first", fix=_fix(receiver, insert, ctx),
                   confidence="medium" if unseen else None, subject=f"numpy:{insert}")


def _swallowed(node: ast.AST) -> bool:
    """``node`` runs in the body of a ``try`` with a handler that catches every error
    (bare ``except``, ``Exception``, ``BaseException``) and does nothing (``pass``, ``...``,
    ``continue``)."""
    child = node
    for anc in ancestors(node):
        if isinstance(anc, ast.Try) and any(child is s for s in anc.body):
            for handler in anc.handlers:
                broad = handler.type is None or (isinstance(handler.type, ast.Name) and
                                                 handler.type.id in ("Exception", "BaseException"))
                quiet = all(isinstance(s, (ast.Pass, ast.Continue)) or
                            (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in handler.body)
                if broad and quiet:
                    return True
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        child = anc
    return False


def _chain_root(expr: ast.AST) -> ast.AST:
    """The expression a chain of method calls starts from (``x`` of ``x.cpu()``)."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        expr = expr.func.value
    return expr


def _root_value(expr: ast.AST) -> str:
    """The value a chain of calls, attributes and subscripts starts from
    (``output`` for ``output[1][0].sigmoid()``): the root the finding is about."""
    while isinstance(expr, (ast.Call, ast.Attribute, ast.Subscript)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return ast.unparse(expr) if isinstance(expr, ast.Name) else ""


def _chain_state(expr: ast.AST) -> tuple[bool, bool]:
    """Whether the method chain ending at ``expr`` already detaches / moves to the CPU."""
    detached = on_cpu = False
    while True:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            attr = expr.func.attr
            if attr in ("detach", "detach_"):
                detached = True
            elif attr == "cpu" or (attr == "to" and expr.args and isinstance(expr.args[0], ast.Constant)
                                   and expr.args[0].value == "cpu"):
                on_cpu = True
            expr = expr.func.value
        elif isinstance(expr, ast.Attribute) and expr.attr == "data":
            detached = True
            expr = expr.value
        else:
            return detached, on_cpu


def _fix(receiver: ast.AST, insert: str, ctx) -> Fix | None:
    from torchreview.fixes import insert_at

    if receiver.end_lineno is None or receiver.end_col_offset is None:
        return None
    edit = insert_at(ctx, receiver.end_lineno, receiver.end_col_offset, insert)
    return Fix("safe", (edit,), f"insert `{insert}` before `.numpy()`")
