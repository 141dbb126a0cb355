# SPDX-License-Identifier: Apache-2.0
"""Caches for compiled programs.

:class:`ProgramCacheResource` is the interface :meth:`Program.compile
<cuda_core.Program.compile>` uses through its ``cache=`` argument: a mapping
from ``bytes``/``str`` keys (built by :func:`make_program_cache_key`) to the
compiled bytes.  :class:`InMemoryProgramCache` keeps entries in the process;
:class:`FileStreamProgramCache` keeps them in a directory that any number of
processes may share.
"""

from __future__ import annotations

import abc
import collections
import collections.abc
import contextlib
import hashlib
import os
import struct
import tempfile
import threading
import time
from pathlib import Path

from cuda_core._module import ObjectCode

__all__ = [
    "FileStreamProgramCache",
    "InMemoryProgramCache",
    "ProgramCacheResource",
    "make_program_cache_key",
]

# Bump when the key derivation changes, so that old entries stop matching.
_KEY_SCHEMA_VERSION = 1

_SUPPORTED_TARGETS = {
    "c++": ("ptx", "cubin", "ltoir"),
    "ptx": ("cubin", "ptx"),
    "nvvm": ("ptx", "ltoir"),
}

# NVRTC options whose effect depends on files the key cannot see: a key for
# them needs ``extra_digest`` (a fingerprint of those files).
_EXTERNAL_CONTENT_OPTIONS = ("include_path", "pre_include", "pch", "use_pch", "pch_dir")
# NVRTC options whose effect is a file written during compilation: a cache hit
# would skip it, so they cannot be cached at all.
_SIDE_EFFECT_OPTIONS = ("create_pch", "time", "fdevice_time_trace")


class ProgramCacheResource(abc.ABC):
    """Interface of a compiled-program cache: ``bytes``/``str`` keys to bytes.

    A ``str`` key is the same entry as its UTF-8 encoding.  Values may be
    written as ``bytes``, ``bytearray``, ``memoryview`` or an
    :class:`~cuda_core.ObjectCode` (whose code is stored; a path-backed one is
    read at write time); they are read back as ``bytes``.  Symbol mappings of
    name expressions are not stored.

    There is deliberately no ``__contains__``: between ``key in cache`` and
    ``cache[key]`` another process may evict or replace the entry.  Use
    :meth:`get`, which answers both questions at once.
    """

    @abc.abstractmethod
    def __getitem__(self, key):
        """Return the bytes stored under ``key``; raise KeyError if absent."""

    @abc.abstractmethod
    def __setitem__(self, key, value):
        """Store ``value`` (bytes-like or ObjectCode) under ``key``."""

    @abc.abstractmethod
    def __delitem__(self, key):
        """Remove ``key``; raise KeyError if absent."""

    @abc.abstractmethod
    def __len__(self):
        """Return the number of entries."""

    @abc.abstractmethod
    def clear(self):
        """Remove every entry."""

    def get(self, key, default=None):
        """Return ``self[key]``, or ``default`` when the key is absent.

        Parameters
        ----------
        key : bytes or str
        default : object, optional

        Returns
        -------
        bytes or object
        """
        try:
            return self[key]
        except KeyError:
            return default

    def update(self, items, /):
        """Store every ``(key, value)`` of a mapping or an iterable of pairs.

        Not transactional: a failure part-way leaves earlier writes in place.
        """
        if isinstance(items, collections.abc.Mapping):
            items = items.items()
        for key, value in items:
            self[key] = value

    def close(self):  # noqa: B027 - deliberately a no-op default
        """Release resources held by the cache (nothing by default)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class InMemoryProgramCache(ProgramCacheResource):
    """A process-local cache with least-recently-used eviction.

    Parameters
    ----------
    max_size_bytes : int, optional
        Bound on the total size of the stored values; the least recently
        read or written entries are evicted beyond it.  ``None``: unbounded.

    Notes
    -----
    Thread-safe: one lock serializes every operation.
    """

    def __init__(self, *, max_size_bytes=None):
        self._max_size_bytes = _check_max_size(max_size_bytes)
        self._entries = collections.OrderedDict()  # key bytes -> value bytes, oldest first
        self._total = 0
        self._lock = threading.RLock()

    def __getitem__(self, key):
        k = _key_bytes(key)
        with self._lock:
            try:
                data = self._entries[k]
            except KeyError:
                raise KeyError(key) from None
            self._entries.move_to_end(k)
            return data

    def __setitem__(self, key, value):
        data = _value_bytes(value)
        k = _key_bytes(key)
        with self._lock:
            old = self._entries.pop(k, None)
            if old is not None:
                self._total -= len(old)
            self._entries[k] = data
            self._total += len(data)
            if self._max_size_bytes is not None:
                while self._entries and self._total > self._max_size_bytes:
                    _, evicted = self._entries.popitem(last=False)
                    self._total -= len(evicted)

    def __delitem__(self, key):
        k = _key_bytes(key)
        with self._lock:
            try:
                data = self._entries.pop(k)
            except KeyError:
                raise KeyError(key) from None
            self._total -= len(data)

    def __len__(self):
        with self._lock:
            return len(self._entries)

    def __repr__(self):
        return f"<InMemoryProgramCache entries={len(self)} bytes={self._total}>"

    def clear(self):
        """Remove every entry."""
        with self._lock:
            self._entries.clear()
            self._total = 0


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


def make_program_cache_key(
    *,
    code,
    code_type,
    options,
    target_type,
    name_expressions=(),
    extra_digest=None,
):
    """Build the cache key of one compilation.

    The key is a SHA-256 over everything that determines the output: the
    code, code type and target, every option as the compiler receives it
    (rendered flags; for PTX the linker options), the program name, the name
    expressions, NVVM ``extra_sources`` and the content of libdevice when it
    is linked, the version of the compiler or linker that will run (NVRTC,
    libNVVM, nvJitLink, or the driver for the driver linker), and
    ``extra_digest``.

    Parameters
    ----------
    code : str or bytes
        The source (bytes only for ``"nvvm"`` and ``"ptx"``).
    code_type : str
        ``"c++"``, ``"ptx"`` or ``"nvvm"``.
    options : ProgramOptions, dict or None
        The compile options (``arch`` must be set or discoverable).
    target_type : str
        ``"ptx"``, ``"cubin"`` or ``"ltoir"`` (as :meth:`Program.compile`
        accepts for ``code_type``).
    name_expressions : sequence of str or bytes, optional
        NVRTC name expressions; their order does not matter.
    extra_digest : bytes, optional
        Caller-provided fingerprint of inputs the key cannot see.  Required
        when NVRTC options read other files (``include_path``,
        ``pre_include``, ``pch``, ``use_pch``, ``pch_dir``, or a ``name``
        with a directory part, from which relative includes resolve).

    Returns
    -------
    bytes
        A 32-byte key.

    Raises
    ------
    ValueError
        For an invalid code/target combination; for options whose effect is a
        side effect a cache hit would skip (``create_pch``, ``time``,
        ``fdevice_time_trace``); or for file-reading options without
        ``extra_digest``.
    TypeError
        For a wrong ``code``, ``name_expressions`` or ``extra_digest`` type.
    """
    from cuda_core._program import ProgramOptions, _translate_to_linker_options
    from cuda_core._utils import check_or_create_options

    code_type = str(code_type).lower()
    target_type = str(target_type).lower()
    if code_type not in _SUPPORTED_TARGETS:
        raise ValueError(
            f"code_type={code_type!r} is not supported (must be one of "
            f"{sorted(_SUPPORTED_TARGETS)})"
        )
    if target_type not in _SUPPORTED_TARGETS[code_type]:
        raise ValueError(
            f"target_type={target_type!r} is not valid for code_type={code_type!r} "
            f"(supported: {list(_SUPPORTED_TARGETS[code_type])})"
        )
    options = check_or_create_options(ProgramOptions, options, "options")
    if extra_digest is not None and not isinstance(extra_digest, (bytes, bytearray, memoryview)):
        raise TypeError(f"extra_digest must be bytes, not {type(extra_digest).__name__}")
    if isinstance(code, str):
        code_bytes = code.encode("utf-8")
    elif isinstance(code, (bytes, bytearray)) and code_type != "c++":
        code_bytes = bytes(code)
    else:
        accepted = "str" if code_type == "c++" else "str or bytes"
        raise TypeError(
            f"code must be {accepted} for code_type={code_type!r}, not {type(code).__name__}"
        )

    digest = hashlib.sha256()

    def update(label, payload):
        if isinstance(payload, str):
            payload = payload.encode("utf-8")
        digest.update(label.encode("ascii") + b"\0")
        digest.update(len(payload).to_bytes(8, "big"))
        digest.update(payload)

    update("schema", f"cuda_core-program-cache-{_KEY_SCHEMA_VERSION}")
    update("code_type", code_type)
    update("target_type", target_type)
    update("code", code_bytes)
    update("name", options.name)

    if code_type == "c++":
        from cuda_core._loader import nvrtc_version

        side_effects = [f for f in _SIDE_EFFECT_OPTIONS if getattr(options, f) is not None]
        if side_effects:
            raise ValueError(
                f"options {', '.join(side_effects)} write files during compilation, which a "
                "cache hit would skip; compile without a cache for them"
            )
        external = [f for f in _EXTERNAL_CONTENT_OPTIONS if _option_set(options, f)]
        if os.path.dirname(options.name):
            external.append("name (with a directory part)")
        if external and extra_digest is None:
            raise ValueError(
                f"options {', '.join(external)} make the compiler read files the cache key "
                "cannot see; pass extra_digest= (a fingerprint of those files) to "
                "make_program_cache_key(), or compile without a cache"
            )
        update("compiler", "NVRTC {}.{}".format(*nvrtc_version()))
        for flag in options.as_bytes("nvrtc", target_type):
            update("flag", flag)
        names = []
        for expr in name_expressions:
            if isinstance(expr, str):
                names.append(b"s:" + expr.encode("utf-8"))
            elif isinstance(expr, bytes):
                names.append(b"b:" + expr)
            else:
                raise TypeError(f"name expressions must be str or bytes, not {type(expr).__name__}")
        update("name_count", str(len(names)))
        for n in sorted(names):
            update("name_expression", n)
    elif code_type == "ptx":
        from cuda_core._linker import Linker, _device_arch
        from cuda_core.typing import CompilerBackendType

        lopts = _translate_to_linker_options(options)
        if lopts.arch is None:
            lopts.arch = _device_arch("ProgramOptions")
        backend = Linker.which_backend()
        if backend is CompilerBackendType.NVJITLINK:
            from cuda_core._loader import nvjitlink_version

            update("compiler", "nvJitLink {}.{}".format(*nvjitlink_version()))
            for flag in lopts._nvjitlink_flags():
                update("flag", flag)
        else:
            from cuda_core._loader import driver_version

            update("compiler", f"driver {driver_version()}")
            for field in sorted(f for f in vars(lopts) if not f.startswith("_")):
                update("linker_option", f"{field}={getattr(lopts, field)!r}")
    else:  # nvvm
        from cuda_core._loader import ensure_loaded, libdevice_path, nvvm_version

        ensure_loaded("nvvm")
        from cuda_core._cuda_ffi import ffi, lib
        from cuda_core._errors import check_nvvm

        ir = ffi.new("int[4]")
        check_nvvm(lib.nvvmIRVersion(ir, ir + 1, ir + 2, ir + 3))
        update("compiler", "NVVM {}.{} IR {}.{}.{}.{}".format(*nvvm_version(), *ir))
        for flag in options.as_bytes("nvvm", target_type):
            update("flag", flag)
        for name, source in options._extra_sources_bytes() or ():
            update("extra_source_name", name)
            update("extra_source", source)
        if options.use_libdevice:
            path = libdevice_path()
            if path is None:
                update("libdevice", "missing")
            else:
                with open(path, "rb") as f:
                    update("libdevice", hashlib.sha256(f.read()).digest())
    if extra_digest is not None:
        update("extra_digest", bytes(extra_digest))
    return digest.digest()


# -- private helpers -------------------------------------------------------------

# Entry file: magic, format version, payload length, SHA-256 of the key,
# SHA-256 of the payload, then the payload.
_MAGIC = b"CCPCACHE"
_FORMAT_VERSION = 1
_HEADER = struct.Struct(">8sB3xQ32s32s")


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


def _check_max_size(value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(
            f"max_size_bytes must be a positive int or None (0 would evict every write), "
            f"got {value!r}"
        )
    return value


def _key_bytes(key):
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    if isinstance(key, str):
        return key.encode("utf-8")
    raise TypeError(f"cache keys must be bytes or str, got {type(key).__name__}")


def _value_bytes(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, ObjectCode):
        code = value.code
        if isinstance(code, str):
            return Path(code).read_bytes()
        return bytes(code)
    raise TypeError(f"cache values must be bytes-like or ObjectCode, got {type(value).__name__}")


def _option_set(options, field):
    value = getattr(options, field)
    if field == "pch":
        return bool(value)
    if isinstance(value, (list, tuple)):
        return len(value) > 0
    return value is not None
