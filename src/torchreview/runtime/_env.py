"""Small helpers every runtime check shares: importing torch, finding user code.

Findings point at the user's own line (the ``optimizer.step()`` call, the
``for batch in loader`` line), so we walk the Python stack up past frames that
belong to torch, to torchreview itself and to the standard library.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass
from types import FrameType

TORCH_MISSING = "runtime review needs PyTorch: pip install 'torchreview[runtime]'"


class TorchMissingError(ImportError):
    """Raised (with a one-line message) when torch cannot be imported."""


def require_torch():
    """Return the ``torch`` module or raise :class:`TorchMissingError`."""
    try:
        import torch
    except ImportError:
        raise TorchMissingError(TORCH_MISSING) from None
    return torch


@dataclass(frozen=True)
class Site:
    """A place in user code: what a runtime finding points at."""

    path: str
    line: int
    text: str = ""

    def label(self) -> str:
        return f"{self.path}:{self.line}"


UNKNOWN_SITE = Site("<unknown>", 1)

_dirs: tuple[str, str, str, tuple[str, ...]] | None = None


def _prefixes() -> tuple[str, str, str, tuple[str, ...]]:
    """(torchreview dir, torch dir, stdlib dir, third-party dirs), each ending in a separator."""
    global _dirs
    if _dirs is None:
        ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # the torchreview package
        torch = sys.modules.get("torch")
        torch_dir = "\0"  # matches nothing until torch is imported
        if torch is not None and getattr(torch, "__file__", None):
            torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        paths = sysconfig.get_paths()
        stdlib = os.path.abspath(paths.get("stdlib") or "\0") + os.sep
        third = {os.path.abspath(p) + os.sep for k in ("purelib", "platlib")
                 if (p := paths.get(k))}
        third.update(os.path.abspath(p) + os.sep for p in sys.path
                     if p.endswith(("site-packages", "dist-packages")))
        result = (ours, torch_dir, stdlib, tuple(sorted(third)))
        if torch is None:
            return result  # do not cache a view without torch's directory
        _dirs = result
    return _dirs


def is_internal(filename: str) -> bool:
    """Frames of torch, torchreview and the standard library (not site-packages)."""
    if filename.startswith("<"):
        return True
    ours, torch_dir, stdlib, third = _prefixes()
    if filename.startswith((ours, torch_dir)):
        return True
    if filename.startswith(third):
        return False
    return filename.startswith(stdlib)


def user_frame(start: FrameType | None = None) -> FrameType | None:
    """The innermost frame of user code (not torch, torchreview, stdlib).

    Frames in other installed packages are skipped when a frame of the user's
    own code exists further out (a training script calling a library).
    """
    frame = start if start is not None else sys._getframe(1)
    fallback = None
    third = _prefixes()[3]
    while frame is not None:
        name = frame.f_code.co_filename
        if not is_internal(name):
            if not name.startswith(third):
                return frame
            if fallback is None:
                fallback = frame
        frame = frame.f_back
    return fallback


def caller_is_torch(start: FrameType | None = None) -> bool:
    """True when the first frame outside ``torch.nn``, ``torch._dynamo`` (the
    wrapper of a ``torch.compile``-d module) and torchreview is torch code.

    Used to ignore forwards that torch runs itself (``swa_utils.update_bn``).
    """
    frame = start if start is not None else sys._getframe(1)
    ours, torch_dir, _, _ = _prefixes()
    # torch.nn's call machinery and torch.compile's wrapper module are not callers
    passing = (ours, torch_dir + "nn" + os.sep, torch_dir + "_dynamo" + os.sep, "<")
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(passing):
            frame = frame.f_back
            continue
        return name.startswith(torch_dir)
    return False


def display_path(filename: str) -> str:
    """Relative to the working directory when inside it, else as given."""
    try:
        absolute = os.path.abspath(filename)
        cwd = os.getcwd()
        if absolute == cwd or absolute.startswith(cwd + os.sep):
            return os.path.relpath(absolute, cwd)
        return absolute
    except (OSError, ValueError):
        return filename


def site_of(frame: FrameType | None) -> Site:
    if frame is None:
        return UNKNOWN_SITE
    import linecache

    filename = frame.f_code.co_filename
    line = frame.f_lineno or frame.f_code.co_firstlineno
    text = linecache.getline(filename, line).strip()
    return Site(display_path(filename), line, text)


def current_site() -> Site:
    """The user-code line that (indirectly) called the function calling this."""
    return site_of(user_frame(sys._getframe(1)))


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def short_list(names: list[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    if len(names) > limit:
        shown += f" (+{len(names) - limit} more)"
    return shown
