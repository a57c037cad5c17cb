"""Fact collectors: the per-file facts project rules read (downloads, hyper-parameters,
devices, inference entry points, randomness, loaders without drop_last).

``collect_facts`` (here) calls them and the runner calls it; they only add to a FileFacts.
``engine/facts.py`` holds the facts themselves and knows no collector.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchreview.engine.facts import _ATTR_FLAGS, _DOWNLOADS, Anchor, FileFacts, _anchor, _flags_for  # noqa: F401
from torchreview.engine.facts_checkpoints import checkpoint_facts
from torchreview.engine.facts_devices import devices_built
from torchreview.engine.facts_downloads import unpickled_downloads
from torchreview.engine.project_identity import download_url
from torchreview.engine.semantic import FunctionNode, LoopNode, ancestors, dotted, parent, position  # noqa: F401

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext


def _imported_names(ctx: "FileContext") -> tuple[str, ...]:
    """``import a.b`` -> a.b; ``from .m import x`` -> .m and .m.x (x may be a submodule)."""
    out: set[str] = set()
    for node in ctx.model.nodes_by_type.get(ast.Import, []):
        out.update(alias.name for alias in node.names)
    for node in ctx.model.nodes_by_type.get(ast.ImportFrom, []):
        base = "." * node.level + (node.module or "")
        out.add(base)
        sep = "." if node.module else ""
        out.update(base + sep + alias.name for alias in node.names if alias.name != "*")
    return tuple(sorted(out))


def _loader_without_drop_last_facts(ctx: "FileContext", facts: FileFacts) -> None:
    """TR503: anchors ``train_loader_without_drop_last:N`` at training DataLoaders
    (``Flow.is_training_loader``; not in notebooks or over in-memory data,
    ``Advice.loader_skip``) that keep a short last batch: no ``drop_last=True``,
    no ``batch_sampler``, no ``**kwargs`` that could carry it."""
    for call in ctx.model.calls:
        if ctx.model.qualname(call.func) != "torch.utils.data.DataLoader":
            continue
        kws = {k.arg: k.value for k in call.keywords}
        drop_last = kws.get("drop_last")
        if None in kws or "batch_sampler" in kws or len(call.args) > 4 or \
                not (drop_last is None or (isinstance(drop_last, ast.Constant) and drop_last.value is False)):
            continue
        if ctx.flow.is_training_loader(call) and not ctx.advice.loader_skip(call):
            index = sum(1 for k in facts.anchors if k.startswith("train_loader_without_drop_last:"))
            facts.anchors[f"train_loader_without_drop_last:{index}"] = _anchor(ctx, call)


def _mentions_accelerator(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and \
                sub.value.split(":")[0] in ("cuda", "mps", "xpu"):
            return True
        if isinstance(sub, ast.Name) and sub.id in ("device", "DEVICE", "dev"):
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in ("device",):
            return True
    return False


def _is_half(ctx: "FileContext", node: ast.AST) -> bool:
    q = ctx.qualname(node) or ""
    return q in ("torch.float16", "torch.half", "torch.bfloat16")


_HTTP_GETS = frozenset({"requests.get", "httpx.get", "requests.request"})


_SHELL_CALLS = frozenset({"subprocess.run", "subprocess.call", "subprocess.check_call",
                          "subprocess.check_output", "subprocess.Popen", "os.system", "os.popen"})


# TR304: module-level constants named like hyper-parameters.
_HPARAM = re.compile(
    r"^(?:[A-Z0-9]+_)*(?:LR|LEARNING_RATE|BATCH_SIZE|BS|EPOCHS?|N_EPOCHS|NUM_EPOCHS|MAX_EPOCHS"
    r"|WEIGHT_DECAY|MOMENTUM|HIDDEN_(?:DIM|SIZE|UNITS)|EMBED(?:DING)?_(?:DIM|SIZE)|D_MODEL"
    r"|DROPOUT(?:_RATE|_PROB)?|NUM_LAYERS|N_LAYERS|NUM_HEADS|N_HEADS|WARMUP_STEPS|STEP_SIZE"
    r"|MAX_GRAD_NORM|GRAD_CLIP|CLIP_NORM|ACCUM(?:ULATION)?_STEPS|BETAS)$")


_HPARAM_SINKS = frozenset({"optimizer", "loader", "model", "scheduler"})


_IMAGE_DECODERS = frozenset({"PIL.Image.open", "imageio.imread", "imageio.v3.imread", "skimage.io.imread",
                             "torchvision.io.decode_image", "matplotlib.pyplot.imread"})


def _feeds_image_decoder(ctx: "FileContext", call: ast.Call) -> bool:
    """``Image.open(requests.get(url, stream=True).raw)``: one picture fetched for a demo, not a data set."""
    node: ast.AST = call
    for _ in range(4):
        holder = getattr(node, "_tr_parent", None)
        if isinstance(holder, ast.Call) and node is not holder.func and \
                (ctx.qualname(holder.func) or "") in _IMAGE_DECODERS:
            return True
        if not isinstance(holder, (ast.Attribute, ast.Call)):
            return False
        node = holder
    return False


def _download_call(ctx: "FileContext", call: ast.Call, q: str) -> bool:
    if q in _DOWNLOADS or q in _HTTP_GETS:
        if _feeds_image_decoder(ctx, call):
            return False
    if q in _DOWNLOADS:
        checksum = _DOWNLOADS[q]
        return checksum is None or ctx.arg(call, checksum[0], checksum[1]) is None
    if q in _HTTP_GETS:
        holder = getattr(call, "_tr_parent", None)
        streamed = any(kw.arg == "stream" for kw in call.keywords)
        return streamed or (isinstance(holder, ast.Attribute) and holder.attr in ("content", "raw")) or \
            "iter_content" in ctx.model.attribute_names
    if q in _SHELL_CALLS and call.args:
        first = call.args[0]
        if isinstance(first, (ast.List, ast.Tuple)) and first.elts:
            first = first.elts[0]
        if isinstance(first, ast.JoinedStr) and first.values:
            first = first.values[0]
        return isinstance(first, ast.Constant) and isinstance(first.value, str) and \
            first.value.lstrip().split(" ")[0] in ("wget", "curl")
    return False


def _numeric(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    return False


def _feeds_training(ctx: "FileContext", name: ast.Name) -> bool:
    """Is this use of a constant an argument of an optimizer/loader/model/scheduler
    constructor, or of the ``range(...)`` a ``for`` loop iterates?"""
    child: ast.AST = name
    for anc in ctx.ancestors(name):
        if isinstance(anc, ast.stmt):
            return False
        if isinstance(anc, ast.Call) and child is not anc.func:
            if ctx.kind_of(anc) in _HPARAM_SINKS:
                return True
            holder = getattr(anc, "_tr_parent", None)
            if ctx.qualname(anc.func) == "builtins.range" and isinstance(holder, ast.For) and holder.iter is anc:
                return True
        child = anc
    return False


def _download_and_hparam_facts(ctx: "FileContext", facts: FileFacts) -> None:
    m = ctx.model
    downloads = sorted((call for call in m.calls if _download_call(ctx, call, m.qualname(call.func) or "")),
                       key=position)
    if downloads:
        facts.flags.add("downloads_data")
        facts.anchors["download"] = _anchor(ctx, downloads[0])
        facts.counts["downloads"] = len(downloads)
        unpickled = {id(call) for call in unpickled_downloads(ctx, downloads)}
        for i, call in enumerate(downloads):  # TR105: every place, and those this file unpickles
            facts.anchors[f"download:{i}"] = _anchor(ctx, call)
            if id(call) in unpickled:
                facts.anchors[f"download_unpickled:{i}"] = facts.anchors[f"download:{i}"]
        facts.download_urls = tuple(download_url(ctx, call) for call in downloads)
    constants = {}
    for stmt in m.tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and _HPARAM.match(stmt.targets[0].id) and _numeric(stmt.value):
            constants.setdefault(stmt.targets[0].id, stmt)
    if not constants:
        return
    used = set()
    for name in m.nodes_by_type.get(ast.Name, ()):
        if name.id in constants and name.id not in used and isinstance(name.ctx, ast.Load) and \
                _feeds_training(ctx, name):
            used.add(name.id)
    for constant in sorted(used, key=lambda n: constants[n].lineno):
        facts.anchors["hparam:" + constant] = _anchor(ctx, constants[constant])
    if used:
        facts.flags.add("hardcoded_hparams")
        facts.counts["hparams"] = len(used)


# TR201/TR205/TR206: explicit CUDA use, hard-coded CPU devices, inference entry points,
# test files, and mixed precision spelled as trainer/script options.
_MIXED_PRECISION_KEYWORDS = frozenset({"fp16", "bf16", "mixed_precision", "amp", "use_amp", "autocast"})


def _device_and_inference_facts(ctx: "FileContext", facts: FileFacts) -> None:
    m = ctx.model
    facts.imports = tuple(sorted(m.imported_modules | {q.rsplit(".", 1)[0] for q in m.aliases.values()}
                                 | set(m.aliases.values())))
    if ctx.is_test_file:
        facts.flags.add("test_file")
    if m.cuda_evidence is not None:
        facts.flags.add("cuda_explicit")
        if ctx.advice.gpu_only_research:
            facts.flags.add("gpu_only_research")  # advice about CPUs, AMP, OOM does not pay here
    for call in m.calls:
        if any(kw.arg in _MIXED_PRECISION_KEYWORDS for kw in call.keywords):
            facts.flags.add("mixed_precision")
        if isinstance(call.func, ast.Attribute):
            if call.func.attr == "to" and any(_is_half(ctx, a) for a in call.args):
                facts.flags.add("mixed_precision")
            if call.func.attr == "compile" and m.kind_of(call.func.value) == "model":
                facts.flags.add("compile")  # nn.Module.compile()
            if call.func.attr in ("add_argument", "add") and any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) and
                    a.value.lstrip("-").replace("-", "_") in _MIXED_PRECISION_KEYWORDS for a in call.args):
                facts.flags.add("mixed_precision")  # --amp / --fp16 command-line switch
    if ctx.training_loops:
        cpu = _hardcoded_cpu_device(ctx)
        if cpu is not None:
            facts.flags.add("hardcodes_cpu")
            facts.anchors.setdefault("cpu_device", _anchor(ctx, cpu))
    elif not ctx.is_test_file and "backward" not in m.calls_by_name:
        entry = _inference_entry(ctx)
        if entry is not None:
            facts.flags.add("inference")
            facts.anchors.setdefault("inference", _anchor(ctx, entry))


def _is_cpu_device(ctx: "FileContext", node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and ctx.qualname(node.func) == "torch.device" and len(node.args) == 1:
        node = node.args[0]
    return isinstance(node, ast.Constant) and node.value == "cpu"


def _hardcoded_cpu_device(ctx: "FileContext") -> ast.AST | None:
    """``device = "cpu"`` / ``torch.device("cpu")`` bound once, unconditionally, to a
    device name (module level or a function), in a module that trains."""
    for node in ctx.model.nodes_by_type.get(ast.Assign, ()):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        target = node.targets[0]
        if "device" not in target.id.lower() or "cpu" in target.id.lower() or \
                not _is_cpu_device(ctx, node.value):
            continue
        values, _ = ctx.model.assignments(target)
        if len(values) != 1:
            continue  # reassigned somewhere (e.g. to "cuda" when available)
        conditional = False
        for anc in ctx.ancestors(node):
            if isinstance(anc, (ast.If, ast.Try, ast.ExceptHandler, ast.Match)) and not (
                    isinstance(anc, ast.If) and ctx.flow.is_main_guard(anc.test)):
                conditional = True
                break
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                break
        if not conditional:
            return node
    return None


def _inference_entry(ctx: "FileContext") -> ast.AST | None:
    """The first function (or module-level statement) that calls a model with
    autograd off, outside ``nn.Module`` classes, in a module that puts a model in
    eval mode (before the call, in ``__init__``, or at import time)."""
    flow = ctx.flow
    m = ctx.model
    evals = [c for c in m.calls_by_name.get("eval", []) + m.calls_by_name.get("train", [])
             if not ctx.in_module_class(c) and (
                 flow.classify(c) == "eval" or dotted(c.func.value if isinstance(c.func, ast.Attribute)
                                                      else c.func) in flow.eval_targets)]
    if not evals:
        return None
    for call in sorted(m.calls, key=lambda c: (c.lineno, c.col_offset)):
        if ctx.in_module_class(call) or not flow.is_model_call(call) or not flow.grad_disabled(call):
            continue
        func = ctx.enclosing_function(call)
        if ctx.advice.smoke_test(call) or ctx.advice.validation_of_training(func):
            continue  # a shape check, or the validation pass of a training module
        if func is None:
            stmt = call
            for anc in ctx.ancestors(call):
                if isinstance(anc, ast.stmt) and isinstance(getattr(anc, "_tr_parent", None), ast.Module):
                    stmt = anc
                    break
            return stmt
        return func
    return None


# TR405: seeding and unseeded use of the NumPy / Python global RNGs.
_TORCH_ONLY_SEEDS = frozenset({"torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all"})


_NOT_SEEDING = frozenset({"initial_seed", "get_seed", "seed_worker"})


_NUMPY_RANDOM_OK = frozenset({"seed", "get_state", "set_state", "SeedSequence", "Generator", "PCG64",
                              "BitGenerator", "MT19937", "Philox", "SFC64"})


_PY_RANDOM_USES = frozenset({"random", "randint", "randrange", "choice", "choices", "shuffle", "sample",
                             "uniform", "gauss", "normalvariate", "betavariate", "expovariate",
                             "triangular", "lognormvariate", "vonmisesvariate", "getrandbits"})


def _random_facts(ctx: "FileContext", facts: FileFacts) -> None:
    """Flags ``seed_helper`` (a seeding call other than torch's own ``manual_seed``:
    ``seed_everything``, ``set_seed``, a project helper -- assumed to seed every RNG),
    ``numpy_random`` / ``python_random`` (draws from the global NumPy / ``random``
    generators, anchored at the first one)."""
    m = ctx.model
    for call in sorted(m.calls, key=position):
        q = m.qualname(call.func) or ""
        name = call.func.attr if isinstance(call.func, ast.Attribute) else \
            call.func.id if isinstance(call.func, ast.Name) else ""
        if "seed" in name.lower() and name not in _NOT_SEEDING and q not in _TORCH_ONLY_SEEDS and \
                q not in ("numpy.random.seed", "random.seed") and name != "manual_seed":
            facts.flags.add("seed_helper")
        last = q.rsplit(".", 1)[-1]
        if q.startswith("numpy.random.") and q.count(".") == 2 and last not in _NUMPY_RANDOM_OK and \
                not (last in ("default_rng", "RandomState") and (call.args or call.keywords)):
            facts.flags.add("numpy_random")
            facts.anchors.setdefault("numpy_random", _anchor(ctx, call))
        elif q.startswith("random.") and q.count(".") == 1 and last in _PY_RANDOM_USES:
            facts.flags.add("python_random")
            facts.anchors.setdefault("python_random", _anchor(ctx, call))


_SEEDING_NAMES = frozenset({"manual_seed", "manual_seed_all", "seed", "seed_everything", "set_seed"})


def _seed_guard_facts(ctx: "FileContext", facts: FileFacts) -> None:
    """Anchors ``seed_truthiness:<n>``: ``if args.seed: torch.manual_seed(args.seed)``
    (or ``... if seed else None``), a truthiness test that skips seeding for a seed
    of 0. Quiet when the file declares the seed option with ``default=0`` (0 then
    means "do not seed" by convention)."""
    m = ctx.model
    if any(isinstance(kw.value, ast.Constant) and kw.value.value == 0 and kw.arg == "default" and any(
            isinstance(a, ast.Constant) and isinstance(a.value, str) and "seed" in a.value for a in call.args)
           for call in m.calls_by_name.get("add_argument", []) for kw in call.keywords):
        return
    index = 0
    for node in [*m.nodes_by_type.get(ast.If, ()), *m.nodes_by_type.get(ast.IfExp, ())]:
        test = node.test
        name = test.attr if isinstance(test, ast.Attribute) else test.id if isinstance(test, ast.Name) else ""
        if "seed" not in name.lower():
            continue
        text = ast.unparse(test)
        body = node.body if isinstance(node.body, list) else [node.body]
        for sub in (n for stmt in body for n in ast.walk(stmt)):
            if not isinstance(sub, ast.Call):
                continue
            callee = sub.func.attr if isinstance(sub.func, ast.Attribute) else \
                sub.func.id if isinstance(sub.func, ast.Name) else ""
            if (callee in _SEEDING_NAMES or "seed" in callee.lower()) and any(
                    ast.unparse(a) == text for a in [*sub.args, *(k.value for k in sub.keywords)]):
                facts.anchors[f"seed_truthiness:{index}"] = _anchor(ctx, test)
                index += 1
                break


_SKIPPERS = frozenset({"skip_first_batches", "islice"})


def _kept_skip_facts(ctx: "FileContext", facts: FileFacts) -> None:
    """Anchors ``resume_skip_kept:<n>``: inside an epoch loop, a conditional
    ``loader = accelerator.skip_first_batches(loader, n)`` (or ``itertools.islice``)
    rebinds the very name the inner loop iterates, so every later epoch skips too."""
    m = ctx.model
    index = 0
    for call in [c for name in _SKIPPERS for c in m.calls_by_name.get(name, [])]:
        stmt = parent(call)
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == stmt.targets[0].id):
            continue
        name = stmt.targets[0].id
        chain = list(ancestors(stmt))
        guard = next((a for a in chain if isinstance(a, ast.If)), None)
        loop = next((a for a in chain if isinstance(a, LoopNode)), None)
        if guard is None or loop is None or not any(a is loop for a in ancestors(guard)):
            continue  # not a one-epoch rebinding inside the epoch loop
        stores = [n for n in ast.walk(loop) if isinstance(n, ast.Name) and n.id == name
                  and isinstance(n.ctx, ast.Store)]
        iterated = any(isinstance(n, ast.For) and n is not loop and any(
            isinstance(i, ast.Name) and i.id == name for i in ast.walk(n.iter)) for n in ast.walk(loop))
        if len(stores) == 1 and iterated:
            facts.anchors[f"resume_skip_kept:{index}"] = _anchor(ctx, stmt)
            index += 1


def _scaler_left_out_facts(ctx: "FileContext", facts: FileFacts) -> None:
    """Anchors ``state_dict_without_scaler:<n>``: a class's ``state_dict()`` returns a
    dict holding an optimizer's ``state_dict()`` but nothing of the ``GradScaler``
    that the class (or the step runner it holds in an attribute) builds, and no
    other place of the file saves that scaler's state."""
    m = ctx.model
    owners: dict[str, str] = {}  # class name -> attribute holding its GradScaler
    for node in m.nodes_by_type.get(ast.Assign, ()):
        if isinstance(node.value, ast.Call) and (m.qualname(node.value.func) or "").endswith("GradScaler") and \
                len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) and \
                isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self":
            cls = m.enclosing_class(node)
            if cls is not None:
                owners[cls.name] = node.targets[0].attr
    if not owners or any(
            isinstance(c.func, ast.Attribute) and c.func.attr == "state_dict" and isinstance(c.func.value, ast.Attribute)
            and c.func.value.attr in owners.values() for c in m.calls_by_name.get("state_dict", [])):
        return
    index = 0
    for cls in m.classes.values():
        # the attribute path from this class to a scaler: "" (its own) or "<attr>." (a held runner)
        reach = {"": owners[cls.name]} if cls.name in owners else {}
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                    isinstance(node.value.func, ast.Name) and node.value.func.id in owners and \
                    len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
                reach[node.targets[0].attr + "."] = owners[node.value.func.id]
        method = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "state_dict"), None)
        if not reach or method is None:
            continue
        for ret in (n for n in ast.walk(method) if isinstance(n, ast.Return) and isinstance(n.value, ast.Dict)):
            texts = [ast.unparse(v) for v in ret.value.values if v is not None]
            if any(ret.value.keys[i] is None for i in range(len(ret.value.keys))):
                continue  # **other: unknown entries
            keys = [k.value if isinstance(k, ast.Constant) else "" for k in ret.value.keys]
            if any(t.endswith(".state_dict()") and ("optim" in t or "optim" in str(k))
                   for k, t in zip(keys, texts)) and \
                    not any("scaler" in t.lower() for t in texts):
                facts.anchors[f"state_dict_without_scaler:{index}"] = _anchor(ctx, ret)
                index += 1


_COUNTER_PARAMS = frozenset({"updates", "num_updates", "n_updates", "update_count", "step", "steps",
                             "global_step", "optimization_step"})
_COUNTER_KEYS = frozenset({"epoch", "step", "global_step", "iteration", "iter", "updates"})


def _counter_class_facts(ctx: "FileContext", facts: FileFacts) -> None:
    """Anchors ``counter_class:<Class>``: a class whose ``__init__`` takes an update
    counter (``updates=0``) stored on ``self`` and advanced by another method
    (an EMA's warm-up ramp); ``built_after_resume:<Class>:<n>``: ``Class(...)``
    called without that counter after a counter is read back from a checkpoint
    (``start_epoch = ckpt["epoch"] + 1``) in the same function."""
    m = ctx.model
    for cls in m.classes.values():
        init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if init is None:
            continue
        args = init.args.args[len(init.args.args) - len(init.args.defaults):]
        counters = {a.arg for a, d in zip(args, init.args.defaults)
                    if a.arg in _COUNTER_PARAMS and isinstance(d, ast.Constant) and d.value == 0}
        if not counters:
            continue
        stored = {t.attr for n in ast.walk(init) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name)
                  and n.value.id in counters for t in n.targets
                  if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
        if stored and any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute) and
                          n.target.attr in stored for f in cls.body if f is not init for n in ast.walk(f)):
            facts.anchors[f"counter_class:{cls.name}"] = _anchor(ctx, cls)
    restored = _counter_restores(m)
    if not restored:
        return
    index = 0
    for defs in m.functions.values():
        for func in defs:
            first = restored.get(id(func))
            if first is None:
                continue
            for call in (n for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                         and n.func.id[:1].isupper()):  # a class being built
                if call.lineno > first and not any(k.arg in _COUNTER_PARAMS or k.arg is None
                                                   for k in call.keywords) and len(call.args) <= 2:
                    facts.anchors[f"built_after_resume:{call.func.id}:{index}"] = _anchor(ctx, call)
                    index += 1


def _counter_restores(m) -> dict[int, int]:
    """id(function) -> the first line where it (or a function inside it) assigns a
    value that reads a counter back from a mapping (``start = ckpt["epoch"] + 1``).
    Found from the model's index of subscripts, not by walking every function."""
    first: dict[int, int] = {}
    for sub in m.nodes_by_type.get(ast.Subscript, ()):
        if not (isinstance(sub.slice, ast.Constant) and sub.slice.value in _COUNTER_KEYS
                and isinstance(sub.value, ast.Name)):
            continue
        child, assign = sub, None
        for anc in ancestors(sub):
            if isinstance(anc, ast.Assign):
                assign = anc if child is anc.value else None
                break
            if isinstance(anc, ast.stmt):
                break
            child = anc
        if assign is None:
            continue
        for anc in ancestors(assign):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
                line = first.get(id(anc))
                first[id(anc)] = assign.lineno if line is None else min(line, assign.lineno)
    return first


_RESUME_TESTS = ("resume", "restore", "continu")


def _sets_lr(func: ast.AST) -> bool:
    """The function assigns a learning rate: ``group["lr"] = ...`` or ``x.lr = ...``."""
    return any(isinstance(n, ast.Assign) and any(
        (isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == "lr") or
        (isinstance(t, ast.Attribute) and t.attr == "lr") for t in n.targets) for n in ast.walk(func))


def _feeds_lr(name: str, loop: ast.AST, setters: set[str]) -> bool:
    """``name`` is read, inside ``loop``, by a call of a local LR-setting function or
    by an assignment of a learning rate."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node.func, ast.Name) else ""
            parts = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Assign) and _sets_lr(node):
            callee, parts = "", [node.value]
        else:
            continue
        if (callee in setters or not callee) and any(
                isinstance(n, ast.Name) and n.id == name for p in parts for n in ast.walk(p)):
            return True
    return False


def _lr_counter_facts(ctx: "FileContext", facts: FileFacts) -> None:
    """Anchors ``lr_counter_restart:<n>:<counter>:<start>``: a training loop resumes at
    an offset (``for it in range(args.start_iter, ...)``) while a counter the learning
    rate is computed from (``step_index = 0`` before it, ``step_index += 1`` inside,
    read by an LR-setting function or a ``group["lr"] =`` assignment) starts again at
    its initial value: the LR decays already done are undone. Anchored on the resume
    in the same scope (the first statement of an ``if args.resume:`` branch before the
    loop), else on the counter's initial assignment."""
    m = ctx.model
    setters = {f.name for defs in m.functions.values() for f in defs if _sets_lr(f)}
    training = [tl.node for tl in ctx.training_loops]
    index = 0
    for loop in m.nodes_by_type.get(ast.For, ()):
        it = loop.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and len(it.args) >= 2 and not isinstance(it.args[0], ast.Constant)):
            continue  # not a loop resuming at an offset
        if not any(t is loop or any(a is loop for a in ancestors(t)) for t in training):
            continue
        scope = m.scope_of(loop)
        stores = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                  and m.scope_of(n) is scope]
        seen = set()
        for aug in (n for n in ast.walk(loop) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)):
            name = aug.target.id
            if name in seen:
                continue
            seen.add(name)
            inits = [n for n in stores if n.id == name and n is not aug.target]
            init = parent(inits[0]) if len(inits) == 1 else None
            if not (isinstance(init, ast.Assign) and isinstance(init.value, ast.Constant) and
                    type(init.value.value) is int and init.lineno < loop.lineno and
                    not any(a is loop for a in ancestors(init))):
                continue
            if any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name
                   and not any(a is loop for a in ancestors(n)) for n in ast.walk(scope)):
                continue
            if not _feeds_lr(name, loop, setters):
                continue
            anchor_node = init
            for branch in (n for n in ast.walk(scope) if isinstance(n, ast.If) and n.lineno < loop.lineno
                           and m.scope_of(n) is scope):
                if any(w in ast.unparse(branch.test).lower() for w in _RESUME_TESTS):
                    anchor_node = next((b for b in branch.body if any(isinstance(c, ast.Call) for c in ast.walk(b))
                                        and not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Call)
                                                 and isinstance(b.value.func, ast.Name)
                                                 and b.value.func.id == "print")), anchor_node)
                    break
            start = ast.unparse(it.args[0]).replace(":", " ")
            facts.anchors[f"lr_counter_restart:{index}:{name}:{start}"] = _anchor(ctx, anchor_node)
            index += 1


_PICKLE_DUMPS = {"pickle.dump": "pickle", "_pickle.dump": "pickle", "cPickle.dump": "pickle",
                 "dill.dump": "dill", "joblib.dump": "joblib", "sklearn.externals.joblib.dump": "joblib"}


_PLACEMENT_CALLS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                              "torch.nn.parallel.DistributedDataParallel", "torch.cuda.set_device"})
_PLACEMENT_ATTRS = frozenset({"cuda", "xpu", "mps", "npu", "hpu", "prepare", "prepare_model", "setup",
                              "setup_module"})
_PLACEMENT_KEYWORDS = frozenset({"device", "map_location", "device_map", "accelerator", "gpus",
                                 "devices", "device_ids"})


def _places_on_accelerator(ctx: "FileContext") -> bool:
    """Whether the file puts tensors or modules on an accelerator (or may: an
    unknown device counts). Only a dtype or a literal "cpu" does not."""
    m = ctx.model
    for call in m.calls:
        q = m.qualname(call.func) or ""
        if q in _PLACEMENT_CALLS or q.startswith("deepspeed."):
            return True
        if q == "torch.device" and call.args and m.device_kind(call.args[0]) != "cpu":
            return True
        if isinstance(call.func, ast.Attribute):
            attr = call.func.attr
            if attr in _PLACEMENT_ATTRS and not q.startswith(("torch.backends.", "torch.cuda.", "torch.mps.")):
                return True
            if attr == "to" and any(m.device_kind(a) not in ("cpu", "dtype") for a in call.args[:1]):
                return True
        for kw in call.keywords:
            if kw.arg in _PLACEMENT_KEYWORDS and m.device_kind(kw.value) not in ("cpu", "dtype") and \
                    not (isinstance(kw.value, ast.Constant) and kw.value.value in (None, False, 0, "cpu")):
                return True
    return False


def collect_facts(ctx: "FileContext") -> FileFacts:
    facts = FileFacts(path=ctx.path, is_notebook=ctx.source.is_notebook, has_torch=ctx.has_torch,
                      module_classes=tuple(sorted(ctx.model.module_classes)),
                      imports=_imported_names(ctx))
    m = ctx.model
    dumps = set()
    for call in m.calls:
        q = m.qualname(call.func)
        if q:
            facts.flags.update(_flags_for(q))
            if q in _PICKLE_DUMPS:
                dumps.add(_PICKLE_DUMPS[q])
        if isinstance(call.func, ast.Attribute):
            attr_flag = _ATTR_FLAGS.get(call.func.attr)
            if attr_flag:
                facts.flags.add(attr_flag)
        for kw in call.keywords:
            if kw.arg == "device" and _mentions_accelerator(kw.value):
                facts.flags.add("uses_cuda")
            if kw.arg in ("precision",) or (kw.arg == "dtype" and _is_half(ctx, kw.value)):
                facts.flags.add("mixed_precision")
            if kw.arg in ("padding_value", "pad_token_id"):
                facts.flags.add("pads_sequences")
        if isinstance(call.func, ast.Attribute) and call.func.attr == "to" and call.args and \
                _mentions_accelerator(call.args[0]):
            facts.flags.add("uses_cuda")
    facts.pickle_dumps = tuple(sorted(dumps))
    facts.places_on_accelerator = _places_on_accelerator(ctx)
    facts.devices = devices_built(ctx)
    for name in m.aliases.values():
        if name.startswith(("lightning", "accelerate", "deepspeed", "transformers.Trainer")):
            facts.flags.add("trainer_framework")
    if m.module_classes:
        for call in m.calls:
            q = m.qualname(call.func) or ""
            if q.startswith(("torch.nn.BatchNorm", "torch.nn.SyncBatchNorm")):
                cls = m.enclosing_class(call)
                if cls is not None and cls.name in m.module_classes:
                    facts.flags.add("batchnorm")
                    break
    for tl in ctx.training_loops:
        facts.flags.add("trains")
        facts.anchors.setdefault("training_loop", _anchor(ctx, tl.node))
        if tl.epoch_loop is not None:
            facts.flags.add("epoch_loop")
            facts.anchors.setdefault("epoch_loop", _anchor(ctx, tl.epoch_loop))
    facts.counts["training_loops"] = len(ctx.training_loops)
    _loader_without_drop_last_facts(ctx, facts)
    _download_and_hparam_facts(ctx, facts)
    _device_and_inference_facts(ctx, facts)
    _random_facts(ctx, facts)
    _seed_guard_facts(ctx, facts)
    _kept_skip_facts(ctx, facts)
    _scaler_left_out_facts(ctx, facts)
    _counter_class_facts(ctx, facts)
    _lr_counter_facts(ctx, facts)
    if "load" in m.calls_by_name or "save" in m.calls_by_name:
        facts.checkpoints = checkpoint_facts(ctx)
    return facts
