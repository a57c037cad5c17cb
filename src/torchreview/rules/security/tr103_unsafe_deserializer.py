from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules._helpers import is_true

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
    computed path with `torch.classes.load_library`/`torch.ops.load_library`.

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
    Every pickle-based load is reported, whatever the file, because the
    reviewer cannot know who writes it; suppress with `# noqa: TR103` for
    files your own process produced. `numpy.load` is reported only when
    `allow_pickle=True` is passed literally; library loads only when the path
    is not a string literal.
    """

    code = "TR103"
    name = "unsafe-deserializer"
    severity = Severity.HIGH
    severity_reason = "Code execution: these loaders run code stored in the data they read."
    needs_torch = False
    summary = "pickle-based deserializers (pickle, joblib, numpy allow_pickle, object collectives) run code"
    node_types = (ast.Call, ast.Import, ast.ImportFrom)

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
            ctx.report(node, f"{_PICKLE_LOADERS[q]} executes code embedded in its input: only use it on "
                             "data your own process wrote; prefer JSON, safetensors or `np.load` without "
                             "pickles for anything shared")
        elif q == "numpy.load":
            allow = ctx.arg(node, "allow_pickle", 2)
            if is_true(allow):
                ctx.report(allow, "`numpy.load(..., allow_pickle=True)` unpickles object arrays, which can "
                                  "run code: store plain numeric arrays and drop `allow_pickle`")
        elif q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in _COLLECTIVES:
            ctx.report(node, f"`{q.rsplit('.', 1)[-1]}` pickles and unpickles Python objects exchanged "
                             "between ranks: a compromised host can run code on every rank; send tensors "
                             "with the tensor collectives instead")
        elif q in _LIBRARY_LOADERS:
            path = ctx.arg(node, "path", 0)
            if path is not None and not (isinstance(path, ast.Constant) and isinstance(path.value, str)):
                ctx.report(node, f"`{q}` loads a native library from the computed path "
                                 f"`{ctx.text(path)}`: its code runs in this process; load a fixed, "
                                 "reviewed path")

    @staticmethod
    def _package(node, ctx) -> None:
        ctx.report(node, "`torch.package` archives are unpickled when imported and can run code: "
                         "only import packages you built yourself")
