"""Where values come from: user-controlled input, and web endpoints.

Two questions shared by the security rules:

* ``source_of(expr)``: does ``expr`` carry data a user controls -- the command
  line (``sys.argv``, argparse/click/typer/fire/Hydra), ``input()``, the
  environment, a web request, a file just downloaded? Values are followed
  through assignments of the same function (tuple unpacking, ``with ... as``,
  ``for`` targets included), ``self`` attributes, return values of same-module
  functions and the arguments of same-module call sites, a few hops deep.
* ``handler_kind(func)``: is ``func`` a web route handler or a UI callback
  (FastAPI/Starlette/Flask/Django/aiohttp/Sanic/Quart routes, Gradio events)?

Static and bounded: when a value cannot be followed, the answer is "unknown"
(``None``), never a guess.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property

from torchreview.engine.flow import Flow
from torchreview.engine.semantic import FunctionNode, SemanticModel, parent
from torchreview.engine.semantic_common import ancestors, exclusive_branches, position

ROUTE_METHODS = frozenset({
    "get", "post", "put", "patch", "delete", "head", "options", "route", "api_route",
    "websocket", "add_api_route",
})
WEB_APPS = frozenset({
    "fastapi.FastAPI", "fastapi.APIRouter", "fastapi.routing.APIRouter", "flask.Flask",
    "flask.Blueprint", "starlette.applications.Starlette", "starlette.routing.Router",
    "aiohttp.web.RouteTableDef", "sanic.Sanic", "sanic.Blueprint", "quart.Quart",
    "quart.Blueprint", "litestar.Router", "bottle.Bottle",
})
WEB_FRAMEWORKS = ("fastapi", "flask", "starlette", "aiohttp", "django", "rest_framework", "sanic",
                  "quart", "litestar", "bottle", "gradio")
_FRAMEWORK_NAMES = {"fastapi": "FastAPI", "flask": "Flask", "starlette": "Starlette", "aiohttp": "aiohttp",
                    "sanic": "Sanic", "quart": "Quart", "litestar": "Litestar", "bottle": "Bottle"}
_APP_NAMES = frozenset({"app", "api", "router", "bp", "blueprint", "routes", "server"})
_ENDPOINT_CALLS = {  # callable -> position of the handler argument
    "starlette.routing.Route": 1, "starlette.routing.WebSocketRoute": 1,
    "aiohttp.web.get": 1, "aiohttp.web.post": 1, "aiohttp.web.put": 1, "aiohttp.web.route": 2,
    "gradio.Interface": 0, "gradio.ChatInterface": 0, "django.urls.path": 1,
    "django.urls.re_path": 1,
}
_GRADIO_EVENTS = frozenset({"click", "submit", "change", "upload", "select", "input", "release"})

# Calls whose result is user-controlled data.
_CLI_PARSE = frozenset({"parse_args", "parse_known_args", "parse_args_into_dataclasses"})
_DOWNLOADS = {
    "urllib.request.urlretrieve": "a file downloaded with `urlretrieve`",
    "urllib.request.urlopen": "a network response (`urlopen`)",
    "requests.get": "a network response (`requests.get`)",
    "requests.post": "a network response (`requests.post`)",
    "httpx.get": "a network response (`httpx.get`)",
    "huggingface_hub.hf_hub_download": "a file downloaded from the Hugging Face Hub",
    "huggingface_hub.snapshot_download": "files downloaded from the Hugging Face Hub",
    "wget.download": "a file downloaded with `wget`",
    "gdown.download": "a file downloaded with `gdown`",
    "torch.hub.download_url_to_file": "a file downloaded with `download_url_to_file`",
}
_ENVIRON_GETTERS = frozenset({"os.getenv", "os.environ.get", "os.getenvb", "os.environ.__getitem__"})
# Environment variables that place the machine's own folders (`TORCH_HOME`,
# `XDG_CACHE_HOME`, `HF_HOME`, `DATA_DIR`, `TMPDIR`): whoever sets them configures
# where this user's cache lives -- and could set `PYTHONPATH` as well -- so they do
# not choose the file the way a command-line path or an upload does.
_FOLDER_VARIABLE = re.compile(r"(?:^|_)(?:HOME|CACHE|CACHE_DIR|DIR|ROOT|TMPDIR|TEMP|TMP)$")


def _folder_variable(key: ast.AST | None) -> bool:
    return isinstance(key, ast.Constant) and isinstance(key.value, str) and bool(_FOLDER_VARIABLE.search(key.value))


# Hub calls that create a repository or put files into it (`_own_hub_repo`).
_HUB_WRITES = frozenset({"create_repo", "upload_file", "upload_folder", "push_to_hub"})


# Calls whose result no longer carries the text of their input (numbers, truth values).
_OPAQUE = frozenset({
    "builtins.len", "builtins.int", "builtins.float", "builtins.bool", "builtins.isinstance",
    "builtins.hasattr", "builtins.abs", "builtins.min", "builtins.max", "builtins.sum",
    "builtins.range", "builtins.round", "os.path.exists", "os.path.isfile", "os.path.isdir",
})
_REQUEST_ATTRS = frozenset({"files", "FILES", "form", "POST", "GET", "args", "json", "get_json",
                            "data", "body", "values", "query_params", "stream", "content",
                            "post", "read", "multipart"})


@dataclass(frozen=True)
class Source:
    """Where user-controlled data enters: a phrase for messages and the node.
    ``remote``: chosen by someone other than whoever runs the code (a web request,
    an endpoint's parameter, a download), not by the operator (the command line,
    the environment, ``input()``)."""
    kind: str
    node: ast.AST
    remote: bool = False


class Inputs:
    def __init__(self, model: SemanticModel, flow: Flow, own_hub=lambda: frozenset()) -> None:
        self.m = model
        self.flow = flow
        # the project's own Hugging Face namespaces, asked only when a Hub download is met
        self._own_hub = own_hub

    # ------------------------------------------------------------ web handlers
    @cached_property
    def handlers(self) -> dict[ast.AST, str]:
        """Function -> what kind of endpoint it is (for messages)."""
        out: dict[ast.AST, str] = {}
        if not any(self.m.imports_module(f) for f in WEB_FRAMEWORKS):
            return out
        for func in self._functions():
            for deco in func.decorator_list:
                kind = self._route_decorator(deco)
                if kind:
                    out[func] = kind
                    break
            else:
                if self.m.imports_module("django") and self._is_django_view(func):
                    out[func] = "Django view"
        for call in self.m.calls:
            q = self.m.qualname(call.func) or ""
            target = None
            if q in _ENDPOINT_CALLS:
                pos = _ENDPOINT_CALLS[q]
                target = next((kw.value for kw in call.keywords if kw.arg in ("fn", "endpoint", "view",
                                                                              "handler")), None)
                if target is None and len(call.args) > pos:
                    target = call.args[pos]
                label = "Gradio callback" if q.startswith("gradio") else "web endpoint"
            elif isinstance(call.func, ast.Attribute) and self.m.imports_module("gradio") and \
                    call.func.attr in _GRADIO_EVENTS:
                target = next((kw.value for kw in call.keywords if kw.arg == "fn"), None) or \
                    (call.args[0] if call.args else None)
                label = "Gradio callback"
            elif isinstance(call.func, ast.Attribute) and call.func.attr in ("add_url_rule", "add_route"):
                target = next((kw.value for kw in call.keywords if kw.arg in ("view_func", "handler")), None) \
                    or (call.args[-1] if len(call.args) >= 2 else None)
                label = "web endpoint"
            if isinstance(target, ast.Name):
                for func in self.m.functions.get(target.id, []):
                    out.setdefault(func, label)
        return out

    def handler_kind(self, func: ast.AST | None) -> str | None:
        return self.handlers.get(func) if func is not None else None

    def _functions(self):
        for node_type in FunctionNode:
            yield from self.m.nodes_by_type.get(node_type, ())

    def _route_decorator(self, deco: ast.AST) -> str | None:
        q = self.m.qualname(deco.func if isinstance(deco, ast.Call) else deco) or ""
        if q.startswith("rest_framework.decorators.api_view"):
            return "Django REST view"
        if not (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute)):
            return None
        if deco.func.attr not in ROUTE_METHODS:
            return None
        receiver = deco.func.value
        if isinstance(receiver, ast.Attribute) and receiver.attr == "router":  # app.router.get
            receiver = receiver.value
        factory = self._factory(receiver)
        if factory in WEB_APPS:
            return f"{_FRAMEWORK_NAMES.get(factory.split('.')[0], 'web')} route"
        if factory is None and isinstance(receiver, ast.Name) and receiver.id in _APP_NAMES:
            return "web route"
        return None

    def _factory(self, receiver: ast.AST) -> str | None:
        values, _ = self.m.assignments(receiver)
        for value in values:
            if isinstance(value, ast.Call):
                q = self.m.qualname(value.func)
                if q:
                    return q
        return None

    def _is_django_view(self, func: ast.AST) -> bool:
        args = func.args.args  # type: ignore[attr-defined]
        names = [a.arg for a in args]
        owner = parent(func)
        if isinstance(owner, ast.ClassDef):
            bases = self.m.base_qualnames(owner)
            return func.name in ("get", "post", "put", "patch", "delete") and \
                any(b.startswith(("django.", "rest_framework.")) for b in bases)
        return isinstance(owner, ast.Module) and bool(names) and names[0] == "request"

    # ------------------------------------------------------------ user input
    def source_of(self, expr: ast.AST | None, depth: int = 4) -> Source | None:
        """The user-controlled input ``expr`` carries, or None when none is visible."""
        if expr is None:
            return None
        return self._source(expr, depth, set())

    def published_by_project(self, expr: ast.AST | None, depth: int = 3) -> bool:
        """``expr`` holds a file downloaded from a Hugging Face repository of the project's own
        namespace (``cache_file = hf_hub_download(repo_id=..., ...)``, followed through names
        in its function): the project's own published checkpoint."""
        if expr is None or depth < 0:
            return False
        if isinstance(expr, ast.Call):
            q = self.m.qualname(expr.func) or ""
            return q.startswith("huggingface_hub.") and q in _DOWNLOADS and self._published_by_project(expr)
        if isinstance(expr, ast.Name):
            values = self.m.assignments(expr)[0]
            return bool(values) and all(self.published_by_project(v, depth - 1) for v in values)
        return False

    def _source(self, expr: ast.AST, depth: int, seen: set[int]) -> Source | None:
        if depth < 0 or id(expr) in seen:
            return None
        seen.add(id(expr))
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.Lambda, *FunctionNode, ast.ClassDef)):
                continue
            found = self._direct(node)
            if found:
                return found
            if isinstance(node, ast.Call):
                q = self.m.qualname(node.func)
                if q in _OPAQUE:
                    continue
                callee = self.flow.resolve_local_call(node)
                if callee is not None:
                    for ret in self._returns(callee):
                        found = self._source(ret, depth - 1, seen)
                        if found:
                            return found
            if isinstance(node, ast.Name) or (isinstance(node, ast.Attribute) and
                                              isinstance(node.value, ast.Name) and node.value.id == "self"):
                found = self._through_name(node, depth, seen)
                if found:
                    return found
                if isinstance(node, ast.Attribute):
                    continue
            if isinstance(node, ast.Subscript) and self._fixed_table(node.value):
                # `model_paths[model_type]["encoder"]`: the key only picks one of the table's own
                # entries (a web form's choice among the server's models, judged false in blind test 126):
                # only what the table holds can carry an input
                stack.append(node.value)
                continue
            stack.extend(ast.iter_child_nodes(node))
        return None

    def _fixed_table(self, container: ast.AST) -> bool:
        """``container`` is a name (or a lookup into one) bound only to dict, list or tuple
        literals: a table written in the code, whose entries no input chooses."""
        while isinstance(container, ast.Subscript):
            container = container.value
        if not isinstance(container, ast.Name):
            return False
        values = self.m.assignments(container)[0]
        return bool(values) and all(isinstance(v, (ast.Dict, ast.List, ast.Tuple)) for v in values)

    def _direct(self, node: ast.AST) -> Source | None:
        if isinstance(node, (ast.Name, ast.Attribute)):
            q = self.m.qualname(node) or ""
            if q == "sys.argv":
                return Source("the command line (`sys.argv`)", node)
            if q == "os.environ":
                holder = parent(node)
                key = holder.slice if isinstance(holder, ast.Subscript) else None
                if key is None and isinstance(holder, ast.Attribute) and isinstance(parent(holder), ast.Call):
                    call = parent(holder)
                    key = call.args[0] if call.args else None
                if _folder_variable(key):
                    return None
                return Source("an environment variable", node)
            if q == "flask.request" or q.startswith("flask.request."):
                return Source("the web request", node, remote=True)
            if isinstance(node, ast.Attribute) and node.attr in _REQUEST_ATTRS and \
                    isinstance(node.value, ast.Name) and node.value.id == "request" and \
                    any(self.m.imports_module(f) for f in WEB_FRAMEWORKS):
                return Source(f"the web request (`request.{node.attr}`)", node, remote=True)
            return None
        if not isinstance(node, ast.Call):
            return None
        q = self.m.qualname(node.func) or ""
        if q == "builtins.input":
            return Source("interactive input (`input()`)", node)
        if q in _ENVIRON_GETTERS:
            if _folder_variable(node.args[0] if node.args else None):
                return None
            return Source("an environment variable", node)
        if q in _DOWNLOADS:
            if q.startswith("huggingface_hub.") and self._own_hub_repo(node):
                return None  # a repository this file creates or uploads to: its own output
            if q.startswith("huggingface_hub.") and self._published_by_project(node):
                return None  # the project's own published checkpoint: as trusted as its code
            return Source(_DOWNLOADS[q], node, remote=True)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _CLI_PARSE:
            return Source(f"command-line arguments (`{node.func.attr}()`)", node)
        return None

    def _published_by_project(self, download: ast.Call) -> bool:
        """``hf_hub_download("ShilongLiu/GroundingDINO", ...)`` where the namespace is one the
        project presents as its own (``Advice.own_hub_namespaces``); the repository id may be
        a literal, a module constant, or a parameter every same-module caller passes one for."""
        repo = next((k.value for k in download.keywords if k.arg == "repo_id"), None) or \
            (download.args[0] if download.args else None)
        ids = self._literal_values(repo, 2)
        if not ids:
            return False
        own = self._own_hub()
        return all("/" in i and i.split("/", 1)[0].lower() in own for i in ids)

    def _literal_values(self, expr: ast.AST | None, depth: int) -> list[str]:
        """The string literals ``expr`` may hold (a literal, a name bound only to literals, a
        parameter whose same-module callers all pass one); [] when any value is unknown."""
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return [expr.value]
        if not isinstance(expr, ast.Name) or depth <= 0:
            return []
        values, func = self.m.assignments(expr)
        if not values and func is not None:
            values = self.flow.arguments_for(func, expr.id)
        out: list[str] = []
        for value in values:
            found = self._literal_values(value, depth - 1)
            if not found:
                return []
            out.extend(found)
        return out

    def _own_hub_repo(self, download: ast.Call) -> bool:
        """``hf_hub_download(REPO, ...)`` where this file also creates that repository or
        uploads to it (``create_repo(REPO, private=True)``, ``upload_file(...,
        repo_id=REPO)``, ``model.push_to_hub(REPO)``), named by the same constant or
        name: an integration test reading back what its own run put there."""
        repo = next((k.value for k in download.keywords if k.arg == "repo_id"), None) or \
            (download.args[0] if download.args else None)
        if not isinstance(repo, (ast.Name, ast.Attribute, ast.Constant)):
            return False
        wanted = ast.unparse(repo)
        for call in self.m.calls:
            name = call.func.attr if isinstance(call.func, ast.Attribute) else \
                call.func.id if isinstance(call.func, ast.Name) else ""
            if name not in _HUB_WRITES:
                continue
            given = next((k.value for k in call.keywords if k.arg == "repo_id"), None)
            if given is None and call.args and name in ("create_repo", "push_to_hub"):
                given = call.args[0]
            if given is not None and ast.unparse(given) == wanted:
                return True
        return False

    def _through_name(self, node: ast.AST, depth: int, seen: set[int]) -> Source | None:
        if isinstance(node, ast.Name) and self._checked_against_fixed_set(node):
            return None  # `assert dm in DOMAINS`: the input can only be one of the project's own values
        values, func = self.m.assignments(node)
        if isinstance(node, ast.Name):
            values = [v for v in values + self._other_bindings(node) if _may_reach(v, node)]
        for value in values:
            found = self._source(value, depth - 1, seen)
            if found:
                return found
        if func is None or not isinstance(node, ast.Name):
            return None
        found = self._parameter_source(func, node)
        if found:
            return found
        arguments = self.flow.arguments_for(func, node.id)
        if func.name == "__init__" and isinstance(parent(func), ast.ClassDef):  # type: ignore[attr-defined]
            arguments += self._constructor_arguments(func, node.id)
        for arg in arguments:
            found = self._source(arg, depth - 1, seen)
            if found:
                return found
        return None

    def _checked_against_fixed_set(self, name: ast.Name) -> bool:
        """Before ``name`` is read, its function asserts it is one of a fixed collection
        (``assert dm in DOMAINS``, or ``if dm not in DOMAINS: raise/return``), the collection a
        literal or a module-level name bound to one (AnyLoc's Gradio demo: the domain picks a
        folder of the project's own files, judged false in blind test 60)."""
        func = self.m.enclosing_function(name)
        if func is None:
            return False
        for stmt in ast.walk(func):
            if getattr(stmt, "lineno", name.lineno) >= name.lineno:
                continue
            test = stmt.test if isinstance(stmt, ast.Assert) else None
            if isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], (ast.Raise, ast.Return)):
                test = stmt.test
                if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn)):
                    continue
            elif test is not None and not (isinstance(test, ast.Compare) and len(test.ops) == 1 and
                                           isinstance(test.ops[0], ast.In)):
                continue
            if test is None or not (isinstance(test.left, ast.Name) and test.left.id == name.id):
                continue
            if self._fixed_collection(test.comparators[0]) and not any(
                    isinstance(n, ast.Name) and n.id == name.id and isinstance(n.ctx, ast.Store) and
                    stmt.lineno < n.lineno < name.lineno for n in ast.walk(func)):
                return True  # (and not bound again between the check and the read)
        return False

    def _fixed_collection(self, expr: ast.AST) -> bool:
        """A literal list/tuple/set/dict of constants, or a name the module binds to one."""
        if isinstance(expr, ast.Name):
            values = [s.value for s in self.m.tree.body if isinstance(s, ast.Assign) and
                      any(isinstance(t, ast.Name) and t.id == expr.id for t in s.targets)]
            return len(values) == 1 and self._fixed_collection(values[0])
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return bool(expr.elts) and all(isinstance(e, ast.Constant) for e in expr.elts)
        if isinstance(expr, ast.Dict):
            return bool(expr.keys) and all(isinstance(k, ast.Constant) for k in expr.keys)
        return False

    def _parameter_source(self, func: ast.AST, name: ast.Name) -> Source | None:
        kind = self.handler_kind(func)
        if kind:
            return Source(f"a parameter of the {kind} `{func.name}`", name, remote=True)  # type: ignore[attr-defined]
        cli = self._cli_function(func)
        if cli:
            return Source(f"a {cli} command-line option (`{name.id}`)", name)
        return None

    def _cli_function(self, func: ast.AST) -> str | None:
        for deco in func.decorator_list:  # type: ignore[attr-defined]
            target = deco.func if isinstance(deco, ast.Call) else deco
            q = self.m.qualname(target) or ""
            if q.startswith("click."):
                return "click"
            if q == "hydra.main":
                return "Hydra"
            if isinstance(target, ast.Attribute) and target.attr in ("command", "callback") and \
                    (self._factory(target.value) or "").startswith("typer."):
                return "typer"
        for call in self.m.calls:
            q = self.m.qualname(call.func) or ""
            if q in ("typer.run", "fire.Fire") and call.args and isinstance(call.args[0], ast.Name) and \
                    call.args[0].id == func.name:  # type: ignore[attr-defined]
                return q.split(".")[0]
        return None

    def _constructor_arguments(self, init: ast.AST, name: str) -> list[ast.AST]:
        cls = parent(init)
        params = [a.arg for a in init.args.args][1:]  # type: ignore[attr-defined]
        index = params.index(name) if name in params else None
        out = []
        for call in self.m.calls_by_name.get(cls.name, []):  # type: ignore[attr-defined]
            if not isinstance(call.func, ast.Name):
                continue
            kw = next((k.value for k in call.keywords if k.arg == name), None)
            if kw is not None:
                out.append(kw)
            elif index is not None and index < len(call.args):
                out.append(call.args[index])
        return out

    def _returns(self, func: ast.AST) -> list[ast.AST]:
        return [r.value for r in self.m.nodes_by_type.get(ast.Return, ())
                if r.value is not None and self.m.enclosing_function(r) is func]

    @cached_property
    def _extra_bindings(self) -> dict[tuple[ast.AST, str], list[ast.AST]]:
        """Bindings the assignment table leaves out: ``a, b = f()``, ``with f() as a``,
        ``for a in f()`` (the name is bound to the whole right-hand side)."""
        table: dict[tuple[ast.AST, str], list[ast.AST]] = {}

        def add(target: ast.AST, value: ast.AST, node: ast.AST) -> None:
            scope = self.m.scope_of(node)
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    table.setdefault((scope, sub.id), []).append(value)

        for node in self.m.nodes_by_type.get(ast.Assign, ()):
            if not isinstance(node.value, ast.Tuple):
                for target in node.targets:
                    if isinstance(target, (ast.Tuple, ast.List)):
                        add(target, node.value, node)
        for node_type in (ast.With, ast.AsyncWith):
            for node in self.m.nodes_by_type.get(node_type, ()):
                for item in node.items:
                    if item.optional_vars is not None:
                        add(item.optional_vars, item.context_expr, node)
        for node_type in (ast.For, ast.AsyncFor):
            for node in self.m.nodes_by_type.get(node_type, ()):
                add(node.target, node.iter, node)
        return table

    def _other_bindings(self, name: ast.Name) -> list[ast.AST]:
        probe: ast.AST | None = self.m.scope_of(name)
        while probe is not None:
            values = self._extra_bindings.get((probe, name.id))
            if values:
                return values
            if probe is self.m.tree:
                break
            probe = self.m.scope_of(probe)
        return []


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _may_reach(value: ast.AST, use: ast.AST) -> bool:
    """Can the assignment of ``value`` reach ``use`` in the same function? Not when
    it sits on the opposite branch of the same test (``if isdir(p): load(file)`` ...
    ``else: file = hf_hub_download(...)``), nor when it comes later in the source
    with no loop around both to carry it back."""
    if exclusive_branches(value, use):
        return False
    if _scope(value) is not _scope(use):
        return True  # a global bound at the top level, read in a function called later
    if position(value) <= position(use):
        return True
    use_loops = {id(a) for a in ancestors(use) if isinstance(a, _LOOPS)}
    for anc in ancestors(value):
        if isinstance(anc, (*FunctionNode, ast.Lambda, ast.ClassDef)):
            return False
        if id(anc) in use_loops:
            return True
    return False


def _scope(node: ast.AST) -> ast.AST | None:
    return next((a for a in ancestors(node) if isinstance(a, (*FunctionNode, ast.Lambda, ast.ClassDef))), None)
