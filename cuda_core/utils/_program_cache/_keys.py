# SPDX-License-Identifier: Apache-2.0
"""Program cache keys: :func:`make_program_cache_key`.

A key is a SHA-256 digest of everything that determines a compilation's
output, so equal keys mean interchangeable compiled code.  The derivation is
``cuda.core``'s, byte for byte: the same inputs give the same key in both
packages, so they can share one cache directory.

The digest is a sequence of fields, each ``label`` (ASCII) + the payload's
length (8 bytes, big-endian) + the payload, in this order: ``schema``; the
version probe of the compiler or linker (``nvrtc``; ``linker_backend`` and
``linker_version``; ``nvvm``), or ``<label>_probe_failed`` with the name of
the exception's class when the probe raises; ``code_type``;
``target_type``; ``code``; ``option_count`` and one ``option`` per flag;
for C++ ``names_count`` and one ``name`` per sorted, type-tagged name
expression; for NVVM ``extra_sources_count``, ``extra_source_name`` /
``extra_source_code`` per extra module and ``use_libdevice``;
``options_name``; ``extra_digest``.
"""

from __future__ import annotations

import collections.abc
import hashlib
from typing import TYPE_CHECKING, Any

import cuda_core._loader as _loader
from cuda_core._linker import Linker
from cuda_core._program_options import ProgramOptions
from cuda_core.typing import CompilerBackendType, SourceCodeType

if TYPE_CHECKING:
    from typing import Callable, Sequence

    #: Mixes one labelled field into a key: ``update(label, payload)``.
    _Update = Callable[[str, bytes], None]

__all__ = ["make_program_cache_key"]

# Bump when the key derivation changes, so that old entries stop matching.
# (The same number as cuda.core's: the derivations are the same.)
_KEY_SCHEMA_VERSION = 2

_TARGETS_BY_CODE_TYPE = {
    "c++": ("cubin", "ltoir", "ptx"),
    "ptx": ("cubin", "ptx"),
    "nvvm": ("ltoir", "ptx"),
}
_VALID_TARGETS = ("cubin", "ltoir", "ptx")

# NVRTC options whose output is a file written during compilation: a cache
# hit would skip it, so they cannot be cached ("set" means not None).
_SIDE_EFFECT_OPTIONS = ("create_pch", "time", "fdevice_time_trace")
# NVRTC options whose effect depends on files the key cannot see: a key for
# them needs ``extra_digest``.
_EXTERNAL_CONTENT_OPTIONS = ("include_path", "pre_include", "pch", "use_pch", "pch_dir")
# Options the driver (cuLink) linker rejects ("set" means not None).
_DRIVER_LINKER_UNSUPPORTED = ("time", "ptxas_options", "split_compile")
# Linker options the driver linker ignores: one sentinel in the key.
_DRIVER_IGNORED = frozenset({"ftz", "prec_div", "prec_sqrt", "fma"})


def make_program_cache_key(
    *,
    code: str | bytes | bytearray,
    code_type: str,
    options: ProgramOptions,
    target_type: str,
    name_expressions: Sequence[str | bytes] = (),
    extra_digest: bytes | None = None,
) -> bytes:
    """Build the cache key of one compilation.

    The key covers the code, code type and target, every option as the
    compiler receives it (the NVRTC or libNVVM flags; for PTX the linker
    options), the name expressions (C++ only), NVVM ``extra_sources`` and
    ``use_libdevice``, the program name, the version of the compiler or
    linker that will run, and ``extra_digest``.  It is the key ``cuda.core``
    computes for the same inputs.  A version probe that fails (a missing
    library) does not raise: the key records the failure instead.

    Parameters
    ----------
    code : str or bytes
        The source (bytes only for ``"nvvm"``).
    code_type : str
        ``"c++"``, ``"ptx"`` or ``"nvvm"`` (case-insensitive).
    options : ProgramOptions
        The compile options (``arch`` must be set or discoverable).
    target_type : str
        ``"ptx"``, ``"cubin"`` or ``"ltoir"`` (as :meth:`Program.compile
        <cuda_core.Program.compile>` accepts for ``code_type``).
    name_expressions : sequence of str or bytes, optional
        NVRTC name expressions; their order does not matter, ``"f"`` and
        ``b"f"`` give different keys.  Ignored for PTX and NVVM.
    extra_digest : bytes, optional
        Caller-provided fingerprint of inputs the key cannot see, mixed in as
        ``bytes(extra_digest)`` (as in ``cuda.core``, an int ``n`` becomes
        ``n`` zero bytes).  Required when NVRTC options read other files
        (``include_path``, ``pre_include``, ``pch``, ``use_pch``,
        ``pch_dir``, or an ``options.name`` with a ``/`` or ``\\``, from
        whose directory quoted includes resolve) and for NVVM with
        ``use_libdevice``.

    Returns
    -------
    bytes
        A 32-byte key.

    Raises
    ------
    ValueError
        In ``cuda.core``'s order: an unknown ``code_type`` or
        ``target_type``, or a target the code type cannot produce; C++
        options with compile-time side effects (``create_pch``, ``time``,
        ``fdevice_time_trace``); ``extra_sources`` with C++ or PTX;
        file-reading C++ options or a ``name`` with a directory part without
        ``extra_digest``; PTX options the driver linker rejects when it is
        the linker; NVVM ``use_libdevice`` without ``extra_digest``.
    TypeError
        For bytes ``code`` with C++ or PTX, or a wrong ``code`` or
        name-expression type.
    AttributeError
        If ``options`` is not a :class:`~cuda_core.ProgramOptions` (as in
        ``cuda.core``, a dict or None is not converted).
    """
    if isinstance(code_type, str):
        code_type = code_type.lower()
    if isinstance(target_type, str):
        target_type = target_type.lower()
    if code_type not in _TARGETS_BY_CODE_TYPE:
        choices = sorted(m.value for m in SourceCodeType)
        raise ValueError(
            f"{code_type!r} is not a valid SourceCodeType. Must be "
            f"{', '.join(repr(c) for c in choices[:-1])} or {choices[-1]!r}"
        )
    if target_type not in _VALID_TARGETS:
        raise ValueError(
            f"target_type={target_type!r} is not supported by the program cache (must be "
            "'cubin', 'ltoir' or 'ptx')"
        )
    supported = _TARGETS_BY_CODE_TYPE[code_type]
    if target_type not in supported:
        raise ValueError(
            f"target_type={target_type!r} is not valid for code_type={code_type!r} "
            f"(supported: {list(supported)}). Program.compile() rejects this combination, "
            "so caching a key for it is meaningless."
        )
    backend = _BACKENDS[code_type]()
    backend.validate(options, extra_digest)
    code_bytes = backend.encode_code(code, code_type)
    memo_key = _memo_key(code_type, target_type, code, options, name_expressions, extra_digest)
    if memo_key is not None:
        known = _memo.get(memo_key)
        if known is not None and _probe(backend) == known[0]:
            return known[1]
    option_bytes = backend.option_fingerprint(options, target_type)
    name_tags = backend.name_tags(name_expressions)

    # The fields are gathered and hashed in one call: the digest of the
    # concatenation is the digest of the same bytes fed field by field.
    probe = _probe(backend)
    parts = [_SCHEMA_FIELD, *probe]
    add = parts.extend

    def update(label: str, payload: bytes) -> None:
        add((label.encode("ascii"), len(payload).to_bytes(8, "big"), payload))

    add(_FIELD_CODE_TYPE[code_type])
    add(_FIELD_TARGET_TYPE[target_type])
    add((b"code", len(code_bytes).to_bytes(8, "big"), code_bytes))
    update("option_count", str(len(option_bytes)).encode("ascii"))
    for flag in option_bytes:
        flag = bytes(flag)
        add((b"option", len(flag).to_bytes(8, "big"), flag))
    if name_tags is not None:
        update("names_count", str(len(name_tags)).encode("ascii"))
        for tag in name_tags:
            update("name", tag)
    backend.extra_payload(options, update)
    if options.name is not None:
        update("options_name", str(options.name).encode("utf-8"))
    if extra_digest is not None:
        update("extra_digest", bytes(extra_digest))
    key = _sha256(b"".join(parts)).digest()
    if memo_key is not None:
        if len(_memo) >= _MEMO_SIZE:
            _memo.clear()
        _memo[memo_key] = (probe, key)
    return key


# -- the three backends ------------------------------------------------------------


class _Backend:
    """What one code type contributes to a key (checks, code, options, probe)."""

    def validate(self, options: Any, extra_digest: bytes | None) -> None:
        """Raise ValueError for options the cache cannot key."""

    def encode_code(self, code: object, code_type: str) -> bytes:
        if isinstance(code, str):
            return code.encode("utf-8")
        if isinstance(code, (bytes, bytearray)):
            raise TypeError(
                f"code must be str for code_type={code_type!r}; bytes/bytearray are only "
                "accepted for code_type='nvvm'."
            )
        raise TypeError(f"code must be str or bytes, got {type(code).__name__}")

    def option_fingerprint(self, options: Any, target_type: str) -> list[bytes]:
        raise NotImplementedError

    def name_tags(self, name_expressions: Sequence[object]) -> tuple[bytes, ...] | None:
        """Sorted type-tagged name expressions, or None where they are ignored."""
        return None

    def version_probe(self, update: _Update) -> None:
        raise NotImplementedError

    def extra_payload(self, options: Any, update: _Update) -> None:
        """Mix in what only this backend reads (nothing by default)."""


class _Nvrtc(_Backend):
    def validate(self, options: Any, extra_digest: bytes | None) -> None:
        side_effects = [f for f in _SIDE_EFFECT_OPTIONS if getattr(options, f) is not None]
        if side_effects:
            raise ValueError(
                "make_program_cache_key() refuses to build a key for options that have "
                f"compile-time side effects ({', '.join(side_effects)}); a cache hit would "
                "skip compiling, so the side effect would not happen. Turn the option off, "
                "or compile without a cache."
            )
        if options.extra_sources is not None:
            raise ValueError(
                "extra_sources is only valid for code_type='nvvm'; Program() rejects it for "
                "code_type='c++'."
            )
        if extra_digest is not None:
            return
        external = [f for f in _EXTERNAL_CONTENT_OPTIONS if _reads_files(options, f)]
        if external:
            raise ValueError(
                "make_program_cache_key() refuses to build a key for options that pull in "
                f"external file content ({', '.join(external)}) without an extra_digest; "
                "fingerprint the headers / PCH files the compiler will read and pass that "
                "as extra_digest=..."
            )
        name = options.name
        if isinstance(name, str) and ("/" in name or "\\" in name):
            raise ValueError(
                f"make_program_cache_key() refuses to build a key for options.name={name!r} "
                "(NVRTC source-filename with a directory component) without an "
                "extra_digest; NVRTC resolves quoted #include directives relative to that "
                "directory, so pass a digest of the headers it may read."
            )

    def option_fingerprint(self, options: Any, target_type: str) -> list[bytes]:
        return options.as_bytes("nvrtc", target_type)  # type: ignore[no-any-return]

    def name_tags(self, name_expressions: Sequence[object]) -> tuple[bytes, ...] | None:
        tags: list[bytes] = []
        for expr in name_expressions:
            if isinstance(expr, bytes):
                tags.append(b"b:" + expr)
            elif isinstance(expr, str):
                tags.append(b"s:" + expr.encode("utf-8"))
            elif isinstance(expr, bytearray):
                raise TypeError(
                    "name_expressions elements must be str or bytes; bytearray is not "
                    "accepted because Program.compile uses each element as a dict key and "
                    "bytearray is unhashable."
                )
            else:
                raise TypeError(
                    f"name_expressions elements must be str or bytes; got {type(expr).__name__}"
                )
        return tuple(sorted(tags))

    def version_probe(self, update: _Update) -> None:
        try:
            major, minor = _loader.nvrtc_version()
        except Exception as e:  # noqa: BLE001 - recorded in the key, as upstream does
            _probe_failed(update, "nvrtc", e)
            return
        update("nvrtc", f"{major}.{minor}".encode("ascii"))


class _LinkerKey(_Backend):
    _decision: list[Any] | None

    def __init__(self) -> None:
        self._decision = None  # [uses the driver linker: bool or None, exception or None]

    def _uses_driver(self) -> bool | None:
        """True (driver linker), False (nvJitLink) or None (the probe failed), once per key."""
        if self._decision is None:
            try:
                self._decision = [Linker.which_backend() is CompilerBackendType.DRIVER, None]
            except Exception as e:  # noqa: BLE001 - recorded in the key
                self._decision = [None, e]
        return self._decision[0]  # type: ignore[no-any-return]  # bool or None

    def validate(self, options: Any, extra_digest: bytes | None) -> None:
        if options.extra_sources is not None:
            raise ValueError(
                "extra_sources is only valid for code_type='nvvm'; Program() rejects it for "
                "code_type='ptx'."
            )
        if self._uses_driver() is True:
            rejected = [f for f in _DRIVER_LINKER_UNSUPPORTED if getattr(options, f) is not None]
            if rejected:
                raise ValueError(
                    "the cuLink driver linker does not support these options: "
                    f"{', '.join(rejected)}; Program.compile() would reject this "
                    "configuration before producing an ObjectCode."
                )

    def option_fingerprint(self, options: Any, target_type: str) -> list[bytes]:
        driver = self._uses_driver() is True
        parts = []
        for field, gate in _LINKER_GATES:
            if driver and field in _DRIVER_IGNORED:
                parts.append(f"{field}=<driver-ignored>".encode())
                continue
            value = options._arch() if field == "arch" else getattr(options, field)
            parts.append(f"{field}={gate(value)!r}".encode())
        return parts

    def version_probe(self, update: _Update) -> None:
        driver = self._uses_driver()
        if driver is None:
            _probe_failed(update, "linker", self._decision[1])  # type: ignore[index]  # decided
            return
        try:
            if driver:
                name, version = "driver", str(_loader.driver_version())
            else:
                name, version = "nvJitLink", str(tuple(_loader.nvjitlink_version()))
        except Exception as e:  # noqa: BLE001 - recorded in the key
            _probe_failed(update, "linker", e)
            return
        update("linker_backend", name.encode("ascii"))
        update("linker_version", version.encode("ascii"))


class _Nvvm(_Backend):
    def validate(self, options: Any, extra_digest: bytes | None) -> None:
        if extra_digest is None and options.use_libdevice:
            raise ValueError(
                "make_program_cache_key() refuses to build an NVVM key with "
                "use_libdevice=True and no extra_digest: the libdevice bitcode that gets "
                "linked can change under a cached ObjectCode. Pass an extra_digest that "
                "fingerprints the libdevice file, or turn use_libdevice off."
            )

    def encode_code(self, code: object, code_type: str) -> bytes:
        if isinstance(code, str):
            return code.encode("utf-8")
        if isinstance(code, (bytes, bytearray)):
            return bytes(code)
        raise TypeError(f"code must be str or bytes, got {type(code).__name__}")

    def option_fingerprint(self, options: Any, target_type: str) -> list[bytes]:
        return options.as_bytes("nvvm", target_type)  # type: ignore[no-any-return]

    def version_probe(self, update: _Update) -> None:
        try:
            fingerprint = _nvvm_fingerprint()
        except Exception as e:  # noqa: BLE001 - recorded in the key
            _probe_failed(update, "nvvm", e)
            return
        update("nvvm", fingerprint.encode("ascii"))

    def extra_payload(self, options: Any, update: _Update) -> None:
        extra = options.extra_sources
        if extra:
            update("extra_sources_count", str(len(extra)).encode("ascii"))
            for item in extra:  # in the caller's order: NVVM linking is order-dependent
                if isinstance(item, (tuple, list)) and len(item) == 2:
                    name, source = item
                    update("extra_source_name", str(name).encode("utf-8"))
                    if isinstance(source, str):
                        source = source.encode("utf-8")
                    elif isinstance(source, (bytes, bytearray)):
                        source = bytes(source)
                    else:
                        source = str(source).encode("utf-8")
                    update("extra_source_code", source)
                else:
                    update("extra_source", str(item).encode("utf-8"))
        if options.use_libdevice:
            update("use_libdevice", b"1")


_BACKENDS: dict[str, type[_Backend]] = {"c++": _Nvrtc, "ptx": _LinkerKey, "nvvm": _Nvvm}


# -- private helpers ---------------------------------------------------------------


def _sha256(data: bytes) -> hashlib._Hash:
    try:
        return hashlib.sha256(data, usedforsecurity=False)
    except TypeError:  # an interpreter without the keyword
        return hashlib.sha256(data)


def _field(label: bytes, payload: bytes) -> tuple[bytes, bytes, bytes]:
    """One field of a key's digest: label, payload length (8 bytes, big-endian), payload."""
    return (label, len(payload).to_bytes(8, "big"), payload)


_SCHEMA_FIELD = b"".join(_field(b"schema", str(_KEY_SCHEMA_VERSION).encode("ascii")))
_FIELD_CODE_TYPE = {t: _field(b"code_type", t.encode("ascii")) for t in _TARGETS_BY_CODE_TYPE}
_FIELD_TARGET_TYPE = {t: _field(b"target_type", t.encode("ascii")) for t in _VALID_TARGETS}


# Keys already derived in this process, for inputs that are plain values:
# {(code_type, target_type, code, option values, their types): (probe fields, key)}.
# A hit still runs the (cached, cheap) version probe and must match its
# fields, so a library that changes under the process is seen.  Options
# are read whole (their instance dict), so any change to them is a miss.
_memo: dict[tuple[Any, ...], tuple[list[bytes], bytes]] = {}
_MEMO_SIZE = 64
_MEMO_CODE_LIMIT = 256 * 1024  # the memo keeps sources alive: small ones only
# Types whose equal values render to equal bytes (not float: 0.0 == -0.0;
# containers may hold anything).  Exact types: True == 1 renders differently.
_PLAIN_TYPES = frozenset({type(None), bool, int, str, bytes})


def _memo_key(
    code_type: str,
    target_type: str,
    code: Any,
    options: Any,
    name_expressions: Sequence[object],
    extra_digest: bytes | None,
) -> tuple[Any, ...] | None:
    """The memo key of a key's inputs, or None when they are not all plain values."""
    if (
        type(options) is not ProgramOptions
        or name_expressions
        or extra_digest is not None
        or type(code) not in (str, bytes)
        or len(code) > _MEMO_CODE_LIMIT
        or options.arch is None  # the architecture would come from the current device
    ):
        return None
    values = tuple(vars(options).values())
    types = tuple(map(type, values))
    if not _PLAIN_TYPES.issuperset(types):
        return None
    return (code_type, target_type, code, values, types)


def _probe(backend: _Backend) -> list[bytes]:
    """The key fields of ``backend``'s version probe, as a list of bytes."""
    fields: list[bytes] = []

    def update(label: str, payload: bytes) -> None:
        fields.extend((label.encode("ascii"), len(payload).to_bytes(8, "big"), payload))

    backend.version_probe(update)
    return fields


def _probe_failed(update: _Update, label: str, exc: BaseException) -> None:
    """Record a failed version probe: the label and the exception's class name only."""
    update(f"{label}_probe_failed", type(exc).__name__.encode())


def _reads_files(options: Any, field: str) -> bool:
    """Whether an NVRTC option makes the compiler read files (as it gates the flag)."""
    value = getattr(options, field)
    if value is None:
        return False
    if field == "pch":
        return bool(value)
    if field in ("include_path", "pre_include"):
        if isinstance(value, str):
            return True
        if isinstance(value, collections.abc.Sequence):
            return len(value) > 0
        return False
    return True


def _nvvm_fingerprint() -> str:
    from cuda_core._cuda_ffi import ffi, lib
    from cuda_core._errors import check_nvvm

    lib_major, lib_minor = _loader.nvvm_version()
    ir = ffi.new("int[4]")
    check_nvvm(lib.nvvmIRVersion(ir, ir + 1, ir + 2, ir + 3))
    return f"lib={lib_major}.{lib_minor};ir={ir[0]}.{ir[1]}.{ir[2]}.{ir[3]}"


def _ptxas_gate(value: object) -> object:
    if value is None:
        return None
    if isinstance(value, str):
        return ("-Xptxas=" + value,)
    if isinstance(value, collections.abc.Sequence):
        return tuple(f"-Xptxas={v}" for v in value) or None
    return value


# (field, gate): each linker option as the linker reads it, in key order.
_LINKER_GATES: tuple[tuple[str, Callable[[Any], object]], ...] = (
    ("name", lambda v: v),
    ("arch", lambda v: v),
    ("max_register_count", lambda v: v),
    ("time", lambda v: v is not None),
    ("link_time_optimization", bool),
    ("debug", bool),
    ("lineinfo", bool),
    ("ftz", lambda v: None if v is None else bool(v)),
    ("prec_div", lambda v: None if v is None else bool(v)),
    ("prec_sqrt", lambda v: None if v is None else bool(v)),
    ("fma", lambda v: None if v is None else bool(v)),
    ("split_compile", lambda v: v),
    ("ptxas_options", _ptxas_gate),
    ("no_cache", lambda v: v is True),
)
