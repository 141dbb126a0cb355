# SPDX-License-Identifier: Apache-2.0
"""Upscale an image with hardware bilinear filtering and check it against NumPy.

Shows :mod:`cuda_core.texture`: a CUDA array (:class:`OpaqueArray`) filled
from host memory, a :class:`TextureObject` with linear filtering, clamped
addressing and normalized coordinates, passed to a kernel like any other
argument.  The texture unit keeps 8 fractional bits of the interpolation
weights, so the result matches an exact bilinear reference to 1/256.

Run: ``python examples/texture_sampling.py`` (exits 0 with a message when no
GPU is present).
"""

from __future__ import annotations

import os
import sys

import numpy as np

try:
    import cuda_core  # noqa: F401
except ImportError:  # running from a source checkout
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from cuda_core import (  # noqa: E402
    CUDAError,
    Device,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    Program,
    ProgramOptions,
    launch,
)
from cuda_core.texture import (  # noqa: E402
    OpaqueArrayOptions,
    ResourceDescriptor,
    TextureObjectOptions,
)
from cuda_core.typing import AddressModeType, FilterModeType  # noqa: E402

CODE = r"""
extern "C" __global__ void upscale(cudaTextureObject_t image, float *out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        // Normalized coordinates of the output pixel's centre.
        out[y * w + x] = tex2D<float>(image, (x + 0.5f) / w, (y + 0.5f) / h);
    }
}
"""


def bilinear_upscale(image, w, h):
    """Exact bilinear resampling with clamped edges (the texture unit's rule)."""
    ih, iw = image.shape
    x = (np.arange(w) + 0.5) / w * iw - 0.5
    y = (np.arange(h) + 0.5) / h * ih - 0.5
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    ax, ay = (x - x0)[None, :], (y - y0)[:, None]

    def at(yy, xx):
        return image[np.clip(yy, 0, ih - 1)[:, None], np.clip(xx, 0, iw - 1)[None, :]]

    top = (1 - ax) * at(y0, x0) + ax * at(y0, x0 + 1)
    bottom = (1 - ax) * at(y0 + 1, x0) + ax * at(y0 + 1, x0 + 1)
    return (1 - ay) * top + ay * bottom


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except (CUDAError, ValueError) as exc:
        print(f"texture_sampling: skipped, no usable CUDA GPU ({exc})")
        return 0
    stream = dev.create_stream()
    kernel = (
        Program(CODE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
        .compile("cubin")
        .get_kernel("upscale")
    )

    ih, iw = 48, 64
    yy, xx = np.mgrid[0:ih, 0:iw]
    image = (0.5 + 0.25 * np.sin(xx / 5.0) * np.cos(yy / 7.0)).astype(np.float32)
    w, h = 3 * iw, 3 * ih

    options = OpaqueArrayOptions(shape=(iw, ih), format=np.float32, num_channels=1)
    with dev.create_opaque_array(options) as array:
        array.copy_from(image, stream=stream)
        sampling = TextureObjectOptions(
            address_mode=AddressModeType.CLAMP,
            filter_mode=FilterModeType.LINEAR,
            normalized_coords=True,
        )
        texture = dev.create_texture_object(
            resource=ResourceDescriptor.from_opaque_array(array), options=sampling
        )
    # The array wrapper is closed; the texture keeps the array alive.
    out = dev.allocate(w * h * 4, stream=stream)
    config = LaunchConfig(grid=((w + 15) // 16, (h + 15) // 16), block=(16, 16))
    launch(stream, config, kernel, texture, out, np.int32(w), np.int32(h))
    pinned = LegacyPinnedMemoryResource().allocate(w * h * 4, stream=stream)
    out.copy_to(pinned, stream=stream)
    stream.sync()
    result = np.asarray(pinned).view(np.float32).reshape(h, w).copy()
    texture.close()
    out.close()
    pinned.close()
    stream.close()

    error = np.max(np.abs(result - bilinear_upscale(image.astype(np.float64), w, h)))
    if error > 1 / 256:
        print(f"texture_sampling: FAILED, max error {error:.2e} > 1/256")
        return 1
    print(f"texture_sampling: OK ({iw}x{ih} -> {w}x{h}, max error {error:.2e} <= 1/256)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
