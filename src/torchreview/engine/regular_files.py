"""Only regular files are read: a FIFO would block forever, a device never ends,
and opening some devices has side effects. Check with ``stat`` before opening,
open without blocking, and check the opened file again (it may have been swapped)."""

from __future__ import annotations

import os
import stat

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


class NotRegularFile(OSError):
    """Raised instead of opening anything that is not a regular file."""


def special_kind(mode: int) -> str | None:
    """None for a regular file, else what it is, in words."""
    if stat.S_ISREG(mode):
        return None
    for test, words in _KINDS:
        if test(mode):
            return words
    return "a special file"


def not_regular_message(kind: str, consequence: str) -> str:
    return f"{kind}, not a regular file; {consequence}"


def open_regular(path: str):
    """Open ``path`` for binary reading if it is a regular file (following links);
    raise :class:`NotRegularFile` (an OSError) otherwise, without blocking."""
    kind = special_kind(os.stat(path).st_mode)
    if kind is not None:
        raise NotRegularFile(not_regular_message(kind, "not read"))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | \
        getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        kind = special_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotRegularFile(not_regular_message(kind, "not read"))
        if flags & getattr(os, "O_NONBLOCK", 0) and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(handle, cap: int) -> bytes:
    """``handle.read(cap + 1)`` -- a file's bytes, ``cap + 1`` of them when it is longer,
    so that a caller can tell -- without first allocating a buffer of ``cap + 1``
    bytes: the read is sized by the file's size (a 2 MB or 20 MB buffer per small
    module read cost ~30-100 us in allocation and page faults, more than the read).
    A file that grew since its size was taken is read on, as one read would."""
    try:
        size = os.fstat(handle.fileno()).st_size
    except (OSError, AttributeError, ValueError):
        return handle.read(cap + 1)
    data = handle.read(min(size, cap) + 1)
    if size < len(data) <= cap:
        data += handle.read(cap + 1 - len(data))
    return data
