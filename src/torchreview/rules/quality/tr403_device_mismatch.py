from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.engine.context import (
    TENSOR_FACTORIES, FunctionNode, ancestors, dotted, parent, position, root_name, statement_of,
)
from torchreview.findings import Severity
from torchreview.rules._helpers import short_text
from torchreview.rules.quality._availability_devices import availability_meets_caller
from torchreview.rules.quality._collectives import host_collectives
from torchreview.rules.quality._ema_devices import unmoved_copy_updates
from torchreview.rules.quality._host_tensors import (
    SHAPED, FileMemo, cuda_after_is_cuda, host_mixes, one_sided_moves, zero_dim_size,
)
from torchreview.rules.quality._training import uses_framework
from torchreview.rules.quality._unprepared_batches import unprepared_batches

_IS_CUDA_SHAPE = " moves to the current default"  # the `.cuda()` under `x.is_cuda` finding
_MOVERS = frozenset({"to", "cuda", "type_as", "to_device", "new_tensor", "new_zeros", "new_ones"})
_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DistributedDataParallel"})
# the same scattering wrappers under other names: torch's own module paths, and the ones a
# well-known library subclasses (mmcv's; the widely vendored Synchronized-BatchNorm package's
# `DataParallelWithCallback`), whose `forward` scatters the inputs like theirs
_WRAPPER_BASES = _WRAPPERS | frozenset({
    "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel", "mmcv.parallel.MMDataParallel",
    "mmcv.parallel.MMDistributedDataParallel", "mmcv.parallel.data_parallel.MMDataParallel",
    "mmcv.parallel.distributed.MMDistributedDataParallel", "sync_batchnorm.DataParallelWithCallback",
    "sync_batchnorm.replicate.DataParallelWithCallback"})


def _wrappers(ctx) -> frozenset[str]:
    """The qualified names this file calls that build a scattering wrapper: DataParallel/DDP,
    mmcv's subclasses, and classes of this file or the project whose base is one of them
    (sync-batchnorm's ``DataParallelWithCallback(DataParallel)``)."""
    found = set(_WRAPPERS)
    local = {c.name: c for c in ctx.model.nodes_by_type.get(ast.ClassDef, ())}
    for q in ctx.model.called_qualnames:
        if q in _WRAPPER_BASES:
            found.add(q)
            continue
        cls = local.get(q)
        if cls is not None:
            if any(ctx.qualname(b) in _WRAPPER_BASES for b in cls.bases):
                found.add(q)
            continue
        summary = ctx.project.class_summary(q)
        if summary is not None and any(b in _WRAPPER_BASES for b in summary.bases):
            found.add(q)
    return frozenset(found)
_FACTORIES = (TENSOR_FACTORIES | {"torch.from_numpy"}) - {
    "torch.zeros_like", "torch.ones_like", "torch.randn_like", "torch.rand_like", "torch.empty_like",
    "torch.full_like", "torch.normal"}


class DeviceMismatch(Rule):
    """
    ## What it does
    Flags ways of mixing CPU and GPU tensors: batches from a `DataLoader`
    passed to a model that the module moves to a device, without a
    `.to(device)` in between; tensors created inside `nn.Module.forward` (or a
    method `forward` calls) with a factory (`torch.zeros`, `torch.arange`,
    `torch.tensor([...])` ...) without `device=`, then combined with the inputs
    or fed to a layer; host-made tensors in any function that meet tensors
    known to be on a device; and `y.cuda()` guarded by another tensor's
    `x.is_cuda` (the current GPU, not `x`'s).

    ## Why is this bad?
    A `DataLoader` yields CPU tensors and a factory allocates on the default
    device (the CPU). Once the model's weights are on a GPU, the first
    operation that mixes them raises `RuntimeError: Expected all tensors to be
    on the same device`; code written and tested on a CPU breaks the first
    time it meets a GPU.

    ## Example
    ```python
    import torch

    model = torch.nn.Linear(8, 2).to("cuda")
    loader = torch.utils.data.DataLoader(dataset, batch_size=32)
    for x, y in loader:
        out = model(x)
    ```

    ## Use instead
    ```python
    import torch

    model = torch.nn.Linear(8, 2).to("cuda")
    loader = torch.utils.data.DataLoader(dataset, batch_size=32)
    for x, y in loader:
        x, y = x.to("cuda"), y.to("cuda")
        out = model(x)
    ```

    ## Heuristics
    Batches: the loop must iterate a `DataLoader(...)` (when it iterates
    `zip(a, b, ...)`, the value must come from an argument a torch `DataLoader`
    feeds, not from DGL's `NodeDataLoader(..., device=device)` beside it) built
    without a custom `collate_fn`, over a dataset not formatted onto a device (a Hugging Face
    `ds.set_format(type="torch", device="cuda")` or `with_format(..., device=...)`,
    also on the dataset dict it was taken from), not a `TensorDataset` or a
    `Dataset` class of this file built from tensors already on a device, and
    not a `Dataset` class of this file whose `__init__` keeps its data on a
    device (`self.x = torch.tensor(x).float().to(device)`), nor one (of this or another
    project module) whose `__getitem__` returns only tensors it moved itself
    (`.to(self.device)`) to a loader that collates in the main process (no
    `num_workers`, or 0); the model must be moved with `.to(...)`/`.cuda()` somewhere
    in the module (at module level -- a script, a notebook's cells in order --
    a move that comes after the loop, outside any loop holding it, does not
    reach it) and not wrapped in `DataParallel`/`DistributedDataParallel`
    (which scatter inputs themselves; followed through names, attributes and
    the arguments of same-module callers), and its class (of this module or
    another project module) must not move its first input itself in `forward`
    (`x = x.to(self.fc.weight.device)`); any reassignment of the batch name
    before the call counts as moving it, and so does unpacking it in the
    `else` of `if torch.cuda.is_available():` (that path runs on the CPU). Modules using Accelerate, Lightning
    or DeepSpeed are skipped. Factories: `*_like`, `device=` (also through
    `**kwargs`), `.to(...)`/`.cuda()`/`.type_as(...)`, 0-dim `torch.tensor(3.0)` / `torch.rand([])`
    and tensors only used as indices are not reported (advanced indexing takes
    host indices for a tensor on any device: `x[idx]`, `x[:, torch.arange(n) != k]`,
    a mask bound to a name used only as an index, `x[idx] = v`, `index_put_`;
    a mask compared with a tensor, `index_select`/`gather`/`masked_fill` still
    are), nor arguments of `copy_`/`to`/`type_as`/`new_tensor`, nor tensors combined
    only with Python numbers (constants, `.item()`, `int(...)`, `len(...)`,
    `.size(i)`, `.shape[i]` and names holding them): those mix with any device.
    Helpers: methods called as `self.name(...)` from `forward` (one level) get
    the same factory check, when what the factory meets derives from the
    helper's own arguments (not only their sizes, nor sizes given to another
    factory) and neither the helper nor its callers move the result: a helper
    every `forward` call of which is moved (`self._make_grid(nx, ny).to(x.device)`,
    or `g = self.grid(x)` used only as `g.to(...)`) is not checked. Several
    factories in one statement (`torch.meshgrid(torch.arange(h), torch.arange(w))`)
    are one finding. Plain functions: a tensor is on a device when moved
    with `.cuda()`/`.to(<device>)`, when it is the result of a call or method fed
    such a tensor (a model's output), an item of one (loop over it, `zip`), or a
    parameter that a same-module caller passes one; `.cpu()`, `.numpy()`,
    `.item()`, `len()`/`int()` and `.shape` leave it. A host factory (no
    `device=`, not moved) is reported when it pre-fills a list (`[torch.zeros(0,
    6)] * n`) whose items are later set to device tensors, is appended to a list
    that also receives device tensors, or sits next to a device tensor in
    arithmetic, a comparison or `torch.cat`/`torch.stack`. `y.cuda()` without an
    index under `if x.is_cuda:` for a different tensor `x` is reported too, and
    so is `.cuda(True)` (a bool as the device index: cuda:1, not `non_blocking`).
    Branches: an `if`/`elif`/`else` whose branches each move a different tensor
    (`x = x.cuda()` in one, `y = y.cuda()` in the other) is reported when the
    two tensors (or a result computed from one) later meet in one call: a move
    done in one branch only is not a move on every path. A move onto another
    tensor's device (`x = x.to(y.device)`) aligns the two and is not one of
    those moves, and a call that picks between them by the branch's own test
    (`sp_adj if sparse else adj` after `if sparse: sp_adj = sp_adj.cuda()
    else: adj = adj.cuda()`: GraphCL) gets the tensor that branch moved.
    Project: `y.cuda()` under `x.is_cuda` is not reported when every device
    built by the code that can hand the file its tensors (the file and the
    project files importing it, directly or through others; not a sibling
    package an entry script also imports) is the CPU or the default GPU
    (`torch.device("cuda:0")`, `"cuda"`, `.cuda()`; no computed index,
    `--gpu`/`--device` option, `LOCAL_RANK`, `set_device`, DataParallel/DDP or
    replicas by hand; a `device_count()` that is only read does not count): a
    GPU chosen with `CUDA_VISIBLE_DEVICES` is cuda:0 in the process, so the
    two always agree.
    When no file of the project places anything on an accelerator
    (no `.cuda()`, no `.to(<device>)`, no `device=` other than "cpu", no
    `DataParallel`, `accelerator.prepare` or Lightning `Trainer(accelerator=)`),
    the whole project runs on one device and nothing is reported.
    NCCL: in a file that calls `init_process_group("nccl")` (the backend
    spelled literally), a `torch.distributed` collective (`all_reduce`,
    `broadcast`, `all_gather` ...) without an explicit `group=` whose tensor
    was made by a factory without `device=` (or a legacy
    `torch.FloatTensor([...])`) and not moved since is reported: NCCL only
    moves CUDA tensors.
    Module copies: a class that keeps a `deepcopy` of a model on a device
    given by a parameter (`self.ema.to(device=device)`) and updates it in a
    `for e, m in zip(self.ema.<tensors>, model.<tensors>)` loop with an
    arithmetic in-place op (`e.lerp_(m, w)`, `e.mul_(d).add_(m)`) on an `m`
    never moved (nor rebound) in the loop is reported; `copy_` crosses devices
    and is fine.
    Availability: in a file that places no model itself (library code; the
    caller owns the devices), a tensor moved with `x = x.cuda()` under
    `if torch.cuda.is_available():` that later meets a parameter of the
    function (arithmetic, or a `torch`/`torchvision` call) is reported: its
    device follows the machine, not the caller's data.
    Accelerate: the framework skip above does not cover a DataLoader the
    script never passes to `accelerator.prepare` (caching latents or
    embeddings before training): its batch names, kept through dtype-only
    casts (`.to(dtype=...)`, `.half()`) and item reads, passed to a module
    the file moves with `.to(<...device>)` are reported. A loader parameter
    that every same-file call hands a prepared loader (`train(trainloader)`
    after `trainloader, ... = accelerator.prepare(trainloader, ...)`) is
    prepared. A batch tensor handed to a parameter the model's `forward`
    never reads (`def forward(self, x, video_length)` using only `x`) meets
    no device and is not reported.

    Confidence: high where everything is in sight -- a batch loop whose
    function builds both the DataLoader and the model it calls (the model
    known by its construction, not its name); a `.cuda(True)`; a move done in
    one branch only; an NCCL collective on a host tensor; a loader never
    passed to `accelerator.prepare`. Medium where the mismatch needs a
    machine or a caller we do not see: a loader or model handed in by a
    caller, factories in `forward` (the input's device is the caller's), a
    `.cuda()` under `x.is_cuda` (wrong only on a non-default GPU), a tensor
    moved whenever a GPU exists meeting the caller's data, a module copy on
    a device of its own.
    In a notebook cell that the stored notebook shows ran to the end without
    an error (executed, no `error` output, outputs kept), the finding is low
    confidence (`claims_raise`): the author's own run refutes the crash there.
    A line inside a `try` whose handler names the error (`except RuntimeError
    as e: print(e)`, a lesson provoking it) is not reported (engine/runner.py);
    a broad `except Exception` is no such evidence.
    """

    code = "TR403"
    name = "device-mismatch"
    severity = Severity.HIGH
    claims_raise = True
    severity_reason = (
        "Crash: tensors on two devices raise at the first mixed operation. A likely defect: a collate "
        "function or wrapper we cannot see may move the batch."
    )
    extra_review = ("BR",)
    scope = ("file", "runtime")
    summary = "CPU tensors (loader batches, forward-made tensors) mixed with a model on a GPU"

    @classmethod
    def refine_with_project(cls, finding, project):
        """Drop the finding when no file of its project places tensors or modules
        on an accelerator: a project that runs on one device cannot mix devices."""
        if not any(f.path == finding.path for f in project.files):
            return finding  # the finding's own facts are unknown: keep it
        if _IS_CUDA_SHAPE in finding.message and project.single_default_device(finding.path):
            return None  # only cuda:0 is ever built: `.cuda()` lands where `x` is
        if any(f.places_on_accelerator for f in project.files):
            return finding
        return None

    def check_file(self, ctx) -> None:
        for call, tensor, made in host_collectives(ctx, _FACTORIES):
            ctx.report(call, f"`{short_text(ctx, call.func)}` over the NCCL process group (backend "
                             f"\"nccl\") is given `{short_text(ctx, tensor)}`, made on the host by "
                             f"`{short_text(ctx, made)}`: NCCL only moves CUDA tensors and this call raises; "
                             f"create it with `device=` the rank's GPU (or `.cuda()` it first)",
                       kind="defect", confidence="high")
        for node, moved, move, caller in availability_meets_caller(ctx):
            ctx.report(node, f"`{moved}` is moved to the GPU whenever one exists ({ctx.line_of(move)}), "
                             f"regardless of where `{short_text(ctx, caller)}` (from the caller) lives: a "
                             f"caller running its model on the CPU of a GPU machine gets a device mismatch "
                             f"here; move it to the caller's device instead "
                             f"(`{moved}.to({short_text(ctx, caller)}.device)`)")
        for call, copy, move, other in unmoved_copy_updates(ctx):
            ctx.report(call, f"`{short_text(ctx, call)}` updates `self.{copy}` in place from `{other}`, but "
                             f"`self.{copy}` is kept on a device of its own (`{short_text(ctx, move)}`, line "
                             f"{move.lineno}) and `{other}` comes from the live model: when the two devices "
                             f"differ (the point of that option, e.g. an EMA kept on the CPU) this raises a "
                             f"device mismatch; move the operand first (`{other}.to(device=...)`)")
        for arg, loop, module in unprepared_batches(ctx):
            ctx.report(arg, f"`{arg.id}` comes from `{short_text(ctx, loop.iter)}`, a DataLoader never passed "
                            f"to `accelerator.prepare` (its batches stay on the CPU; a dtype cast does not move "
                            f"them), and reaches `{module}`, which this file places on the accelerator: on a "
                            f"GPU this fails with a device mismatch; move it with "
                            f"`.to(accelerator.device, ...)` or prepare the loader", confidence="high")
        if uses_framework(ctx):
            return
        wrappers = _wrappers(ctx)
        wrapped = _wrapped_names(ctx, wrappers)
        memo = FileMemo(ctx)
        for loop in ctx.model.loops:
            self._batches(ctx, loop, wrapped, wrappers)
        for name in ctx.model.module_classes:
            methods = {s.name: s for s in ctx.model.classes[name].body if isinstance(s, FunctionNode)}
            forward = methods.get("forward")
            if forward is not None:
                self._factories(ctx, forward, "`forward`")
                # a helper matters only if it makes a factory tensor: none in the class, no search
                if not memo.makes_factory(ctx.model.classes[name], _FACTORIES):
                    continue
                for helper in _helpers_of(ctx, forward, methods):
                    params = {a.arg for a in helper.args.posonlyargs + helper.args.args + helper.args.kwonlyargs}
                    self._factories(ctx, helper, f"`{helper.name}` (called from `forward`)", params - {"self"})
        seen: set[int] = set()
        mixes: dict[int, list] = {}  # one finding per statement
        for defs in ctx.model.functions.values():
            for func in defs:
                for call, other in host_mixes(ctx, func, _FACTORIES, memo):
                    if id(call) in seen:
                        continue
                    seen.add(id(call))
                    mixes.setdefault(id(statement_of(call)), []).append((call, other))
        for group in mixes.values():
            call, other = group[0]
            made = ", ".join(dict.fromkeys(f"`{short_text(ctx, c)}`" for c, _ in group))
            ctx.report(call, f"{made} {'is' if len(group) == 1 else 'are'} created on the default device "
                             f"(the CPU) and {'meets' if len(group) == 1 else 'meet'} {other}: on a GPU this "
                             f"fails with a device mismatch (or a later `torch.cat` does); pass `device=` of "
                             f"the tensors it joins")
        for call in ctx.model.calls_by_name.get("cuda", []):
            first = call.args[0] if call.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, bool) and \
                    isinstance(call.func, ast.Attribute):
                ctx.report(first, f"`{short_text(ctx, call)}`: the first positional argument of `.cuda()` is "
                                  f"the device index, so `{first.value}` means cuda:{int(first.value)}, not "
                                  f"`non_blocking`; the tensor lands on another GPU than the model; write "
                                  f"`.cuda(non_blocking={first.value})`", confidence="high")
        for stmt, name, others in one_sided_moves(ctx):
            ctx.report(stmt, f"`{name}` is moved to the device only in this branch, while another branch "
                             f"moves {', '.join(f'`{o}`' for o in others)} instead: on every path one of them "
                             f"stays on the host and the call that combines them fails with a device "
                             f"mismatch; move all of them on every path", confidence="high")
        for call, other in cuda_after_is_cuda(ctx):
            ctx.report(call, f"`{short_text(ctx, call)}` under `{other}.is_cuda`{_IS_CUDA_SHAPE} "
                             f"GPU, not to `{other}`'s: on any device other than cuda:0 the two tensors "
                             f"mismatch; use `.to({other}.device)`")

    # ---------------------------------------------------------------- batches
    def _batches(self, ctx, loop, wrapped, wrappers: frozenset[str]) -> None:
        loaders = ctx.flow.iterated_loaders(loop)
        if not loaders or any(ctx.arg(dl, "collate_fn", 6) is not None or ctx.has_kwargs_splat(dl) or
                              any(w in ctx.text(dl) for w in ("cuda", "device", ".to(")) or
                              _tensors_on_device(ctx, dl) or _formatted_on_device(ctx, dl) for dl in loaders):
            return
        for call in sorted((n for n in ctx.model.own_nodes(loop) if type(n) is ast.Call), key=position):
            if ctx.flow.classify(call) != "forward":
                continue
            model = call.func.value if isinstance(call.func, ast.Attribute) and call.func.attr == "forward" \
                else call.func
            if _key(ctx, model, dotted(model)) in wrapped or not ctx.flow.moved_to_device(model) or \
                    ctx.flow.wrapping_call(model, wrappers) is not None or _moves_its_input(ctx, model):
                continue
            raw = ctx.flow.raw_batch_names(loop, call)
            unread = _unread_arguments(ctx, model, call)
            for arg in [*call.args, *(kw.value for kw in call.keywords)]:
                if id(arg) in unread:
                    continue  # `forward(self, x, video_length)` never reads it: no mismatch can arise
                inner = arg.value if isinstance(arg, ast.Starred) else arg
                if root_name(inner) in raw and not any(isinstance(v, ast.Call) for v in ast.walk(inner)) and \
                        _from_a_loader(ctx, loop, inner) and not _dataset_places_items(ctx, loaders):
                    ctx.report(arg, f"`{short_text(ctx, inner)}` comes from `{short_text(ctx, loop.iter)}` "
                                    f"(DataLoader batches are CPU tensors) and reaches "
                                    f"`{short_text(ctx, model)}`, which this module moves to a device, "
                                    f"without `.to(device)`: on a GPU this fails with a device mismatch; "
                                    f"move the batch first",
                               confidence="high" if _built_here(ctx, loaders, model, loop) else None)
                    return

    # ---------------------------------------------------------------- factories
    def _factories(self, ctx, forward, where, params=None) -> None:
        hits: dict[int, list] = {}
        # the factory calls in source order (filtered first: sorting every node cost more)
        for call in sorted((n for n in ctx.model.own_nodes(forward)
                            if type(n) is ast.Call and ctx.qualname(n.func) in _FACTORIES), key=position):
            if ctx.arg(call, "device") is not None or ctx.has_kwargs_splat(call):
                continue
            q = ctx.qualname(call.func)
            if q in ("torch.tensor", "torch.as_tensor") and (
                    not call.args or not isinstance(call.args[0], (ast.List, ast.Tuple, ast.ListComp))
                    or len(call.args) > 2):
                continue
            if q in SHAPED and zero_dim_size(call):
                continue  # torch.rand([]), torch.zeros(()): 0-dim, mixes with any device
            top = _chain_top(call)
            if top is None:
                continue
            above = parent(top)
            if isinstance(above, ast.Assign) and len(above.targets) == 1 and isinstance(above.targets[0], ast.Name):
                name = above.targets[0].id
                uses = [n for n in ctx.model.own_nodes(forward) if isinstance(n, ast.Name) and n.id == name
                        and isinstance(n.ctx, ast.Load) and position(n) > position(above)]
                stores = [n for n in ctx.model.own_nodes(forward) if isinstance(n, ast.Name) and n.id == name
                          and isinstance(n.ctx, ast.Store)]
                if len(stores) != 1:
                    continue
            elif isinstance(above, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)):
                continue
            else:
                uses = [top]
            if any(ctx.flow.meets_other_tensors(u) and not _meets_only_host(ctx, u) and
                   (params is None or _partner_from_params(ctx, u, params)) for u in uses):
                hits.setdefault(id(statement_of(call)), []).append(call)
        # One finding per statement: `torch.meshgrid(torch.arange(h), torch.arange(w))`
        # is one host-made grid, not two problems.
        for calls in hits.values():
            made = ", ".join(f"`{short_text(ctx, c)}`" for c in calls)
            ctx.report(calls[0], f"{made} in {where} {'is' if len(calls) == 1 else 'are'} created on the "
                                 f"default device (the CPU) and mixed with the inputs: on a GPU this fails "
                                 f"with a device mismatch; pass `device=x.device` (x: an input) or register "
                                 f"it as a buffer")


def _built_here(ctx, loaders, model, loop) -> bool:
    """Direct evidence for a batch finding: the loop's function builds the DataLoader
    it iterates and the model it calls (known by its construction, not its name), so
    neither comes from a caller that could have put them elsewhere."""
    func = ctx.enclosing_function(loop)
    if any(ctx.enclosing_function(dl) is not func for dl in loaders):
        return False
    if not isinstance(model, (ast.Name, ast.Attribute)) or ctx.known_by_name_only(model):
        return False
    values = ctx.model.assignments(model)[0]
    return bool(values) and all(ctx.enclosing_function(v) is func for v in values)


def _moves_its_input(ctx, model) -> bool:
    """The model's class (of this file, or of another project module) moves its
    input to its own device in ``forward``."""
    ctor = ctx.flow.module_constructor(model)
    if ctor is None:
        return False
    local = ctx.model.classes.get(ctor.func.id) if isinstance(ctor.func, ast.Name) else None
    return ctx.project.forward_moves_input(ctx.qualname(ctor.func), local)


def _unread_arguments(ctx, model, call: ast.Call) -> set[int]:
    """The ids of the arguments of ``call`` that land on parameters the model class's
    ``forward`` never reads (a video-length tensor a CNN+LSTM's forward ignores: judged false
    in blind test 147)."""
    ctor = ctx.flow.module_constructor(model)
    if ctor is None or any(isinstance(a, ast.Starred) for a in call.args):
        return set()
    local = ctx.model.classes.get(ctor.func.id) if isinstance(ctor.func, ast.Name) else None
    unread = ctx.project.forward_unread_inputs(ctx.qualname(ctor.func), local)
    names = {name for _, name in unread}
    positions = {i for i, _ in unread if i >= 0}
    out = {id(k.value) for k in call.keywords if k.arg in names}
    out |= {id(a) for i, a in enumerate(call.args) if i in positions}
    return out


def _helpers_of(ctx, forward, methods) -> list:
    """The methods of the same class that ``forward`` calls as ``self.name(...)``
    (one level: the reparametrisation, masking or padding helpers it delegates to)."""
    out = []
    for call in ctx.model.own_nodes(forward):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                isinstance(call.func.value, ast.Name) and call.func.value.id == "self":
            helper = methods.get(call.func.attr)
            if helper is not None and helper is not forward and helper not in out and not all(
                    _moved_by_caller(ctx, c, forward) for c in ctx.model.own_nodes(forward)
                    if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and
                    isinstance(c.func.value, ast.Name) and c.func.value.id == "self" and
                    c.func.attr == helper.name) and not any(
                    isinstance(r, ast.Return) and r.value is not None and
                    any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and
                        c.func.attr in _MOVERS for c in ast.walk(r.value))
                    for r in ctx.model.own_nodes(helper)):
                out.append(helper)
    return out


def _moved_by_caller(ctx, call, func) -> bool:
    """The caller moves what the helper returns: ``self.make_grid(h, w).to(x.device)``
    (any mover in the chain), or ``g = self.make_grid(h, w)`` whose every later use in
    ``func`` is moved (``g.to(x.device)``, ``g.type_as(x)``)."""
    if _chain_top(call) is None:
        return True
    above = parent(call)
    if not (isinstance(above, ast.Assign) and len(above.targets) == 1 and isinstance(above.targets[0], ast.Name)):
        return False
    name = above.targets[0].id
    uses = [n for n in ctx.model.own_nodes(func) if isinstance(n, ast.Name) and n.id == name and
            isinstance(n.ctx, ast.Load) and position(n) > position(above) and
            ctx.flow.reaching_value(n) is call]
    return bool(uses) and all(_chain_top(n) is None for n in uses)


def _partner_from_params(ctx, use, params) -> bool:
    """In a helper, what the factory is combined with derives from the helper's own
    tensor arguments (directly or through one assignment); sizes read off them
    (``x.size(1)``, ``x.shape``) do not count."""
    own = _chain_top(use) or use
    top = own
    while isinstance(parent(top), (ast.Subscript, ast.List, ast.Tuple, ast.Starred, ast.keyword)):
        top = parent(top)
    above = parent(top)
    if not isinstance(above, (ast.BinOp, ast.Compare, ast.Call)):
        return False
    inside = {id(n) for n in ast.walk(own)}
    # sizes given to another factory (`torch.arange(w)` next to `torch.arange(h)`) are numbers
    inside |= {id(n) for c in ast.walk(above) if isinstance(c, ast.Call) and c is not above and
               ctx.qualname(c.func) in _FACTORIES for n in ast.walk(c)}
    names = [n for n in _tensor_names(above) if id(n) not in inside and not (
        isinstance(above, ast.Call) and n is above.func)]
    if any(n.id in params for n in names):
        return True
    for n in names:
        value = ctx.flow.reaching_value(n)
        if value is not None and value is not n and any(m.id in params for m in _tensor_names(value)):
            return True
    return False


def _tensor_names(expr) -> list:
    """Names in ``expr`` used as tensors: not under ``.size()``/``.shape``/``.device``..."""
    out = []
    for n in ast.walk(expr):
        if isinstance(n, ast.Name) and not (isinstance(parent(n), ast.Attribute) and parent(n).attr in (
                "size", "shape", "device", "dtype", "ndim", "dim", "numel", "is_cuda")):
            out.append(n)
    return out


def _meets_only_host(ctx, use) -> bool:
    """``torch.arange(n) - torch.arange(n).view(-1, 1)``: in arithmetic, the other
    operand is itself a host factory (chain), so the two agree on the device."""
    top = _chain_top(use) or use
    above = parent(top)
    if not isinstance(above, ast.BinOp):
        return False
    other = above.right if above.left is top else above.left
    while isinstance(other, ast.Call) and ctx.qualname(other.func) not in _FACTORIES and \
            isinstance(other.func, ast.Attribute) and other.func.attr not in _MOVERS:
        other = other.func.value
    return isinstance(other, ast.Call) and ctx.qualname(other.func) in _FACTORIES


def _key(ctx, node, name):
    if name and name.startswith("self."):
        return ctx.enclosing_class(node), name
    return ctx.model.scope_of(node), name


def _wrapped_names(ctx, wrappers: frozenset[str]) -> set:
    """(scope, name) of models wrapped in one of ``wrappers`` (DataParallel/DDP and the like:
    they scatter CPU inputs themselves)."""
    out = set()
    if wrappers.isdisjoint(ctx.model.called_qualnames):
        return out
    for call in ctx.model.calls:
        if ctx.qualname(call.func) in wrappers:
            stmt = next((a for a in ancestors(call) if isinstance(a, ast.Assign)), None)
            names = [dotted(a) for a in call.args[:1]] + [dotted(t) for t in (stmt.targets if stmt else [])]
            out.update(_key(ctx, call, d) for d in names if d)
    return out


def _chain_top(expr):
    """The end of the method chain on ``expr`` (``torch.arange(n).unsqueeze(0)``); None
    when the chain moves the tensor to a device."""
    while isinstance(parent(expr), ast.Attribute) and isinstance(parent(parent(expr)), ast.Call) \
            and parent(parent(expr)).func is parent(expr):
        if parent(expr).attr in _MOVERS:
            return None
        expr = parent(parent(expr))
    return expr


def _formatted_on_device(ctx, loader: ast.Call) -> bool:
    """``DataLoader(ds)`` over a Hugging Face dataset formatted onto a device
    (``ds.set_format(type="torch", device="cuda")``, ``ds = ds.with_format("torch",
    device=device)``, also on the dataset dict it was taken from: ``encoded["train"]``):
    its batches are already there."""
    roots: set[str] = set()
    dataset = ctx.arg(loader, "dataset", 0)
    for _ in range(3):
        if dataset is None:
            break
        root = root_name(dataset)
        if root:
            roots.add(root)
        if not isinstance(dataset, ast.Name):
            break
        value = ctx.flow.reaching_value(dataset)
        if value is None or value is dataset:
            break
        dataset = value.func.value if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            else value
    if not roots:
        return False
    for call in ctx.model.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("set_format", "with_format") and \
                any(k.arg == "device" for k in call.keywords) and root_name(func.value) in roots:
            return True
    return False


def _tensors_on_device(ctx, loader: ast.Call) -> bool:
    """``DataLoader(TensorDataset(x, y))`` over tensors already moved to the device
    (``x = torch.tensor(...).to(device)``): its batches are slices of them, on the device."""
    dataset = ctx.arg(loader, "dataset", 0)
    if isinstance(dataset, ast.Name):
        dataset = ctx.flow.reaching_value(dataset)
    if _items_on_device(ctx, loader):
        return True
    if not (isinstance(dataset, ast.Call) and dataset.args):
        return False
    if (ctx.qualname(dataset.func) or "").endswith("TensorDataset") or _own_dataset(ctx, dataset) is not None:
        if all(ctx.autograd.may_be_on_accelerator(a) for a in dataset.args
               if not isinstance(a, ast.Constant)):
            return True
    cls = _own_dataset(ctx, dataset)
    return cls is not None and _moves_to_device_in_init(ctx, cls)


# functions that split a dataset into parts holding its items
_SPLITTERS = frozenset({"torch.utils.data.random_split", "torch.utils.data.dataset.random_split"})


def _main_process_dataset(ctx, loader: ast.Call) -> tuple[ast.Call, ast.ClassDef | None] | None:
    """The dataset call a loader that collates in the main process (no ``num_workers``, or 0)
    reads, with its class when this file defines it; None otherwise."""
    workers = ctx.arg(loader, "num_workers", 5)
    if workers is not None and not (isinstance(workers, ast.Constant) and workers.value == 0):
        return None
    dataset = ctx.arg(loader, "dataset", 0)
    for _ in range(4):
        if isinstance(dataset, ast.Name):
            # a part of a dataset split in two (`train_set, val_set = random_split(dataset, [n, m])`)
            # holds that dataset's items
            parts = ctx.flow.unpacked_from(dataset)
            dataset = ctx.flow.reaching_value(dataset) if parts is None else \
                ctx.arg(parts, "dataset", 0) if ctx.qualname(parts.func) in _SPLITTERS else None
        elif isinstance(dataset, ast.Call) and ctx.qualname(dataset.func) == "torch.utils.data.Subset":
            dataset = ctx.arg(dataset, "dataset", 0)
        else:
            break
    if not isinstance(dataset, ast.Call):
        return None
    return dataset, ctx.model.classes.get(dataset.func.id) if isinstance(dataset.func, ast.Name) else None


def _items_on_device(ctx, loader: ast.Call) -> bool:
    """The dataset's ``__getitem__`` moves each item to a device itself (Rec2024's datasets, in
    another module: ``.to(self.device)`` on every returned tensor), and the loader collates in
    the main process: its batches are on that device."""
    found = _main_process_dataset(ctx, loader)
    return found is not None and ctx.project.dataset_items_on_device(ctx.qualname(found[0].func), found[1])


def _dataset_places_items(ctx, loaders: list[ast.Call]) -> bool:
    """The loop's one loader collates, in the main process, a dataset whose ``__getitem__``
    moves items to a device itself (``return ticker, x.to(self.device), y.to(self.device)``:
    a stock-diffusion notebook, judged false twice): the moved items are on the device, and
    the dataset manages the place of those it leaves alone (a ticker name the model maps)."""
    found = _main_process_dataset(ctx, loaders[0]) if len(loaders) == 1 else None
    return found is not None and bool(ctx.project.dataset_positions_on_device(ctx.qualname(found[0].func),
                                                                              found[1]))


def _own_dataset(ctx, call: ast.Call) -> ast.ClassDef | None:
    """The ``Dataset`` class of this file that ``call`` constructs, or None."""
    if isinstance(call.func, ast.Name) and call.func.id in ctx.model.dataset_classes:
        return ctx.model.classes.get(call.func.id)
    return None


def _moves_to_device_in_init(ctx, cls: ast.ClassDef) -> bool:
    """The dataset's ``__init__`` keeps its data on a device (``self.x =
    torch.tensor(x).float().to(device)``, ``.cuda()``): its items, and the
    batches of a loader over it, are already there."""
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return False
    for stmt in ast.walk(init):
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                                                and t.value.id == "self" for t in stmt.targets):
            for sub in ast.walk(stmt.value):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                        (sub.func.attr == "cuda" or sub.func.attr == "to" and
                         ctx.model.device_kind(ctx.model.to_call_device(sub)) in ("accelerator", "variable")):
                    return True
    return False


_ITER_WRAPPERS = ("builtins.enumerate", "builtins.iter", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm")


def _from_a_loader(ctx, loop: ast.AST, expr: ast.AST) -> bool:
    """``expr`` (a batch name or an item of one) is what a ``DataLoader`` of the loop yields:
    False when the loop iterates ``zip(a, b, ...)`` and ``expr`` -- followed back through the
    plain assignments and indexing that led to it -- comes from an argument no torch
    ``DataLoader`` feeds (gnn-recommendation's DGL ``NodeDataLoader(..., device=device)``
    zipped with a torch loader of indices: TR403 judged false twice in blind test 70)."""
    it, target = loop.iter, loop.target
    for _ in range(3):
        q = ctx.qualname(it.func) if isinstance(it, ast.Call) else None
        if q in _ITER_WRAPPERS or (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "tqdm"):
            if q == "builtins.enumerate" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
                target = target.elts[1]
            if not it.args:
                return True
            it = it.args[0]
    if not (isinstance(it, ast.Call) and ctx.qualname(it.func) == "builtins.zip" and
            isinstance(target, (ast.Tuple, ast.List))):
        return True
    name = _target_root(ctx, expr, target)
    if name is None:
        return True
    for elt, arg in _aligned(list(target.elts), list(it.args)):
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(elt)):
            return bool(ctx.flow.loaders_of(arg.value if isinstance(arg, ast.Starred) else arg))
    return True


def _target_root(ctx, expr: ast.AST, target: ast.AST) -> str | None:
    """The loop-target name ``expr`` was unpacked or indexed from (``block = blocks[0]``)."""
    names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    for _ in range(6):
        while isinstance(expr, (ast.Subscript, ast.Attribute, ast.Starred)):
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        if expr.id in names:
            return expr.id
        values = ctx.model.assignments(expr)[0]
        if len(values) != 1:
            return None
        expr = values[0]
    return None


def _aligned(elts: list, args: list) -> list[tuple[ast.AST, ast.AST]]:
    """Pairs of a ``zip`` target's elements and the arguments they come from: the elements
    before the first starred one and after the last, and one starred element against one
    starred argument in the middle; nothing when the two do not line up."""
    def split(seq):
        stars = [i for i, e in enumerate(seq) if isinstance(e, ast.Starred)]
        return (seq, [], []) if not stars else (seq[:stars[0]], seq[stars[0]:stars[-1] + 1], seq[stars[-1] + 1:])
    e_head, e_mid, e_tail = split(elts)
    a_head, a_mid, a_tail = split(args)
    if not e_mid and not a_mid:
        return list(zip(elts, args)) if len(elts) == len(args) else []
    if len(e_head) != len(a_head) or len(e_tail) != len(a_tail):
        return []
    pairs = list(zip(e_head, a_head)) + list(zip(e_tail, a_tail))
    if len(e_mid) == 1 and len(a_mid) == 1:
        pairs.append((e_mid[0], a_mid[0]))
    return pairs
