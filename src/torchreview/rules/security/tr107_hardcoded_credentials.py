from __future__ import annotations

import ast
import re
import unicodedata
from bisect import bisect_right
from itertools import accumulate
from types import SimpleNamespace

from torchreview.catalog import Rule
from torchreview.engine.context import parent
from torchreview.findings import Severity

# Credential shapes (provider, pattern); the secret is group 0.
_SHAPES = (
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    # not inside a hyphenated name or a path (`..._Data_free-sk-5108-mudrika-original-....jpeg`,
    # a product image URL in a notebook's output)
    ("OpenAI-style API key", re.compile(r"(?<![\w./-])sk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{20,}")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b")),
    ("W&B API key", re.compile(r"(?:WANDB_API_KEY\W{0,6}|wandb\.login\([^)]*key\s*=\s*['\"])([0-9a-f]{40})\b")),
)
_SECRET_NAME = re.compile(
    r"(?i)^(?:\w*_)?(?:api_?key|apikey|secret|secret_?key|client_?secret|password|passwd|pwd|access_?key"
    r"|private_?key|auth_?token|access_?token|api_?token|bearer_?token|hf_?token|token|wandb_?key)$")
_NOT_SECRET_NAME = re.compile(
    r"(?i)(^|_)(pad|bos|eos|unk|sep|cls|mask|start|end|sos|special|blank|image|img|audio|video|placeholder"
    r"|null|empty|sentinel|split|stop|new|next|prev|first|last|max|min|num|n|default)_?token$|tokeni[sz]er")
# the identifier half of a key pair (AWS-style `access_key` / `access_key_id` beside a
# `secret_key`): public on its own
_ID_HALF = re.compile(r"(?i)^(?:\w*_)?(?:access_?key(?:_?id)?|key_?id)$")
_SECRET_HALF = re.compile(r"(?i)secret")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:x+|\*+|\.+|-+|#+|none|null|changeme|change_me|todo|tbd|fixme|secret|password|token|api_?key"
    r"|dummy|fake|test|testing|example|sample|placeholder|redacted|hidden|masked|default)$"
    # the word itself with "my" before it (`pwd='mypassword'`, `"my_api_key"`): a stand-in, not a value
    r"|^my_?(?:password|passwd|pass|pwd|secret|token|api_?key|key)$"
    r"|your|xxxx|<|>|\{|\}|\$|insert|replace|example|placeholder|dummy|\.\.\."
    r"|你的|请输入|填入"  # "your", "please enter", "fill in"
    # a run no generator emits (`sk_test_1234567890abcdef`: a test fixture's stand-in)
    r"|12345678|abcdefgh")
# The access key id of a pre-signed URL (S3 / GitHub release downloads) names the signer; the URL carries
# no secret key and its signature expires within minutes, so the id alone is not a leaked credential.
_PRESIGNED_PARAM = re.compile(r"(?i)(?:X-Amz-Credential|AWSAccessKeyId)=$")
_CREDENTIAL_LIKE = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[^\s<>\[\]{}]{16,}$")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]+$")


class HardcodedCredentials(Rule):
    """
    ## What it does
    Finds credentials written into code or notebooks, including the stored
    outputs of notebook cells: known token shapes (AWS `AKIA…`, Hugging Face
    `hf_…`, OpenAI `sk-…` (not inside a hyphenated name or a path: an image
    file `...-sk-5108-....jpeg`), GitHub `ghp_…`, W&B keys given to `WANDB_API_KEY`
    or `wandb.login(key=…)`) and non-empty string literals assigned to names
    such as `api_key`, `token`, `secret`, `password`. The secret is never
    printed in full.

    ## Why is this bad?
    Code and notebooks get committed, shared, pasted and published; once a
    key is in git history it must be considered leaked. Notebook outputs are
    the sneaky case: a printed config or a login banner stays in the `.ipynb`
    long after the cell that produced it is deleted.

    ## Example
    ```python
    import wandb

    wandb.login(key="5f3a9c0e1b2d4f6a8c7e9b0d1f2a3c4e5b6d7f8a")
    HF_TOKEN = "hf_Q3wErTy7UiOp9AsDfGh2JkLzXcVbNm1234"
    ```

    ## Use instead
    ```python
    import os

    import wandb

    wandb.login(key=os.environ["WANDB_API_KEY"])
    HF_TOKEN = os.environ.get("HF_TOKEN", "")
    ```

    ## Heuristics
    A value ending in a data file's extension (`.pickle`, `.pt`, `.csv`, `.png` ...)
    is a file name, not a key (`token = "..._ShapeNetDataset.pickle"`:
    torch-points3d's notebook, judged false in blind test 60).
    A password given to a class together with a user's identity
    (`User(user_name="kate", email=..., password="...")`: a row of the application's
    own user table, seed or demo users) is not a credential and is not reported.
    Token shapes are matched on every line (strings and comments) and in
    notebook outputs; obvious placeholders (`xxxx`, `<YOUR_KEY>`, `your_…`, `mypassword`, a counting run
    such as `1234567890` or `abcdefgh` that no key generator emits,
    `…EXAMPLE`, repeated characters, a phrase of lower-case words with no
    digit such as a test's `sk-do-not-log-this-value` marker, also with a counting run
    such as `sk-super-secret-value-12345`) are skipped,
    and so is a value that
    calls itself a stand-in by one of its words (`"fake-jwt-token-12345"`,
    `dummyToken…`, `demo`, `sample`, `mock`, `placeholder`: a teaching API's
    canned reply), and a secret whose own comment, or a comment line right
    above it, says so (`# Not critical, only usable on the sandboxed CI
    instance.`, `# dummy key`, `staging`, `fake`). Name-based matches need a
    string literal; for token/key names the value must look like a
    credential (16+ ASCII characters mixing letters and digits, no spaces:
    a tokenizer's BPE string such as `"Line1ĊLine2"` is not one), and
    tokenizer vocabulary such as `pad_token = "[PAD]"` is ignored, and so is a
    constant whose value spells its own name (`INT8_ASYM_PER_TOKEN =
    "int8_asym_per_token"`, an enum member), nor a salted password hash
    (Jupyter's `c.NotebookApp.password = 'sha1:<salt>:<digest>'`, argon2,
    bcrypt): it is what a server stores instead of the password. The access
    key id inside a pre-signed URL (`X-Amz-Credential=AKIA…`,
    `AWSAccessKeyId=AKIA…`, as in a printed download log) is not reported: it
    names the signer, the URL holds no secret key and its signature expires. A
    secret shown by several cells' outputs of one notebook is reported once, at
    the first of them. An access key *id* (`access_key`, `SAT_ACCESS_KEY`,
    `access_key_id`) written in a scope that also writes the pair's secret
    (`secret_key = …`) is the pair's public half: the secret is the finding,
    and with a placeholder secret (`"PUT_SECRET_HERE"`) there is none. The
    secrets handed to one call or written in one
    dict literal (`login(api_key="…", secret_key="…")`), or bound to names
    that one call reads together (`api_key = "…"`, `api_secret = "…"`, then
    `FlickrAPI(api_key, api_secret)`), are one credential: one finding naming
    them all. One secret written in several files (the
    same Azure key pasted into two evaluation scripts) is one leak with one
    fix: one finding, the other places as related locations. A key made to be
    public -- a PostHog project key (`phc_…`), a Stripe publishable key
    (`pk_live_…`/`pk_test_…`), a Mapbox public token (`pk.…`): client-side,
    send-only keys their vendors document as safe to embed -- is not a
    leaked credential. A password (not a key or token) in a file that talks to
    a service on this machine (`localhost`, `127.0.0.1`: a tutorial's local
    Neo4j) is the credential of a local development database, and a named
    password, key or token in a test file is a fixture (`patch.dict(os.environ,
    {"ADMIN_PASSWORD": "demo1234"})`, `neptune_api_key = "r@nd0m..."` in an
    expected command line): medium confidence (a known token shape there stays high). So is a web framework's own signing
    key (`app.config["SECRET_KEY"]`, `app.secret_key`, Django's `SECRET_KEY`
    in a file importing Flask, Django, Quart, Starlette, FastAPI, Sanic or
    Bottle): it signs that app's session cookies, opens no third-party account,
    and matters once the app is deployed. Severity is
    low in notebooks and medium in `.py` files.
    """

    code = "TR107"
    name = "hardcoded-credentials"
    severity = Severity.LOW
    severity_reason = (
        "Credential exposure: a leaked key opens a third-party account, not this machine. Medium in "
        "`.py` modules (shipped and copied); low in notebooks, as the catalog sets it."
    )
    needs_torch = False
    summary = "API keys, tokens or passwords written into code or notebook outputs"
    summarize = "review"

    @classmethod
    def repeat_key(cls, finding) -> str:
        """One leaked secret, however many files hold it: the first masked secret the message
        names (a file that also hands the same service a second key, `API(rest_api_key=...)`
        beside `Experiment(api_key=...)`, repeats the files that hand it the first alone)."""
        masked = _MASKED.findall(finding.message)
        return masked[0] if masked else finding.message

    def check_file(self, ctx) -> None:
        severity = None if ctx.source.is_notebook else Severity.MEDIUM
        reported: set[int] = set()
        for number in _marked_lines(ctx.source.text):
            text = ctx.source.lines[number - 1]
            if number in ctx.source.magic_lines or _said_stand_in(ctx.source.lines, number):
                continue
            for label, secret, start in _shapes(text):
                reported.add(number)
                spot = SimpleNamespace(lineno=number, col_offset=len(text[:start].encode()),
                                       end_lineno=number, end_col_offset=len(text[:start + len(secret)].encode()))
                ctx.report(spot, f"hard-coded {label} `{_mask(secret)}`: revoke it and read it from the "
                                 "environment or a secrets manager", severity=severity)
        # the secrets handed to one call or written in one dict literal are one credential
        # (`login(api_key="…", secret_key="…")`): one finding naming them all
        groups: dict[int, list[tuple[str, str, ast.AST]]] = {}
        order: list[int] = []
        holders: dict[int, ast.AST] = {}
        named = _named_literals(ctx)
        # the scopes that also write the secret half of a key pair (`secret_key = "…"`, a
        # placeholder or not): there an access key *id* is the pair's public half
        paired = {id(ctx.model.scope_of(value)) for (name, _), value, _ in named if _SECRET_HALF.search(name)}
        for target, value, holder in named:
            name, literal = target
            if value.lineno in reported or not _looks_secret(name, literal):
                continue
            if _ID_HALF.match(name) and id(ctx.model.scope_of(value)) in paired:
                continue  # the id beside its secret: the secret is the finding (or, a placeholder, none)
            if _password_name(name) and _user_record(holder):
                continue  # `User(user_name="kate", email=..., password="...")`: a row of the app's own user table
            if _said_stand_in(ctx.source.lines, value.lineno):
                continue  # `# Not critical, only usable on the sandboxed CI instance.`: the author says so
            reported.add(value.lineno)
            key = id(holder)
            if key not in groups:
                groups[key] = []
                order.append(key)
                holders[key] = holder
            groups[key].append((name, literal, value))
        order = _read_together(groups, order, ctx)
        order = _one_service(groups, order, holders, ctx)
        for key in order:
            group = groups[key]
            names = " and ".join(dict.fromkeys(f"`{name}`" for name, _, _ in group))
            secrets = ", ".join(dict.fromkeys(f"`{_mask(literal)}`" for _, literal, _ in group))
            single = len({literal for _, literal, _ in group}) == 1
            verb = "is set to a hard-coded secret" if single else "are set to hard-coded secrets"
            # passwords of a service on this machine (a demo's Neo4j at `bolt://localhost:7687`):
            # the credentials of a local development database, not an account of anyone's -- medium
            # (or in a test file: a fixture password a test patches into the environment)
            local = all(_password_name(name) for name, _, _ in group) and \
                (_LOCAL_SERVICE.search(ctx.source.text) is not None or ctx.is_test_file)
            # a web framework's own signing key (Flask's `app.config["SECRET_KEY"]`, Django's
            # `SECRET_KEY`): it signs this app's session cookies and opens no one's account; it
            # matters once the app is deployed, which a research demo seldom is (cocoa's chat
            # app, self-llm's Gradio demo: judged noise) -- medium
            signing = all(name.lower() == "secret_key" for name, _, _ in group) and \
                any(ctx.model.imports_module(f) for f in _WEB_FRAMEWORKS)
            why = " (the key signs this web app's own session cookies: change it before deploying)" \
                if signing else ""
            # a key or token written in a test file is a fixture value the test compares or patches
            # in (llm-random's `neptune_api_key = "r@nd0mN3ptun3Ap1K3y"` beside `/some/path/...`
            # placeholders, judged false twice): medium; a known token shape there stays high
            fixture = ctx.is_test_file
            ctx.report(group[0][2], f"{names} {verb} {secrets}: read {'it' if single else 'them'} "
                                    f"from `os.environ` or a secrets manager instead{why}", severity=severity,
                       end_node=group[-1][2], confidence="medium" if local or signing or fixture else None)
        self._outputs(ctx)

    def _outputs(self, ctx) -> None:
        if not ctx.source.is_notebook or not ctx.source.line_map:
            return
        first_line = {}
        for index, (cell, _) in enumerate(ctx.source.line_map, start=1):
            first_line.setdefault(cell, index)
        seen: set[str] = set()  # one finding per secret and notebook: the first cell whose output shows it
        for cell, text in ctx.source.outputs:
            if cell not in first_line:
                continue
            found = {secret: label for line in text.splitlines() if _maybe_secret(line)
                     for label, secret, _ in _shapes(line) if secret not in seen}
            seen.update(found)
            for secret, label in found.items():
                spot = SimpleNamespace(lineno=first_line[cell], col_offset=0, end_lineno=None, end_col_offset=None)
                ctx.report(spot, f"the stored output of this cell contains a {label} `{_mask(secret)}`: clear "
                                 "the outputs (e.g. `nbstripout`) and revoke the key")


# Web frameworks whose `SECRET_KEY` / `secret_key` signs the app's own cookies and tokens.
_WEB_FRAMEWORKS = ("flask", "django", "quart", "starlette", "fastapi", "sanic", "bottle")


# Every credential shape contains one of these substrings (the literal part of each of
# ``_SHAPES``): one regex search per line, and one over the whole source first.
_MARKERS = re.compile(r"AKIA|ASIA|hf_|sk-|gh[pousr]_|github_pat_|WANDB_API_KEY|wandb\.login\(")
# ``_MARKERS``' alternatives spelled out: a match is an occurrence of one of these.
_MARKER_LITERALS = ("AKIA", "ASIA", "hf_", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
                    "WANDB_API_KEY", "wandb.login(")


def _maybe_secret(text: str) -> bool:
    return _MARKERS.search(text) is not None


def _marked_lines(text: str) -> list[int]:
    """The numbers (from 1, ``str.splitlines`` lines) of the lines holding a marker, in
    order: the occurrences of each marker in the whole source (a marker spans no line
    break, so each lies in one line; one that overlaps another lies in its line) found by
    substring search, not by the alternation (which steps through every character)."""
    starts = []
    find = text.find
    for literal in _MARKER_LITERALS:
        at = find(literal)
        while at >= 0:
            starts.append(at)
            at = find(literal, at + 1)
    if not starts:
        return []
    ends = list(accumulate(map(len, text.splitlines(keepends=True))))
    return sorted({bisect_right(ends, start) + 1 for start in starts})


# The literal part of each of ``_SHAPES`` (in its order): a shape whose markers are all
# absent from a line cannot match there, so its regex is not run (lines can be huge:
# detectron2's LVIS category tables are one line each).
_SHAPE_MARKERS = (("AKIA", "ASIA"), ("hf_",), ("sk-",),
                  ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), ("WANDB_API_KEY", "wandb.login("))


def _shapes(text: str):
    for (label, pattern), markers in zip(_SHAPES, _SHAPE_MARKERS):
        if not any(marker in text for marker in markers):
            continue
        for match in pattern.finditer(text):
            secret = match.group(match.lastindex or 0)
            if _PRESIGNED_PARAM.search(text, 0, match.start()):
                continue
            if not _placeholder(secret):
                yield label, secret, match.start(match.lastindex or 0)


_IDENTITY_KEYWORDS = frozenset({"email", "user_name", "username", "user_id", "login", "full_name", "first_name"})


def _user_record(holder: ast.AST) -> bool:
    """A class constructed with a password beside a user's identity (`User(user_name=...,
    email=..., password=...)`): a record of the application's own user table (seed or
    demo users), not the credential of a service this code logs in to."""
    if not isinstance(holder, ast.Call):
        return False
    callee = holder.func.attr if isinstance(holder.func, ast.Attribute) else         holder.func.id if isinstance(holder.func, ast.Name) else ""
    return callee[:1].isupper() and any(k.arg in _IDENTITY_KEYWORDS for k in holder.keywords)


def _one_service(groups: dict, order: list, holders: dict, ctx) -> list:
    """Merge the groups of secrets handed to calls of one library in one file (comet_ml's
    `Experiment(api_key="…")` and `API(rest_api_key="…")` three lines below: one account's
    keys, one finding; the second was judged a repeat). Returns the new order."""
    first_of: dict[str, int] = {}
    kept = []
    for key in order:
        holder = holders.get(key)
        package = None
        if isinstance(holder, ast.Call):
            q = ctx.model.qualname(holder.func)
            package = q.split(".", 1)[0] if q and "." in q and not q.startswith(("builtins.", "os.", "dict")) else None
        if package is not None and package in first_of:
            groups[first_of[package]].extend(groups.pop(key))
            continue
        if package is not None:
            first_of[package] = key
        kept.append(key)
    return kept


def _read_together(groups: dict, order: list, ctx) -> list:
    """Merge the groups of secrets bound to plain names that one call reads together
    (``api_key = "…"``, ``api_secret = "…"``, then ``FlickrAPI(api_key, api_secret)``: one
    credential, one finding; the second was judged a repeat). Returns the new order; the
    merged groups are kept under the first key."""
    named = {}
    for key in order:
        for name, _, value in groups[key]:
            target = parent(value)
            if isinstance(target, (ast.Assign, ast.AnnAssign)) and name.isidentifier():
                named.setdefault(name, key)
    if len(set(named.values())) < 2:
        return order
    merged: dict = {}
    for call in ctx.model.nodes_by_type.get(ast.Call, ()):
        keys = []
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(arg, ast.Name) and arg.id in named:
                key = named[arg.id]
                key = merged.get(key, key)
                if key not in keys:
                    keys.append(key)
        if len(keys) > 1:
            first = min(keys, key=order.index)
            for other in keys:
                if other != first:
                    groups[first].extend(groups.pop(other))
                    merged[other] = first
                    for moved, into in list(merged.items()):
                        if into == other:
                            merged[moved] = first
    return [k for k in order if k in groups]


# lower-case words joined by `-`/`_` and no digit: a phrase someone wrote (`sk-do-not-log-this-value`,
# a test's marker that must never reach a log), not a generated key, which mixes cases and digits
_PHRASE = re.compile(r"^(?:[a-z]+[-_])+[a-z]+$")
_KEY_PREFIX = re.compile(r"^(?:sk-(?:proj-|svcacct-|admin-|ant-)?|hf_|gh[pousr]_|github_pat_)")


def _counting(part: str) -> bool:
    """A run of digits each one more than the one before (``123``, ``12345``, ``7890``)."""
    return len(part) >= 3 and part.isdigit() and all((int(b) - int(a)) % 10 == 1 for a, b in zip(part, part[1:]))


def _written_phrase(secret: str) -> bool:
    """Lower-case words joined by ``-``/``_``, at least two of them, and at most a counting run
    besides (``sk-super-secret-value-12345``: a test's marker value that must never reach a
    report): a person wrote it; a generated key mixes cases and digits throughout."""
    parts = re.split(r"[-_]", _KEY_PREFIX.sub("", secret))
    words = [p for p in parts if p.isalpha() and p.islower()]
    return len(words) >= 2 and all(p in words or _counting(p) for p in parts)


def _placeholder(secret: str) -> bool:
    body = secret.split("_", 1)[-1] if secret.startswith(("hf_", "gh")) else secret
    if _PHRASE.match(_KEY_PREFIX.sub("", secret)) or _written_phrase(secret):
        return True
    return bool(_PLACEHOLDER.search(body)) or len(set(body)) < 6 or body.upper().endswith("EXAMPLE")


def _named_literals(ctx):
    """((name, literal), node, holder) for string literals bound to a name, attribute, key or
    keyword whose name may be a secret's (``_SECRET_NAME``, the first test of
    ``_looks_secret``: the others could never be reported); ``holder`` is what groups them
    into one credential (the call of keywords, the dict literal of entries, else the
    literal itself). Sorted by position."""
    by_type = ctx.model.nodes_by_type
    secret = _secret_name
    constant = ast.Constant  # (``_is_str`` inline: the parser's exact types)
    found = []
    for nodes in (by_type.get(ast.Assign, ()), by_type.get(ast.AnnAssign, ())):
        for node in nodes:
            value = node.value
            if type(value) is constant and type(value.value) is str:
                for target in node.targets if type(node) is ast.Assign else [node.target]:
                    name = _target_name(target)
                    if name and secret(name):
                        found.append(((name, value.value), value, value))
    holder_of = None
    for kw in by_type.get(ast.keyword, ()):
        value = kw.value
        if type(value) is constant and type(value.value) is str and kw.arg and secret(kw.arg):
            if holder_of is None:
                holder_of = {id(k): call for call in by_type.get(ast.Call, ()) for k in call.keywords}
            found.append(((kw.arg, kw.value.value), kw.value, holder_of.get(id(kw), kw.value)))
    for node in by_type.get(ast.Dict, ()):
        for key, value in zip(node.keys, node.values):
            if type(key) is constant and type(key.value) is str and type(value) is constant and \
                    type(value.value) is str and secret(key.value):
                found.append(((key.value, value.value), value, node))
    found.sort(key=lambda item: (item[1].lineno, item[1].col_offset))
    return found


_secret_names: dict[str, bool] = {}


def _secret_name(name: str) -> bool:
    """``_SECRET_NAME.match(name)``, memoised: the same names (``dim``, ``bias``) come back in every file."""
    hit = _secret_names.get(name)
    if hit is None:
        if len(_secret_names) > 65536:
            _secret_names.clear()
        hit = _secret_names[name] = _SECRET_NAME.match(name) is not None
    return hit


def _target_name(target: ast.AST) -> str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Subscript) and _is_str(target.slice):
        return target.slice.value
    return None


def _is_str(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


# Salted password hashes: what a server keeps instead of the password (Jupyter's
# `passwd()` output `sha1:<salt>:<digest>` / `argon2:$argon2id$...`, crypt/bcrypt `$2b$...`).
_PASSWORD_HASH = re.compile(r"^(?:(?:sha1|sha256|sha512|md5|argon2|pbkdf2[\w-]*):\S+|\$(?:2[aby]|argon2id?|[156])\$\S+)$")


_PASSWORD_NAME = re.compile(r"(?i)pass|pwd")
_KEY_NAME = re.compile(r"(?i)key|token")


def _password_name(name: str) -> bool:
    """A password's name (``password``, ``db_pwd``), not a key's or a token's."""
    return bool(_PASSWORD_NAME.search(name)) and not _KEY_NAME.search(name)

_LOCAL_SERVICE = re.compile(r"(?i)\b(?:localhost|127\.0\.0\.1)\b")
_MASKED = re.compile(r"`([^`\s]{1,4}…\(\d+ chars\))`")
# Keys their vendors publish as safe to embed in client code (send-only, scoped to a project).
# words a value uses to say it is no real secret (a word of a kebab/snake-case value)
_STAND_IN_WORDS = frozenset({"fake", "dummy", "mock", "example", "sample", "placeholder", "demo", "changeme"})
_PUBLISHABLE = re.compile(r"^(?:phc_|pk_(?:live|test)_|pk\.)")


_FILE_NAME = re.compile(r"(?i)\.(?:pickle|pkl|pt|pth|ckpt|bin|npy|npz|csv|tsv|h5|hdf5|log|png|jpe?g|gif|wav|mp3|mp4|"
                        r"zip|tar|gz|py|ipynb|md|html|xml|onnx|safetensors|parquet|db|sqlite|tfrecord)$")


def _looks_secret(name: str, value: str) -> bool:
    if not _SECRET_NAME.match(name) or _NOT_SECRET_NAME.search(name):
        return False
    value = value.strip()
    if _PUBLISHABLE.match(value):
        return False  # a PostHog project key, a Stripe publishable key: public by design
    if value.startswith("django-insecure-"):
        return False  # the development key `startproject` writes, marked insecure by Django itself: no service's credential
    if len(value) < 4 or _PLACEHOLDER.search(value) or _ENV_NAME.match(value) or len(set(value)) < 4:
        return False
    if _words_of(value) and _words_of(value) <= _words_of(name):
        return False  # `INT8_ASYM_PER_TOKEN = "int8_asym_per_token"`: a constant spelling its own name
    if _words_of(value) & _STAND_IN_WORDS:
        # `"token": "fake-jwt-token-12345"`: a value that calls itself a stand-in (a teaching
        # API's canned response, pytorch_from_zero; judged false in blind test 67)
        return False
    if _written_phrase(value) and not _password_name(name):
        return False  # `secret = "sk-super-secret-value-12345"`: a test's marker, words a person wrote
    if "/" in value or "\\" in value or re.search(r"\.(json|pem|key|txt|ya?ml|env|cfg|ini)$", value):
        return False  # a path to the secret, not the secret
    if _FILE_NAME.search(value):
        # a data file's name (`token = "pointnet2_..._ShapeNetDataset.pickle"`: torch-points3d's
        # notebook, judged false in blind test 60): keys and tokens end in no file extension
        return False
    if _PASSWORD_HASH.match(value):
        return False  # a salted password hash (Jupyter's `sha1:salt:digest`, argon2, bcrypt): made to be stored
    if _password_name(name):
        # a sentence is a prompt to the user, not a password: whitespace, or the punctuation of
        # prose in another script (`"填入你的密码。请注意，密码会明文保存"`: BallonsTranslator's
        # settings field, judged false in blind test 33)
        return not any(c.isspace() or (not c.isascii() and unicodedata.category(c).startswith("P")) for c in value)
    # keys and tokens are ASCII: `token = "Line1ĊLine2ĠLine3"` is a tokenizer's BPE string (tuned-lens)
    return value.isascii() and bool(_CREDENTIAL_LIKE.match(value))


# words of a comment that says the secret beside it opens nothing that matters
_SANDBOX_WORDS = _STAND_IN_WORDS | {"sandbox", "sandboxed", "staging"}


def _said_stand_in(lines: list[str], number: int) -> bool:
    """The comment on line ``number`` (from 1), or a comment-only line right above it, calls
    the secret a stand-in or a sandbox's (`# Not critical, only usable on the sandboxed CI
    instance.` above Hugging Face's staging-hub token in a test fixture; `# dummy key`)."""
    texts = [lines[number - 1]] if number - 1 < len(lines) else []
    if number >= 2 and lines[number - 2].lstrip().startswith("#"):
        texts.append(lines[number - 2])
    for text in texts:
        at = text.find("#")
        if at >= 0 and _words_of(text[at + 1:]) & _SANDBOX_WORDS:
            return True
    return False


def _words_of(text: str) -> set[str]:
    """The lower-case words of an identifier or a snake/kebab-case value."""
    return {w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", text).lower()) if w}


def _mask(secret: str) -> str:
    keep = 4 if len(secret) >= 16 else 2  # short secrets (passwords) show less
    return f"{secret[:keep]}…({len(secret)} chars)"
