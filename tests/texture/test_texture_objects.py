# SPDX-License-Identifier: Apache-2.0
"""Texture and surface object lifetimes without a GPU.

The extension's create and release calls of ``texture/_texture.py`` and
``texture/_surface.py`` are replaced by stand-ins that keep the C
contract (``cffi_src/csrc/texture.c``: the claim taken with the object,
``2 * status + last`` on release) over the real C claim counts, so that
claims, errors, the safety net and the options' descriptor cache are
checked on both interpreters.
"""

from __future__ import annotations

import gc
import threading
import warnings
from types import SimpleNamespace

import pytest

from cuda_core import CUDAError, CUDAWarning
from cuda_core._cuda_ffi import ffi, lib
from cuda_core.texture import (
    ResourceDescriptor,
    SurfaceObject,
    TextureObject,
    TextureObjectOptions,
    _surface,
    _texture,
)
from cuda_core.texture._array import _new_array
from cuda_core.texture._handle import SharedHandle, bound_close
from cuda_core.typing import ArrayFormatType


class StandIn:
    """The driver side of texture and surface objects, as the extension calls it."""

    def __init__(self):
        self.next = 0x500
        self.create_status = 0
        self.destroy_status = 0
        self.status = 0
        self.created = []  # (handle, filterMode, maxAnisotropy) per texture
        self.destroyed = []

    def _new(self, c_claims, tex=None):
        if c_claims != ffi.NULL and not lib.cc_claim_retain(c_claims):
            self.status = lib.CC_CLAIM_RELEASED
            return 0
        self.status = self.create_status
        if self.status:
            return 0
        self.next += 1
        if tex is not None:
            self.created.append((self.next, tex.filterMode, tex.maxAnisotropy))
        return self.next

    def tex_new(self, ctx, res, tex, c_claims):
        return self._new(c_claims, tex)

    def surf_new(self, ctx, res, c_claims):
        return self._new(c_claims)

    def release(self, value, c_claims):
        self.destroyed.append(value)
        last = c_claims == ffi.NULL or lib.cc_claim_drop(c_claims) == 0
        return 2 * self.destroy_status + last


@pytest.fixture
def driver(monkeypatch):
    fake = StandIn()
    for module, new in ((_texture, "_tex_new"), (_surface, "_surf_new")):
        monkeypatch.setattr(module, new, getattr(fake, new[1:]))
        monkeypatch.setattr(module, "_status", lambda: fake.status)
    # The safety net reads the module's release when it runs; the open
    # twins' close() holds its own (bound_close), so each gets one made with
    # the stand-in's.
    monkeypatch.setattr(_texture, "_tex_release", fake.release)
    monkeypatch.setattr(_surface, "_surf_release", fake.release)
    for twin, what in (
        (_texture._OpenTexture, "cuTexObjectDestroy"),
        (_surface._OpenSurface, "cuSurfObjectDestroy"),
    ):
        monkeypatch.setattr(twin, "close", bound_close(twin._plain, fake.release, what))
    return fake


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, value):
        self.calls.append(value)
        return 0


#: What the object factories read of a Device (they are its methods).
_DEVICE = SimpleNamespace(_has_inited=True, _device_id=0, _c_ctx=None)


def _array(destroy=None):
    shared = SharedHandle(0x1000, destroy, "CUDA array")
    return _new_array(shared, (8, 8), ArrayFormatType.FLOAT32, 1, True, False, 0)


def test_c_claim_counts():
    destroyed = Recorder()
    shared = SharedHandle(0x77, destroyed, "CUDA array")
    assert shared.retain() is shared and shared.claims == 2
    assert shared.release() == 0 and shared.claims == 1 and destroyed.calls == []
    assert shared.release() == 0 and shared.claims == 0 and destroyed.calls == [0x77]
    with pytest.raises(RuntimeError, match="^the CUDA array has been released$"):
        shared.retain()
    assert shared.claims == 0 and lib.cc_claim_retain(shared._c_claims) == 0


def test_texture_create_close_claims(driver):
    destroyed = Recorder()
    arr = _array(destroyed)
    res = ResourceDescriptor.from_opaque_array(arr)
    tex = _texture._create_texture_object(_DEVICE, resource=res)
    assert isinstance(tex, TextureObject) and type(tex).__name__ == "TextureObject"
    assert tex.handle == driver.next and not tex.is_closed and tex.resource is res
    assert arr._shared.claims == 2 and repr(tex) == f"TextureObject(handle=0x{tex.handle:x})"
    arr.close()
    assert destroyed.calls == []  # the texture keeps the array
    handle = tex.handle
    with tex:
        pass
    assert tex.is_closed and tex.handle == 0 and tex.resource is None
    assert tex._claim is None  # a closed object keeps nothing of the array
    assert driver.destroyed == [handle] and destroyed.calls == [0x1000]
    tex.close()  # idempotent
    assert driver.destroyed == [handle]
    with pytest.raises(RuntimeError, match="TextureObject argument is closed"):
        _ = tex._karg
    with pytest.raises(RuntimeError, match="OpaqueArray is closed"):
        _texture._create_texture_object(_DEVICE, resource=res)


def test_surface_create_close_claims(driver):
    arr = _array()
    res = ResourceDescriptor.from_opaque_array(arr)
    surf = _surface._create_surface_object(_DEVICE, resource=res)
    assert isinstance(surf, SurfaceObject) and surf._karg == surf.handle
    assert arr._shared.claims == 2
    surf.close()
    surf.close()
    assert surf.is_closed and surf.resource is None and arr._shared.claims == 1
    assert surf._claim is None
    assert len(driver.destroyed) == 1
    arr.close()


@pytest.mark.parametrize("create", ["texture", "surface"])
def test_failures_keep_the_claims_right(driver, create):
    arr = _array()
    res = ResourceDescriptor.from_opaque_array(arr)

    def make():
        if create == "texture":
            return _texture._create_texture_object(_DEVICE, resource=res)
        return _surface._create_surface_object(_DEVICE, resource=res)

    what = "cuTexObjectCreate" if create == "texture" else "cuSurfObjectCreate"
    driver.create_status = 1  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CUDAError, match=what):
        make()
    assert arr._shared.claims == 1 and driver.destroyed == []
    driver.create_status = 0
    obj = make()
    driver.destroy_status = 1
    gone = "cuTexObjectDestroy" if create == "texture" else "cuSurfObjectDestroy"
    with pytest.raises(CUDAError, match=gone):
        obj.close()
    assert obj.is_closed and arr._shared.claims == 1  # the claim dropped all the same
    obj.close()  # nothing left to release
    assert len(driver.destroyed) == 1
    # A claim count that reached 0 under a wrapper still open (a race with
    # the last release): the claim is refused and nothing is created.
    arr._shared._c_claims[0] = 0
    made = driver.next
    with pytest.raises(RuntimeError, match="^the CUDA array has been released$"):
        make()
    assert driver.next == made and arr._shared.claims == 0


def test_unclosed_objects_are_released_with_a_warning_on_failure(driver):
    arr = _array()
    res = ResourceDescriptor.from_opaque_array(arr)
    tex = _texture._create_texture_object(_DEVICE, resource=res)
    surf = _surface._create_surface_object(_DEVICE, resource=res)
    assert arr._shared.claims == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del tex
        gc.collect()
    assert arr._shared.claims == 2 and len(driver.destroyed) == 1
    driver.destroy_status = 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del surf
        gc.collect()
    assert arr._shared.claims == 1 and len(driver.destroyed) == 2
    messages = [str(w.message) for w in caught if issubclass(w.category, CUDAWarning)]
    assert any("cuSurfObjectDestroy during garbage collection" in m for m in messages)
    arr.close()


def test_closing_from_two_threads_releases_once(driver):
    arr = _array()
    res = ResourceDescriptor.from_opaque_array(arr)
    for _ in range(50):
        tex = _texture._create_texture_object(_DEVICE, resource=res)
        threads = [threading.Thread(target=tex.close) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(driver.destroyed) == 50 and arr._shared.claims == 1
    arr.close()


def test_options_changed_between_creations_are_read_again(driver):
    arr = _array()
    res = ResourceDescriptor.from_opaque_array(arr)
    opts = TextureObjectOptions(filter_mode="linear", max_anisotropy=2)
    _texture._create_texture_object(_DEVICE, resource=res, options=opts).close()
    _texture._create_texture_object(_DEVICE, resource=res, options=opts).close()
    opts.filter_mode = "point"
    tex = _texture._create_texture_object(_DEVICE, resource=res, options=opts)
    assert tex.options is opts
    tex.close()
    assert [c[1:] for c in driver.created] == [(1, 2), (1, 2), (0, 2)]
    opts.max_anisotropy = 2.0  # equal, but not an int: checked again
    with pytest.raises(TypeError, match="max_anisotropy must be an int, got float"):
        _texture._create_texture_object(_DEVICE, resource=res, options=opts)
    opts.max_anisotropy = 4
    colour = [0.0, 0.0, 0.0, 0.0]
    opts.border_color = colour
    _texture._create_texture_object(_DEVICE, resource=res, options=opts).close()
    colour.append(1.0)  # changed in place: a list is never taken as unchanged
    with pytest.raises(ValueError, match="border_color must have 4 elements, got 5"):
        _texture._create_texture_object(_DEVICE, resource=res, options=opts)
    assert arr._shared.claims == 1
    arr.close()


def test_device_factories_become_the_texture_functions():
    # The placeholders load the texture package and put its factories in
    # their place; the public face (signature, name, docstring) is unchanged.
    import inspect

    from cuda_core import Device
    from cuda_core._device_textures import TextureFactories, _load_factories

    before = {
        name: (inspect.signature(getattr(Device, name)), getattr(Device, name).__doc__)
        for name in ("create_texture_object", "create_surface_object")
    }
    assert _load_factories() is TextureFactories
    assert Device.create_texture_object is _texture._create_texture_object
    assert Device.create_surface_object is _surface._create_surface_object
    for name, (sig, doc) in before.items():
        fn = getattr(Device, name)
        assert inspect.signature(fn) == sig and fn.__doc__ == doc
        assert fn.__name__ == name and fn.__qualname__ == f"TextureFactories.{name}"
    surface_sig = "(self, *, resource: 'ResourceDescriptor') -> 'SurfaceObject'"
    assert str(before["create_surface_object"][0]) == surface_sig
