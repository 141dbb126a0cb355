# SPDX-License-Identifier: Apache-2.0
"""Program cache keys: :func:`make_program_cache_key`.

A key is a digest of everything that determines a compilation's output, so
equal keys mean interchangeable compiled code.
"""

from __future__ import annotations

import hashlib
import os

import cuda_core._loader as _loader
from cuda_core._compile_common import _SUPPORTED_TARGETS, _device_arch
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check_nvvm
from cuda_core._linker import Linker
from cuda_core._program_options import ProgramOptions, _translate_to_linker_options
from cuda_core._utils import check_or_create_options
from cuda_core.typing import CompilerBackendType

__all__ = ["make_program_cache_key"]

# Bump when the key derivation changes, so that old entries stop matching.
_KEY_SCHEMA_VERSION = 1

# NVRTC options whose effect depends on files the key cannot see: a key for
# them needs ``extra_digest`` (a fingerprint of those files).
_EXTERNAL_CONTENT_OPTIONS = ("include_path", "pre_include", "pch", "use_pch", "pch_dir")
# NVRTC options whose effect is a file written during compilation: a cache hit
# would skip it, so they cannot be cached at all.
_SIDE_EFFECT_OPTIONS = ("create_pch", "time", "fdevice_time_trace")


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
        update("compiler", "NVRTC {}.{}".format(*_loader.nvrtc_version()))
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
        lopts = _translate_to_linker_options(options)
        if lopts.arch is None:
            lopts.arch = _device_arch("ProgramOptions")
        backend = Linker.which_backend()
        if backend is CompilerBackendType.NVJITLINK:
            update("compiler", "nvJitLink {}.{}".format(*_loader.nvjitlink_version()))
            for flag in lopts._nvjitlink_flags():
                update("flag", flag)
        else:
            update("compiler", f"driver {_loader.driver_version()}")
            for field in sorted(f for f in vars(lopts) if not f.startswith("_")):
                update("linker_option", f"{field}={getattr(lopts, field)!r}")
    else:  # nvvm
        _loader.ensure_loaded("nvvm")
        ir = ffi.new("int[4]")
        check_nvvm(lib.nvvmIRVersion(ir, ir + 1, ir + 2, ir + 3))
        update("compiler", "NVVM {}.{} IR {}.{}.{}.{}".format(*_loader.nvvm_version(), *ir))
        for flag in options.as_bytes("nvvm", target_type):
            update("flag", flag)
        for name, source in options._extra_sources_bytes() or ():
            update("extra_source_name", name)
            update("extra_source", source)
        if options.use_libdevice:
            path = _loader.libdevice_path()
            if path is None:
                update("libdevice", "missing")
            else:
                with open(path, "rb") as f:
                    update("libdevice", hashlib.sha256(f.read()).digest())
    if extra_digest is not None:
        update("extra_digest", bytes(extra_digest))
    return digest.digest()


# -- private helpers -------------------------------------------------------------


def _option_set(options, field):
    value = getattr(options, field)
    if field == "pch":
        return bool(value)
    if isinstance(value, (list, tuple)):
        return len(value) > 0
    return value is not None
