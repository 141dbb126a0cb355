# SPDX-License-Identifier: Apache-2.0
"""Call-and-judge helpers shared by the table-driven and the property-based
bad-input tests (see badinput_spec.py for the rules they apply)."""

from __future__ import annotations

from _scripts import badinput_args as args_spec
from _scripts import badinput_spec as spec

from cuda_core import Buffer, Device, LibraryNotFoundError, Stream, launch

__all__ = [
    "FakeResource",
    "Mem",
    "check_fill",
    "check_from_handle",
    "check_launch",
    "open_mem",
    "run_valid",
]


class FakeResource:
    """A stand-in memory resource that frees nothing (for valid ``mr`` arguments)."""

    def __new__(cls):
        from _helpers import HostOnlyResource

        class Fake(HostOnlyResource):
            def allocate(self, size, *, stream=None):
                raise NotImplementedError

            def deallocate(self, ptr, size, *, stream=None):
                pass

        return Fake()


def check_from_handle(ptr, size, mr=None, owner=None, stream=None):
    """Call Buffer.from_handle and judge it; return a problem or None."""
    verdict = args_spec.from_handle_verdict(ptr, size, mr, owner, stream)
    # A Stream is named by its handle: its repr would ask the driver for the
    # context of what may be a made-up handle.
    if isinstance(stream, Stream):
        shown = f"Stream.from_handle({stream.handle:#x})"
    else:
        shown = repr(stream)
    call = f"Buffer.from_handle({ptr!r}, {size!r}, mr={mr!r}, owner={owner!r}, stream={shown})"
    try:
        buf = Buffer.from_handle(ptr, size, mr=mr, owner=owner, stream=stream)
    except (TypeError, ValueError) as exc:
        if verdict == spec.VALID:
            return f"{call} is valid but raised {exc!r}"
        if not str(exc):
            return f"{call} raised {type(exc).__name__} without a message"
        return None
    except Exception as exc:  # noqa: BLE001
        return f"{call} raised {type(exc).__name__}: {exc}"
    try:
        if verdict == spec.INVALID:
            return f"{call} was silently accepted"
        expected = 0 if ptr is None else None
        if expected is not None and buf.handle != expected:
            return f"{call}: handle {buf.handle}"
        if buf.size != size.__index__():
            return f"{call}: size {buf.size}"
        return None
    finally:
        buf.close()


class Mem:
    """Buffers and a stream for the argument tests."""

    def __init__(self, device=None):
        self.real = device is not None
        if self.real:
            self.stream = device.create_stream()
            self.buf = device.allocate(64, stream=self.stream)
            self.other = device.allocate(64, stream=self.stream)
            self.small = device.allocate(32, stream=self.stream)
            self.odd = device.allocate(3, stream=self.stream)
        else:
            self.stream = Stream.from_handle(0x1000)
            self.buf = Buffer.from_handle(0x10000, 64)
            self.other = Buffer.from_handle(0x20000, 64)
            self.small = Buffer.from_handle(0x30000, 32)
            self.odd = Buffer.from_handle(0x40000, 3)

    def close(self):
        for b in (self.buf, self.other, self.small, self.odd):
            b.close()
        if self.real:
            self.stream.sync()
            self.stream.close()


def open_mem(on_gpu):
    """A Mem on device 0 (made current) when ``on_gpu``, else over fake addresses."""
    if not on_gpu:
        return Mem()
    dev = Device(0)
    dev.set_current()
    return Mem(dev)


def run_valid(m, fn):
    """Run a call that must be accepted: on the GPU it works, without one it
    fails only for the missing driver."""
    if m.real:
        fn()
        return None
    try:
        fn()
    except LibraryNotFoundError:
        return None
    return "no driver, yet the call succeeded"


def check_fill(m, buf, value):
    verdict = args_spec.fill_verdict(value, buf.size)
    call = f"fill({value!r}) on {buf.size} bytes"
    return _judge(call, verdict, lambda: run_valid(m, lambda: buf.fill(value, stream=m.stream)))


def check_launch(stream, cfg, kernel, args, count_checked):
    verdict = args_spec.launch_verdict(args, count_checked)
    call = f"launch(sink, *{args!r})"
    return _judge(call, verdict, lambda: launch(stream, cfg, kernel, *args))


def _judge(call, verdict, run):
    """Judge ``run()`` against ``verdict``; return a problem (``run()``'s own included) or None.

    A refusal must be a TypeError or ValueError with a message, and only of
    arguments that are not valid; an acceptance only of ones that are not
    invalid.
    """
    try:
        problem = run()
    except (TypeError, ValueError) as exc:
        if verdict == spec.VALID:
            return f"{call} is valid but raised {exc!r}"
        return None if str(exc) else f"{call}: empty message"
    except Exception as exc:  # noqa: BLE001
        return f"{call} raised {type(exc).__name__}: {exc}"
    if verdict == spec.INVALID:
        return f"{call} was silently accepted"
    return problem
