from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules._helpers import is_true
from torchreview.rules._round_trip import own_file_written, own_round_trip, with_target
from torchreview.rules._shipped import ships_with_the_code as _ships_with_the_code

# callable -> what it is, for the message
_PICKLE_LOADERS = {
    "pickle.load": "`pickle.load`",
    "pickle.loads": "`pickle.loads`",
    "pickle.Unpickler": "`pickle.Unpickler`",
    "_pickle.load": "`pickle.load`",
    "_pickle.loads": "`pickle.loads`",
    "cPickle.load": "`cPickle.load`",
    "cPickle.loads": "`cPickle.loads`",
    "dill.load": "`dill.load`",
    "dill.loads": "`dill.loads`",
    "cloudpickle.load": "`cloudpickle.load`",
    "cloudpickle.loads": "`cloudpickle.loads`",
    "joblib.load": "`joblib.load`",
    "sklearn.externals.joblib.load": "`joblib.load`",
    "pandas.read_pickle": "`pandas.read_pickle`",
}
_COLLECTIVES = frozenset({
    "broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
    "recv_object_list",
})
_LIBRARY_LOADERS = frozenset({"torch.classes.load_library", "torch.ops.load_library"})


class UnsafeDeserializer(Rule):
    """
    ## What it does
    Flags deserializers other than `torch.load` that can execute code from
    their input: `pickle`/`dill`/`cloudpickle`/`joblib` loads,
    `pandas.read_pickle`, `numpy.load(..., allow_pickle=True)`, the
    object collectives of `torch.distributed` (which unpickle what other ranks
    send), `torch.package` imports, and native libraries loaded from a
    computed path with `torch.classes.load_library`/`torch.ops.load_library`
    (high confidence when the path comes from user input or a download;
    a path the code computes itself -- its own compiled extension found with
    `importlib` or next to `__file__` -- is medium).

    ## Why is this bad?
    A pickle stream is a program: loading it can call any importable function.
    A data file, a cached feature file or a message from another host is only
    as trustworthy as everyone who could write it. Loading a shared library
    runs its initialisers with the process's rights.

    ## Example
    ```python
    import pickle

    with open("features.pkl", "rb") as handle:
        features = pickle.load(handle)
    ```

    ## Use instead
    ```python
    import json

    import numpy as np

    with open("features.json") as handle:
        features = json.load(handle)
    embeddings = np.load("embeddings.npy")
    ```

    ## Heuristics
    Pickle-based loads are reported whatever the file, because the reviewer
    cannot know who writes it, except a file that ships in the reviewed tree
    itself: a string-literal path (also through `open(...)`, a `with open(...)
    as f` block, a name bound once, or `os.path.join(os.path.dirname(__file__),
    "...")`) that exists next to the file, under its project root or the
    working directory. Whoever can change such a file can change the code.
    Where it reports: a `pickle.load`/`dill.load`/`joblib.load` of a file in a
    project that writes files with the same library (`pickle.dump` in a
    preprocessing script, read back by the training script) reads the
    project's own output: medium advice, hidden by default (`--review
    security`, `--select TR103`). Loads of downloaded files, network
    responses and web-request data stay defects, and so do `loads` of bytes
    (at medium confidence when their origin is out of sight, see below).
    A load of what the same function has just serialized is silent: `loads(dumps(x))`,
    `blob = pickle.dumps(x)` then `pickle.loads(blob)`, an `io.BytesIO` that a
    `pickle.dump` filled, or a path the function opened for a `dump` first (a
    picklability test round-trips an object the process itself made). So is
    a load of a file the same module writes with a pickle dump under the same
    path expression (`pd.read_pickle(self.path)` in `__init__`, `to_pickle(self.path)`
    in `update`; the same string constant or CONSTANT; a plain variable only
    within one function, also a path variable `df.to_pickle(path)` writes
    in the branch where `read_pickle(path)` found nothing: a cache): the
    project's own data file. In test
    files the remaining loads are advice (a test reads fixtures the suite
    controls); loads of downloads and requests stay defects there too. The
    object collectives of `torch.distributed` (`all_gather_object`,
    `broadcast_object_list`, ...) exchange objects between ranks of one job,
    which run the same code under one launcher and so share a trust domain:
    they are low advice, shown only when asked, for setups where ranks belong
    to different parties. So are `pickle.loads` of bytes that come (through
    assignments and `for` targets of the same function) from the output of a
    tensor collective (`dist.all_gather(tensor_list, tensor)` of a byte
    tensor: the classic object all-gather helper). Several loads with the same message in one function
    (the branches of a version-compat `if`/`else`, two round trips in one test)
    are one finding with the others as related locations.
    Confidence: a load whose bytes come from outside (a download, a network
    response, request data) is high -- but a Hub download from a repository
    the same file creates or uploads to (`create_repo(REPO, private=True)`,
    `upload_file(..., repo_id=REPO)`, `push_to_hub(REPO)`, the same constant or
    name) reads back the run's own output and counts as a local file; a load of a local path whose writer
    torchreview cannot see is medium, because on unseen repositories such
    loads were the project's own caches and datasets in every judged case
    (0 true of 12 in the independent sweeps of bench/precision.md), so they
    are shown by `--review security`, `--select TR103` or
    `--min-confidence medium`, not in the default report.
    Suppress with `# noqa: TR103` for files your own process produced. `numpy.load` is reported only when
    `allow_pickle=True` is passed literally; library loads only when the path
    is not a string literal.
        A file a web request only names (`open(request.json["det_path"])`, then
    `pickle.load`) in a one-off tool or in a server started on the loopback
    interface only (`app.run(host="127.0.0.1")`, second.pytorch's local KITTI
    viewer) is medium confidence: the request picks which of the operator's
    own files is read, it does not supply the bytes; request bytes, and a
    named file where the server is reachable by others, stay high.
    """

    code = "TR103"
    name = "unsafe-deserializer"
    severity = Severity.HIGH
    severity_reason = "Code execution: these loaders run code stored in the data they read."
    needs_torch = False
    summary = "pickle-based deserializers (pickle, joblib, numpy allow_pickle, object collectives) run code"
    node_types = (ast.Call, ast.Import, ast.ImportFrom)
    call_qualnames = frozenset({*_PICKLE_LOADERS, "numpy.load", *_LIBRARY_LOADERS})
    call_prefixes = ("torch.distributed.",)  # the object collectives
    summarize = "project"

    @classmethod
    def repeat_key(cls, finding) -> str:
        """One finding per deserializer and function: the branches of one version-compat
        `if`/`else` or two loads in one test are one place to change."""
        return f"{finding.path}|{finding.cell}|{finding.context}|{finding.kind}|{finding.severity.label}|" \
               f"{finding.message}"

    def check(self, node, ctx) -> None:
        if isinstance(node, ast.Import):
            if any(a.name == "torch.package" or a.name.startswith("torch.package.") for a in node.names):
                self._package(node, ctx)
            return
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").startswith("torch.package") or \
                    (node.module == "torch" and any(a.name == "package" for a in node.names)):
                self._package(node, ctx)
            return
        q = ctx.qualname(node.func)
        if not q:
            return
        if q in _PICKLE_LOADERS:
            if _ships_with_the_code(node, ctx) or own_round_trip(node, ctx) or \
                    (not q.endswith("loads") and own_file_written(node, ctx)):
                # a data file of the reviewed tree (whoever can change it can change the code),
                # what this same function has just serialized, or a file this module itself
                # writes with a pickle dump under the same path expression
                return
            collective = _gathered_from_ranks(node, ctx) if q.endswith("loads") else None
            if collective is not None:
                ctx.report(node, f"{_PICKLE_LOADERS[q]} unpickles bytes gathered from the ranks of this job "
                                 f"(`{collective}` of a byte tensor): harmless while every rank belongs to one "
                                 "job you run; if ranks can be run by different parties, send tensors with "
                                 "the tensor collectives instead", kind="advice", severity=Severity.LOW,
                           confidence="low")
                return
            outside = _outside(node, ctx)
            source = outside[0] if outside else None
            # a file on this machine that a request names, in a one-off tool (a research repo's
            # local viewer): the request picks which of the operator's files is read, it does
            # not supply the bytes -- medium; where the code ships, or bytes from outside, high
            named = bool(outside and outside[1] and "request" in source and
                         (ctx.advice.one_off(node) is not None or _serves_localhost_only(ctx)))
            came = f" (it opens a file {source} names)" if named else f" (it reads {source})" if source else ""
            ctx.report(node, f"{_PICKLE_LOADERS[q]} executes code embedded in its input{came}: only use it on "
                             "data your own process wrote; prefer JSON, safetensors or `np.load` without "
                             "pickles for anything shared",
                       kind="advice" if ctx.is_test_file and not source else None,
                       severity=Severity.MEDIUM if ctx.is_test_file and not source else None,
                       confidence=None if source and not named else "medium")
        elif q == "numpy.load":
            allow = ctx.arg(node, "allow_pickle", 2)
            if is_true(allow):
                source = _outside_source(node, ctx)
                came = f" (it reads {source})" if source else ""
                ctx.report(allow, f"`numpy.load(..., allow_pickle=True)` unpickles object arrays, which can "
                                  f"run code{came}: store plain numeric arrays and drop `allow_pickle`",
                           confidence=None if source else "medium")
        elif q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in _COLLECTIVES:
            # the peers are ranks of the same job (same code, same launcher): one trust domain,
            # not untrusted input; worth a note only where ranks may belong to different parties
            ctx.report(node, f"`{q.rsplit('.', 1)[-1]}` pickles and unpickles Python objects exchanged "
                             "between ranks: harmless while every rank belongs to one job you run; if "
                             "ranks can be run by different parties, send tensors with the tensor "
                             "collectives instead", kind="advice", severity=Severity.LOW, confidence="low")
        elif q in _LIBRARY_LOADERS:
            path = ctx.arg(node, "path", 0)
            if path is not None and not (isinstance(path, ast.Constant) and isinstance(path.value, str)):
                # who picks the path decides: user input (command line, environment, a request)
                # or a download is a defect; a path the code computes itself (its own compiled
                # extension found with importlib or next to `__file__`: xformers) is its own code
                source = ctx.inputs.source_of(path)
                ctx.report(node, f"`{q}` loads a native library from the computed path "
                                 f"`{ctx.text(path)}`: its code runs in this process; load a fixed, "
                                 "reviewed path", confidence=None if source is not None else "medium")

    @classmethod
    def refine_with_project(cls, finding, project):
        """A file load (`pickle.load`/`dill.load`/`joblib.load`, not `loads` of bytes) in a
        project that writes files with the same library: it reads the project's own output
        (a preprocessing script's dump), so it is advice; loads of downloaded or request
        data stay defects (engine/refine.py)."""
        from dataclasses import replace

        lib = next((lib for lib, head in _OWN_OUTPUT_LOADS.items() if finding.message.startswith(head)), None)
        if lib is None or " (it reads " in finding.message:
            return finding
        writer = next((f for f in project.files if lib in getattr(f, "pickle_dumps", ())), None)
        if writer is None:
            return finding
        return replace(finding, kind="advice", severity=Severity.MEDIUM,
                       message=f"{finding.message}: low risk here, this project writes `{lib}` files itself "
                               f"(`{lib}.dump` in {writer.path}), so the file is its own output unless "
                               "someone swaps it")

    @staticmethod
    def _package(node, ctx) -> None:
        ctx.report(node, "`torch.package` archives are unpickled when imported and can run code: "
                         "only import packages you built yourself")


_TENSOR_COLLECTIVES = frozenset({"all_gather", "all_gather_into_tensor", "gather", "broadcast", "recv", "irecv",
                                 "scatter", "all_to_all", "all_to_all_single", "all_reduce"})


def _gathered_from_ranks(call: ast.Call, ctx) -> str | None:
    """The ``torch.distributed`` tensor collective whose output the bytes ``call`` unpickles
    come from (``dist.all_gather(tensor_list, tensor)`` then
    ``for t in tensor_list: pickle.loads(t.cpu().numpy().tobytes())``): the names of the
    argument are followed through assignments and ``for`` targets of the same function."""
    func = ctx.enclosing_function(call)
    if func is None or not call.args:
        return None
    bindings: dict[str, list[ast.AST]] = {}
    outputs: dict[str, str] = {}
    for sub in ast.walk(func):
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        bindings.setdefault(name.id, []).append(sub.value)
        elif isinstance(sub, (ast.For, ast.comprehension)):
            for name in ast.walk(sub.target):
                if isinstance(name, ast.Name):
                    bindings.setdefault(name.id, []).append(sub.iter)
        elif isinstance(sub, ast.Call) and sub.args and isinstance(sub.args[0], ast.Name):
            q = ctx.qualname(sub.func) or ""
            if q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in _TENSOR_COLLECTIVES:
                outputs.setdefault(sub.args[0].id, q.rsplit(".", 1)[-1])
    if not outputs:
        return None
    seen: set[str] = set()
    frontier = [call.args[0]]
    for _ in range(6):
        names = {n.id for expr in frontier for n in ast.walk(expr) if isinstance(n, ast.Name)} - seen
        if not names:
            break
        for name in names:
            if name in outputs:
                return outputs[name]
        seen |= names
        frontier = [value for name in names for value in bindings.get(name, ())]
    return None


# Loads of a file (not of bytes) whose library the project may itself write with.
_OWN_OUTPUT_LOADS = {"pickle": "`pickle.load` ", "dill": "`dill.load` ", "joblib": "`joblib.load` "}


_LOCALHOST = frozenset({"127.0.0.1", "localhost", "::1"})


def _serves_localhost_only(ctx) -> bool:
    """The file starts its server on the loopback interface only (``app.run(host="127.0.0.1")``,
    ``uvicorn.run(app, host="localhost")``): a local tool its operator browses, not a
    service other people reach."""
    runs = [c for c in ctx.model.calls_by_name.get("run", ()) if ctx.arg(c, "host") is not None]
    return bool(runs) and all(isinstance(ctx.arg(c, "host"), ast.Constant) and ctx.arg(c, "host").value in _LOCALHOST
                              for c in runs)


def _outside_source(call: ast.Call, ctx) -> str | None:
    """Where the unpickled file comes from when that is a download or a web request
    (followed through `open(...)` and `with open(...) as f`)."""
    found = _outside(call, ctx)
    return found[0] if found else None


def _outside(call: ast.Call, ctx) -> tuple[str, bool] | None:
    """``(kind, opened)``: the outside source, and whether the load opens a file whose
    path it names (``open(request.json["path"])``) rather than reading its bytes."""
    expr = call.args[0] if call.args else None
    opened = False
    for _ in range(3):
        if isinstance(expr, ast.Name):
            expr = with_target(expr, call) or expr
        if isinstance(expr, ast.Call) and expr.args and (ctx.qualname(expr.func) or "").endswith("open"):
            expr = expr.args[0]
            opened = True
            continue
        break
    source = ctx.inputs.source_of(expr) if expr is not None else None
    if source is None:
        return None
    # bytes an outsider chooses (a web request, a download); a path the operator names on
    # the command line is theirs (a click option called `network_pkl` is no network read)
    return (source.kind, opened) if source.remote else None




    return None

