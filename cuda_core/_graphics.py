# SPDX-License-Identifier: Apache-2.0
"""OpenGL interop: :class:`GraphicsResource`, a GL buffer or image registered with CUDA.

Registration (``cuGraphicsGLRegisterBuffer``/``Image``) needs the OpenGL
context that owns the object to be current on the calling thread; cuda_core
creates no GL context itself.  :meth:`GraphicsResource.map` maps the
resource on a stream and returns a :class:`~cuda_core.Buffer` over the
mapped device memory: closing that buffer (or :meth:`GraphicsResource.unmap`)
unmaps it, ordered on a stream, and the mapped pointer is valid only until
then.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Literal, TypeVar, Union

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, in_forked_child, warn_cuda
from cuda_core._memory import Buffer, MemoryResource
from cuda_core._memory._memory_resource import _DeviceMemory
from cuda_core._stream import _as_stream

if TYPE_CHECKING:
    from cuda_core._stream import Stream
    from cuda_core.graph import GraphBuilder
    from cuda_core.typing import DevicePointerType

__all__ = ["GraphicsResource"]

_G = TypeVar("_G", bound="GraphicsResource")
#: What ``flags`` accepts: one flag name, a sequence of them, or None.
_Flags = Union[str, Sequence[str], None]

_REGISTER_FLAGS = {
    "none": lib.CU_GRAPHICS_REGISTER_FLAGS_NONE,
    "read_only": lib.CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY,
    "write_discard": lib.CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD,
    "surface_load_store": lib.CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST,
    "texture_gather": lib.CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER,
}


class GraphicsResource:
    """An OpenGL buffer or image registered for access from CUDA.

    Create one with :meth:`from_gl_buffer` or :meth:`from_gl_image` while
    the GL context owning the object is current.  :meth:`map` gives a
    :class:`~cuda_core.Buffer` over the GL memory; closing it unmaps.

    Used in a ``with`` statement the resource is closed (unregistered) on
    exit; if it was created with ``stream=`` it is also mapped on entry and
    the ``with`` target is the mapped Buffer.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_handle", "_h", "_closed", "_mapped", "_cm_stream", "__weakref__")
    _handle: Any
    _h: int
    _closed: bool
    _mapped: Buffer | None
    _cm_stream: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "GraphicsResource objects cannot be instantiated directly. "
            "Use GraphicsResource.from_gl_buffer() or GraphicsResource.from_gl_image()."
        )

    @classmethod
    def _register(
        cls: type[_G], register: Callable[[Any, int], int], flags: _Flags, cm_stream: Any
    ) -> _G:
        c_flags = _parse_register_flags(flags)
        out = ffi.new("CUgraphicsResource *")
        check(register(out, c_flags))
        self = object.__new__(cls)
        self._handle = out[0]
        self._h = as_int_handle(out[0])
        self._closed = False
        self._mapped = None
        self._cm_stream = cm_stream
        return self

    def __del__(self) -> None:
        # Safety net only: close() (or ``with``) is the lifetime tool.
        try:
            closed = self._closed
        except AttributeError:
            return
        if not closed and not in_forked_child():
            self._closed = True
            status = lib.cuGraphicsUnregisterResource(self._handle)
            if status:
                warn_cuda("cuGraphicsUnregisterResource (GraphicsResource finalizer)", status)

    def __enter__(self) -> Any:
        if self._cm_stream is None:
            return self
        return self.map(stream=self._cm_stream)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        self.close()
        return False

    def __repr__(self) -> str:
        state = " mapped" if self.is_mapped else ""
        state += " closed" if self._closed else ""
        return f"<GraphicsResource handle={self.handle:#x}{state}>"

    @classmethod
    def from_gl_buffer(
        cls: type[_G], gl_buffer: int, *, flags: _Flags = None, stream: Stream | None = None
    ) -> _G:
        """Register the OpenGL buffer object ``gl_buffer`` for CUDA access.

        Parameters
        ----------
        gl_buffer : int
            The GL buffer name (``GLuint``).
        flags : str or sequence of str, optional
            Intended use: ``"none"``, ``"read_only"``, ``"write_discard"``,
            ``"surface_load_store"``, ``"texture_gather"``; a sequence
            combines them.  None means no flags.
        stream : Stream, optional
            Keyword-only: when given, ``with`` maps the resource on this
            stream on entry and yields the mapped Buffer.

        Returns
        -------
        GraphicsResource

        Raises
        ------
        ValueError
            For an unknown flag.
        CUDAError
            If registration fails (e.g. no current GL context, an invalid
            buffer name, or an operating system error).
        """
        c_buffer = _as_gl_name(gl_buffer, "gl_buffer")
        return cls._register(
            lambda out, c_flags: lib.cuGraphicsGLRegisterBuffer(out, c_buffer, c_flags),
            flags,
            stream,
        )

    @classmethod
    def from_gl_image(cls: type[_G], image: int, target: int, *, flags: _Flags = None) -> _G:
        """Register an OpenGL texture or renderbuffer for CUDA access.

        Parameters
        ----------
        image : int
            The GL texture or renderbuffer name (``GLuint``).
        target : int
            Its GL target, e.g. ``GL_TEXTURE_2D`` (0x0DE1) or
            ``GL_RENDERBUFFER``.
        flags : str or sequence of str, optional
            As for :meth:`from_gl_buffer`.

        Returns
        -------
        GraphicsResource
            The registration; :meth:`map` it to reach the image's storage.

        Raises
        ------
        ValueError
            For an unknown flag (as :meth:`from_gl_buffer`).
        CUDAError
            If registration fails (e.g. ``target`` does not match the GL
            object, or no GL context is current).
        """
        c_image = _as_gl_name(image, "image")
        c_target = _as_gl_name(target, "target")
        return cls._register(
            lambda out, c_flags: lib.cuGraphicsGLRegisterImage(out, c_image, c_target, c_flags),
            flags,
            None,
        )

    def map(self, *, stream: Stream) -> Buffer:
        """Map the resource for CUDA access, ordered on ``stream``.

        Parameters
        ----------
        stream : Stream
            Keyword-only and required (pass ``device.default_stream`` for the
            default stream).

        Returns
        -------
        Buffer
            Over the mapped memory.  Closing it (also by ``with``) unmaps
            the resource on the mapping stream, or on the stream given to
            :meth:`Buffer.close <cuda_core.Buffer.close>`.

        Raises
        ------
        RuntimeError
            If the resource is closed or already mapped.
        CUDAError
            If mapping fails (for an image, which has no linear pointer:
            ``CUDA_ERROR_NOT_MAPPED_AS_POINTER``).
        """
        self._check_open()
        if self._mapped_buffer() is not None:
            raise RuntimeError("GraphicsResource is already mapped")
        s = _as_stream(stream)
        res = ffi.new("CUgraphicsResource *", self._handle)
        check(lib.cuGraphicsMapResources(1, res, s._handle), "cuGraphicsMapResources")
        ptr = ffi.new("CUdeviceptr *")
        size = ffi.new("size_t *")
        status = lib.cuGraphicsResourceGetMappedPointer_v2(ptr, size, self._handle)
        if status:
            lib.cuGraphicsUnmapResources(1, res, s._handle)
            check(status, "cuGraphicsResourceGetMappedPointer")
        buf = Buffer.from_handle(int(ptr[0]), int(size[0]), mr=_MappedGraphics(self), stream=s)
        self._mapped = buf
        return buf

    def unmap(self, *, stream: Stream | None = None) -> None:
        """Unmap the resource (closes the Buffer :meth:`map` returned).

        Parameters
        ----------
        stream : Stream, optional
            Keyword-only: the stream that orders the unmap; by default the
            mapping stream.

        Raises
        ------
        RuntimeError
            If the resource is closed or not mapped.
        """
        self._check_open()
        buf = self._mapped_buffer()
        if buf is None:
            raise RuntimeError("GraphicsResource is not mapped")
        buf.close(stream=stream)
        self._mapped = None

    def close(self, stream: Stream | None = None) -> None:
        """Unregister the resource, unmapping it first if it is mapped.

        Idempotent.  Afterwards :attr:`handle` is 0.

        Parameters
        ----------
        stream : Stream, optional
            The stream that orders the unmap, if there is one to do.
        """
        if self._closed:
            return
        buf = self._mapped_buffer()
        if buf is not None:
            buf.close(stream=stream)
            self._mapped = None
        self._closed = True
        self._cm_stream = None
        status = lib.cuGraphicsUnregisterResource(self._handle)
        if status:
            check(status, "cuGraphicsUnregisterResource")

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("GraphicsResource has been closed")

    def _mapped_buffer(self) -> Buffer | None:
        buf = self._mapped
        if buf is not None and buf.is_closed:
            self._mapped = buf = None
        return buf

    @property
    def is_mapped(self) -> bool:
        """bool: Whether the resource is mapped (its Buffer is open)."""
        return self._mapped_buffer() is not None

    @property
    def handle(self) -> int:
        """int: The ``CUgraphicsResource`` address (0 once closed)."""
        return 0 if self._closed else self._h

    @property
    def resource_handle(self) -> int:
        """int: The same as :attr:`handle`."""
        return self.handle

    @property
    def is_closed(self) -> bool:
        """bool: Whether :meth:`close` has been called."""
        return self._closed


class _MappedGraphics(_DeviceMemory, MemoryResource):
    """The "memory resource" of a mapped GraphicsResource's Buffer: freeing it unmaps."""

    def __init__(self, resource: GraphicsResource) -> None:
        self._resource = resource  # keeps the registration alive while mapped
        self._device_id: int | None = None

    def allocate(self, size: int, *, stream: Stream | GraphBuilder) -> Buffer:
        raise RuntimeError("a mapped graphics resource cannot allocate memory")

    def deallocate(
        self, ptr: DevicePointerType, size: int, *, stream: Stream | GraphBuilder | None
    ) -> None:
        resource = self._resource
        if resource._closed:
            return
        res = ffi.new("CUgraphicsResource *", resource._handle)
        c_stream = ffi.NULL if stream is None else _as_stream(stream)._handle
        check(lib.cuGraphicsUnmapResources(1, res, c_stream), "cuGraphicsUnmapResources")

    @property
    def device_id(self) -> int:
        if self._device_id is None:
            out = ffi.new("CUdevice *")
            check(lib.cuCtxGetDevice(out))
            self._device_id = int(out[0])
        return self._device_id


def _parse_register_flags(flags: _Flags) -> int:
    """Return the ``CU_GRAPHICS_REGISTER_FLAGS_*`` bits for ``flags`` (a str or a sequence)."""
    if flags is None:
        return 0
    if isinstance(flags, str):
        flags = (flags,)
    result = 0
    for flag in flags:
        try:
            result |= _REGISTER_FLAGS[flag]
        except (KeyError, TypeError):
            raise ValueError(
                f"Unknown register flag {flag!r}. Valid flags: {', '.join(sorted(_REGISTER_FLAGS))}"
            ) from None
    return result


def _as_gl_name(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not 0 <= value < 2**32:
        raise ValueError(f"{what} must be in [0, 2**32), got {value}")
    return value
