# SPDX-License-Identifier: Apache-2.0
"""Slots that a higher layer fills at its import, for lower layers that must reach it.

A lower layer never imports a higher one.  Where one must return a higher
object (``system.Device.to_cuda_device()``, a texture's ``device``), it reads
the class from a slot here, which the higher module fills when it is
imported; ``import cuda_core`` imports that module before any lower one can
be used.
"""

from __future__ import annotations

__all__ = []

#: ``[cuda_core.Device]``, appended by ``cuda_core._device`` at import.
DEVICE_CLASS = []
