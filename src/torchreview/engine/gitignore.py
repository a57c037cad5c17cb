"""git's ignore rules, read and matched the way git does it.

Sources, from weakest to strongest: the repository's ``.git/info/exclude``,
then every ``.gitignore`` from the top of the work tree down to the folder of
the path; within that order the last matching pattern decides. Patterns are
matched on bytes with git's ``wildmatch`` semantics (``*``, ``?``, ``[...]``
with ranges, ``!``/``^`` negation and POSIX classes, ``**`` forms, ``\\``
escapes), a pattern without a slash matches the name at any depth, a leading
or middle slash anchors it to its ``.gitignore``'s folder, a trailing slash
matches folders only. The user's global excludes file is not read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

_BACKSLASH, _SLASH, _STAR, _QUESTION = 0x5C, 0x2F, 0x2A, 0x3F
_OPEN, _CLOSE, _DASH, _COLON = 0x5B, 0x5D, 0x2D, 0x3A


def _ascii(test) -> frozenset[int]:
    return frozenset(b for b in range(128) if test(chr(b)))


_POSIX = {
    b"alnum": _ascii(str.isalnum), b"alpha": _ascii(str.isalpha), b"blank": frozenset(b" \t"),
    b"cntrl": frozenset(list(range(32)) + [127]), b"digit": _ascii(str.isdigit),
    b"graph": frozenset(range(33, 127)), b"lower": _ascii(str.islower), b"print": frozenset(range(32, 127)),
    b"punct": frozenset(b for b in range(33, 127) if not chr(b).isalnum()),
    b"space": frozenset(b" \t\n\r\x0b\x0c"), b"upper": _ascii(str.isupper),
    b"xdigit": frozenset(b"0123456789abcdefABCDEF"),
}


def _bracket(pat: bytes, p: int) -> tuple[frozenset[int], int] | None:
    """The bytes a ``[...]`` starting at ``pat[p]`` accepts, and the index after it;
    None when git would give up on the whole pattern (it then never matches)."""

    def at(i: int) -> int:
        return pat[i] if i < len(pat) else 0

    p += 1
    ch = at(p)
    negated = ch in (0x21, 0x5E)  # '!' or '^'
    if negated:
        p += 1
        ch = at(p)
    prev, accepted = 0, set()
    while True:  # the first character is taken even when it is ']'
        if not ch:
            return None
        if ch == _BACKSLASH:
            p += 1
            ch = at(p)
            if not ch:
                return None
            accepted.add(ch)
        elif ch == _DASH and prev and at(p + 1) and at(p + 1) != _CLOSE:
            p += 1
            ch = at(p)
            if ch == _BACKSLASH:
                p += 1
                ch = at(p)
                if not ch:
                    return None
            accepted.update(range(prev, ch + 1))  # a reversed range accepts nothing
            ch = 0
        elif ch == _OPEN and at(p + 1) == _COLON:
            start = p + 2
            end = start
            while at(end) and at(end) != _CLOSE:
                end += 1
            if not at(end):
                return None
            if end - start - 1 < 0 or pat[end - 1] != _COLON:  # no ":]": a plain '['
                accepted.add(_OPEN)
            else:
                members = _POSIX.get(pat[start:end - 1])
                if members is None:
                    return None
                accepted.update(members)
                p, ch = end, 0
        else:
            accepted.add(ch)
        prev = ch
        p += 1
        ch = at(p)
        if ch == _CLOSE:
            break
    allowed = (set(range(1, 256)) - accepted) if negated else accepted
    allowed.discard(_SLASH)
    return frozenset(allowed), p + 1


def _literal_prefix(pat: bytes) -> int:
    """Length of the part before the first wildcard or escape (git's ``simple_length``)."""
    return next((i for i, ch in enumerate(pat) if ch in b"*?[\\"), len(pat))


def _translate(pat: bytes, start: int = 0) -> bytes | None:
    """A regular expression for ``pat`` matched with git's WM_PATHNAME rules.

    git compares the literal prefix ``pat[:start]`` first and runs wildmatch on
    the rest, so a ``**`` right after that prefix counts as delimited
    (``a**/*.py`` matches ``a.py`` and ``a/b/c.py``, as git has it)."""
    out: list[bytes] = []
    p, n = 0, len(pat)
    while p < n:
        ch = pat[p]
        if ch == _BACKSLASH:
            if p + 1 >= n:
                return None  # a trailing backslash never matches
            out.append(re.escape(pat[p + 1:p + 2]))
            p += 2
        elif ch == _QUESTION:
            out.append(b"[^/]")
            p += 1
        elif ch == _STAR:
            run = p
            while p < n and pat[p] == _STAR:
                p += 1
            double = p - run >= 2 and (run == start or pat[run - 1] == _SLASH)
            if double and p == n:
                out.append(b".*")
            elif double and pat[p] == _SLASH:
                out.append(b"(?:.*/)?")
                p += 1
            elif double and pat[p:p + 2] == b"\\/":
                out.append(b".*")
            else:
                out.append(b"[^/]*")
        elif ch == _OPEN:
            found = _bracket(pat, p)
            if found is None:
                return None
            allowed, p = found
            out.append(b"[" + b"".join(b"\\x%02x" % b for b in sorted(allowed)) + b"]" if allowed else b"(?!)")
        else:
            out.append(re.escape(pat[p:p + 1]))
            p += 1
    return b"".join(out)


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern | None  # None: can never match
    negated: bool
    dir_only: bool
    basename: bool  # no slash: match the name at any depth


@lru_cache(maxsize=8192)
def compile_pattern(line: bytes) -> Pattern | None:
    negated = line.startswith(b"!")
    if negated:
        line = line[1:]
    dir_only = line.endswith(b"/")
    if dir_only:
        line = line[:-1]
    if not line:
        return None
    basename = b"/" not in line
    if not basename and line.startswith(b"/"):
        line = line[1:]
    source = _translate(line, 0 if basename else _literal_prefix(line))
    return Pattern(None if source is None else re.compile(source, re.DOTALL), negated, dir_only, basename)


def _trim_trailing_spaces(line: bytes) -> bytes:
    last_space = None
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == 0x20:
            if last_space is None:
                last_space = i
        elif ch == _BACKSLASH:
            i += 1
            if i >= len(line):
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def parse_ignore(data: bytes) -> list[Pattern]:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    patterns = []
    for line in data.split(b"\n"):
        if not line or line.startswith(b"#"):
            continue
        if line.endswith(b"\r"):
            line = line[:-1]
        pattern = compile_pattern(_trim_trailing_spaces(line))
        if pattern is not None:
            patterns.append(pattern)
    return patterns


@dataclass(frozen=True)
class IgnoreFile:
    base: bytes  # the folder the patterns are relative to, ending with a separator
    patterns: tuple[Pattern, ...]


def read_ignore_file(path: str, base: str) -> IgnoreFile | None:
    """Patterns of one ignore file; None when absent, unreadable or a symbolic link
    (git does not follow a symlinked ``.gitignore`` either)."""
    try:
        if os.path.islink(path) or not os.path.isfile(path):
            return None
        with open(path, "rb") as handle:
            data = handle.read(1 << 20)
    except OSError:
        return None
    patterns = parse_ignore(data)
    if not patterns:
        return None
    return IgnoreFile(_as_base(base), tuple(patterns))


def _as_base(folder: str) -> bytes:
    raw = os.fsencode(os.path.abspath(folder))
    return raw if raw.endswith(b"/") else raw + b"/"


def _posix(path: str) -> bytes:
    raw = os.fsencode(os.path.abspath(path))
    return raw.replace(os.fsencode(os.sep), b"/") if os.sep != "/" else raw


def is_ignored(files: tuple[IgnoreFile, ...], path: str, is_dir: bool) -> bool:
    """git's answer for ``path`` alone (its parent folders are the caller's business)."""
    if not files:
        return False
    raw = _posix(path)
    name = raw.rsplit(b"/", 1)[-1]
    for ignore_file in reversed(files):
        if not raw.startswith(ignore_file.base):
            continue
        rel = raw[len(ignore_file.base):]
        for pattern in reversed(ignore_file.patterns):
            if pattern.dir_only and not is_dir:
                continue
            if pattern.regex is not None and pattern.regex.fullmatch(name if pattern.basename else rel):
                return not pattern.negated
    return False


def git_dir_of(worktree: str) -> str | None:
    """The repository folder of a work tree whose top holds ``.git`` (folder or ``gitdir:`` file)."""
    dot_git = os.path.join(worktree, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as handle:
            first = handle.readline().strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    git_dir = os.path.join(worktree, first[len("gitdir:"):].strip())
    try:  # a linked work tree keeps info/exclude in the common folder
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8", errors="replace") as handle:
            return os.path.join(git_dir, handle.readline().strip())
    except OSError:
        return git_dir


def exclude_file(worktree: str) -> tuple[IgnoreFile, ...]:
    """A repository's own ``info/exclude`` (weaker than every ``.gitignore``)."""
    git_dir = git_dir_of(worktree)
    found = read_ignore_file(os.path.join(git_dir, "info", "exclude"), worktree) if git_dir else None
    return (found,) if found is not None else ()


def folder_files(parent: tuple[IgnoreFile, ...], folder: str, *, top: bool = False) -> tuple[IgnoreFile, ...]:
    """The ignore files in force inside ``folder``, given those of its parent.
    A nested repository starts afresh with its own rules, as git does."""
    if not top and os.path.exists(os.path.join(folder, ".git")):
        parent = exclude_file(folder)
    own = read_ignore_file(os.path.join(folder, ".gitignore"), folder)
    return parent + (own,) if own is not None else parent


class IgnoreRules:
    """The rules in force for a tree walked from ``root``: the enclosing work tree's
    ``info/exclude`` and every ``.gitignore`` from its top down to ``root``."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.top_files = self._ancestors(self.root)
        self._memo: dict[str, tuple[IgnoreFile, ...]] = {self.root: self.top_files}

    @staticmethod
    def _ancestors(root: str) -> tuple[IgnoreFile, ...]:
        chain = [root]
        while not os.path.exists(os.path.join(chain[-1], ".git")):
            parent = os.path.dirname(chain[-1])
            if parent == chain[-1]:  # not in a repository: only the tree's own files
                return folder_files((), root, top=True)
            chain.append(parent)
        files = exclude_file(chain[-1])
        for folder in reversed(chain):
            files = folder_files(files, folder, top=True)
        return files

    def files_for(self, folder: str) -> tuple[IgnoreFile, ...]:
        """The ignore files in force inside ``folder`` (a folder at or below the root)."""
        folder = os.path.abspath(folder)
        if folder not in self._memo:
            self._memo[folder] = folder_files(self.files_for(os.path.dirname(folder)), folder)
        return self._memo[folder]

    def ignored_path(self, path: str, is_dir: bool) -> bool:
        """Ignored by itself or through an ignored folder above it (below the root)."""
        path = os.path.abspath(path)
        if path == self.root or not path.startswith(self.root + os.sep):
            return False
        parent = os.path.dirname(path)
        if parent != self.root and self.ignored_path(parent, True):
            return True
        return is_ignored(self.files_for(parent), path, is_dir)
