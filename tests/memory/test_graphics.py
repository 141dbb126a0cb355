# SPDX-License-Identifier: Apache-2.0
"""OpenGL interop: GraphicsResource.

The CPU part checks flags and construction.  The GPU part needs an OpenGL
context: the test (only the test) creates a headless one through EGL with
the NVIDIA driver's ``libEGL.so.1`` and ``libOpenGL.so.0``, loaded with
ctypes, and skips with the reason where that is not possible.  A GL buffer
is written through CUDA and read back through GL (``glGetBufferSubData``),
and written through GL and read back through CUDA.  Without a current GL
context, registration fails with a CUDAError.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

from cuda_core import Buffer, CUDAError, GraphicsResource
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._graphics import _parse_register_flags

# EGL / GL constants (Khronos registry values).
EGL_NONE = 0x3038
EGL_SURFACE_TYPE = 0x3033
EGL_PBUFFER_BIT = 0x0001
EGL_RENDERABLE_TYPE = 0x3040
EGL_OPENGL_BIT = 0x0008
EGL_WIDTH = 0x3057
EGL_HEIGHT = 0x3056
EGL_OPENGL_API = 0x30A2
EGL_PLATFORM_DEVICE_EXT = 0x313F
EGL_CUDA_DEVICE_NV = 0x323A
GL_ARRAY_BUFFER = 0x8892
GL_DYNAMIC_DRAW = 0x88E8
GL_TEXTURE_2D = 0x0DE1
GL_RGBA8 = 0x8058
GL_RGBA = 0x1908
GL_UNSIGNED_BYTE = 0x1401


def test_register_flags():
    assert _parse_register_flags(None) == 0
    assert _parse_register_flags("none") == 0
    assert _parse_register_flags("read_only") == 1
    assert _parse_register_flags("write_discard") == 2
    assert _parse_register_flags(("surface_load_store", "read_only")) == 5
    assert _parse_register_flags(["texture_gather"]) == 8
    with pytest.raises(ValueError, match="Unknown register flag 'bogus'"):
        _parse_register_flags("bogus")
    with pytest.raises(ValueError, match="Unknown register flag"):
        _parse_register_flags(("read_only", 3))


def test_not_constructible_and_argument_types():
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        GraphicsResource()
    with pytest.raises(TypeError, match="gl_buffer must be an int"):
        GraphicsResource.from_gl_buffer("1")
    with pytest.raises(ValueError, match="gl_buffer must be in"):
        GraphicsResource.from_gl_buffer(-1)
    with pytest.raises(TypeError, match="target must be an int"):
        GraphicsResource.from_gl_image(1, None)
    with pytest.raises(ValueError, match="Unknown register flag"):
        GraphicsResource.from_gl_buffer(1, flags="bogus")


# --------------------------------------------------------------------------
# GPU, with a headless EGL OpenGL context
# --------------------------------------------------------------------------
class _GL:
    """A headless OpenGL context on the CUDA device, made current on this thread."""

    def __init__(self, device_id):
        egl_path = ctypes.util.find_library("EGL") or "libEGL.so.1"
        try:
            self.egl = egl = ctypes.CDLL("libEGL.so.1")
        except OSError:
            try:
                self.egl = egl = ctypes.CDLL(egl_path)
            except OSError as exc:
                pytest.skip(f"no EGL library: {exc}")
        try:
            self.gl = ctypes.CDLL("libOpenGL.so.0")
        except OSError as exc:
            pytest.skip(f"no libOpenGL.so.0 (GLVND): {exc}")
        vp = ctypes.c_void_p
        egl.eglGetProcAddress.restype = vp
        egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]

        def ext(name, restype, *argtypes):
            addr = egl.eglGetProcAddress(name.encode())
            if not addr:
                pytest.skip(f"EGL lacks {name}")
            return ctypes.CFUNCTYPE(restype, *argtypes)(addr)

        query_devices = ext(
            "eglQueryDevicesEXT", ctypes.c_uint, ctypes.c_int, ctypes.POINTER(vp),
            ctypes.POINTER(ctypes.c_int),
        )  # fmt: skip
        query_attrib = ext(
            "eglQueryDeviceAttribEXT", ctypes.c_uint, vp, ctypes.c_int,
            ctypes.POINTER(ctypes.c_ssize_t),
        )  # fmt: skip
        platform_display = ext(
            "eglGetPlatformDisplayEXT", vp, ctypes.c_uint, vp, ctypes.POINTER(ctypes.c_int)
        )
        devices = (vp * 16)()
        count = ctypes.c_int(0)
        if not query_devices(16, devices, ctypes.byref(count)) or count.value == 0:
            pytest.skip("EGL reports no devices")
        chosen = devices[0]
        for i in range(count.value):
            cuda_id = ctypes.c_ssize_t(-1)
            if query_attrib(devices[i], EGL_CUDA_DEVICE_NV, ctypes.byref(cuda_id)):
                if cuda_id.value == device_id:
                    chosen = devices[i]
                    break
        egl.eglInitialize.argtypes = [vp, vp, vp]
        egl.eglChooseConfig.argtypes = [
            vp, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(vp), ctypes.c_int,
            ctypes.POINTER(ctypes.c_int),
        ]  # fmt: skip
        egl.eglCreatePbufferSurface.restype = vp
        egl.eglCreatePbufferSurface.argtypes = [vp, vp, ctypes.POINTER(ctypes.c_int)]
        egl.eglCreateContext.restype = vp
        egl.eglCreateContext.argtypes = [vp, vp, vp, ctypes.POINTER(ctypes.c_int)]
        egl.eglMakeCurrent.argtypes = [vp, vp, vp, vp]
        egl.eglDestroyContext.argtypes = [vp, vp]
        egl.eglDestroySurface.argtypes = [vp, vp]
        egl.eglTerminate.argtypes = [vp]
        self.dpy = platform_display(EGL_PLATFORM_DEVICE_EXT, chosen, None)
        if not self.dpy or not egl.eglInitialize(self.dpy, None, None):
            pytest.skip("could not initialize an EGL display on the device")
        attrs = (ctypes.c_int * 5)(
            EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE
        )
        config = vp()
        n = ctypes.c_int(0)
        if not egl.eglChooseConfig(self.dpy, attrs, ctypes.byref(config), 1, ctypes.byref(n)):
            pytest.skip("no EGL config for a desktop OpenGL pbuffer")
        if n.value < 1:
            pytest.skip("no EGL config for a desktop OpenGL pbuffer")
        size = (ctypes.c_int * 5)(EGL_WIDTH, 16, EGL_HEIGHT, 16, EGL_NONE)
        self.surface = egl.eglCreatePbufferSurface(self.dpy, config, size)
        if not egl.eglBindAPI(EGL_OPENGL_API):
            pytest.skip("EGL cannot bind the OpenGL API")
        self.ctx = egl.eglCreateContext(self.dpy, config, None, None)
        if not self.ctx or not egl.eglMakeCurrent(self.dpy, self.surface, self.surface, self.ctx):
            pytest.skip("could not make an EGL OpenGL context current")
        gl = self.gl
        gl.glGenBuffers.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]
        gl.glBindBuffer.argtypes = [ctypes.c_uint, ctypes.c_uint]
        gl.glBufferData.argtypes = [ctypes.c_uint, ctypes.c_ssize_t, vp, ctypes.c_uint]
        gl.glGetBufferSubData.argtypes = [ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_ssize_t, vp]
        gl.glDeleteBuffers.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]
        gl.glGenTextures.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]
        gl.glBindTexture.argtypes = [ctypes.c_uint, ctypes.c_uint]
        ui, i = ctypes.c_uint, ctypes.c_int
        gl.glTexImage2D.argtypes = [ui, i, i, i, i, i, ui, ui, vp]
        gl.glDeleteTextures.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]

    def buffer(self, data):
        name = ctypes.c_uint(0)
        self.gl.glGenBuffers(1, ctypes.byref(name))
        self.gl.glBindBuffer(GL_ARRAY_BUFFER, name.value)
        self.gl.glBufferData(GL_ARRAY_BUFFER, len(data), data, GL_DYNAMIC_DRAW)
        self.gl.glFinish()
        return name.value

    def read(self, name, nbytes):
        out = ctypes.create_string_buffer(nbytes)
        self.gl.glBindBuffer(GL_ARRAY_BUFFER, name)
        self.gl.glGetBufferSubData(GL_ARRAY_BUFFER, 0, nbytes, out)
        return out.raw

    def delete_buffer(self, name):
        self.gl.glDeleteBuffers(1, ctypes.byref(ctypes.c_uint(name)))

    def texture(self, width, height):
        name = ctypes.c_uint(0)
        self.gl.glGenTextures(1, ctypes.byref(name))
        self.gl.glBindTexture(GL_TEXTURE_2D, name.value)
        self.gl.glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA,
                             GL_UNSIGNED_BYTE, None)  # fmt: skip
        return name.value

    def close(self):
        egl = self.egl
        egl.eglMakeCurrent(self.dpy, None, None, None)
        egl.eglDestroyContext(self.dpy, self.ctx)
        if self.surface:
            egl.eglDestroySurface(self.dpy, self.surface)
        egl.eglTerminate(self.dpy)


@pytest.fixture
def gl(device):
    ctx = _GL(device.device_id)
    yield ctx
    ctx.close()


def _register(name, **kwargs):
    try:
        return GraphicsResource.from_gl_buffer(name, **kwargs)
    except CUDAError as exc:
        if "CUDA_ERROR_OPERATING_SYSTEM" in str(exc):
            pytest.skip(f"the driver refuses CUDA-OpenGL interop here: {exc}")
        raise


@pytest.mark.gpu
def test_no_current_gl_context_is_a_cuda_error(device):
    with pytest.raises(CUDAError, match="^CUDA_ERROR_"):
        GraphicsResource.from_gl_buffer(1)


@pytest.mark.gpu
def test_cuda_writes_gl_reads(device, stream, gl):
    nbytes = 4096
    name = gl.buffer(bytes(nbytes))
    try:
        res = _register(name)
        assert res.handle != 0 and res.resource_handle == res.handle
        assert not res.is_mapped and not res.is_closed
        expected = (np.arange(nbytes // 4, dtype=np.uint32) * 2654435761).astype(np.uint32)
        with res.map(stream=stream) as buf:
            assert isinstance(buf, Buffer) and buf.size >= nbytes and buf.handle != 0
            assert res.is_mapped
            check(lib.cuMemcpyHtoDAsync(buf.handle, expected.tobytes(), nbytes, stream._handle))
        assert not res.is_mapped and buf.handle == 0 and buf.size == 0
        stream.sync()
        got = np.frombuffer(gl.read(name, nbytes), dtype=np.uint32)
        np.testing.assert_array_equal(got, expected)
        res.close()
        assert res.is_closed and res.handle == 0
        res.close()  # idempotent
    finally:
        gl.delete_buffer(name)


@pytest.mark.gpu
def test_gl_writes_cuda_reads_and_states(device, stream, gl):
    data = (np.arange(1024, dtype=np.float32) * 0.5).tobytes()
    name = gl.buffer(data)
    try:
        with _register(name, flags="read_only") as res:
            buf = res.map(stream=stream)
            with pytest.raises(RuntimeError, match="already mapped"):
                res.map(stream=stream)
            out = bytearray(len(data))
            check(
                lib.cuMemcpyDtoHAsync(ffi.from_buffer(out), buf.handle, len(data), stream._handle)
            )
            stream.sync()
            assert bytes(out) == data
            res.unmap(stream=stream)
            assert buf.is_closed and not res.is_mapped
            with pytest.raises(RuntimeError, match="not mapped"):
                res.unmap()
            again = res.map(stream=stream)  # close() unmaps first
        assert again.is_closed and res.is_closed
        with pytest.raises(RuntimeError, match="has been closed"):
            res.map(stream=stream)
        with pytest.raises(RuntimeError, match="has been closed"):
            res.unmap()
        with pytest.raises(TypeError):
            GraphicsResource.map(res)  # stream is required
    finally:
        gl.delete_buffer(name)


@pytest.mark.gpu
def test_context_manager_with_stream_maps(device, stream, gl):
    name = gl.buffer(bytes(256))
    try:
        with _register(name, stream=stream) as buf:
            assert isinstance(buf, Buffer) and buf.size >= 256
        assert buf.is_closed
    finally:
        gl.delete_buffer(name)


@pytest.mark.gpu
def test_register_image(device, gl):
    tex = gl.texture(16, 16)
    try:
        res = GraphicsResource.from_gl_image(tex, GL_TEXTURE_2D, flags="surface_load_store")
    except CUDAError as exc:
        if "CUDA_ERROR_OPERATING_SYSTEM" in str(exc):
            pytest.skip(f"the driver refuses CUDA-OpenGL interop here: {exc}")
        raise
    assert res.handle != 0 and not res.is_mapped
    res.close()
    assert res.is_closed
