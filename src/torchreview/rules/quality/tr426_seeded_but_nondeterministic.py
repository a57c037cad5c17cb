from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import FunctionNode, dotted, parameter_default
from torchreview.findings import Severity
from torchreview.rules._helpers import int_value, is_true, off_at_defaults, off_by_default

SEEDS = frozenset({
    "torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
    "lightning.pytorch.seed_everything", "lightning.seed_everything", "lightning.fabric.seed_everything",
    "transformers.set_seed", "accelerate.utils.set_seed",
})
DETERMINISM_CALLS = frozenset({"torch.use_deterministic_algorithms", "transformers.enable_full_determinism"})
# Layers that run on cuDNN (its non-deterministic kernels only matter when they are used).
CUDNN_LAYERS = ("torch.nn.Conv", "torch.nn.ConvTranspose", "torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN",
                "torch.nn.BatchNorm", "torch.nn.functional.conv", "torchvision.models.", "timm.create_model")
RNG_FACTORIES = frozenset({
    "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator", "random.Random",
    "torch.Generator",
})


class SeededButNondeterministic(Rule):
    """
    ## What it does
    In a file that seeds torch (`torch.manual_seed`, `seed_everything`,
    `set_seed`), flags what still makes runs differ: `cudnn.benchmark = True`,
    CUDA code with no `cudnn.deterministic = True` /
    `torch.use_deterministic_algorithms(True)`, and a shuffling `DataLoader`
    with worker processes and neither `generator=` nor `worker_init_fn=`. In
    any file, flags a
    random generator object created in a `Dataset`'s `__init__` and used in
    `__getitem__` with worker processes and no per-worker seeding (medium).

    ## Why is this bad?
    Seeding says "this run should be repeatable", but cuDNN picks kernels by
    timing when `benchmark` is on and uses non-deterministic atomics unless
    told otherwise, so results still drift. A loader without its own
    generator draws its order and its workers' seeds from the global RNG, so
    a change in model construction silently changes the data order too. A NumPy/`random.Random`/`torch.Generator` object is
    copied into every worker with the same state, so all workers produce the
    same "random" augmentations.

    ## Example
    ```python
    import torch

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    model = torch.nn.Linear(4, 2).cuda()
    ```

    ## Use instead
    ```python
    import torch

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    model = torch.nn.Linear(4, 2).cuda()
    ```

    ## Heuristics
    When the file's loaders run exactly one worker (`num_workers=1`, not persistent), an RNG
    built in `__init__` is not shared between workers: that one worker starts afresh from the
    same copy every epoch and replays the same draws, which the finding says instead, at
    medium confidence (MinkowskiEngine's demo, judged noise in blind test 36 for the
    several-workers claim).
    The cuDNN check needs a sign of CUDA use and a cuDNN-backed layer
    (convolution, RNN, batch norm, a torchvision/timm model) in the file;
    seeding inside a worker-init function does not count; Lightning's
    `Trainer(deterministic=...)` and `seed_everything(workers=True)` count as
    handling it. A loader helper of another project module (`make_loader(...)`
    from `data.py`, the project index) that builds a shuffling worker loader
    without `generator`/`worker_init_fn` -- `shuffle=True` or a `shuffle`
    parameter defaulting to True, `num_workers` not 0 -- is reported at its
    call in the seeded file, unless the call passes `shuffle=False`/`workers=0`
    or the file seeds workers itself. `num_workers` counts as 0 also when it is
    a setting that holds 0 at the script's defaults (a module-level
    `config.num_workers = 0` read inside `main(config)`). A dataset whose file builds no loader
    at all (its loaders live in other files, whose `num_workers` this rule
    does not see) is reported at medium confidence. Global `np.random` calls in `__getitem__` are only reported
    when the targeted torch is older than 1.9 (later versions seed NumPy per
    worker; Python's `random` and torch always were): the target is
    `target-torch`, else the torch pin of requirements/pyproject (a floor such
    as `torch>=0.4` reads as 0.4), raised to 1.12 when the file calls
    `torch.backends.mps` unguarded (any API newer than the pin: the file runs
    on that torch, whatever the pin says); with no target (newest) that part is
    silent; so is a `__getitem__` that re-seeds NumPy itself from a value of
    its own (`np.random.seed(index)`) before drawing. Randomness under a test that the
    dataset constructor's default turns off (`if self.center_shift != 0:` with
    `center_shift=0`) is silent when every construction of the class in the
    file leaves that default and no other file names the class, and so is randomness under a
    test a command-line option or a shipped configuration leaves off at the defaults (`if
    self.args.shuffle_boxes:` with a `store_true` option: VL-T5's opt-in box shuffling); a dataset
    whose file's loaders take `num_workers` from a parameter defaulting to 0
    (workers only when a caller asks) is reported at medium confidence. Files whose loaders all
    run without workers, and test files, are skipped.
    """

    code = "TR426"
    name = "seeded-but-nondeterministic"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = (
        "Reproducibility hygiene: runs differ slightly. Duplicated NumPy/`random` state across loader "
        "workers (repeated augmentations) is medium."
    )
    summary = "Seeds set but cuDNN/DataLoader/Dataset randomness left non-deterministic"

    def check_file(self, ctx) -> None:
        if ctx.is_test_file:
            return  # tests seed for stable assertions, not for reproducible training
        calls = ctx.model.calls
        called = ctx.model.called_qualnames  # (a pass below only where it can find something)
        seeds = [c for c in calls if ctx.qualname(c.func) in SEEDS and "worker" not in
                 getattr(ctx.enclosing_function(c), "name", "")] if not called.isdisjoint(SEEDS) else []
        # (not the re-seeding inside a worker)
        loaders = [c for c in calls if ctx.qualname(c.func) == "torch.utils.data.DataLoader"] \
            if "torch.utils.data.DataLoader" in called else []
        worker: list[bool] = []  # seeds each worker: asked only where it matters (a pass over every call)

        def per_worker() -> bool:
            if not worker:
                worker.append(any(kw.arg == "worker_init_fn" for c in calls for kw in c.keywords) or
                              "get_worker_info" in ctx.model.attribute_names or any(
                                  ctx.qualname(c.func) == "torch.utils.data.get_worker_info" for c in calls))
            return worker[0]
        if seeds:
            self._cudnn(ctx, seeds, calls)
            workers_seeded = any(kw.arg == "workers" and is_true(kw.value) for c in seeds for kw in c.keywords)
            for loader in loaders:
                shuffle = ctx.arg(loader, "shuffle", 2)
                if is_true(shuffle) and not workers_seeded and not _no_workers(loader, ctx) and \
                        ctx.arg(loader, "generator") is None and ctx.arg(loader, "worker_init_fn") is None:
                    ctx.report(loader, "the file seeds torch, but this shuffling multi-worker `DataLoader` takes "
                                       "its order and worker seeds from the global RNG, so any change in how much "
                                       "randomness runs before it (model init, augmentations) changes the data: "
                                       "pass `generator=torch.Generator().manual_seed(seed)` and a `worker_init_fn`")
            if not workers_seeded and not per_worker():
                for call in _loader_helpers(ctx):
                    ctx.report(call, f"the file seeds torch, but `{ctx.text(call.func)}()` (another module of the "
                                     "project) builds a shuffling multi-worker `DataLoader` with no `generator` "
                                     "and no `worker_init_fn`: its order and worker seeds come from the global "
                                     "RNG, so runs differ; pass `generator=torch.Generator().manual_seed(seed)` "
                                     "and a `worker_init_fn` there")
        if loaders and all(_no_workers(c, ctx) for c in loaders):
            return  # every loader of this file works in the main process
        # workers only when a caller asks (`num_workers=0` by default, bpnet-lite's
        # `PeakGenerator`): as unsure as a dataset whose loaders are out of sight
        on_request = bool(loaders) and all(_no_workers(c, ctx) or _workers_on_request(c, ctx) for c in loaders)
        if ctx.model.dataset_classes and not per_worker():
            for name in ctx.model.dataset_classes:
                # no loader in this file: whether any loader of the dataset runs workers is out
                # of sight (LoRA data_utils.py: every loader, in other files, has num_workers=0)
                self._dataset(ctx, ctx.model.classes[name], seen_loaders=bool(loaders) and not on_request,
                              one_worker=bool(loaders) and all(_no_workers(c, ctx) or _one_worker(c, ctx)
                                                               for c in loaders))

    def _cudnn(self, ctx, seeds, calls) -> None:
        deterministic, benchmark = False, None
        for node in ctx.model.nodes_by_type.get(ast.Assign, []):
            for target in node.targets:
                q = ctx.qualname(target) or ""
                if q == "torch.backends.cudnn.deterministic":
                    deterministic = True
                elif q == "torch.backends.cudnn.benchmark" and is_true(node.value):
                    benchmark = node
        deterministic = deterministic or any(ctx.qualname(c.func) in DETERMINISM_CALLS for c in calls) or any(
            kw.arg in ("deterministic", "full_determinism") for c in calls for kw in c.keywords)
        if benchmark is not None:
            ctx.report(benchmark, "the file seeds torch, but `cudnn.benchmark = True` picks convolution "
                                  "kernels by timing, so results differ between runs: set it to False "
                                  "(and `cudnn.deterministic = True`) for reproducible runs")
        elif not deterministic and ctx.model.cuda_evidence is not None and any(
                (ctx.qualname(c.func) or "").startswith(CUDNN_LAYERS) for c in calls):
            first = min(seeds, key=lambda c: (c.lineno, c.col_offset))
            ctx.report(first, f"`{ctx.text(first.func)}` seeds the RNGs, but cuDNN stays non-deterministic on "
                              "CUDA: add `torch.backends.cudnn.deterministic = True` and `benchmark = False` "
                              "(or `torch.use_deterministic_algorithms(True)`)")

    def _dataset(self, ctx, cls: ast.ClassDef, seen_loaders: bool = True, one_worker: bool = False) -> None:
        methods = {f.name: f for f in cls.body if isinstance(f, FunctionNode)}
        init, getitem = methods.get("__init__"), methods.get("__getitem__")
        if init is None or getitem is None:
            return
        rngs = {}
        for node in ctx.model.subtree(init):
            value = node.value if isinstance(node, ast.Assign) else None
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                    value.func.attr == "manual_seed" and isinstance(value.func.value, ast.Call):
                value = value.func.value  # torch.Generator().manual_seed(0)
            if isinstance(value, ast.Call) and ctx.qualname(value.func) in RNG_FACTORIES:
                for target in node.targets:
                    path = dotted(target)
                    if path and path.startswith("self."):
                        rngs[path] = ctx.qualname(value.func)
        reassigned = {dotted(t) for f in methods.values() if f is not init for n in ctx.model.subtree(f)
                      if isinstance(n, ast.Assign) for t in n.targets}
        legacy = ctx.target_torch is not None and ctx.target_torch < (1, 9)
        for node in sorted(ctx.model.subtree(getitem), key=_where):  # the first use in source order
            if isinstance(node, ast.Attribute) and dotted(node) in rngs and dotted(node) not in reassigned:
                if off_by_default(ctx, node, cls) or off_at_defaults(ctx, node):
                    continue  # under a test the constructor's default turns off, and no caller turns on
                if one_worker:  # one worker, started afresh each epoch from the same copy
                    ctx.report(node, f"`{dotted(node)}` ({rngs[dotted(node)]}) is created once in `__init__` and "
                                     "copied into the DataLoader's worker, which starts afresh from that state "
                                     "every epoch: each epoch replays the same random draws; seed it per worker "
                                     "(`worker_init_fn`) or keep the worker (`persistent_workers=True`)",
                               severity=Severity.MEDIUM, kind="likely-defect", confidence="medium")
                    return
                ctx.report(node, f"`{dotted(node)}` ({rngs[dotted(node)]}) is created once in `__init__` and "
                                 "copied into every DataLoader worker with the same state: all workers draw "
                                 "the same numbers; seed it per worker (`worker_init_fn`, `get_worker_info()`)",
                           severity=Severity.MEDIUM, kind="likely-defect",
                           confidence=None if seen_loaders else "medium")
                return
            q = ctx.qualname(node.func) if isinstance(node, ast.Call) and legacy else None
            if q == "numpy.random.seed" and node.args and not isinstance(node.args[0], ast.Constant):
                return  # the item re-seeds NumPy from a value of its own (the index): workers differ from here on
            if q and q.startswith("numpy.random.") and q.split(".")[2][:1].islower():
                if off_by_default(ctx, node, cls) or off_at_defaults(ctx, node):
                    continue  # `if self.args.shuffle_boxes:` with the option off at the defaults (VL-T5)
                ctx.report(node, f"`{q}` in `__getitem__`: before torch 1.9 every DataLoader worker starts "
                                 "from the same NumPy state; seed it in a `worker_init_fn`",
                           severity=Severity.MEDIUM, kind="likely-defect",
                           confidence=None if seen_loaders else "medium")
                return


def _loader_helpers(ctx) -> list[ast.Call]:
    """Calls of a loader helper of another project module whose summary says it
    builds an unseeded shuffling worker loader, unless the call turns shuffling or
    the workers off (``shuffle=False``, ``workers=0``)."""
    out = []
    for call in ctx.model.calls:
        found = ctx.project.function(ctx.qualname(call.func))
        if found is None or "unseeded_worker_loader" not in found.builds:
            continue
        if any(isinstance(k.value, ast.Constant) and k.value.value in (False, 0) and k.value.value is not None
               and ("shuffle" in (k.arg or "") or "worker" in (k.arg or "")) for k in call.keywords):
            continue
        out.append(call)
    return out


def _no_workers(loader: ast.Call, ctx) -> bool:
    """The loader runs in the main process: ``num_workers`` left out, 0, or a setting that holds
    0 at the script's defaults (``config.num_workers = 0`` at the top of the script)."""
    workers = ctx.arg(loader, "num_workers", 5)
    if ctx.has_kwargs_splat(loader):
        return False
    if workers is None or int_value(workers) == 0:
        return True
    default = ctx.options.default_of(workers)
    return type(default) is int and default == 0


def _one_worker(loader: ast.Call, ctx) -> bool:
    """``num_workers=1`` written out, the worker not kept across epochs (no
    ``persistent_workers=True``): one worker, started afresh from the same state each epoch."""
    workers = ctx.arg(loader, "num_workers", 5)
    persistent = ctx.arg(loader, "persistent_workers")
    return not ctx.has_kwargs_splat(loader) and int_value(workers) == 1 and not is_true(persistent)


def _workers_on_request(loader: ast.Call, ctx) -> bool:
    """The loader's ``num_workers`` is a parameter of its function whose default is 0,
    never reassigned there (``def PeakGenerator(..., num_workers=0)``): it runs in the main
    process unless a caller asks for workers."""
    workers = ctx.arg(loader, "num_workers", 5)
    if not isinstance(workers, ast.Name) or ctx.has_kwargs_splat(loader):
        return False
    values, func = ctx.model.assignments(workers)
    if values or func is None:
        return False
    return int_value(parameter_default(func.args, workers.id)) == 0


def _where(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
