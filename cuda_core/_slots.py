# SPDX-License-Identifier: Apache-2.0
"""Registration slots: how a lower layer hands back a higher layer's object.

A module never imports a higher layer, not even inside a function (see
``docs/architecture.md``).  Where a lower object must return a higher one
(``Stream.device`` returns a :class:`~cuda_core.Device`), the higher module
stores its class here when it is imported, and the lower module reads the
slot when it is called.  ``import cuda_core`` imports every layer, so the
slots are filled before user code runs; a slot a partial import left empty
is None.
"""

from __future__ import annotations

__all__ = []

#: :class:`cuda_core.Device`; set by ``cuda_core._device``.
Device = None

#: :class:`cuda_core.graph.GraphBuilder`; set by ``cuda_core.graph._graph_builder``.
GraphBuilder = None

#: :class:`cuda_core.utils.StridedMemoryView`; set by ``cuda_core.utils._memoryview``.
StridedMemoryView = None
