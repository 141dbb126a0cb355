# SPDX-License-Identifier: Apache-2.0
"""Texture objects and TMA tensor maps: the host-side cost of making them.

Cases, in microseconds per operation:

* ``texture object create+destroy``: ``Device.create_texture_object`` over
  a 256 x 256 float32 CUDA array (linear filtering, clamped), then
  ``close()``;
* ``surface object create+destroy``: the same for a surface;
* ``tensor map encode``: ``StridedMemoryView.as_tensor_map`` of a
  1024 x 1024 float32 view with a 32 x 32 box (compute capability 9.0+).

Each case is timed through cuda_core and, where importable in this
interpreter (and new enough to have ``cuda.core.texture``), NVIDIA's
``cuda.core`` in the same process, the two taking turns; ratios
ours/theirs are printed.  Without a GPU the script says so and exits 0.

Run: ``python benchmarks/bench_texture.py``
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:  # run from a source checkout without installing: use the tree above
    import cuda_core  # noqa: F401
except ImportError:
    sys.path.insert(1, os.path.dirname(_HERE))

from _harness import (  # noqa: E402
    IMPL,
    gpu_reason,
    interleaved,
    nvidia_core,
    optional_import,
    report,
    sampler,
)

BENCH = "texture"


def _setup(core, texture, typing):
    """Return {case: callable} and what must stay alive, for module ``core``."""
    import numpy as np

    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    array = dev.create_opaque_array(
        texture.OpaqueArrayOptions(
            shape=(256, 256), format="float32", num_channels=1, is_surface_load_store=True
        )
    )
    resource = texture.ResourceDescriptor.from_opaque_array(array)
    options = texture.TextureObjectOptions(
        address_mode=typing.AddressModeType.CLAMP, filter_mode=typing.FilterModeType.LINEAR
    )

    def tex_cycle():
        dev.create_texture_object(resource=resource, options=options).close()

    def surf_cycle():
        dev.create_surface_object(resource=resource).close()

    cases = {
        "texture object create+destroy": tex_cycle,
        "surface object create+destroy": surf_cycle,
    }
    keep = [array, resource, stream]
    if dev.compute_capability[0] >= 9:
        buf = dev.allocate(1024 * 1024 * 4, stream=stream)
        stream.sync()
        f32 = np.dtype(np.float32)  # cuda.core's from_buffer wants a numpy.dtype instance
        view = core.utils.StridedMemoryView.from_buffer(buf, (1024, 1024), dtype=f32)

        def encode():
            view.as_tensor_map(box_dim=(32, 32))

        cases["tensor map encode"] = encode
        keep += [buf, view]
    return cases, keep


def main():
    reason = gpu_reason()
    if reason is not None:
        print(f"[{IMPL}] {BENCH}: skipped ({reason})")
        return 0
    import cuda_core
    import cuda_core.texture
    import cuda_core.typing

    impls = {"cuda_core": _setup(cuda_core, cuda_core.texture, cuda_core.typing)}
    core = nvidia_core("Device")
    theirs_texture = optional_import("cuda.core.texture") if core is not None else None
    if theirs_texture is not None and hasattr(core.Device, "create_texture_object"):
        try:
            impls["cuda.core"] = _setup(core, theirs_texture, optional_import("cuda.core.typing"))
        except Exception as exc:  # noqa: BLE001 - report and go on with ours only
            print(f"[{IMPL}] {BENCH}: cuda.core unavailable for this benchmark: {exc}")
    elif core is not None:
        print(f"[{IMPL}] {BENCH}: this cuda.core has no texture API; timing cuda_core only")

    for case in impls["cuda_core"][0]:
        samplers = {
            label: sampler(cases[case]) for label, (cases, _) in impls.items() if case in cases
        }
        report(BENCH, f"{case} (us/op)", interleaved(samplers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
