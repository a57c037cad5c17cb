from __future__ import annotations

import ast
import re

from torchreview.catalog import Rule
from torchreview.engine.context import parameter_default
from torchreview.findings import Severity
from torchreview.rules._helpers import is_true

_HUB_CALLS = frozenset({"torch.hub.load", "torch.hub.list", "torch.hub.help"})
_MOVING_REFS = frozenset({"main", "master", "dev", "develop", "head", "latest", "trunk", "nightly"})
_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
# Loaders whose remote code is a dataset or metric *loading script*, not a model's code.
# The builders `datasets` ships inside the library (`load_dataset("parquet", data_files=...)`):
# they read files and run no script, so the flag does nothing on them.
_PACKAGED_BUILDERS = frozenset({"arrow", "audiofolder", "csv", "imagefolder", "json", "pandas", "parquet",
                                "sql", "text", "videofolder", "webdataset", "xml", "generator", "cache",
                                "pdffolder", "niftifolder"})
_SCRIPT_LOADERS = {
    "evaluate.load": "metric", "evaluate.loading.load": "metric",
    "datasets.load_metric": "metric", "datasets.load.load_metric": "metric",
    "datasets.load_dataset": "dataset", "datasets.load.load_dataset": "dataset",
    "datasets.load_dataset_builder": "dataset", "datasets.load.load_dataset_builder": "dataset",
}


class RemoteCodeAtLoad(Rule):
    """
    ## What it does
    Flags loads that run code fetched from the network: `torch.hub.load`
    (and `hub.list`/`hub.help`) with `trust_repo=True` or from a GitHub repo
    that is not pinned to a tag or commit, and any call passing
    `trust_remote_code=True` (`from_pretrained`, `pipeline`, `load_dataset`,
    `SentenceTransformer`, ...).

    ## Why is this bad?
    `torch.hub` imports the repository's `hubconf.py`; `trust_remote_code`
    imports the model repository's Python files. Both run with your rights.
    Pointing at a moving branch means the code that runs changes whenever the
    repository owner (or whoever compromises them) pushes; `trust_repo=True`
    also silences the prompt that would have asked you.

    ## Example
    ```python
    import torch
    from transformers import AutoModel

    detector = torch.hub.load("ultralytics/yolov5", "yolov5s", trust_repo=True)
    encoder = AutoModel.from_pretrained("some-org/custom-encoder", trust_remote_code=True)
    ```

    ## Use instead
    ```python
    import torch
    from transformers import AutoModel

    detector = torch.hub.load("ultralytics/yolov5:v7.0", "yolov5s")
    encoder = AutoModel.from_pretrained(
        "some-org/custom-encoder", trust_remote_code=True,
        revision="3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    )
    ```

    ## Heuristics
    A hub repo is "pinned" when its literal `owner/repo:ref` names a ref that
    is not a well-known moving branch (`main`, `master`, `dev`, ...); repos
    held in variables are only reported with `trust_repo=True`.
    `trust_remote_code=True` is accepted when `revision=` pins a commit hash
    (7 to 40 hex digits). Only literal `True` is reported, and not on a
    concrete `transformers` class (`T5ForConditionalGeneration.from_pretrained`,
    `LlamaTokenizer.from_pretrained`), nor on a class of the project itself
    (pyvene's `BackpackGPT2LMHeadModel.from_pretrained`, or `super().from_pretrained(...)`
    inside such a class: reward-bench's QRM model): only the `Auto*`
    classes and `pipeline` import a repository's code, so the flag does
    nothing there. A canonical Hub name without an owner (`"gpt2"`,
    `"bert-base-uncased"`: Hugging Face's own repositories of natively
    supported models) is medium confidence, like a model publisher's.

    Context: an unpinned hub repository (without `trust_repo=True`) is
    supply-chain hygiene -- advice, hidden by default, shown when TR104 is
    selected (judged noise on 10 of 12 such findings of the sweeps: official
    repositories, optional evaluation models) -- except where the load runs
    for other people, unattended, and the code relies on what the entry
    returns today: the result unpacked into several names (`model, utils =
    torch.hub.load("snakers4/silero-vad", ...)`, then the utils unpacked),
    which an upstream release that changes the entry breaks (silero-vad v5,
    the two findings judged true). Where code runs for others: a module of an
    installable package (its folder has `__init__.py` up to a root with
    `setup.py`/`pyproject.toml`/`setup.cfg`), a `hubconf.py`, a file that
    imports a serving framework (FastAPI, Flask, Gradio, TorchServe, ...), or
    a package module that loads at import time; a one-off script outside any
    package (a preprocessing or demo script), a notebook or a test keeps
    advice. `trust_repo=True` and
    `trust_remote_code=True` are reported in every context, with one class
    apart: on a dataset or metric loader (`evaluate.load`,
    `datasets.load_metric`, `datasets.load_dataset`, `load_dataset_builder`)
    the remote code is that dataset's or metric's loading script, not a
    model's code. A canonical name (`"glue"`, `"super_glue"`, no `owner/`)
    is Hugging Face's own script (and `evaluate.load` runs metric scripts
    whatever the flag says): advice in one-off code, and medium confidence
    (hidden by default) where the code ships -- most canonical datasets were
    converted to plain files with no script left, `datasets` 4 runs no
    scripts at all, and where one still runs it is Hugging Face's code. A
    packaged builder (`load_dataset("parquet", data_files=...)`, `"csv"`,
    `"json"`, `"imagefolder"`, ...) runs no script: silent. A community script (`"someone/my_metric"`) is anyone's code and
    stays reported in every context, as do models (`from_pretrained`,
    `pipeline`, ...) with remote code. `torch.hub.load(..., trust_repo=True)`
    follows the same calibration: a fixed repository in one-off code is
    medium confidence (hidden by default), a repository from user input or
    in code that ships stays high.
    Who picks the repository sets the confidence (judged on real code: an
    official model that has no native `transformers` class needs remote code,
    and every fixed-id finding in research code was judged not worth a
    comment). A model id from user input -- the command line, the
    environment, a web request, followed through assignments and same-module
    calls -- runs any repository a user names: high confidence where the code
    ships, medium in one-off code (an example or research script, a
    notebook), where the operator names their own model (judged noise on
    every such finding so far); so is an id that cannot be followed (a
    config value) there. The command line, the environment and `input()`
    are the operator's own choice wherever the code lives (an installed
    package's command-line tool included: the person who names the
    repository is the person who runs it, judged noise on FastChat and
    lerobot tools): medium confidence. A web request, a UI callback or a
    downloaded file crosses a trust boundary and stays high where the
    code ships. A community dataset or metric script in
    one-off code is medium too (many such datasets now ship as plain files,
    and current `datasets` releases no longer run scripts at all). A fixed id (a string literal, or a name bound only to literals)
    is a deliberate choice of one repository: medium confidence, hidden by
    default, in one-off code (a script outside a package, a notebook, a
    test); where the code ships (package module, `hubconf.py`, a server) it
    stays high, since pinning a revision pays there. An id that cannot be
    followed (a function parameter, a config value) is reported as before
    where the code ships.
    A model or a dataset loading script read from a folder on this machine
    (whoever names it, the command line too) -- a literal path (`./ckpt`), a
    name bound only to one (`model_path = "/root/autodl-tmp/OpenBMB/model"`),
    a placeholder no Hub id can be (`"<your model path>"`, non-ASCII text),
    or an expression the same function also reads as a path on disk
    (`os.path.join(opt.model_dir, "config.json")`, `os.listdir(path)`,
    `os.path.isdir(path)`: a data tool's branch for local `*.py` scripts), a
    `pathlib` path (`str(Path(root) / "data/latents.py")` given as
    `load_dataset(path=...)`), or a command-line option whose default is a path
    (`--data_script` defaulting to `./librispeech_asr.py`) -- is
    low advice at medium confidence (hidden by default): `revision=` does not
    apply to a local folder, and a converter for a model that needs its own
    code runs the files its user put there.
    A hub repository (or a `trust_remote_code` model repository) of the
    project's own GitHub owner or Hub organisation (as its packaging
    metadata, README badges, `origin` remote or -- with a root `hubconf.py` --
    its README's own `torch.hub.load('owner/repo')` examples name it: dino's
    `hubconf.py` loading `facebookresearch/xcit`) is medium confidence: the
    project already trusts that owner's code; the pin only guards against a
    branch moving.
    A repository of an owner that publishes its own models' code
    (`model_publishers` in `data/library_models.json`: facebookresearch,
    pytorch, google, microsoft, ...: `torch.hub.load("facebookresearch/dinov2",
    ...)` in an image-quality library, fairseq's RoBERTa from `pytorch/fairseq`)
    is medium confidence too: it trusts the model's own authors, not a third
    party (every such load of the sweeps was judged not worth a comment), also
    when the id is a parameter whose default names such a model (`def
    __init__(self, model_name="facebook/dinov3-vitl16-pretrain-sat493m")`). A
    `revision=` held in a variable (`revision=args.revision`) pins the load on
    purpose: medium confidence, whoever names the model. A variable id that
    an enclosing `if` pins (`elif name.startswith("meta-llama/Llama-2-70b"):`,
    `if name == "org/model":`) names that repository and its owner.
    One unpinned repository is one finding per project (engine/merge.py): the first
    call that loads it, with a count and the other calls as related locations.
    """

    code = "TR104"
    name = "remote-code-at-load"
    severity = Severity.MEDIUM
    severity_reason = (
        "Code execution by an explicit choice: the remote code runs with your rights, but someone "
        "decided to trust that repository; the risk is a revision that changes underneath. "
        "Confidence: high when the model id comes from a web request or a download (anyone's repository "
        "runs) or from code that ships; medium for the operator's own choice (command line, environment) "
        "and for a fixed id in one-off code."
    )
    needs_torch = False
    summary = "`torch.hub.load` of unpinned/trusted repos or `trust_remote_code=True` runs downloaded code"
    summarize = "project"
    node_types = (ast.Call,)

    @classmethod
    def repeat_key(cls, finding) -> str:
        """One finding per repository (its first backquoted `owner/repo[:ref]`),
        however many calls load from it."""
        match = _REPO_IN_MESSAGE.search(finding.message)
        return match.group(1) if match else finding.message

    def wants_calls(self, ctx) -> bool:
        # `check` acts only on a call given `trust_remote_code=` and on the hub's loads
        return "trust_remote_code" in ctx.model.keyword_names or not ctx.model.called_qualnames.isdisjoint(_HUB_CALLS)

    def check(self, node: ast.Call, ctx) -> None:
        remote = None
        for kw in node.keywords:  # a loop, not a generator: every call of the file comes here
            if kw.arg == "trust_remote_code":
                remote = kw
                break
        if remote is not None and is_true(remote.value):
            revision = ctx.arg(node, "revision")
            if isinstance(revision, ast.Constant) and isinstance(revision.value, str) and \
                    _COMMIT.match(revision.value):
                return
            # a revision held in a variable (`revision=args.revision`, `revision=training_args.hub_model_revision`):
            # the code pins what it loads on purpose; whether that names a commit is the caller's choice
            pinned = revision is not None and not isinstance(revision, ast.Constant)
            target = _first_literal(node)
            named = _fixed_value(_model_id(node), ctx)
            what = f" for `{named}`" if named else ""
            if _concrete_transformers_class(ctx.qualname(node.func) or "") or _project_class_load(node, ctx):
                return  # `LlamaForCausalLM.from_pretrained(...)`: a concrete class never imports repository code
            script = _SCRIPT_LOADERS.get(ctx.qualname(node.func) or "")
            folder = _local_folder(node, ctx)
            if script is not None and folder is not None:
                # a loading script on this machine (the branch for `*.py` paths of a data tool): the
                # user's own file, `revision=` does not apply -- advice
                ctx.report(remote, f"`trust_remote_code=True` runs the local {script} loading script at "
                                   f"`{folder}`: only run scripts whose code you have read",
                           severity=Severity.LOW, kind="advice", confidence="medium")
                return
            if script is not None:
                self._script(node, remote, ctx, script, target)
                return
            if folder is not None:  # a folder on this machine: `revision=` does not apply, advice
                ctx.report(remote, f"`trust_remote_code=True` imports and runs the Python files in the local "
                                   f"folder `{folder}` (a model that needs its own code): only run it on a folder "
                                   "whose code you have read, or use a model supported natively",
                           severity=Severity.LOW, kind="advice", confidence="medium")
                return
            self._model(node, remote, ctx, what, pinned)
            return
        q = ctx.qualname(node.func)
        if q not in _HUB_CALLS:
            return
        source = ctx.arg(node, "source")
        if isinstance(source, ast.Constant) and source.value == "local":
            return
        repo = ctx.arg(node, "repo_or_dir" if q == "torch.hub.load" else "github", 0)
        trust = ctx.arg(node, "trust_repo")
        repo_text = repo.value if isinstance(repo, ast.Constant) and isinstance(repo.value, str) else None
        unpinned = repo_text is not None and _unpinned(repo_text)
        call = q.rsplit(".", 1)[-1]
        # a repository of this project's own GitHub owner (dino's hubconf loading
        # facebookresearch/xcit): trusting it trusts no one new
        sibling = repo_text is not None and repo_text.split("/", 1)[0].lower() in ctx.advice.own_owners
        # or of an owner that publishes its own models' code (facebookresearch/dinov2, pytorch/fairseq):
        # loading it trusts the model's authors, not a third party
        sibling = sibling or ctx.library.publisher(repo_text)
        if is_true(trust):
            shown = f" `{repo_text}`" if repo_text else ""
            # the same "who names the repository" calibration as trust_remote_code: a fixed
            # repository in one-off code is a deliberate choice, medium (hidden by default)
            fixed = _fixed_id(repo, ctx) and ctx.advice.one_off(node) is not None
            ctx.report(trust, f"`torch.hub.{call}` with `trust_repo=True` runs the `hubconf.py` of{shown or ' a'} "
                              "repository without asking: pin the repo to a tag or commit "
                              "(`owner/repo:<tag>`) so the code that runs is the code you checked "
                              "(`trust_repo=True` only skips the question whether to trust it)",
                       confidence="medium" if fixed or sibling else None)
        elif unpinned:
            # a moving branch is supply-chain hygiene (advice) -- unless the code depends on the
            # shape of what the entry returns (`model, utils = torch.hub.load(...)`, then the utils
            # unpacked): an upstream release that changes it breaks this code (silero-vad v5)
            depends = _unpacks_result(node, ctx)
            ctx.report(repo, f"`torch.hub.{call}` runs code from `{repo_text}` at whatever its branch points to "
                             "today" + (" and this code unpacks what it returns, so an upstream release that "
                                        "changes it breaks here" if depends else "") +
                             ": pin a release tag or commit (`owner/repo:<tag-or-sha>`)",
                       kind=None if depends and ctx.advice.one_off(node) is None else "advice",
                       confidence="medium" if sibling else None)


    @staticmethod
    def _model(node: ast.Call, remote: ast.keyword, ctx, what: str, pinned: bool = False) -> None:
        """``trust_remote_code=True`` on a model loader. The repository it trusts
        decides: one named by user input (the command line, the environment, a web
        request) runs whatever code any repository a user names holds -- a defect,
        high confidence. A fixed id (a literal, or a name bound only to literals) is
        someone's deliberate choice of one repository (an official model that has
        no native class needs it): medium confidence, hidden by default, unless the
        code ships (a package, a hubconf, a server), where pinning a revision pays.
        An id that cannot be followed is reported as before."""
        model_id = _model_id(node)
        source = ctx.inputs.source_of(model_id) if model_id is not None else None
        if source is not None:
            # in one-off code (an example or research script, a notebook) the operator names
            # their own model: a convenience, medium; where the code ships, anyone's repository
            ctx.report(remote, f"`trust_remote_code=True` on a model id taken from {source.kind}: whatever "
                               "repository is named there has its Python files imported and run with your "
                               "rights; allow only reviewed repositories, each pinned with "
                               "`revision=\"<commit sha>\"`",
                       confidence="high" if source.remote and ctx.advice.one_off(node) is None and not pinned
                       else "medium")
            return
        message = f"`trust_remote_code=True`{what} imports and runs Python files from the model repository: " \
                  "review that code and pin it with `revision=\"<commit sha>\"`, or use a model supported natively"
        one_off = ctx.advice.one_off(node) is not None
        fixed = _fixed_value(model_id, ctx) if _fixed_id(model_id, ctx) else _narrowed(model_id, node, ctx)
        # a repository of the project's own organisation (`lerobot/unitree-g1-mujoco` in
        # lerobot): its maintainers' own code -- the pin only guards against a moving branch
        own = fixed is not None and "/" in fixed and fixed.split("/", 1)[0].lower() in ctx.advice.own_owners
        # or of an owner that publishes its own models' code (`microsoft/...`, `google/...`): the model's
        # own authors, not a third party
        own = own or (fixed is not None and ctx.library.publisher(fixed))
        # a canonical Hub name without an owner (`"gpt2"`, `"bert-base-uncased"`): Hugging Face's
        # own repositories of natively supported models, which hold no Python files
        own = own or (fixed is not None and "/" not in fixed and not _not_a_hub_id(fixed))
        if fixed is None:
            # a parameter whose default is an official model of its publisher (`def __init__(self,
            # model_name="facebook/dinov3-vitl16-pretrain-sat493m")`): the model the code is written
            # for is the publisher's own; a caller may name another, so it stays medium
            default = _defaulted(model_id, ctx)
            own = default is not None and bool(ctx.library.publisher(default))
            fixed = default if own else None
        if fixed is not None and (one_off or own):
            ctx.report(remote, message + " (a fixed repository chosen on purpose: the risk is a revision that "
                                         "changes underneath)", confidence="medium")
            return
        ctx.report(remote, message, confidence="medium" if one_off or pinned else None)

    @staticmethod
    def _script(node: ast.Call, remote: ast.keyword, ctx, script: str, target: str | None) -> None:
        """``trust_remote_code=True`` on a dataset/metric loader: it runs that
        dataset's or metric's loading script. A canonical name (no ``owner/``) is
        Hugging Face's own script: advice in one-off code (a notebook, a tutorial
        script, a test), reported where the code ships. A community ``owner/name``
        script is anyone's code: reported in every context."""
        if script == "dataset" and target is not None and target.lower() in _PACKAGED_BUILDERS:
            return  # `load_dataset("parquet", data_files=...)`: a builder inside `datasets`, no script
        canonical = target is not None and "/" not in target
        where = ctx.advice.one_off(node)
        one_off = where if canonical else None
        name = f" `{target}`" if target else ""
        whose = "Hugging Face's canonical" if canonical else "the repository's"
        # a canonical name is Hugging Face's own dataset or metric: most were converted to plain
        # files (no script left to run) and `datasets` 4 runs none at all; where one still runs it
        # is Hugging Face's code, not a stranger's -- medium, also where the code ships (judged
        # noise or false on all 5 such findings of the blind tests)
        ctx.report(remote, f"`trust_remote_code=True` runs the Python loading script of the {script}{name} "
                           f"({whose} script) with your rights: pin it with `revision=\"<commit sha>\"` "
                           f"where this code runs for others, or use a {script} that needs no script",
                   kind="advice" if one_off else None,
                   confidence="medium" if where is not None or canonical else None)


def _unpacks_result(call: ast.Call, ctx) -> bool:
    """The hub call's result is unpacked into several names (``model, utils =
    torch.hub.load(...)``), or bound to a name that is unpacked later
    (``result = torch.hub.load(...); model, utils = result``): the code relies on the
    tuple the entry point returns today."""
    stmt = next((a for a in ctx.ancestors(call) if isinstance(a, ast.stmt)), None)
    if not isinstance(stmt, ast.Assign) or stmt.value is not call or len(stmt.targets) != 1:
        return False
    target = stmt.targets[0]
    if isinstance(target, (ast.Tuple, ast.List)):
        return True
    if not isinstance(target, ast.Name):
        return False
    scope = ctx.enclosing_function(call) or ctx.tree
    return any(isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == target.id and
               any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets) for node in ast.walk(scope))


_FOLDER_CALLS = frozenset({"os.path.join", "os.listdir", "os.scandir", "os.path.isdir", "os.path.isfile",
                           "os.path.exists", "os.walk", "glob.glob", "pathlib.Path"})


def _local_folder(node: ast.Call, ctx) -> str | None:
    """The text of the model argument when it names a folder on this machine: a literal
    path (``./ckpt``, ``/data/mpt``), or an expression the same function also reads as
    a folder (``os.path.join(opt.model_dir, "config.json")``, ``os.listdir(path)``,
    ``Path(path) / ...``); None for a Hub id or an unknown value."""
    arg = node.args[0] if node.args else next(
        (kw.value for kw in node.keywords if kw.arg in ("pretrained_model_name_or_path", "model_name_or_path",
                                                        "path")),  # `load_dataset(path=...)`
        None)
    while isinstance(arg, ast.Call) and ctx.qualname(arg.func) in ("builtins.str", "os.fspath") and \
            len(arg.args) == 1:
        arg = arg.args[0]  # `str(script_path)`
    if arg is None:
        return None
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value if _not_a_hub_id(arg.value) else None
    if _built_as_path(arg, ctx):
        return ctx.text(arg)
    if not isinstance(arg, (ast.Name, ast.Attribute)):
        return None
    named = _fixed_value(arg, ctx)
    if named is not None and _not_a_hub_id(named):
        return named  # `model_path = "/root/autodl-tmp/OpenBMB/MiniCPM-o-2_6"`: a folder the user downloaded
    default = ctx.options.default_of(arg)
    if isinstance(default, str) and default.startswith((".", "/", "~")):
        # `--data_script` defaulting to `./librispeech_asr.py`: the project's own loading script (DAG-KD)
        return default
    text = ctx.text(arg)
    scope = ctx.enclosing_function(node) or ctx.tree
    for sub in ast.walk(scope):
        if isinstance(sub, ast.Call) and sub.args and ctx.text(sub.args[0]) == text and sub is not node and \
                (ctx.qualname(sub.func) or "") in _FOLDER_CALLS:
            return text
    return None


def _built_as_path(expr: ast.AST, ctx, depth: int = 2) -> bool:
    """``expr`` is a filesystem path object: ``Path(...)``, ``Path(...) / "x.py"``, or a name
    every assignment of which is one (sledge's ``Path(os.getenv(ROOT)) / "dataset/x.py"``)."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
        return _built_as_path(expr.left, ctx, depth)
    if isinstance(expr, ast.Call):
        return ctx.qualname(expr.func) in ("pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath")
    if isinstance(expr, ast.Name) and depth > 0:
        values = ctx.model.assignments(expr)[0]
        return bool(values) and all(_built_as_path(v, ctx, depth - 1) for v in values)
    return False


_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")


def _not_a_hub_id(text: str) -> bool:
    """A literal that cannot name a Hub repository: a path on this machine (``./ckpt``,
    ``/root/models/x``, ``~/m``) or a placeholder for one (``"请修改我！！！"``, ``"<your model
    path>"``: Hub ids hold only letters, digits, ``-``, ``_`` and ``.``, with one ``/``)."""
    return text.startswith((".", "/", "~")) or not _HUB_ID.match(text)


def _project_class_load(call: ast.Call, ctx) -> bool:
    """``Model.from_pretrained(...)`` on a class of this project (defined in the file or
    in another project module: pyvene's ``BackpackGPT2LMHeadModel``): a concrete class with
    its own code; transformers ignores ``trust_remote_code`` outside the ``Auto`` classes.
    Also ``super().from_pretrained(...)`` in such a class's own ``from_pretrained``."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "from_pretrained"):
        return False
    owner = func.value
    if isinstance(owner, ast.Name) and owner.id in ctx.model.classes:
        return True
    if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super" and \
            ctx.enclosing_class(call) is not None:
        return True  # `super().from_pretrained(...)` in a class of this file: a concrete subclass (reward-bench)
    return ctx.project.class_summary(ctx.qualname(owner)) is not None


def _concrete_transformers_class(q: str) -> bool:
    """``transformers.<Class>.from_pretrained`` for a concrete model/tokenizer/config class.

    Only the ``Auto*`` classes (and ``pipeline``) read a repository's ``auto_map`` and import its
    Python files; a concrete class such as ``T5ForConditionalGeneration`` or ``LlamaTokenizer``
    loads with its own code, so ``trust_remote_code=True`` has no effect there."""
    parts = q.split(".")
    return len(parts) >= 3 and parts[0] == "transformers" and parts[-1] == "from_pretrained" and \
        parts[-2][:1].isupper() and not re.match(r"(?:TF|Flax)?Auto", parts[-2])


_REPO_IN_MESSAGE = re.compile(r"`([\w.-]+/[\w.-]+(?::[^`]*)?)`")


def _unpinned(repo: str) -> bool:
    if "/" not in repo or repo.startswith((".", "/", "~")):
        return False  # a path, not owner/repo
    if ":" not in repo:
        return True
    ref = repo.split(":", 1)[1].strip().lower()
    return not ref or ref in _MOVING_REFS


_ID_KEYWORDS = ("pretrained_model_name_or_path", "model", "path", "model_name_or_path", "model_name", "name_or_path",
                "model_id", "repo_id")


def _model_id(node: ast.Call) -> ast.AST | None:
    """The expression naming the repository: the first positional argument (the
    one after the task for ``pipeline``, which takes ``model=``) or a model keyword."""
    for kw in node.keywords:
        if kw.arg in _ID_KEYWORDS:
            return kw.value
    callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
    index = 1 if callee == "pipeline" else 0  # pipeline(task, model, ...)
    return node.args[index] if len(node.args) > index else None


def _fixed_id(expr: ast.AST | None, ctx) -> bool:
    """A string literal, or a name whose every assignment is one (``MODEL_ID = "org/x"``)."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str)
    if isinstance(expr, ast.Name):
        values, _ = ctx.model.assignments(expr)
        return bool(values) and all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values)
    return False


def _fixed_value(expr: ast.AST | None, ctx) -> str | None:
    """The repository a fixed id names, when it names one value."""
    if not _fixed_id(expr, ctx):
        return None
    values = [expr] if isinstance(expr, ast.Constant) else ctx.model.assignments(expr)[0]
    names = {v.value for v in values}
    return names.pop() if len(names) == 1 else None


def _defaulted(expr: ast.AST | None, ctx) -> str | None:
    """The literal default of the parameter ``expr`` reads, when nothing in its function
    assigns it: ``model_name`` of ``def __init__(self, model_name="org/model")``."""
    if not isinstance(expr, ast.Name):
        return None
    values, func = ctx.model.assignments(expr)
    if values or func is None or not isinstance(getattr(func, "args", None), ast.arguments):
        return None
    default = parameter_default(func.args, expr.id)
    return default.value if isinstance(default, ast.Constant) and isinstance(default.value, str) and \
        "/" in default.value else None


def _narrowed(expr: ast.AST | None, call: ast.Call, ctx) -> str | None:
    """The repository an enclosing ``if`` pins a variable model id to: ``elif
    name.startswith("meta-llama/Llama-2-70b"):`` or ``if name == "org/model":`` around the
    call (in its body, not its ``else``) -- the literal, whose owner is then known."""
    if not isinstance(expr, (ast.Name, ast.Attribute)):
        return None
    text = ctx.text(expr)
    child: ast.AST = call
    for above in ctx.ancestors(call):
        if isinstance(above, ast.If) and any(child is s for s in above.body):
            test = above.test
            literal = None
            if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and \
                    test.func.attr == "startswith" and ctx.text(test.func.value) == text and test.args:
                literal = test.args[0]
            elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and \
                    ctx.text(test.left) == text:
                literal = test.comparators[0]
            if isinstance(literal, ast.Constant) and isinstance(literal.value, str) and "/" in literal.value:
                return literal.value
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return None
        child = above
    return None


def _first_literal(node: ast.Call) -> str | None:
    for arg in node.args[:1]:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
    for kw in node.keywords:
        if kw.arg in ("pretrained_model_name_or_path", "model", "path", "model_name_or_path") and \
                isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
            return kw.value.value
    return None
