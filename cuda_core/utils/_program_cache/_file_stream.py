# SPDX-License-Identifier: Apache-2.0
"""A persistent program cache in a directory: :class:`FileStreamProgramCache`.

Any number of processes may share the directory; entries are written
atomically and checked on read.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import tempfile
import threading
import time
from pathlib import Path

from cuda_core.utils._program_cache._resource import (
    ProgramCacheResource,
    _check_max_size,
    _key_bytes,
    _value_bytes,
)

__all__ = ["FileStreamProgramCache"]

# Entry file: magic, format version, payload length, SHA-256 of the key,
# SHA-256 of the payload, then the payload.
_MAGIC = b"CCPCACHE"
_FORMAT_VERSION = 1
_HEADER = struct.Struct(">8sB3xQ32s32s")


class FileStreamProgramCache(ProgramCacheResource):
    """A persistent cache in a directory, safe to share between processes.

    Each entry is one file under ``<path>/entries/``, named after the SHA-256
    of its key.  Writes go to a temporary file in ``<path>/tmp/`` that is
    flushed, ``fsync``-ed and then atomically renamed over the entry
    (``os.replace``), so a reader sees the old entry or the new one, never a
    mix.  Every entry carries a header with the SHA-256 of its key and of its
    payload: a torn, truncated or otherwise corrupted file is detected on
    read, deleted and reported as a miss (so the program is recompiled),
    never returned.

    Parameters
    ----------
    path : str or os.PathLike, optional
        The cache directory (created if missing).  Default:
        ``$XDG_CACHE_HOME/cuda-core-cffi/program-cache`` (``~/.cache/...``).
    max_size_bytes : int, optional
        Soft bound on the total size on disk.  When a write exceeds it, the
        entries read least recently (by access time, which every read
        refreshes) are removed first.  Concurrent writers may exceed it
        briefly.  ``None``: unbounded.

    Notes
    -----
    Entries are framed (header + payload), so the files are not directly
    usable by ``cuobjdump``; read them through this class.  Temporary files
    left behind by crashed writers are removed after an hour.
    """

    def __init__(self, path=None, *, max_size_bytes=None):
        self._max_size_bytes = _check_max_size(max_size_bytes)
        if path is None:
            path = _default_cache_dir()
        elif not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
        self._root = Path(path)
        self._entries = self._root / "entries"
        self._tmp = self._root / "tmp"
        self._entries.mkdir(parents=True, exist_ok=True)
        self._tmp.mkdir(parents=True, exist_ok=True)
        self._sweep_stale_tmp()
        self._lock = threading.Lock()
        self._approx_size = self._scan_size() if self._max_size_bytes is not None else 0

    def __getitem__(self, key):
        k = _key_bytes(key)
        path = self._path(k)
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                blob = f.read()
        except FileNotFoundError:
            raise KeyError(key) from None
        payload = _decode_entry(blob, k)
        if payload is None:  # torn or corrupt: drop it, report a miss
            _unlink_if_unchanged(path, st)
            raise KeyError(key)
        with contextlib.suppress(OSError):  # refresh atime for LRU eviction
            os.utime(path, ns=(time.time_ns(), st.st_mtime_ns))
        return payload

    def __setitem__(self, key, value):
        data = _value_bytes(value)
        k = _key_bytes(key)
        target = self._path(k)
        target.parent.mkdir(parents=True, exist_ok=True)
        self._tmp.mkdir(parents=True, exist_ok=True)
        blob = _encode_entry(k, data)
        old_size = 0
        if self._max_size_bytes is not None:
            with contextlib.suppress(OSError):
                old_size = target.stat().st_size
        fd, tmp_name = tempfile.mkstemp(prefix="entry-", dir=self._tmp)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
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
            self._approx_size += len(blob) - old_size
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
        """Remove every entry (and stale temporary files)."""
        for path in self._iter_entries():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self._sweep_stale_tmp()
        with self._lock:
            self._approx_size = 0

    @property
    def path(self):
        """pathlib.Path: the cache directory."""
        return self._root

    # -- internals -----------------------------------------------------------

    def _path(self, key_bytes):
        digest = hashlib.sha256(key_bytes).hexdigest()
        return self._entries / digest[:2] / digest[2:]

    def _iter_entries(self):
        try:
            subdirs = list(os.scandir(self._entries))
        except FileNotFoundError:
            return
        for sub in subdirs:
            if not sub.is_dir(follow_symlinks=False):
                continue
            try:
                with os.scandir(sub.path) as it:
                    files = [e.path for e in it if e.is_file(follow_symlinks=False)]
            except FileNotFoundError:
                continue
            yield from files

    def _scan_size(self):
        total = 0
        for path in self._iter_entries():
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(path).st_size
        return total

    def _evict(self):
        """Remove least recently read entries until the total fits the bound."""
        stats = []
        for path in self._iter_entries():
            with contextlib.suppress(FileNotFoundError):
                stats.append((path, os.stat(path)))
        total = sum(st.st_size for _, st in stats)
        stats.sort(key=lambda item: item[1].st_atime_ns)
        for path, st in stats:
            if total <= self._max_size_bytes:
                break
            if _unlink_if_unchanged(path, st):
                total -= st.st_size
        with self._lock:
            self._approx_size = total

    def _sweep_stale_tmp(self, max_age=3600.0):
        cutoff = time.time() - max_age
        try:
            entries = list(os.scandir(self._tmp))
        except FileNotFoundError:
            return
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)


# -- private helpers -------------------------------------------------------------


def _encode_entry(key_bytes, payload):
    header = _HEADER.pack(
        _MAGIC,
        _FORMAT_VERSION,
        len(payload),
        hashlib.sha256(key_bytes).digest(),
        hashlib.sha256(payload).digest(),
    )
    return header + payload


def _decode_entry(blob, key_bytes):
    """Return the payload of a valid entry for ``key_bytes``, or None."""
    if len(blob) < _HEADER.size:
        return None
    magic, version, length, key_digest, payload_digest = _HEADER.unpack_from(blob)
    payload = blob[_HEADER.size :]
    if (
        magic != _MAGIC
        or version != _FORMAT_VERSION
        or length != len(payload)
        or key_digest != hashlib.sha256(key_bytes).digest()
        or payload_digest != hashlib.sha256(payload).digest()
    ):
        return None
    return payload


def _unlink_if_unchanged(path, st_before):
    """Delete ``path`` unless another process replaced it since ``st_before``."""
    try:
        st_now = os.stat(path)
    except FileNotFoundError:
        return False
    if (st_now.st_ino, st_now.st_size, st_now.st_mtime_ns) != (
        st_before.st_ino,
        st_before.st_size,
        st_before.st_mtime_ns,
    ):
        return False
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def _default_cache_dir():
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "cuda-core-cffi" / "program-cache"
