# SPDX-License-Identifier: Apache-2.0
"""Compiled device code: :class:`ObjectCode`.

An :class:`ObjectCode` holds a compiled image (cubin, PTX, LTO-IR, fatbin,
object or library), either in memory or as a path to a file.  It is loaded
into the CUDA driver lazily, as a context-independent ``CUlibrary``, the first
time :meth:`ObjectCode.get_kernel` or :attr:`ObjectCode.handle` needs it.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, driver_error, warn_cuda
from cuda_core._kernel import Kernel
from cuda_core._lifetime import Closeable
from cuda_core._loader import init_driver

__all__ = ["ObjectCode"]

#: Every code type an :class:`ObjectCode` may hold.
_CODE_TYPES = ("cubin", "ptx", "ltoir", "fatbin", "object", "library")
#: Code types the driver can load as a library (and so hand out kernels from).
_LOADABLE_CODE_TYPES = ("cubin", "ptx", "fatbin")


class ObjectCode(Closeable):
    """Compiled device code, loaded into the driver on first use.

    There is no public constructor: create one with :meth:`from_cubin`,
    :meth:`from_ptx`, :meth:`from_ltoir`, :meth:`from_fatbin`,
    :meth:`from_object` or :meth:`from_library`, or get one from
    :meth:`~cuda_core.Program.compile` / :meth:`~cuda_core.Linker.link`.

    Loading is lazy: the first :meth:`get_kernel` or :attr:`handle` loads the
    code with ``cuLibraryLoadData`` (or ``cuLibraryLoadFromFile`` for a path);
    :meth:`close` unloads it (``cuLibraryUnload``).  Kernels obtained from this
    object keep it alive.

    Notes
    -----
    Equality and hashing are by content (code type, code, name and symbol
    mapping), so they never load anything and an unpickled copy equals its
    original.  NVIDIA's ``cuda.core`` compares the loaded library handles
    instead, which requires a GPU.
    """

    _module: bytes | bytearray | str
    _code_type: str
    _name: str
    _sym_map: dict[Any, str]  # name (or name expression, str or bytes) -> symbol
    _lock: threading.Lock
    _box: Any  # CUlibrary * once loaded, else None
    _image: Any  # keeps the loaded image alive while the library lives
    _finalizer: weakref.finalize[..., Any] | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "ObjectCode objects cannot be instantiated directly. Please use the "
            "ObjectCode.from_* factories (from_cubin, from_ptx, ...) or Program.compile()."
        )

    @classmethod
    def _init(
        cls,
        module: object,
        code_type: str,
        *,
        name: str | None = "",
        symbol_mapping: dict[str, str] | None = None,
    ) -> ObjectCode:
        """Create an ObjectCode without validation of the caller's intent.

        ``module`` is bytes/bytearray (the image) or a str / path-like (a file).
        """
        code_type = str(code_type).lower()
        if code_type not in _CODE_TYPES:
            raise ValueError(
                f"code_type={code_type!r} is not supported; expected one of {_CODE_TYPES}"
            )
        if isinstance(module, (bytes, bytearray)):
            pass
        elif isinstance(module, memoryview):
            module = module.tobytes()
        elif isinstance(module, str):
            pass
        elif isinstance(module, os.PathLike):
            module = os.fsdecode(os.fspath(module))
        else:
            raise TypeError(
                f"module must be bytes, bytearray (the {code_type} image) or a str / "
                f"os.PathLike file path, not {type(module).__name__}"
            )
        if name is None:
            name = ""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        if symbol_mapping is None:
            symbol_mapping = {}
        elif not isinstance(symbol_mapping, dict):
            raise TypeError(
                f"symbol_mapping must be a dict or None, not {type(symbol_mapping).__name__}"
            )
        self = cls.__new__(cls)
        self._module = module
        self._code_type = code_type
        self._name = name
        self._sym_map = dict(symbol_mapping)
        self._lock = threading.Lock()
        self._box = None  # CUlibrary * once loaded
        self._image = None  # keeps the loaded image alive while the library lives
        self._finalizer = None
        self._closed = False
        return self

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _object_code_from_reduce, (
            self._module,
            self._code_type,
            self._name,
            dict(self._sym_map),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectCode):
            return NotImplemented
        return (
            self._code_type == other._code_type
            and _comparable(self._module) == _comparable(other._module)
            and self._name == other._name
            and self._sym_map == other._sym_map
        )

    def __hash__(self) -> int:
        return hash((self._code_type, _comparable(self._module)))

    def __repr__(self) -> str:
        # As cuda.core, which loads the code to show its library handle; where
        # it cannot be loaded (closed, no driver, a code type the driver does
        # not load) the handle reads 0x0 instead of the repr raising.
        handle = 0
        if not self._closed:
            try:
                handle = as_int_handle(self._library())
            except Exception:
                handle = 0
        return f"<ObjectCode handle={handle:#x} code_type='{self._code_type}'>"

    # -- factories -------------------------------------------------------

    @staticmethod
    def from_cubin(
        module: bytes | bytearray | str | os.PathLike[str],
        *,
        name: str = "",
        symbol_mapping: dict[str, str] | None = None,
    ) -> ObjectCode:
        """Create an :class:`ObjectCode` from a cubin.

        Parameters
        ----------
        module : bytes, bytearray, str or os.PathLike
            The cubin image in memory, or the path of a cubin file.
        name : str, optional
            A human-readable name for this code object.
        symbol_mapping : dict, optional
            Maps names (e.g. NVRTC name expressions) to the mangled symbols that
            :meth:`get_kernel` should look up instead.

        Returns
        -------
        ObjectCode
        """
        return ObjectCode._init(module, "cubin", name=name, symbol_mapping=symbol_mapping)

    @staticmethod
    def from_ptx(
        module: bytes | bytearray | str | os.PathLike[str],
        *,
        name: str = "",
        symbol_mapping: dict[str, str] | None = None,
    ) -> ObjectCode:
        """Create an :class:`ObjectCode` from PTX.

        ``module``: the PTX text as bytes, or the path of a PTX file (a ``str`` is always a path).
        The other parameters and the result are those of :meth:`from_cubin`.
        """
        return ObjectCode._init(module, "ptx", name=name, symbol_mapping=symbol_mapping)

    @staticmethod
    def from_ltoir(
        module: bytes | bytearray | str | os.PathLike[str],
        *,
        name: str = "",
        symbol_mapping: dict[str, str] | None = None,
    ) -> ObjectCode:
        """Create an :class:`ObjectCode` from LTO-IR (an input for :class:`~cuda_core.Linker`).

        ``module``: the LTO-IR in memory, or the path of an LTO-IR file.
        The other parameters and the result are those of :meth:`from_cubin`.
        """
        return ObjectCode._init(module, "ltoir", name=name, symbol_mapping=symbol_mapping)

    @staticmethod
    def from_fatbin(
        module: bytes | bytearray | str | os.PathLike[str],
        *,
        name: str = "",
        symbol_mapping: dict[str, str] | None = None,
    ) -> ObjectCode:
        """Create an :class:`ObjectCode` from a fat binary.

        ``module``: the fatbin in memory, or the path of a fatbin file.
        The other parameters and the result are those of :meth:`from_cubin`.
        """
        return ObjectCode._init(module, "fatbin", name=name, symbol_mapping=symbol_mapping)

    @staticmethod
    def from_object(
        module: bytes | bytearray | str | os.PathLike[str],
        *,
        name: str = "",
        symbol_mapping: dict[str, str] | None = None,
    ) -> ObjectCode:
        """Create an :class:`ObjectCode` from a relocatable object (an input for linking).

        ``module``: the object in memory, or the path of an object file.
        The other parameters and the result are those of :meth:`from_cubin`.
        """
        return ObjectCode._init(module, "object", name=name, symbol_mapping=symbol_mapping)

    @staticmethod
    def from_library(
        module: bytes | bytearray | str | os.PathLike[str],
        *,
        name: str = "",
        symbol_mapping: dict[str, str] | None = None,
    ) -> ObjectCode:
        """Create an :class:`ObjectCode` from a device library archive (an input for linking).

        ``module``: the archive in memory, or the path of a library file.
        The other parameters and the result are those of :meth:`from_cubin`.
        """
        return ObjectCode._init(module, "library", name=name, symbol_mapping=symbol_mapping)

    # -- methods -----------------------------------------------------------

    def get_kernel(self, name: str | bytes) -> Kernel:
        """Return the kernel called ``name`` from this code.

        ``name`` is first looked up in :attr:`symbol_mapping` (so an NVRTC name
        expression such as ``"add<float>"`` finds its mangled symbol), and is
        otherwise used as the symbol name itself.

        Parameters
        ----------
        name : str or bytes
            The kernel's name, name expression or mangled symbol.

        Returns
        -------
        Kernel

        Raises
        ------
        RuntimeError
            If this code type cannot hold loadable kernels, or after :meth:`close`.
        CUDAError
            If loading fails or no kernel of that name exists.
        """
        if self._code_type not in _LOADABLE_CODE_TYPES:
            raise RuntimeError(
                f'Unsupported code type "{self._code_type}" '
                f"(supported_code_types={_LOADABLE_CODE_TYPES}): link it with Linker first"
            )
        if not isinstance(name, (str, bytes)):
            raise TypeError(f"kernel name must be a str or bytes, not {type(name).__name__}")
        symbol = self._sym_map.get(name, name)
        if isinstance(symbol, str):
            symbol = symbol.encode()
        c_lib = self._library()
        out = ffi.new("CUkernel *")
        check(lib.cuLibraryGetKernel(out, c_lib, symbol), f"kernel {name!r}")
        return Kernel._from_object_code(out[0], self)

    def close(self) -> None:
        """Unload the library (``cuLibraryUnload``), if it was loaded.

        Idempotent.  Kernels obtained from this object must not be used
        afterwards.  The code itself (:attr:`code`) stays available.
        """
        with self._lock:
            self._closed = True
            finalizer, self._finalizer = self._finalizer, None
            box, self._box = self._box, None
            self._image = None
        if finalizer is not None and finalizer.detach() is not None:
            check(lib.cuLibraryUnload(box[0]), "cuLibraryUnload")

    def _library(self) -> Any:
        """Return the ``CUlibrary`` cdata, loading the code on first use."""
        box = self._box
        if box is not None:
            return box[0]
        with self._lock:
            if self._closed:
                raise RuntimeError("ObjectCode is closed; it cannot be used after close()")
            if self._box is None:
                self._load()
            return self._box[0]

    def _load(self) -> None:
        if self._code_type not in _LOADABLE_CODE_TYPES:
            raise RuntimeError(
                f"an ObjectCode of code_type={self._code_type!r} cannot be loaded by the "
                f"driver (loadable: {_LOADABLE_CODE_TYPES}); link it with Linker first"
            )
        module = self._module
        if isinstance(module, str) and not os.path.exists(module):
            # What the driver reports, said before it is needed: a missing file
            # is the first thing to fix, even where there is no driver.
            raise driver_error(
                lib.CUDA_ERROR_FILE_NOT_FOUND, f"loading {self._code_type} file {module!r}"
            )
        init_driver()
        box = ffi.new("CUlibrary *")
        if isinstance(module, str):
            check(
                lib.cuLibraryLoadFromFile(
                    box, os.fsencode(module), ffi.NULL, ffi.NULL, 0, ffi.NULL, ffi.NULL, 0
                ),
                f"loading {self._code_type} file {module!r}",
            )
            image = None
        else:
            # A char[] copy is NUL-terminated (PTX needs it) and stays alive as
            # long as the library does.
            image = ffi.new("char[]", bytes(module))
            context = f"loading {self._code_type} ({len(module)} bytes)"
            if self._code_type == "ptx":
                context += (
                    "; PTX from a compiler newer than the driver cannot be loaded: "
                    "compile to 'cubin' for this GPU, or update the driver"
                )
            check(
                lib.cuLibraryLoadData(box, image, ffi.NULL, ffi.NULL, 0, ffi.NULL, ffi.NULL, 0),
                context,
            )
        self._image = image
        self._box = box
        self._finalizer = weakref.finalize(self, _unload_library, box, image)

    # -- properties --------------------------------------------------------

    @property
    def code(self) -> bytes | bytearray | str:
        """bytes, bytearray or str: the image, or the path of the file holding it."""
        return self._module

    @property
    def name(self) -> str:
        """str: a human-readable name for this code object."""
        return self._name

    @property
    def code_type(self) -> str:
        """str: ``"cubin"``, ``"ptx"``, ``"ltoir"``, ``"fatbin"``, ``"object"`` or ``"library"``."""
        return self._code_type

    @property
    def symbol_mapping(self) -> dict[str, str]:
        """dict: a copy of the name to mangled-symbol mapping."""
        return dict(self._sym_map)

    @property
    def handle(self) -> int:
        """int: the address of the loaded ``CUlibrary`` (loads the code on first use)."""
        return as_int_handle(self._library())


# -- private helpers ---------------------------------------------------------


def _object_code_from_reduce(
    module: bytes | bytearray | str, code_type: str, name: str, symbol_mapping: dict[str, str]
) -> ObjectCode:
    """Rebuild a pickled :class:`ObjectCode` (it reloads lazily)."""
    return ObjectCode._init(module, code_type, name=name, symbol_mapping=symbol_mapping)


def _comparable(module: bytes | bytearray | str) -> bytes | str:
    return bytes(module) if isinstance(module, bytearray) else module


def _unload_library(box: Any, image: Any) -> None:
    """Finalizer safety net: unload a library nobody closed."""
    del image  # kept alive until here
    warn_cuda("cuLibraryUnload (ObjectCode finalizer)", lib.cuLibraryUnload(box[0]))
