"""Finding the files to review: paths, excludes, .gitignore, symlink safety."""

from __future__ import annotations

import errno
import fnmatch
import os
import re
from functools import lru_cache
from dataclasses import dataclass, field

from torchreview.findings import ReviewError

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".env", "env", "__pycache__",
    ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox", ".nox", "build", "dist",
    "node_modules", "site-packages", ".eggs", "*.egg-info", ".ipynb_checkpoints",
    ".torchreview_cache", "_build", "__pypackages__",
)
SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass
class Discovery:
    sources: list[tuple[str, str]] = field(default_factory=list)  # (real path, display path)
    artifacts: list[tuple[str, str]] = field(default_factory=list)
    errors: list[ReviewError] = field(default_factory=list)


@lru_cache(maxsize=4096)
def _glob(pattern: str) -> re.Pattern:
    return re.compile(fnmatch.translate(pattern))


class GitIgnore:
    """A small reader of .gitignore patterns (the common subset: globs, dirs, negation)."""

    def __init__(self) -> None:
        # (base dir, pattern, negated, dir_only, anchored)
        self.rules: list[tuple[str, str, bool, bool, bool]] = []

    def add_file(self, directory: str) -> None:
        path = os.path.join(directory, ".gitignore")
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:
            return
        for raw in lines:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            if negated:
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            line = line.lstrip("/")
            if line:
                self.rules.append((directory, line, negated, dir_only, anchored))

    def ignored(self, path: str, is_dir: bool) -> bool:
        result = False
        name = os.path.basename(path)
        for base, pattern, negated, dir_only, anchored in self.rules:
            if dir_only and not is_dir:
                continue
            if negated is result:
                continue  # this rule could not change the answer
            if anchored:
                if not path.startswith(base):
                    continue
                rel = os.path.relpath(path, base).replace(os.sep, "/")
                hit = _glob(pattern).match(rel) is not None or _glob(pattern + "/**").match(rel) is not None
            else:
                hit = _glob(pattern).match(name) is not None
            if hit:
                result = not negated
        return result


def _matches_any(path: str, name: str, patterns: tuple[str, ...]) -> bool:
    posix = path.replace(os.sep, "/")
    for pattern in patterns:
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(posix, pattern):
            return True
        if "/" in pattern and (posix.endswith("/" + pattern.strip("/")) or
                               fnmatch.fnmatchcase(posix, "*/" + pattern.strip("/"))):
            return True
    return False


def _link_problem(path: str) -> str:
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop; not reviewed"
    return "broken symbolic link; not reviewed"


def display_path(path: str, cwd: str) -> str:
    rel = os.path.relpath(path, cwd)
    return path if rel.startswith("..") else rel


def discover(
    paths: list[str],
    *,
    exclude: tuple[str, ...] = (),
    respect_gitignore: bool = True,
    want_artifacts: bool = True,
    is_artifact=None,
) -> Discovery:
    """Walk the given paths. Explicitly named files are always reviewed."""
    cwd = os.getcwd()
    found = Discovery()
    seen: set[str] = set()
    excludes = DEFAULT_EXCLUDES + tuple(exclude)

    def add(real: str, shown: str) -> None:
        key = os.path.realpath(real)
        if key in seen:
            return
        seen.add(key)
        if real.endswith(SOURCE_SUFFIXES):
            found.sources.append((real, shown))
        elif want_artifacts and is_artifact is not None:
            try:
                if is_artifact(real):
                    found.artifacts.append((real, shown))
            except OSError:
                pass

    for given in paths:
        if os.path.islink(given) and not os.path.exists(given):
            found.errors.append(ReviewError(given, _link_problem(given)))
            continue
        if not os.path.exists(given):
            found.errors.append(ReviewError(given, "no such file or directory"))
            continue
        if os.path.isfile(given):
            if given.endswith(SOURCE_SUFFIXES) or is_artifact is None:
                key = os.path.realpath(given)
                if key not in seen:
                    seen.add(key)
                    found.sources.append((given, display_path(given, cwd)))
            else:
                add(given, display_path(given, cwd))
            continue
        ignore = GitIgnore()
        visited_dirs: set[str] = set()
        for root, dirs, files in os.walk(given, followlinks=True, onerror=None):
            real_root = os.path.realpath(root)
            if real_root in visited_dirs:
                found.errors.append(ReviewError(display_path(root, cwd),
                                                "symbolic link loop; not followed"))
                dirs[:] = []
                continue
            visited_dirs.add(real_root)
            if respect_gitignore:
                ignore.add_file(root)
            kept = []
            for d in sorted(dirs):
                full = os.path.join(root, d)
                if _matches_any(full, d, excludes):
                    continue
                if respect_gitignore and ignore.ignored(full, True):
                    continue
                if os.path.islink(full) and os.path.realpath(full) in visited_dirs:
                    found.errors.append(ReviewError(display_path(full, cwd),
                                                    "symbolic link loop; not followed"))
                    continue
                kept.append(d)
            dirs[:] = kept
            for name in sorted(files):
                full = os.path.join(root, name)
                if _matches_any(full, name, excludes):
                    continue
                if respect_gitignore and ignore.ignored(full, False):
                    continue
                if os.path.islink(full) and not os.path.exists(full):
                    if name.endswith(SOURCE_SUFFIXES):
                        found.errors.append(ReviewError(display_path(full, cwd), _link_problem(full)))
                    continue
                add(full, display_path(full, cwd))
    return found
