"""Data fetched over the network, checksum checks, and pickle-family files the file writes."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchreview.engine.collectors.registry import CallNames, collects
from torchreview.engine.facts import Download, _anchor
from torchreview.engine.facts_downloads import unpickled_downloads
from torchreview.engine.project_identity import download_url
from torchreview.engine.semantic import position

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext

# Download functions, with the argument (name, position) that carries a checksum when given.
_DOWNLOADS: dict[str, tuple[str, int] | None] = {
    "urllib.request.urlretrieve": None,
    "urllib.request.urlopen": None,
    "wget.download": None,
    "gdown.download": None,
    "gdown.cached_download": ("md5", 2),
    "torch.hub.download_url_to_file": ("hash_prefix", 2),
    "torchvision.datasets.utils.download_url": ("md5", 3),
    "torchvision.datasets.utils.download_and_extract_archive": ("md5", 4),
    "torchvision.datasets.utils.download_file_from_google_drive": ("md5", 3),
}
_HTTP_GETS = frozenset({"requests.get", "httpx.get", "requests.request"})
_SHELL_CALLS = frozenset({"subprocess.run", "subprocess.call", "subprocess.check_call",
                          "subprocess.check_output", "subprocess.Popen", "os.system", "os.popen"})
_FETCHES = frozenset(_DOWNLOADS) | _HTTP_GETS | _SHELL_CALLS  # what ``_download_call`` can accept
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
    """A call that fetches a file over the network with no checksum given."""
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


@collects("downloads")
def downloads(ctx: "FileContext", calls: CallNames) -> tuple[Download, ...]:
    """Every download without a checksum, in source order: where, the one URL it
    fetches (when a literal names it), and whether this file unpickles the result."""
    if not calls.any_of(_FETCHES):
        return ()  # every download is a call of one of these
    m = ctx.model
    found = sorted((call for call in m.calls if _download_call(ctx, call, m.qualname(call.func) or "")),
                   key=position)
    if not found:
        return ()
    unpickled = {id(call) for call in unpickled_downloads(ctx, found)}
    return tuple(Download(_anchor(ctx, call), download_url(ctx, call), id(call) in unpickled) for call in found)


@collects("checks_hashes")
def checks_hashes(ctx: "FileContext", calls: CallNames) -> bool:
    return calls.any_of(frozenset({"torchvision.datasets.utils.check_integrity",
                                   "torchvision.datasets.utils.check_md5",
                                   "torchvision.datasets.utils.calculate_md5"}), ("hashlib.",))


_PICKLE_DUMPS = {"pickle.dump": "pickle", "_pickle.dump": "pickle", "cPickle.dump": "pickle",
                 "dill.dump": "dill", "joblib.dump": "joblib", "sklearn.externals.joblib.dump": "joblib"}


@collects("pickle_dumps")
def pickle_dumps(ctx: "FileContext", calls: CallNames) -> tuple[str, ...]:
    return tuple(sorted({_PICKLE_DUMPS[q] for q in calls.names if q in _PICKLE_DUMPS}))
