# SPDX-License-Identifier: Apache-2.0
"""A persistent program cache in a directory: :class:`FileStreamProgramCache`.

The directory layout is ``cuda.core``'s, so both packages can share one
cache directory and read each other's entries: each entry is the raw
compiled payload (cubin, PTX, LTO-IR: no header, readable by ``cuobjdump``)
in ``entries/<2 hex>/<62 hex>``, the SHA-256 of its key; writes are staged in
``tmp/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from cuda_core.utils._program_cache._resource import (
    ProgramCacheResource,
    _key_bytes,
    _value_bytes,
)

if sys.platform != "win32":
    import fcntl

if TYPE_CHECKING:
    from cuda_core.utils._program_cache._resource import _Key, _Value

__all__ = ["FileStreamProgramCache"]

_TMP_PREFIX = "entry-"
#: Victims are renamed into ``tmp/`` under this prefix before they are deleted.
_TOMB_PREFIX = _TMP_PREFIX + "evicted-"
#: The advisory lock file in the cache directory (see ``_locked``).
_LOCK_NAME = ".lock"
_TMP_STALE_SECONDS = 3600
_SHARD = re.compile(r"[0-9a-f]{2}\Z")
_ENTRY = re.compile(r"[0-9a-f]{62}\Z")
_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0)
_SEP = os.sep
_UTIME_FD = os.utime in os.supports_fd


class FileStreamProgramCache(ProgramCacheResource):
    """A persistent cache in a directory, safe to share between processes.

    Each entry is one file, ``<path>/entries/<h[:2]>/<h[2:]>`` where ``h`` is
    the hex SHA-256 of the key, holding the compiled bytes as they are (the
    layout of ``cuda.core``'s cache, which can share the directory).  Writes
    go to a temporary file in ``<path>/tmp/`` that is flushed, ``fsync``-ed
    and atomically renamed over the entry (``os.replace``), so a reader sees
    the old entry or the new one, never a mix.  Reads return the bytes
    unvalidated and never delete anything.

    Parameters
    ----------
    path : str or os.PathLike, optional
        The cache directory (created if missing; an existing file there
        raises FileExistsError).  Default, shared with ``cuda.core``:
        ``$XDG_CACHE_HOME/cuda-python/program-cache`` (``~/.cache/...``;
        ``%LOCALAPPDATA%\\cuda-python\\program-cache`` on Windows).
    max_size_bytes : int or float, optional
        Soft bound on the total size on disk, committed entries and
        in-flight temporary files together.  When a write exceeds it, the
        entries read least recently (by access time, which every read
        refreshes) are removed first.  Concurrent writers may exceed it
        briefly.  ``None``: unbounded.

    Raises
    ------
    ValueError
        If ``max_size_bytes`` is not positive (``"max_size_bytes must be
        positive or None (0 would evict every write)"``); a non-number fails
        the comparison with TypeError.

    Notes
    -----
    Eviction and :meth:`clear` remove only files named as entries
    (``<2 hex>/<62 hex>``), each only if it is still the file that was
    examined: same inode, size and modification time (a writer may have
    replaced it meanwhile).  The check and the removal happen under an
    exclusive advisory lock on ``<path>/.lock`` that this class's writers
    hold (shared) while they rename a new entry into place; the victim is
    renamed to a temporary name, checked again and only then deleted, and
    put back if it turns out to be a newer file, so a writer that takes no
    lock (``cuda.core``'s) loses no entry either.  Temporary files
    (``tmp/entry-*``) left behind by crashed processes are removed after an
    hour.  Other files in the directory are never touched.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, max_size_bytes: float | None = None
    ) -> None:
        if max_size_bytes is not None and max_size_bytes <= 0:
            raise ValueError("max_size_bytes must be positive or None (0 would evict every write)")
        self._max_size_bytes = max_size_bytes
        self._root = Path(path) if path is not None else _default_cache_dir()
        self._entries = self._root / "entries"
        self._tmp = self._root / "tmp"
        self._entries_prefix = os.path.join(str(self._entries), "")
        self._lock_path = str(self._root / _LOCK_NAME)
        self._root.mkdir(parents=True, exist_ok=True)
        self._entries.mkdir(exist_ok=True)
        self._tmp.mkdir(exist_ok=True)
        self._sweep_stale_tmp()
        self._lock = threading.Lock()
        self._approx_size = self._scan_size() if max_size_bytes is not None else 0

    def __getitem__(self, key: _Key) -> bytes:
        # The hot path of a cache hit: plain descriptor calls, no file object.
        path = self._entry_path(_key_bytes(key))
        try:
            fd = os.open(path, _O_READ)
        except FileNotFoundError:
            raise KeyError(key) from None
        try:
            st = os.fstat(fd)
            data = _read_all(fd, st.st_size)
            _touch_atime(fd, path, st)
        finally:
            os.close(fd)
        return data

    def __setitem__(self, key: _Key, value: _Value) -> None:
        data = _value_bytes(value)
        target = self._path(_key_bytes(key))
        target.parent.mkdir(parents=True, exist_ok=True)
        self._tmp.mkdir(parents=True, exist_ok=True)
        old_size = 0
        if self._max_size_bytes is not None:
            with contextlib.suppress(OSError):
                old_size = target.stat().st_size
        fd, tmp_name = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=self._tmp)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            with _locked(self._lock_path, exclusive=False):
                os.replace(tmp_name, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
            raise
        if self._max_size_bytes is None:
            return
        with self._lock:
            self._approx_size += len(data) - old_size
            over = self._approx_size > self._max_size_bytes
        if over:
            self._evict()

    def __delitem__(self, key: _Key) -> None:
        path = self._path(_key_bytes(key))
        try:
            size = path.stat().st_size
            os.unlink(path)
        except FileNotFoundError:
            raise KeyError(key) from None
        with self._lock:
            self._approx_size = max(0, self._approx_size - size)

    def __len__(self) -> int:
        return sum(1 for _ in self._iter_entries())

    def __repr__(self) -> str:
        return f"<FileStreamProgramCache path={str(self._root)!r}>"

    def clear(self) -> None:
        """Remove every entry, stale temporary files and empty shard directories.

        An entry replaced by another writer while this runs is left in place.
        """
        snapshot = []
        for path in self._iter_entries():
            with contextlib.suppress(FileNotFoundError):
                snapshot.append((path, os.stat(path)))
        with _locked(self._lock_path, exclusive=True):
            for path, st in snapshot:
                try:
                    now = os.stat(path)
                except FileNotFoundError:
                    continue
                if _same_file(now, st):
                    self._remove(path, st)
        self._sweep_stale_tmp()
        for shard in self._iter_shards():
            with contextlib.suppress(OSError):
                os.rmdir(shard)  # only succeeds when empty
        if self._max_size_bytes is not None:
            size = self._scan_size()
            with self._lock:
                self._approx_size = size

    @property
    def path(self) -> Path:
        """pathlib.Path: the cache directory."""
        return self._root

    # -- internals -----------------------------------------------------------

    def _entry_path(self, key_bytes: bytes) -> str:
        """The entry file of ``key_bytes``, as a str."""
        digest = _sha256_hex(key_bytes)
        return self._entries_prefix + digest[:2] + _SEP + digest[2:]

    def _path(self, key_bytes: bytes) -> Path:
        """The entry file of ``key_bytes``, as a Path."""
        return Path(self._entry_path(key_bytes))

    def _iter_shards(self) -> list[str]:
        try:
            with os.scandir(self._entries) as it:
                shards = [
                    e.path for e in it if _SHARD.match(e.name) and e.is_dir(follow_symlinks=False)
                ]
        except FileNotFoundError:
            return []
        return shards

    def _iter_entries(self) -> Iterator[str]:
        """Yield the paths of the entry files (named as entries; nothing else)."""
        for shard in self._iter_shards():
            try:
                with os.scandir(shard) as it:
                    files = [
                        e.path
                        for e in it
                        if _ENTRY.match(e.name) and e.is_file(follow_symlinks=False)
                    ]
            except FileNotFoundError:
                continue
            yield from files

    def _iter_tmp(self) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(self._tmp) as it:
                return [
                    e
                    for e in it
                    if e.name.startswith(_TMP_PREFIX) and e.is_file(follow_symlinks=False)
                ]
        except FileNotFoundError:
            return []

    def _tmp_size(self) -> int:
        total = 0
        for entry in self._iter_tmp():
            with contextlib.suppress(FileNotFoundError):
                total += entry.stat(follow_symlinks=False).st_size
        return total

    def _scan_size(self) -> int:
        total = self._tmp_size()
        for path in self._iter_entries():
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(path).st_size
        return total

    def _evict(self) -> None:
        """Remove least recently read entries until the total (with temporary files) fits."""
        self._sweep_stale_tmp()
        stats: list[tuple[str, os.stat_result]] = []
        for path in self._iter_entries():
            with contextlib.suppress(FileNotFoundError):
                stats.append((path, os.stat(path)))
        total = self._tmp_size() + sum(st.st_size for _, st in stats)
        stats.sort(key=lambda item: item[1].st_atime_ns)
        limit = self._max_size_bytes
        assert limit is not None  # only called with a bound
        with _locked(self._lock_path, exclusive=True):
            for path, st in stats:
                if total <= limit:
                    break
                try:
                    now = os.stat(path)
                except FileNotFoundError:
                    total -= st.st_size
                    continue
                if not _same_file(now, st):
                    # Replaced by a writer since the scan: keep it, count its real size.
                    total += now.st_size - st.st_size
                elif self._remove(path, st):
                    total -= st.st_size
        with self._lock:
            self._approx_size = total

    def _remove(self, path: str, st_before: os.stat_result) -> bool:
        """Delete the entry ``path``, just seen to be the file ``st_before`` describes.

        Called with the exclusive lock held, so this class's writers cannot
        replace the entry meanwhile.  A writer that takes no lock could, at
        any step: the entry is therefore renamed to a unique name in
        ``tmp/`` first, the file taken is checked again, and only a file
        identical to ``st_before`` is deleted; a newer one goes back unless
        a still newer entry is in place by then.  True if it was deleted.
        """
        tomb = os.path.join(self._tmp, f"{_TOMB_PREFIX}{os.getpid()}-{os.urandom(8).hex()}")
        try:
            os.rename(path, tomb)
        except FileNotFoundError:
            return False
        except OSError:  # no rename into tmp/ (another file system, say): under the lock only
            with contextlib.suppress(FileNotFoundError):
                if _same_file(os.stat(path), st_before):
                    os.unlink(path)
                    return True
            return False
        try:
            taken = os.lstat(tomb)
        except FileNotFoundError:  # swept as a stale temporary file: it was old
            return True
        if _same_file(taken, st_before):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tomb)
            return True
        _put_back(tomb, path)
        return False

    def _sweep_stale_tmp(self) -> None:
        cutoff = time.time() - _TMP_STALE_SECONDS
        for entry in self._iter_tmp():
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)


# -- private helpers -------------------------------------------------------------


def _sha256_hex(data: bytes) -> str:
    try:
        h = hashlib.sha256(data, usedforsecurity=False)
    except TypeError:  # an interpreter without the keyword
        h = hashlib.sha256(data)
    return h.hexdigest()


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_ino, a.st_size, a.st_mtime_ns) == (b.st_ino, b.st_size, b.st_mtime_ns)


def _read_all(fd: int, size: int) -> bytes:
    """Read the file open on ``fd`` to its end; ``size`` is its size from ``fstat``."""
    data = os.read(fd, size + 1)  # a byte more than expected: a short read means the end
    if len(data) <= size:
        return data
    chunks = [data]  # grown since the fstat (never by this cache's writers)
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _touch_atime(fd: int, path: str, st_before: os.stat_result) -> None:
    """Set the entry's access time to now (keeping its mtime), if it is still the file read.

    Eviction goes by access time, which mounts with ``relatime``/``noatime``
    do not refresh on reads.  Through the open descriptor where the platform
    allows: that is the file just read (writers replace entries by renaming,
    never in place), so no second check is needed.  Otherwise through the
    path, if it still names the file read.  Best effort.
    """
    now = time.time_ns()
    try:
        if _UTIME_FD:
            os.utime(fd, ns=(now, st_before.st_mtime_ns))
        elif _same_file(os.stat(path), st_before):
            os.utime(path, ns=(now, st_before.st_mtime_ns))
    except OSError:
        pass


def _put_back(tomb: str, path: str) -> None:
    """Return a file taken from ``path`` by mistake, unless a newer entry is there now."""
    try:
        os.link(tomb, path)  # never replaces an entry written meanwhile
    except FileExistsError:
        pass  # a newer entry is in place: the one taken is superseded
    except OSError:  # no hard links on this file system
        if not os.path.lexists(path):
            with contextlib.suppress(OSError):
                os.replace(tomb, path)
                return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tomb)


@contextlib.contextmanager
def _locked(path: str, *, exclusive: bool) -> Iterator[None]:
    """Hold the cache directory's advisory lock: shared to commit an entry, exclusive to remove.

    Each holder opens the lock file itself (``flock`` locks belong to the
    open file, so threads of one process exclude each other too).  Where
    there is no ``flock`` (Windows) or the file system refuses it, nothing
    is held and the rename-and-check step of removals alone keeps newer
    entries.
    """
    if sys.platform == "win32":
        yield
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:  # a read-only directory, say
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the lock


def _default_cache_dir() -> Path:
    if os.name == "nt":
        local = os.environ.get("LOCALAPPDATA")
        root = Path(local) if local else Path.home() / "AppData" / "Local"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = Path(xdg) if xdg else Path.home() / ".cache"
    return root / "cuda-python" / "program-cache"
