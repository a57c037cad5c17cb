"""Where advice pays: the contexts in which performance/architecture/hygiene
advice is not worth a comment (issue 11, point 2).

Rules ask ``ctx.advice.<question>``; each answer is a short reason (for the
rule's own wording or debugging) or None when the advice applies. The
questions are about the code, never about one repository:

* ``loader_skip(call, workers=...)``: DataLoader tuning (workers, pinned
  memory, persistent workers, drop_last) does not pay on evaluation loaders,
  over in-memory datasets, in notebooks (demos and tutorials), and -- for
  worker advice -- when ``collate_fn`` is a lambda or a function defined
  inside another function (workers cannot pickle it under spawn).
* ``smoke_test(node)``: the code runs in a smoke test (``def test(): net =
  Net(); y = net(torch.randn(2, 3, 32, 32))``), where no advice pays.
* ``gpu_only_research``: the file is GPU-only distributed research code
  (initialises a NCCL/``env://`` process group or runs under
  ``torch.distributed.launch``/``torchrun`` conventions and places everything
  with ``.cuda()``): CPU fallbacks and CUDA-availability checks are not its goal.
* ``validation_of_training(func)``: the function is the per-epoch
  validation of a module that trains (an inference path of a training script,
  not a deployment path).
* ``timed_on_fixed_data(loop)``: the loop measures speed or memory -- it
  iterates ``range(...)``, a clock is read before and after it in the same
  function, and the model calls in it only read tensors built before it by
  tensor factories (``torch.ones(...)``, fake inputs): what it trains is
  thrown away.
* ``objective_free(loop)``: every ``backward()`` of the loop is on a bare
  ``.sum()``/``.mean()`` of a model output fed only random numbers (no target,
  no loss function): a demo of the mechanics (parallelism, hooks), whose
  training is thrown away.
* ``trained_on_noise(node)``: the training loop around ``node`` learns from
  random numbers -- every loader it iterates reads a dataset of random data
  (``ctx.flow.random_dataset``: a ``TensorDataset(torch.randn(...), ...)``, a
  ``Dataset`` class filled by ``np.random``), or the loss at ``node`` is computed on
  the output of a model fed only random numbers (``tinymodel(torch.randn(200,
  100))``, ``ctx.flow.random_numbers``): an API walk-through, whose training
  quality nobody relies on.
* ``given_code(node)``: ``node`` is code an assignment hands its students: the
  file marks where students write (``TODO`` ... ``END OF YOUR CODE``,
  ``START CODE HERE`` ... ``END CODE HERE``, ``BEGIN SOLUTION`` ... ``END
  SOLUTION``) and ``node`` lies outside every such block -- the instructor's
  scaffold, which the student was not asked to change.
* ``one_off(node)``: the code runs only when its author runs it -- a notebook,
  a test, a script outside any installable package -- rather than shipping
  to others (a module of an installable package, a ``hubconf.py``, a web
  service, or a package module doing it at import time).
"""

from __future__ import annotations

import ast
import os
import re
from functools import cached_property
from typing import TYPE_CHECKING

from torchreview.engine.semantic_common import FunctionNode, ancestors, argument_for, parent

# Clocks a measuring loop reads before and after itself.
_CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "time.process_time",
                     "time.perf_counter_ns", "time.time_ns", "timeit.default_timer",
                     # peak-memory probes read around a loop measure it the same way (torchgpipe's
                     # memory benchmarks: reset the peak, two steps on fake data, read the peak)
                     "torch.cuda.reset_max_memory_cached", "torch.cuda.reset_max_memory_allocated",
                     "torch.cuda.reset_peak_memory_stats", "torch.cuda.max_memory_cached",
                     "torch.cuda.max_memory_allocated", "torch.cuda.max_memory_reserved"})

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext

DATALOADER = "torch.utils.data.DataLoader"
_EVAL_WORDS = re.compile(r"(?<![a-z])(val|valid|validation|test|testing|eval|evaluation|evaluate|predict|"
                         r"prediction|infer|inference|dev(?!ice)|holdout|query|gallery)", re.I)
_SYNTHETIC = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.randint",
                        "torch.empty", "torch.full", "torch.arange", "numpy.random.randn", "numpy.random.rand",
                        "numpy.random.randint", "numpy.random.normal", "numpy.random.uniform"})
_DIST_INIT = frozenset({"torch.distributed.init_process_group", "torch.distributed.launch"})
# Frameworks that serve requests: code importing them runs in a long-lived service.
_SERVICES = ("fastapi", "flask", "starlette", "aiohttp", "django", "tornado", "sanic", "bentoml",
             "ray.serve", "ts.torch_handler", "litserve", "gradio", "streamlit", "uvicorn")
# comments that close and open the part of an assignment its students write
_END_MARK = re.compile(r"\bEND\s+(?:OF\s+)?(?:YOUR\s+CODE|CODE\s+HERE|SOLUTION|TODO)\b", re.I)
_START_MARK = re.compile(r"\bTODO\b|\bYOUR\s+CODE\b|\bSTART\s+(?:OF\s+)?(?:YOUR\s+)?CODE\b|"
                         r"\bBEGIN\s+SOLUTION\b", re.I)
_INSTALLABLE = ("setup.py", "pyproject.toml", "setup.cfg")
_EXAMPLE_FOLDERS = frozenset({"examples", "example", "demo", "demos", "tutorial", "tutorials"})
_BENCHMARK_FOLDERS = frozenset({"benchmark", "benchmarks", "bench"})
# words of a file name that says the script measures rather than computes results
_MEASURING_WORDS = frozenset({"benchmark", "benchmarks", "bench", "latency", "throughput", "profile", "profiling",
                              "timing"})
# top-level packages of a repository that its install does not ship (importable for the
# repository's own runs: `python -m examples.dmm`, `pytest tests/`)
_UNSHIPPED_TOP = _EXAMPLE_FOLDERS | _BENCHMARK_FOLDERS | {"tests", "test", "docs", "scripts"}


class Advice:
    """Answers about one file; built lazily by ``FileContext.advice``."""

    def __init__(self, ctx: "FileContext"):
        self.ctx = ctx

    # ------------------------------------------------------------ loaders
    def loader_skip(self, call: ast.Call, *, workers: bool = False) -> str | None:
        ctx = self.ctx
        if ctx.source.is_notebook:
            return "notebook"
        if self.evaluation_loader(call):
            return "evaluation loader"
        if ctx.flow.dataset_in_memory(ctx.arg(call, "dataset", 0)):
            return "in-memory dataset"
        if workers and self._local_collate(call):
            return "local collate_fn"
        return None

    def evaluation_loader(self, call: ast.Call, *, any_sampler: bool = False) -> bool:
        """A loader built for validation/test/prediction: it does not shuffle (no
        ``shuffle=True``, no random/distributed sampler) and its target, dataset,
        sampler, building function or file is named for evaluation, or it is
        only read under ``no_grad``. With ``any_sampler`` (asked about the sampler
        itself), a sampler given inline does not settle it."""
        ctx = self.ctx
        shuffle = ctx.arg(call, "shuffle", 2)
        if isinstance(shuffle, ast.Constant) and shuffle.value is True:
            return False
        if any(call in ctx.flow.iterated_loaders(tl.node) for tl in ctx.training_loops):
            return False
        sampler = ctx.arg(call, "sampler", 3)
        if not any_sampler and isinstance(sampler, ast.Call) and (ctx.qualname(sampler.func) or "").endswith(
                ("RandomSampler", "DistributedSampler")) and not any(
                k.arg == "shuffle" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in sampler.keywords):
            return False  # samples in random order: a training loader
        words = [ctx.text(a) for a in (ctx.arg(call, "dataset", 0), sampler) if a is not None]
        words.append(os.path.splitext(os.path.basename(ctx.path))[0])  # eval_knn.py, predict.py
        stmt = next((a for a in ancestors(call) if isinstance(a, ast.stmt)), None)
        if isinstance(stmt, ast.Assign):
            words += [ctx.text(t) for t in stmt.targets]
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            words.append(ctx.text(stmt.target))
        func = ctx.enclosing_function(call)
        if func is not None:
            words.append(func.name)
        if any(_EVAL_WORDS.search(w.replace("_", " ")) for w in words):
            return not ("train" in " ".join(words).lower() and shuffle is not None and not
                        isinstance(shuffle, ast.Constant))  # `shuffle=(split == "train")`: both
        return any(isinstance(loop, (ast.For, ast.AsyncFor)) and ctx.flow.grad_disabled(loop)
                   and call in ctx.flow.iterated_loaders(loop) for loop in ctx.model.loops)

    def _local_collate(self, call: ast.Call) -> bool:
        collate = self.ctx.arg(call, "collate_fn", 6)
        if isinstance(collate, ast.Lambda):
            return True
        if isinstance(collate, ast.Name):
            for d in self.ctx.model.functions.get(collate.id, []):
                if any(isinstance(a, FunctionNode) for a in ancestors(d)):
                    return True
        return False

    # ------------------------------------------------------------ smoke tests
    def smoke_test(self, node: ast.AST) -> bool:
        """``node`` sits in a function named ``test``/``test_*``/``*_test``/``demo``
        that calls a model on synthetic input (``torch.randn(...)``), in the
        ``__main__`` block of a model file that does the same and trains nothing (a
        ``backward()`` with no optimizer step checks that gradients flow), or in a test file."""
        ctx = self.ctx
        if ctx.is_test_file:
            return True
        func = node if isinstance(node, FunctionNode) else ctx.enclosing_function(node)
        while func is not None:
            if func in self._smoke_functions:
                return True
            func = ctx.enclosing_function(func)
        guard = self._model_self_test
        return guard is not None and any(a is guard for a in ctx.ancestors(node))

    @cached_property
    def _model_self_test(self) -> ast.AST | None:
        """The ``if __name__ == "__main__":`` block of a file that defines modules, when
        it feeds synthetic input (``torch.rand(1, 3, 224, 224)``) and trains nothing:
        the model file checking its own shapes."""
        ctx = self.ctx
        if not ctx.model.module_classes:
            return None
        for stmt in ctx.tree.body:
            if isinstance(stmt, ast.If) and "__main__" in ast.dump(stmt.test):
                subs = list(ast.walk(stmt))
                synthetic = any(isinstance(n, ast.Call) and (ctx.qualname(n.func) or "") in _SYNTHETIC for n in subs)
                # a `backward()` alone checks that gradients flow; an optimizer step trains
                trains = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                             n.func.attr in ("step", "load_state_dict") or
                             isinstance(n, ast.Call) and (ctx.qualname(n.func) or "").endswith(("DataLoader", ".load"))
                             for n in subs)
                return stmt if synthetic and not trains else None
        return None

    @cached_property
    def _smoke_functions(self) -> frozenset[ast.AST]:
        ctx = self.ctx
        out = set()
        for name, defs in ctx.model.functions.items():
            low = name.lower()
            if not (low in ("test", "demo", "smoke", "sanity_check") or low.startswith(("test_", "_test"))
                    or low.endswith(("_test", "_demo", "_smoke"))):
                continue
            for d in defs:
                if isinstance(parent(d), ast.ClassDef) and not low.startswith("test"):
                    continue
                if any(isinstance(sub, ast.Call) and (ctx.qualname(sub.func) or "") in _SYNTHETIC
                       for sub in ctx.model.subtree(d)):
                    out.add(d)
        return frozenset(out)

    # ------------------------------------------------------------ GPU-only research code
    @cached_property
    def gpu_only_research(self) -> bool:
        """The file sets up multi-GPU training itself (a process group, or the
        ``LOCAL_RANK``/``--local_rank`` launcher convention) and places tensors
        with bare ``.cuda()``: it is written for GPU machines only."""
        ctx = self.ctx
        distributed = False
        for call in ctx.model.calls:
            q = ctx.qualname(call.func) or ""
            if q in _DIST_INIT or q.endswith("init_distributed_mode") or \
                    q == "torch.nn.parallel.DistributedDataParallel":
                distributed = True
                break
        if not distributed:
            text = ctx.source.text
            distributed = "LOCAL_RANK" in text or "local_rank" in text or "init_distributed_mode" in text
        if not distributed:
            return False
        return any(isinstance(c.func, ast.Attribute) and c.func.attr == "cuda" for c in ctx.model.calls)

    # ------------------------------------------------------------ validation of a training module
    def validation_of_training(self, func: ast.AST | None) -> bool:
        """``func`` evaluates a model (``evaluate``/``validate``/``test``...)
        in a file that also trains one, or is called from a training script's
        epoch loop: its inference is bookkeeping, not a deployment path."""
        ctx = self.ctx
        if func is None or not (ctx.training_loops or ctx.flow.step_functions):
            return False
        if _EVAL_WORDS.search(func.name.replace("_", " ")):
            return True
        return any(ctx.flow.training_loop_of(site) is not None or any(
            tl.epoch_loop is not None and site in set(ctx.model.subtree(tl.epoch_loop))
            for tl in ctx.training_loops) for site in ctx.flow.call_sites(func))

    # ------------------------------------------------------------ one-off code vs shipped code
    def one_off(self, node: ast.AST) -> str | None:
        """Why ``node`` runs only when its author runs it (a notebook, a test, a
        benchmark, a script outside any installable package), or None when the code ships:
        a module of an installable package (its folder holds ``__init__.py`` up
        to a root with ``setup.py``/``pyproject.toml``/``setup.cfg``), a
        ``hubconf.py``, a file that imports a serving framework (FastAPI, Flask,
        Gradio, TorchServe, ...), or a package module that does it at import
        time (module level)."""
        ctx = self.ctx
        if ctx.source.is_notebook:
            return "notebook"
        if ctx.is_test_file:
            return "test"
        if self.benchmark_code:
            return "benchmark"  # run by its authors to measure, like a script
        if self._ships:
            return None
        if self._package_dir is not None and ctx.enclosing_function(node) is None and \
                ctx.enclosing_class(node) is None and not _under_main_guard(node):
            return None  # a package module doing it at import time
        return "script"

    def given_code(self, node: ast.AST) -> bool:
        """``node`` is outside every student block of an assignment scaffold: the file closes
        at least one block with an end marker (``END OF YOUR CODE``, ``END CODE HERE``,
        ``END SOLUTION``, ``END TODO``), each block opening at the nearest marker before it
        (``TODO``, ``YOUR CODE``, ``START CODE HERE``, ``BEGIN SOLUTION``). The scaffold's
        own protocol (CS7643's `main.py` keeping the best model on the test loader, outside
        the TODO blocks of the training loop) is the course's choice, not the student's."""
        blocks = self._student_blocks
        if not blocks:
            return False
        line = getattr(node, "lineno", None)
        return line is not None and not any(start <= line <= end for start, end in blocks)

    @cached_property
    def _student_blocks(self) -> tuple[tuple[int, int], ...]:
        text = self.ctx.source.text
        if not _END_MARK.search(text):
            return ()
        blocks = []
        start = None
        for number, line in enumerate(text.splitlines(), 1):
            if "#" not in line:
                continue
            comment = line[line.index("#"):]
            if _END_MARK.search(comment):
                if start is not None:
                    blocks.append((start, number))
                start = None
            elif _START_MARK.search(comment) and start is None:
                start = number
        return tuple(blocks)

    @cached_property
    def example_code(self) -> bool:
        """The file is demonstration code: it sits under a folder named ``examples``,
        ``example``, ``demo(s)`` or ``tutorial(s)`` (a library's usage examples, a
        course's demos), where a recipe is shown, not a result reported."""
        parts = re.split(r"[/\\]+", (self.ctx.path or "").lower())[:-1]
        return any(p in _EXAMPLE_FOLDERS for p in parts)

    @cached_property
    def own_owners(self) -> frozenset[str]:
        """The GitHub owners (lower case) of the repositories this project says it is
        (engine/project_identity.py: packaging metadata, README badges, the ``origin``
        remote, a ``hubconf.py`` project's own hub examples), and the project's own
        distribution name (the Hub organisation named like it: ``lerobot/...``)."""
        import os

        from torchreview.engine.project_identity import own_github_repos, own_project_name
        from torchreview.engine.project_index import project_root

        path = getattr(self.ctx.project, "path", None) or self.ctx.path
        if not path:
            return frozenset()
        root = project_root(os.path.dirname(os.path.abspath(path)))
        owners = {r.split("/", 1)[0] for r in own_github_repos(root)}
        name = own_project_name(root)
        if name:
            owners.add(name)  # the Hub organisation named like the project (`lerobot/...` of lerobot)
        return frozenset(owners)

    def trained_on_noise(self, node: ast.AST) -> bool:
        """See the module's docstring (an exercise notebook's `Dataset` of
        `np.random.randn(100, 3, 224, 224)` images and random labels)."""
        ctx = self.ctx
        for tl in ctx.training_loops:
            loop = tl.node
            if not loop.lineno <= getattr(node, "lineno", -1) <= (loop.end_lineno or loop.lineno):
                continue
            loaders = ctx.flow.iterated_loaders(loop)
            if loaders and all(ctx.flow.random_dataset(ctx.arg(c, "dataset", 0)) for c in loaders):
                return True
            # no loader: the model is fed a tensor of random numbers (`output = tinymodel(input)` with
            # `input = torch.randn(200, 100)`, a scratch cell printing weights and gradients)
            if isinstance(node, ast.Call) and node.args:
                made = ctx.flow.origin(node.args[0])
                if isinstance(made, ast.Call) and made.args and ctx.kind_of(made.func) == "model" and \
                        all(ctx.flow.random_numbers(a) for a in made.args):
                    return True
        return False

    def objective_free(self, loop: ast.AST) -> bool:
        """See the module's docstring: every ``backward()`` of the loop is on a bare reduction of
        a model output fed only random numbers (``tp_model(torch.rand(32, 512, 4096)).sum()
        .backward()``: a parallelism demo's ten steps, judged noise in blind test 129) -- also in
        a local function the loop calls with random numbers (``training_step(x)`` with ``x =
        torch.randint(...)``, its ``loss = model(x).sum(); loss.backward()``)."""
        ctx = self.ctx
        sites: list[tuple[ast.Call, ast.Call | None, ast.AST | None]] = []  # (backward, call, callee)
        for node in ast.walk(loop):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
                sites.append((node, None, None))
                continue
            callee = ctx.flow.resolve_local_call(node)
            if callee is not None and not (loop.lineno <= callee.lineno <= (loop.end_lineno or loop.lineno)):
                sites += [(n, node, callee) for n in ast.walk(callee) if isinstance(n, ast.Call) and
                          isinstance(n.func, ast.Attribute) and n.func.attr == "backward"]
        if not sites:
            return False

        def noise(arg: ast.AST, call: ast.Call | None, callee: ast.AST | None) -> bool:
            if ctx.flow.random_numbers(arg):
                return True
            if call is None or not isinstance(arg, ast.Name):
                return False
            values, func = ctx.model.assignments(arg)
            if func is not callee or values:
                return False  # not a parameter of the called function, or rebound in it
            passed = argument_for(call, callee, arg.id)
            return passed is not None and ctx.flow.random_numbers(passed)

        for backward, call, callee in sites:
            reduced = ctx.flow.origin(backward.func.value)
            if not (isinstance(reduced, ast.Call) and isinstance(reduced.func, ast.Attribute) and
                    reduced.func.attr in ("sum", "mean") and not reduced.args and not reduced.keywords):
                return False
            made = ctx.flow.origin(reduced.func.value)
            # the network: a model by kind, or any callable that is no torch function
            # (`tp_model = parallelize_module(mha, mesh, plan)`: a wrapper's return)
            called = ctx.qualname(made.func) if isinstance(made, ast.Call) else None
            network = isinstance(made, ast.Call) and (ctx.kind_of(made.func) == "model" or called is None or
                                                      not called.startswith(("torch.", "numpy.", "builtins.")))
            if not (network and made.args and all(noise(a, call, callee) for a in made.args)):
                return False
        return True

    def timed_on_fixed_data(self, loop: ast.AST) -> bool:
        """See the module's docstring: a timing loop over fake inputs (a vendored
        attention benchmark's `for i in range(1000): loss.backward(); opt.step()`)."""
        from torchreview.engine.names import TENSOR_FACTORIES

        ctx = self.ctx
        if not (isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call) and
                ctx.qualname(loop.iter.func) == "builtins.range"):
            return False
        scope = ctx.enclosing_function(loop) or ctx.tree
        clocks = [c.lineno for c in ast.walk(scope) if isinstance(c, ast.Call) and
                  ctx.qualname(c.func) in _CLOCKS]
        if not (any(line < loop.lineno for line in clocks) and
                any(line > (loop.end_lineno or loop.lineno) for line in clocks)):
            return False
        inputs = [a for c in ast.walk(loop) if isinstance(c, ast.Call) and ctx.kind_of(c.func) == "model"
                  for a in c.args]
        if not inputs:
            # a network whose kind is not known (`net = modul.net`, PaSST's speed test): the
            # plain calls of unknown callables (`net(x)`, not `scaler.step(optimizer)`)
            # (values computed in the loop, such as `scaler.scale(loss)`, are not inputs)
            def outside(name: ast.Name) -> bool:
                return all(not (loop.lineno <= v.lineno <= (loop.end_lineno or loop.lineno))
                           for v in ctx.model.assignments(name)[0])

            inputs = [a for c in ast.walk(loop) if isinstance(c, ast.Call) and ctx.qualname(c.func) is None
                      and isinstance(c.func, ast.Name) and c.args
                      and all(isinstance(x, ast.Name) and outside(x) for x in c.args) for a in c.args]
        if not inputs:
            return False
        for arg in inputs:
            if not isinstance(arg, ast.Name):
                return False
            values = ctx.model.assignments(arg)[0]
            if not values:
                return False
            for value in values:
                if value.lineno > (loop.end_lineno or loop.lineno):
                    continue  # bound again after this loop (the next timing of the same function)
                if value.lineno >= loop.lineno:
                    return False  # rebound in the loop: read from somewhere each step
                probe = value
                while isinstance(probe, ast.Call) and isinstance(probe.func, ast.Attribute) and \
                        probe.func.attr in ("to", "cuda", "float", "half", "requires_grad_"):
                    probe = probe.func.value
                if isinstance(probe, ast.Name) and probe.id == arg.id:
                    continue  # `x = x.cuda()`: the same fake input moved (its other values decide)
                if not (isinstance(probe, ast.Call) and ctx.qualname(probe.func) in TENSOR_FACTORIES):
                    return False
        return True

    @cached_property
    def own_hub_namespaces(self) -> frozenset[str]:
        """The Hugging Face namespaces (lower case) whose files the project publishes itself
        (engine/project_identity.py ``own_hub_namespaces``: its README's demo Spaces and
        sponsors page, its GitHub owners, its distribution name)."""
        import os

        from torchreview.engine.project_identity import own_hub_namespaces
        from torchreview.engine.project_index import project_root

        path = getattr(self.ctx.project, "path", None) or self.ctx.path
        if not path:
            return frozenset()
        return own_hub_namespaces(project_root(os.path.dirname(os.path.abspath(path))))

    @cached_property
    def benchmark_code(self) -> bool:
        """The file sits under a folder named ``benchmark(s)``/``bench``, or its name
        says it measures (``benchmark_latency.py``, ``measure_latency.py``,
        ``profile_throughput.py``), or it trains nothing and one of its loops is
        ``timed_on_fixed_data``: a script that measures speed or memory on fixed
        data, where a training run's result quality (data order, model selection,
        the outputs themselves) is not what it reports."""
        parts = re.split(r"[/\\]+", (self.ctx.path or "").lower())
        if any(p in _BENCHMARK_FOLDERS for p in parts[:-1]):
            return True
        stem = os.path.splitext(parts[-1])[0] if parts else ""
        if any(w in _MEASURING_WORDS for w in re.split(r"[^a-z0-9]+", stem)):
            return True
        # a script that trains nothing and times model calls on fake inputs (LightTrack's
        # `tracking/Speed.py`: warm-up passes, then a clocked loop, outputs thrown away)
        return not self.ctx.training_loops and any(
            self.timed_on_fixed_data(loop) for loop in self.ctx.model.nodes_by_type.get(ast.For, ()))

    @cached_property
    def serves(self) -> bool:
        """The file imports a serving framework (FastAPI, Flask, Gradio, TorchServe,
        ...): its code runs in a long-lived service on inputs from other people."""
        return any(self.ctx.model.imports_module(name) for name in _SERVICES)

    @cached_property
    def _package_dir(self) -> str | None:
        """The file's folder when it holds ``__init__.py`` (an importable package)."""
        path = self.ctx.project.path
        if path is None:
            return None
        folder = os.path.dirname(os.path.abspath(path))
        return folder if os.path.isfile(os.path.join(folder, "__init__.py")) else None

    @cached_property
    def _ships(self) -> bool:
        ctx = self.ctx
        if os.path.basename(ctx.path) == "hubconf.py":
            return True
        if self.serves:
            return True
        return self._package_dir is not None and installable_module(self.ctx.project.path or "")


def installable_module(path: str) -> bool:
    """Is the file at ``path`` a module of an installable package: its folder holds
    ``__init__.py`` up to a top package whose folder (or ``src/``'s parent) has
    ``setup.py``/``pyproject.toml``/``setup.cfg``, and that top package is not the
    repository's own ``examples``/``tests``/``benchmarks``/``docs``/``scripts``? Code that
    ships to other people."""
    if not path:
        return False
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return False
    while os.path.isfile(os.path.join(os.path.dirname(folder), "__init__.py")):
        folder = os.path.dirname(folder)  # up to the top package
    if os.path.basename(folder).lower() in _UNSHIPPED_TOP:
        return False  # a top-level `examples/` or `tests/` package: the repository's, not the install's
    root = os.path.dirname(folder)
    roots = [root, os.path.dirname(root)] if os.path.basename(root) == "src" else [root]
    return any(os.path.isfile(os.path.join(r, m)) for r in roots for m in _INSTALLABLE)


def _under_main_guard(node: ast.AST) -> bool:
    return any(isinstance(a, ast.If) and "__main__" in ast.dump(a.test) for a in ancestors(node))
