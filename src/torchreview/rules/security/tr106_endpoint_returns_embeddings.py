from __future__ import annotations

import ast
import re

from torchreview.catalog import Rule
from torchreview.engine.context import dotted
from torchreview.findings import Severity

_REPR_ATTRS = frozenset({
    "last_hidden_state", "pooler_output", "hidden_states", "encoder_last_hidden_state",
    "encoder_hidden_states", "decoder_hidden_states", "image_embeds", "text_embeds",
    "last_hidden_states", "sentence_embedding", "token_embeddings",
})
_REPR_METHODS = frozenset({
    "encode", "encode_text", "encode_image", "get_text_features", "get_image_features",
    "embed_query", "embed_documents", "encode_queries", "encode_corpus", "get_sentence_embedding",
})
_ENCODER_CALLEES = re.compile(r"^(?:\w+_)?(?:encoder|embedder|backbone|embed|embeddings?)$")
_ENCODER_RECEIVER = re.compile(r"(?i)(model|encoder|embedder|sbert|retriever|clip|^st$)")
_REPR_NAMES = re.compile(r"^(?:\w+_)?(?:embeddings?|embeds?|embs?|hidden_states?|last_hidden_states?"
                         r"|latents?|feature_vectors?|sentence_vectors?|encodings)$")
_PASS_METHODS = frozenset({
    "tolist", "cpu", "numpy", "detach", "float", "double", "half", "squeeze", "unsqueeze",
    "flatten", "reshape", "view", "contiguous", "clone", "to", "mean", "astype", "tobytes", "cuda",
})
_PASS_FUNCS = frozenset({
    "builtins.list", "builtins.dict", "builtins.tuple", "numpy.asarray", "numpy.array",
    "torch.nn.functional.normalize", "fastapi.encoders.jsonable_encoder", "flask.jsonify",
    "fastapi.responses.JSONResponse", "starlette.responses.JSONResponse", "django.http.JsonResponse",
    "json.dumps", "fastapi.responses.ORJSONResponse", "aiohttp.web.json_response", "torch.mean",
})


class EndpointReturnsEmbeddings(Rule):
    """
    ## What it does
    Flags web route handlers (FastAPI, Starlette, Flask, Django, aiohttp,
    Sanic, Quart) and Gradio callbacks that return intermediate model
    representations: hidden states, `last_hidden_state`, `pooler_output`,
    `.encode(...)` embeddings, encoder outputs, and conversions of those
    (`.tolist()`, `.cpu().numpy()`, JSON responses that contain them).

    ## Why is this bad?
    Embeddings and hidden states carry far more of the input, and of the
    training data, than a label does: model-inversion and membership attacks
    reconstruct text or faces from them, and they let callers distil your
    model. An endpoint should return the final answer (a label, a score),
    not the model's internals.

    ## Example
    ```python
    from fastapi import FastAPI
    from transformers import AutoModel

    app = FastAPI()
    encoder = AutoModel.from_pretrained("bert-base-uncased")

    @app.post("/embed")
    def embed(batch: dict):
        outputs = encoder(**batch)
        return {"vector": outputs.last_hidden_state[:, 0].tolist()}
    ```

    ## Use instead
    ```python
    from fastapi import FastAPI
    from transformers import AutoModelForSequenceClassification

    app = FastAPI()
    classifier = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")

    @app.post("/classify")
    def classify(batch: dict):
        logits = classifier(**batch).logits
        return {"label": int(logits.argmax(-1)[0])}
    ```

    ## Heuristics
    A returned value counts as a representation when it is (or converts,
    indexes, pools or wraps without other computation) a hidden-state
    attribute, the result of an `encode`-style method on a model, or a call
    of an `encoder`/`embedder`/`backbone`; names are followed through
    assignments and through same-module helper functions. Any other call
    (`argmax`, `topk`, a classifier head, a similarity) ends the trail, so
    labels and scores stay quiet. An embedding service whose purpose is to
    serve vectors to trusted clients can suppress it with `# noqa: TR106`.
    """

    code = "TR106"
    name = "endpoint-returns-embeddings"
    severity = Severity.MEDIUM
    kind = "likely-defect"
    severity_reason = (
        "Data exposure: embeddings and hidden states leak information about inputs and model "
        "(inversion, extraction); no code runs. Which values are internal representations is inferred "
        "from names and calls."
    )
    needs_torch = False  # serving code often imports only transformers or sentence-transformers
    summary = "web endpoint returns embeddings or hidden states instead of final predictions"

    def check_file(self, ctx) -> None:
        handlers = ctx.inputs.handlers
        if not handlers:
            return
        for ret in ctx.model.nodes_by_type.get(ast.Return, ()):
            func = ctx.enclosing_function(ret)
            if ret.value is None or func not in handlers:
                continue
            what = self._repr(ret.value, ctx, 4, set())
            if what:
                ctx.report(ret.value, f"the {handlers[func]} `{func.name}` returns {what}, an intermediate "
                                      "representation of the model: return the final prediction (label, "
                                      "score) instead, or keep embeddings behind an authenticated internal API")

    def _repr(self, expr, ctx, depth: int, seen: set[int]) -> str | None:
        if expr is None or depth < 0 or id(expr) in seen:
            return None
        seen.add(id(expr))
        if isinstance(expr, ast.Await):
            return self._repr(expr.value, ctx, depth, seen)
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return self._first(expr.elts, ctx, depth, seen)
        if isinstance(expr, ast.Dict):
            return self._first([v for v in expr.values if v is not None], ctx, depth, seen)
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            base = _strip_conversions(expr.elt)
            for gen in expr.generators:  # `[e.tolist() for e in embeddings]`
                if isinstance(base, ast.Name) and any(isinstance(t, ast.Name) and t.id == base.id
                                                      for t in ast.walk(gen.target)):
                    return self._repr(gen.iter, ctx, depth, seen)
            return self._repr(expr.elt, ctx, depth, seen)
        if isinstance(expr, ast.Subscript):
            return self._repr(expr.value, ctx, depth, seen)
        if isinstance(expr, ast.Attribute):
            if expr.attr in _REPR_ATTRS:
                return f"`{_short(ctx.text(expr))}`"
            if expr.attr in ("T", "data"):
                return self._repr(expr.value, ctx, depth, seen)
            if isinstance(expr.value, ast.Name) and expr.value.id == "self":
                return self._through_name(expr, ctx, depth, seen)
            return None
        if isinstance(expr, ast.Name):
            return self._through_name(expr, ctx, depth, seen)
        if isinstance(expr, ast.Call):
            return self._call(expr, ctx, depth, seen)
        return None

    def _call(self, call: ast.Call, ctx, depth: int, seen: set[int]) -> str | None:
        func = call.func
        if isinstance(func, ast.Attribute):
            if func.attr in _REPR_METHODS and _encoder_like(func.value, ctx):
                return f"the output of `{_short(ctx.text(call))}`"
            if func.attr in _PASS_METHODS:
                return self._repr(func.value, ctx, depth, seen)
        name = (dotted(func) or "").rsplit(".", 1)[-1]
        if _ENCODER_CALLEES.match(name) and "token" not in name:
            return f"the output of `{_short(ctx.text(call))}`"
        if ctx.qualname(func) in _PASS_FUNCS:
            return self._first([*call.args, *(kw.value for kw in call.keywords)], ctx, depth, seen)
        callee = ctx.flow.resolve_local_call(call)
        if callee is not None:
            returns = [r.value for r in ctx.model.nodes_by_type.get(ast.Return, ())
                       if r.value is not None and ctx.enclosing_function(r) is callee]
            return self._first(returns, ctx, depth - 1, seen)
        return None

    def _through_name(self, node, ctx, depth: int, seen: set[int]) -> str | None:
        values, _ = ctx.model.assignments(node)
        found = self._first(values, ctx, depth - 1, seen)
        if found:
            return found
        if isinstance(node, ast.Name) and _REPR_NAMES.match(node.id) and \
                any(isinstance(v, ast.Call) for v in values):
            return f"`{node.id}`"
        return None

    def _first(self, exprs, ctx, depth: int, seen: set[int]) -> str | None:
        for expr in exprs:
            found = self._repr(expr, ctx, depth, seen)
            if found:
                return found
        return None


def _strip_conversions(expr: ast.AST) -> ast.AST:
    while True:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _PASS_METHODS:
            expr = expr.func.value
        elif isinstance(expr, ast.Subscript):
            expr = expr.value
        else:
            return expr


def _encoder_like(receiver: ast.AST, ctx) -> bool:
    text = dotted(receiver) or ""
    if "token" in text.lower() or isinstance(receiver, ast.Constant):
        return False
    if ctx.kind_of(receiver) == "model":
        return True
    values, _ = ctx.model.assignments(receiver) if isinstance(receiver, (ast.Name, ast.Attribute)) else ([], None)
    for value in values:
        q = ctx.qualname(value.func) if isinstance(value, ast.Call) else None
        if q and q.startswith(("sentence_transformers.", "open_clip.", "clip.", "transformers.")):
            return True
    return bool(_ENCODER_RECEIVER.search(text.rsplit(".", 1)[-1]))


def _short(text: str, limit: int = 50) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
