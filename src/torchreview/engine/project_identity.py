"""Who the project is, from its own files (never from the network): the GitHub
repositories its packaging metadata and README badges name, and the GitHub
release a download URL points at (the project's own release assets need no pinned hash).

Sources, all local and read as text (nothing is executed): ``setup.py`` (the
``url=``/``project_urls=`` literals of ``setup(...)``, parsed with ``ast``),
``setup.cfg`` (``[metadata] url``/``project_urls``), ``pyproject.toml``
(``[project.urls]``, ``[tool.poetry] repository/homepage``) and the badges of
``README.md``/``README.rst`` (``img.shields.io/github/<kind>/<owner>/<repo>``,
``github.com/<owner>/<repo>/actions/workflows/.../badge.svg``), the ``origin``
remote of ``.git/config``, and -- for a project with a root ``hubconf.py`` -- the
``torch.hub.load('<owner>/<repo>...')`` its README shows (it documents loading itself).
"""

from __future__ import annotations

import ast
import configparser
import os
import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    tomllib = None

_REPO = r"([A-Za-z0-9][A-Za-z0-9-]{0,38})/([A-Za-z0-9._-]{1,100})"
_GITHUB_URL = re.compile(r"^https?://(?:www\.)?github\.com/" + _REPO + r"(?:\.git)?/?(?:[#?].*)?$")
_RELEASE = re.compile(r"^https?://(?:www\.)?github\.com/" + _REPO + r"/releases/(?:download|latest/download)/")
_BADGES = (
    re.compile(r"img\.shields\.io/github/[a-z-]+(?:/[a-z-]+)?/" + _REPO + r"(?=[/.?)\]\s\"']|$)"),
    re.compile(r"github\.com/" + _REPO + r"/(?:actions/)?workflows/[^\s)\"']*badge\.svg"),
)
_URL = re.compile(r"https?://[^\s'\"<>{}]+")
_MAX_BYTES = 1 << 20


def _repo(owner: str, name: str) -> str:
    name = name[:-4] if name.endswith(".git") else name
    return f"{owner}/{name}".lower()


def _read(path: str) -> str:
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > _MAX_BYTES:
            return ""
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _from_urls(values) -> set[str]:
    out = set()
    for value in values:
        match = _GITHUB_URL.match(str(value).strip()) if isinstance(value, str) else None
        if match:
            out.add(_repo(*match.groups()))
    return out


def _setup_py(text: str) -> set[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    values = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (getattr(node.func, "id", None) == "setup"
                                           or getattr(node.func, "attr", None) == "setup"):
            for kw in node.keywords:
                if kw.arg in ("url", "download_url") and isinstance(kw.value, ast.Constant):
                    values.append(kw.value.value)
                elif kw.arg == "project_urls" and isinstance(kw.value, ast.Dict):
                    values.extend(v.value for v in kw.value.values if isinstance(v, ast.Constant))
    return _from_urls(values)


def _setup_cfg(text: str) -> set[str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return set()
    if not parser.has_section("metadata"):
        return set()
    meta = parser["metadata"]
    values = [meta.get("url", ""), meta.get("download_url", "")]
    values += [line.split("=", 1)[-1] for line in meta.get("project_urls", "").splitlines()]
    return _from_urls(values)


def _pyproject(text: str) -> set[str]:
    if tomllib is None:
        return set()
    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return set()
    project = doc.get("project") if isinstance(doc.get("project"), dict) else {}
    urls = project.get("urls") if isinstance(project.get("urls"), dict) else {}
    poetry = doc.get("tool", {}).get("poetry", {}) if isinstance(doc.get("tool"), dict) else {}
    poetry = poetry if isinstance(poetry, dict) else {}
    return _from_urls([*urls.values(), poetry.get("repository"), poetry.get("homepage")])


def _readme_badges(text: str) -> set[str]:
    return {_repo(*m.groups()) for pattern in _BADGES for m in pattern.finditer(text)}


_ORIGIN = re.compile(r'\[remote "origin"\][^\[]*?\burl\s*=\s*(\S+)', re.S)
_SSH = re.compile(r"^(?:ssh://)?git@github\.com[:/]" + _REPO + r"/?$")
_HUB_SELF = re.compile(r"torch\.hub\.load\(\s*['\"]" + _REPO + r"(?::[\w./-]+)?['\"]")


def _git_origin(text: str) -> set[str]:
    """The GitHub repository of the checkout's ``origin`` remote (``.git/config``)."""
    match = _ORIGIN.search(text)
    if not match:
        return set()
    url = match.group(1).strip()
    ssh = _SSH.match(url)
    return {_repo(*ssh.groups())} if ssh else _from_urls([url])


def _readme_hub_self(root: str, text: str) -> set[str]:
    """A project with a root ``hubconf.py`` whose README shows ``torch.hub.load('owner/repo...')``:
    the README documents loading this very repository."""
    if not text or not os.path.isfile(os.path.join(root, "hubconf.py")):
        return set()
    found = {_repo(*m.groups()) for m in _HUB_SELF.finditer(text)}
    folder = os.path.basename(os.path.abspath(root)).lower()
    return {r for r in found if r.split("/", 1)[1] == folder} or (found if len(found) == 1 else set())


@lru_cache(maxsize=64)
def own_github_repos(root: str) -> frozenset[str]:
    """The ``owner/repo`` names (lower case) the project at ``root`` says it is."""
    if not root:
        return frozenset()
    found = _setup_py(_read(os.path.join(root, "setup.py")))
    found |= _setup_cfg(_read(os.path.join(root, "setup.cfg")))
    found |= _pyproject(_read(os.path.join(root, "pyproject.toml")))
    for name in ("README.md", "README.rst", "README.markdown", "README"):
        text = _read(os.path.join(root, name))
        found |= _readme_badges(text)
        found |= _readme_hub_self(root, text)
    found |= _git_origin(_read(os.path.join(root, ".git", "config")))
    return frozenset(found)


# The Hugging Face namespace a README presents as the project's own: its demo Space
# (`huggingface.co/spaces/<owner>/<space>`), and its author's GitHub Sponsors page (the
# same person publishes the models: IMS-Toucan's `Flux9665`).
_HF_SPACE = re.compile(r"huggingface\.co/spaces/([A-Za-z0-9][A-Za-z0-9_.-]{0,95})/")
_SPONSORS = re.compile(r"github\.com/sponsors/([A-Za-z0-9][A-Za-z0-9-]{0,38})")


@lru_cache(maxsize=64)
def own_hub_namespaces(root: str) -> frozenset[str]:
    """The Hugging Face namespaces (lower case) whose files are the project's own
    published artifacts: those of its demo Spaces and its author's sponsors page in the
    README, its GitHub owners (an organisation keeps its name on the Hub), and its
    distribution name."""
    if not root:
        return frozenset()
    found: set[str] = set()
    for name in ("README.md", "README.rst", "README.markdown", "README"):
        text = _read(os.path.join(root, name))
        found |= {m.group(1).lower() for pattern in (_HF_SPACE, _SPONSORS) for m in pattern.finditer(text)}
    found |= {r.split("/", 1)[0] for r in own_github_repos(root)}
    name = own_project_name(root)
    if name:
        found.add(name)
    return frozenset(found)


@lru_cache(maxsize=64)
def own_project_name(root: str) -> str | None:
    """The distribution name the project at ``root`` publishes (``[project] name`` of
    pyproject.toml, ``[tool.poetry] name``, ``[metadata] name`` of setup.cfg), lower case."""
    if not root:
        return None
    text = _read(os.path.join(root, "pyproject.toml"))
    if text and tomllib is not None:
        try:
            doc = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, ValueError):
            doc = {}
        project = doc.get("project") if isinstance(doc.get("project"), dict) else {}
        tool = doc.get("tool") if isinstance(doc.get("tool"), dict) else {}
        poetry = tool.get("poetry") if isinstance(tool.get("poetry"), dict) else {}
        name = project.get("name") or poetry.get("name")
        if isinstance(name, str) and name.strip():
            return name.strip().lower()
    text = _read(os.path.join(root, "setup.cfg"))
    if text:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
            name = parser.get("metadata", "name", fallback="")
        except configparser.Error:
            name = ""
        if name.strip():
            return name.strip().lower()
    return None


def release_repo(url: str) -> str | None:
    """``owner/repo`` (lower case) of a GitHub release-asset URL, else None."""
    match = _RELEASE.match(url or "")
    return _repo(*match.groups()) if match else None


def download_url(ctx: "FileContext", call: ast.Call) -> str:
    """The one URL a download call fetches, from the string literals in it (also
    through a name bound once, and the literal parts of an f-string), or "" when
    there is none or more than one."""
    urls: set[str] = set()
    for node in ast.walk(call):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            value = ctx.flow.reaching_value(node)
            texts = _texts(value) if value is not None and value is not node else []
        else:
            texts = _texts(node) if isinstance(node, (ast.Constant, ast.JoinedStr)) else []
        for text in texts:
            urls.update(_URL.findall(text))
    return urls.pop() if len(urls) == 1 else ""


def _texts(node) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):  # a placeholder ends a URL: only the literal prefix counts
        return ["".join(v.value if isinstance(v, ast.Constant) else " " for v in node.values)]
    return []


def _normal(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def trusted_release(url: str, root: str, imports) -> str | None:
    """Why a download from ``url`` needs no pinned hash, or None: a release asset of the
    project's own GitHub repository, or of the repository of a package the downloading
    file imports (its maintainers' code already runs here)."""
    repo = release_repo(url)
    if repo is None:
        return None
    if repo in own_github_repos(root):
        return f"this project's own release ({repo})"
    name = _normal(repo.split("/", 1)[1])
    if len(name) >= 4 and any(_normal(str(m).lstrip(".").split(".", 1)[0]) == name for m in imports or ()):
        return f"the release of `{repo}`, whose package this file imports"
    return None
