"""Writing a fixed file so that no one's work is lost.

* The file is read once, with a snapshot (device, inode, size, mtime_ns, SHA-256).
* A symbolic link is written through: the real file gets the fixed text and the
  link stays a link. The caller writes each real file once (``file_identity``).
* The fixed text goes to a temporary file in the real file's folder (fsynced,
  with the file's mode); right before the rename the file is compared with the
  snapshot again, and if anything changed (an editor saved it meanwhile) the
  temporary file is dropped and :class:`FileChanged` raised: the edit is kept.
* A file with several hard links cannot be renamed over without splitting it,
  so it is rewritten in place; a copy of the original waits beside it until
  the new text is on disk, and a failed write puts the original back.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass

from torchreview.engine.regular_files import open_regular


class FileChanged(Exception):
    """The file is not what was read: fixes are not applied, the file is kept as is."""

    def __init__(self) -> None:
        super().__init__("changed on disk since it was read; fixes not applied, the file is kept as it is now")


class WriteIncomplete(OSError):
    """An in-place write failed and the original could not be put back (a copy is kept)."""

    left_unchanged = False


@dataclass(frozen=True)
class Snapshot:
    dev: int
    ino: int
    size: int
    mtime_ns: int
    digest: bytes


def file_identity(path: str) -> tuple[int, int]:
    """(st_dev, st_ino) of the real file behind ``path`` (links followed)."""
    info = os.stat(path)
    return info.st_dev, info.st_ino


def read_with_snapshot(path: str) -> tuple[bytes, Snapshot]:
    """Read a regular file (never a FIFO or device) and remember what it was."""
    with open_regular(path) as handle:
        before = os.fstat(handle.fileno())
        data = handle.read()
        after = os.fstat(handle.fileno())
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or len(data) != after.st_size:
        raise FileChanged()
    return data, Snapshot(after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns,
                          hashlib.sha256(data).digest())


def _still_same(handle, snapshot: Snapshot) -> bool:
    info = os.fstat(handle.fileno())
    if (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns) != \
            (snapshot.dev, snapshot.ino, snapshot.size, snapshot.mtime_ns):
        return False
    handle.seek(0)
    return hashlib.sha256(handle.read()).digest() == snapshot.digest


def _check_unchanged(path: str, snapshot: Snapshot) -> None:
    try:
        with open_regular(path) as handle:
            same = _still_same(handle, snapshot)
    except FileNotFoundError:
        same = False
    if not same:
        raise FileChanged()


def _write_all(handle, data: bytes) -> None:
    handle.write(data)


def _temp_copy(folder: str, data: bytes, mode: int, suffix: str) -> str:
    fd, tmp = tempfile.mkstemp(prefix=".torchreview-", suffix=suffix, dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        _remove(tmp)
        raise
    return tmp


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_fixed(path: str, fixed: bytes, original: bytes, snapshot: Snapshot) -> None:
    """Replace the real file behind ``path`` with ``fixed`` if it still holds
    ``original`` (see the module docstring). Raises FileChanged or OSError; on
    either the file is left as it was."""
    target = os.path.realpath(path)
    folder = os.path.dirname(target)
    try:
        info = os.stat(target)
    except FileNotFoundError:  # deleted meanwhile: do not bring it back
        raise FileChanged() from None
    if (info.st_dev, info.st_ino) != (snapshot.dev, snapshot.ino):  # replaced (an editor's save)
        raise FileChanged()
    mode = info.st_mode & 0o7777
    if info.st_nlink > 1:
        _write_in_place(target, folder, fixed, original, snapshot, mode)
        return
    tmp = _temp_copy(folder, fixed, mode, ".tmp")
    try:
        _check_unchanged(target, snapshot)
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise


def _write_in_place(target: str, folder: str, fixed: bytes, original: bytes, snapshot: Snapshot,
                    mode: int) -> None:
    backup = _temp_copy(folder, original, mode, ".orig")
    try:
        with open(target, "r+b") as handle:
            if not _still_same(handle, snapshot):
                raise FileChanged()
            try:
                handle.seek(0)
                _write_all(handle, fixed)
                handle.truncate()
                handle.flush()
                os.fsync(handle.fileno())
            except OSError:
                handle.seek(0)
                _write_all(handle, original)  # if this fails too, the backup stays
                handle.truncate()
                handle.flush()
                os.fsync(handle.fileno())
                raise
    except FileChanged:
        _remove(backup)
        raise
    except OSError as exc:
        if _matches(target, original):
            _remove(backup)
            raise
        raise WriteIncomplete(exc.errno, f"{exc.strerror or exc}; the file may be damaged, its original "
                                         f"is kept in {os.path.basename(backup)}") from None
    _remove(backup)


def _matches(path: str, data: bytes) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read() == data
    except OSError:
        return False
