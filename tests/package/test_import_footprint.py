# SPDX-License-Identifier: Apache-2.0
"""What ``import cuda_core`` imports, and that what it defers stays reachable.

Each check runs in a fresh interpreter, so that nothing the test session
imported already hides an eager import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import cuda_core

_LAZY = ("checkpoint", "graph", "system", "texture", "utils")
_LAZY_NAMES = {
    "GraphicsResource": "cuda_core._graphics",
    "TensorMapDescriptor": "cuda_core._tensor_map",
    "TensorMapDescriptorOptions": "cuda_core._tensor_map",
}


def _fresh(code):
    """Run ``code`` in a new interpreter; return what it printed as JSON on its last line."""
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_does_not_import_heavy_modules():
    # Modules the interpreter already has before cuda_core (site hooks, .pth
    # files of other installed packages) are not cuda_core's doing.
    loaded = _fresh(
        "import json, sys\n"
        "names = ['numpy', 'ml_dtypes', 'multiprocessing', 'ctypes', 'hashlib', 'tempfile',\n"
        "         'uuid', 'platform', 'socket']\n"
        f"names += ['cuda_core.' + n for n in {_LAZY!r}]\n"
        f"names += {sorted(set(_LAZY_NAMES.values()))!r}\n"
        "before = {n for n in names if n in sys.modules}\n"
        "import cuda_core\n"
        "print(json.dumps([n for n in names if n in sys.modules and n not in before]))"
    )
    assert loaded == []


def test_typical_names_do_not_import_numpy():
    loaded = _fresh(
        "import json, sys\n"
        "from cuda_core import Device, LaunchConfig, Program, ProgramOptions, launch\n"
        "print(json.dumps('numpy' in sys.modules))"
    )
    assert loaded is False


@pytest.mark.parametrize("name", _LAZY)
def test_lazy_subpackage_is_an_attribute(name):
    got = _fresh(
        "import json, sys\n"
        "import cuda_core\n"
        f"module = cuda_core.{name}\n"
        f"print(json.dumps([module.__name__, module is sys.modules['cuda_core.{name}'],\n"
        f"                  '{name}' in dir(cuda_core)]))"
    )
    assert got == [f"cuda_core.{name}", True, True]


def test_lazy_subpackages_by_every_spelling():
    got = _fresh(
        "import json\n"
        "import cuda_core.system\n"
        "from cuda_core import graph, texture\n"
        "from cuda_core.utils import StridedMemoryView\n"
        "namespace = {}\n"
        "exec('from cuda_core import *', namespace)\n"
        "print(json.dumps([cuda_core.system.__name__, graph.__name__, texture.__name__,\n"
        "                  StridedMemoryView.__module__,\n"
        "                  sorted(n for n in ('checkpoint', 'graph', 'system', 'texture',\n"
        "                                     'typing', 'utils', 'Device') if n in namespace)]))"
    )
    assert got[:3] == ["cuda_core.system", "cuda_core.graph", "cuda_core.texture"]
    assert got[3].startswith("cuda_core.utils")
    assert got[4] == ["Device", "checkpoint", "graph", "system", "texture", "typing", "utils"]


@pytest.mark.parametrize("name", sorted(_LAZY_NAMES))
def test_lazy_class_by_every_spelling(name):
    module = _LAZY_NAMES[name]
    got = _fresh(
        "import json, sys\n"
        "import cuda_core\n"
        f"before = {module!r} in sys.modules\n"
        f"listed = {name!r} in dir(cuda_core) and {name!r} in cuda_core.__all__\n"
        f"cls = cuda_core.{name}\n"
        f"from cuda_core import {name} as again\n"
        "namespace = {}\n"
        "exec('from cuda_core import *', namespace)\n"
        f"print(json.dumps([before, listed, cls.__module__, again is cls,\n"
        f"                  namespace[{name!r}] is cls, cls.__name__]))"
    )
    assert got == [False, True, module, True, True, name]


def test_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        cuda_core.no_such_name  # noqa: B018


def test_device_class_reaches_the_lower_layers():
    import cuda_core._slots as slots
    from cuda_core.texture._handle import device_of

    assert slots.Device is cuda_core.Device
    assert device_of.__module__ == "cuda_core.texture._handle"
    for name in (
        "create_opaque_array",
        "create_mipmapped_array",
        "create_texture_object",
        "create_surface_object",
    ):
        assert callable(getattr(cuda_core.Device, name))


_REDUCERS = (
    "from multiprocessing.reduction import ForkingPickler\n"
    "from cuda_core._memory._device_memory_resource import DeviceMemoryResource\n"
    "from cuda_core._memory._ipc import IPCAllocationHandle\n"
    "from cuda_core._memory._pinned_memory_resource import PinnedMemoryResource\n"
    "from cuda_core._memory._forking_pickler import _watcher\n"
    "table = ForkingPickler._extra_reducers\n"
    "print(json.dumps([table[c].__name__ for c in\n"
    "                  (IPCAllocationHandle, DeviceMemoryResource, PinnedMemoryResource)]\n"
    "                 + [_watcher in sys.meta_path]))"
)
_EXPECTED = [
    "_reduce_allocation_handle",
    "_deep_reduce_device_memory_resource",
    "_deep_reduce_pinned_memory_resource",
    False,
]


def test_forking_pickler_reducers_when_multiprocessing_comes_later():
    got = _fresh(
        "import json, sys\n"
        "import cuda_core\n"
        "assert 'multiprocessing' not in sys.modules\n"
        "import multiprocessing\n" + _REDUCERS
    )
    assert got == _EXPECTED


def test_forking_pickler_reducers_when_multiprocessing_came_first():
    got = _fresh("import json, sys\nimport multiprocessing\nimport cuda_core\n" + _REDUCERS)
    assert got == _EXPECTED


def test_graph_builder_slot_imports_graph_when_asked():
    got = _fresh(
        "import json, sys\n"
        "import cuda_core\n"
        "import cuda_core._slots as slots\n"
        "before = 'cuda_core.graph' in sys.modules\n"
        "builder = slots.graph_builder()\n"
        "print(json.dumps([before, builder.__module__, builder is cuda_core.graph.GraphBuilder]))"
    )
    assert got == [False, "cuda_core.graph._graph_builder", True]
