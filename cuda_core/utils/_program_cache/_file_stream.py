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
import tempfile
import threading
import time
from pathlib import Path

from cuda_core.utils._program_cache._resource import (
    ProgramCacheResource,
    _key_bytes,
    _value_bytes,
)

__all__ = ["FileStreamProgramCache"]

_TMP_PREFIX = "entry-"
_TMP_STALE_SECONDS = 3600
_SHARD = re.compile(r"[0-9a-f]{2}\Z")
_ENTRY = re.compile(r"[0-9a-f]{62}\Z")


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
    (``<2 hex>/<62 hex>``), each only if it is unchanged since it was
    examined (a writer may have replaced it meanwhile); temporary files
    (``tmp/entry-*``) left behind by crashed writers are removed after an
    hour.  Other files in the directory are never touched.
    """

    def __init__(self, path=None, *, max_size_bytes=None):
        if max_size_bytes is not None and max_size_bytes <= 0:
            raise ValueError("max_size_bytes must be positive or None (0 would evict every write)")
        self._max_size_bytes = max_size_bytes
        self._root = Path(path) if path is not None else _default_cache_dir()
        self._entries = self._root / "entries"
        self._tmp = self._root / "tmp"
        self._root.mkdir(parents=True, exist_ok=True)
        self._entries.mkdir(exist_ok=True)
        self._tmp.mkdir(exist_ok=True)
        self._sweep_stale_tmp()
        self._lock = threading.Lock()
        self._approx_size = self._scan_size() if max_size_bytes is not None else 0

    def __getitem__(self, key):
        path = self._path(_key_bytes(key))
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
                _touch_atime(f.fileno(), path, st)
        except FileNotFoundError:
            raise KeyError(key) from None
        return data

    def __setitem__(self, key, value):
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

    def __delitem__(self, key):
        path = self._path(_key_bytes(key))
        try:
            size = path.stat().st_size
            os.unlink(path)
        except FileNotFoundError:
            raise KeyError(key) from None
        with self._lock:
            self._approx_size = max(0, self._approx_size - size)

    def __len__(self):
        return sum(1 for _ in self._iter_entries())

    def __repr__(self):
        return f"<FileStreamProgramCache path={str(self._root)!r}>"

    def clear(self):
        """Remove every entry, stale temporary files and empty shard directories.

        An entry replaced by another writer while this runs is left in place.
        """
        snapshot = []
        for path in self._iter_entries():
            with contextlib.suppress(FileNotFoundError):
                snapshot.append((path, os.stat(path)))
        for path, st in snapshot:
            _unlink_if_unchanged(path, st)
        self._sweep_stale_tmp()
        for shard in self._iter_shards():
            with contextlib.suppress(OSError):
                os.rmdir(shard)  # only succeeds when empty
        if self._max_size_bytes is not None:
            size = self._scan_size()
            with self._lock:
                self._approx_size = size

    @property
    def path(self):
        """pathlib.Path: the cache directory."""
        return self._root

    # -- internals -----------------------------------------------------------

    def _path(self, key_bytes):
        digest = _sha256_hex(key_bytes)
        return self._entries / digest[:2] / digest[2:]

    def _iter_shards(self):
        try:
            with os.scandir(self._entries) as it:
                shards = [
                    e.path for e in it if _SHARD.match(e.name) and e.is_dir(follow_symlinks=False)
                ]
        except FileNotFoundError:
            return []
        return shards

    def _iter_entries(self):
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

    def _iter_tmp(self):
        try:
            with os.scandir(self._tmp) as it:
                return [
                    e
                    for e in it
                    if e.name.startswith(_TMP_PREFIX) and e.is_file(follow_symlinks=False)
                ]
        except FileNotFoundError:
            return []

    def _tmp_size(self):
        total = 0
        for entry in self._iter_tmp():
            with contextlib.suppress(FileNotFoundError):
                total += entry.stat(follow_symlinks=False).st_size
        return total

    def _scan_size(self):
        total = self._tmp_size()
        for path in self._iter_entries():
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(path).st_size
        return total

    def _evict(self):
        """Remove least recently read entries until the total (with temporary files) fits."""
        self._sweep_stale_tmp()
        stats = []
        for path in self._iter_entries():
            with contextlib.suppress(FileNotFoundError):
                stats.append((path, os.stat(path)))
        total = self._tmp_size() + sum(st.st_size for _, st in stats)
        stats.sort(key=lambda item: item[1].st_atime_ns)
        for path, st in stats:
            if total <= self._max_size_bytes:
                break
            try:
                now = os.stat(path)
            except FileNotFoundError:
                total -= st.st_size
                continue
            if _same_file(now, st):
                if _unlink_if_unchanged(path, st):
                    total -= st.st_size
            else:  # replaced by another writer since: keep it, count its real size
                total += now.st_size - st.st_size
        with self._lock:
            self._approx_size = total

    def _sweep_stale_tmp(self):
        cutoff = time.time() - _TMP_STALE_SECONDS
        for entry in self._iter_tmp():
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)


# -- private helpers -------------------------------------------------------------


def _sha256_hex(data):
    try:
        h = hashlib.sha256(data, usedforsecurity=False)
    except TypeError:  # an interpreter without the keyword
        h = hashlib.sha256(data)
    return h.hexdigest()


def _same_file(a, b):
    return (a.st_ino, a.st_size, a.st_mtime_ns) == (b.st_ino, b.st_size, b.st_mtime_ns)


def _touch_atime(fd, path, st_before):
    """Set the entry's access time to now (keeping its mtime), if it is still the file read.

    Eviction goes by access time, which mounts with ``relatime``/``noatime``
    do not refresh on reads.  Through the open descriptor where the platform
    allows, so the check and the update concern the same file.  Best effort.
    """
    now = time.time_ns()
    with contextlib.suppress(OSError):
        if os.utime in os.supports_fd:
            if _same_file(os.fstat(fd), st_before):
                os.utime(fd, ns=(now, st_before.st_mtime_ns))
        elif _same_file(os.stat(path), st_before):
            os.utime(path, ns=(now, st_before.st_mtime_ns))


def _unlink_if_unchanged(path, st_before):
    """Delete ``path`` unless another process replaced it since ``st_before``."""
    try:
        st_now = os.stat(path)
    except FileNotFoundError:
        return False
    if not _same_file(st_now, st_before):
        return False
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def _default_cache_dir():
    if os.name == "nt":
        local = os.environ.get("LOCALAPPDATA")
        root = Path(local) if local else Path.home() / "AppData" / "Local"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = Path(xdg) if xdg else Path.home() / ".cache"
    return root / "cuda-python" / "program-cache"
