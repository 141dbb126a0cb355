# SPDX-License-Identifier: Apache-2.0
"""launch() and foreign stream objects, and Kernel.from_handle, as cuda.core does them."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

from cuda_core import Kernel, LaunchConfig, Program, ProgramOptions, Stream, launch
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check

DEPRECATION = (
    "Passing foreign stream objects to this function via the stream protocol is deprecated. "
    "Convert the object explicitly using Stream(obj) instead."
)
MISMATCH = (
    "The library from the provided ObjectCode does not match the library associated with "
    "this kernel."
)


class Foreign:
    """An object that publishes a stream through ``__cuda_stream__``."""

    def __init__(self, info):
        self.info = info

    def __cuda_stream__(self):
        return self.info


class FakeCode:
    """Stands for an ObjectCode (launch and Kernel only read ``_closed``)."""

    _closed = False


def _fake_kernel():
    return Kernel.from_handle(0x1230)


# ---------------------------------------------------------------- launch(): CPU


def test_launch_none_stream_is_a_type_error_naming_the_default_stream():
    with pytest.raises(TypeError) as info:
        launch(None, LaunchConfig(grid=1, block=1), _fake_kernel())
    assert str(info.value) == (
        "stream is required and must not be None; pass device.default_stream explicitly to "
        "use the default stream."
    )


@pytest.mark.parametrize("bad, name", [(0, "int"), (0x5000, "int"), ("s", "str"), (1.5, "float")])
def test_launch_non_stream_is_a_type_error(bad, name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation warning for non-protocol objects
        with pytest.raises(TypeError) as info:
            launch(bad, LaunchConfig(grid=1, block=1), _fake_kernel())
    assert str(info.value) == f"Stream or GraphBuilder expected, got {name}"


def test_launch_warns_for_protocol_objects_then_continues():
    # The stream is accepted (and warned about) before the config is checked:
    # the bad config's TypeError comes after the warning.
    with pytest.warns(DeprecationWarning) as record:
        with pytest.raises(TypeError, match="The launch config must be provided as an object"):
            launch(Foreign((0, 0x5000)), (1, 1), _fake_kernel())
    assert len(record) == 1
    assert str(record[0].message) == DEPRECATION
    assert record[0].filename == __file__  # stacklevel points at launch()'s caller


def test_launch_warns_on_every_call():
    for _ in range(3):
        with pytest.warns(DeprecationWarning, match="stream protocol is deprecated"):
            with pytest.raises(TypeError):
                launch(Foreign((0, 0x5000)), "config", _fake_kernel())


@pytest.mark.parametrize(
    "info, message",
    [
        (5, "obj.__cuda_stream__ must return a sequence with 2 elements, got <class 'int'>"),
        ((0, 1, 2), "obj.__cuda_stream__ must return a sequence with 2 elements, got 3 elements"),
        (
            (1, 0x5000),
            "The first element of the sequence returned by obj.__cuda_stream__ must be 0, got 1",
        ),
    ],
)
def test_malformed_protocol_raises_runtime_error_without_warning(info, message):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError) as exc:
            launch(Foreign(info), LaunchConfig(grid=1, block=1), _fake_kernel())
    assert str(exc.value) == message


def test_protocol_as_attribute_warns_with_upstream_text():
    class Attr:
        __cuda_stream__ = (0, 0x99)

    with pytest.warns(DeprecationWarning) as record:
        s = Stream._wrap(Attr())
    assert s.handle == 0x99
    assert str(record[0].message) == (
        "Implementing __cuda_stream__ as an attribute is deprecated; it must be implemented "
        "as a method"
    )


def test_exact_stream_takes_no_slow_path_and_never_warns():
    s = Stream.from_handle(0x5000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TypeError, match="The launch config must be provided"):
            launch(s, 42, _fake_kernel())


def test_launch_config_coercion_text_and_dicts():
    s = Stream.from_handle(0x5000)
    with pytest.raises(TypeError) as info:
        launch(s, (1, 1), _fake_kernel())
    assert str(info.value) == (
        "The launch config must be provided as an object of type LaunchConfig or as a dict "
        "with valid launch config. The provided object is '(1, 1)'."
    )
    with pytest.raises(TypeError, match="unexpected keyword argument 'blocks'"):
        launch(s, {"grid": 1, "blocks": 1}, _fake_kernel())


# ---------------------------------------------------------------- Kernel.from_handle: CPU


@pytest.mark.parametrize("bad", ["0x10", 1.0, None, b"\x01"])
def test_from_handle_rejects_non_ints(bad):
    with pytest.raises(TypeError) as info:
        Kernel.from_handle(bad)
    assert str(info.value) == f"handle must be an integer, got {type(bad).__name__}"


def test_from_handle_accepts_bool_and_zero():
    assert Kernel.from_handle(True).handle == 1
    assert Kernel.from_handle(False).handle == 0
    assert Kernel.from_handle(0).handle == 0


@pytest.mark.parametrize("bad", [-1, -(2**70), 2**64])
def test_from_handle_out_of_range_is_overflow(bad):
    with pytest.raises(OverflowError):
        Kernel.from_handle(bad)


def test_foreign_kernel_keeps_mod_alive_and_follows_its_state():
    mod = FakeCode()
    ref = weakref.ref(mod)
    k = Kernel.from_handle(0x4440, mod)
    del mod
    gc.collect()
    assert ref() is not None  # the library is unknown: mod is kept
    ref()._closed = True
    with pytest.raises(RuntimeError, match="closed"):
        k._require_open()


def test_mod_type_is_still_checked():
    with pytest.raises(TypeError, match="mod must be an ObjectCode or None"):
        Kernel.from_handle(0x4440, "not code")


# ---------------------------------------------------------------- GPU

SRC = r"""
extern "C" __global__ void put(int *out, int v) { out[threadIdx.x] = v + (int)threadIdx.x; }
"""
N = 32


def _compile(device):
    return Program(SRC, "c++", ProgramOptions(arch=f"sm_{device.arch}")).compile("cubin")


def _run(stream_like, sync_stream, kernel, device, value):
    """Launch ``put`` on ``stream_like`` and return the output as numpy."""
    buf = device.memory_resource.allocate(4 * N, stream=sync_stream)
    try:
        launch(stream_like, LaunchConfig(grid=1, block=N), kernel, buf, np.int32(value))
        out = np.zeros(N, dtype=np.int32)
        check(lib.cuMemcpyDtoHAsync(ffi.from_buffer(out), buf.handle, 4 * N, sync_stream._handle))
        sync_stream.sync()
        return out
    finally:
        buf.close(sync_stream)


@pytest.mark.gpu
def test_launch_on_foreign_stream_warns_and_runs(device, stream):
    code = _compile(device)
    try:
        k = code.get_kernel("put")
        foreign = Foreign(stream.__cuda_stream__())
        for value in (7, 100):
            with pytest.warns(DeprecationWarning, match="stream protocol is deprecated"):
                out = _run(foreign, stream, k, device, value)
            np.testing.assert_array_equal(out, value + np.arange(N, dtype=np.int32))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the explicit conversion does not warn
            out = _run(Stream.from_handle(foreign.__cuda_stream__()[1]), stream, k, device, 3)
        np.testing.assert_array_equal(out, 3 + np.arange(N, dtype=np.int32))
    finally:
        code.close()


@pytest.mark.gpu
def test_from_handle_of_own_kernel_keeps_its_library(device, stream):
    code = _compile(device)
    k = code.get_kernel("put")
    h = int(k.handle)
    ref = weakref.ref(code)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k2 = Kernel.from_handle(h)  # library known from cuda_core's own get_kernel
    assert k2 == k
    del code, k
    gc.collect()
    assert ref() is not None  # the new kernel keeps the library's ObjectCode alive
    out = _run(stream, stream, k2, device, 11)
    np.testing.assert_array_equal(out, 11 + np.arange(N, dtype=np.int32))
    ref().close()


@pytest.mark.gpu
def test_from_handle_with_unrelated_loaded_mod_warns_and_ignores_it(device, stream):
    code = _compile(device)
    other = _compile(device)
    try:
        k = code.get_kernel("put")
        other.get_kernel("put")  # loads `other`: its library differs from the kernel's
        other_ref = weakref.ref(other)
        with pytest.warns(UserWarning) as record:
            k2 = Kernel.from_handle(int(k.handle), other)
        assert [str(r.message) for r in record] == [MISMATCH]
        assert record[0].filename == __file__
        assert record[0].category is UserWarning
        other.close()  # closing the unrelated mod does not close the kernel
        out = _run(stream, stream, k2, device, 5)
        np.testing.assert_array_equal(out, 5 + np.arange(N, dtype=np.int32))
        del other
        gc.collect()
        assert other_ref() is None  # and the kernel does not keep it alive
    finally:
        code.close()


@pytest.mark.gpu
def test_from_handle_with_own_or_lazy_mod_does_not_warn(device):
    code = _compile(device)
    lazy = _compile(device)  # never loaded
    try:
        k = code.get_kernel("put")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert Kernel.from_handle(int(k.handle), code) == k
            assert Kernel.from_handle(int(k.handle), lazy) == k
    finally:
        code.close()
        lazy.close()


@pytest.mark.gpu
def test_from_handle_after_owner_closed_treats_library_as_unknown(device):
    code = _compile(device)
    other = _compile(device)
    h = int(code.get_kernel("put").handle)
    other.get_kernel("put")
    code.close()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # unknown library: no mismatch warning
            k = Kernel.from_handle(h, other)
        other.close()
        with pytest.raises(RuntimeError, match="closed"):
            k._require_open()  # tied to the mod it was given
    finally:
        other.close()
