# SPDX-License-Identifier: Apache-2.0
"""Caches for compiled programs.

:class:`ProgramCacheResource` is the interface :meth:`Program.compile
<cuda_core.Program.compile>` uses through its ``cache=`` argument: a mapping
from ``bytes``/``str`` keys (built by :func:`make_program_cache_key`) to the
compiled bytes.  :class:`InMemoryProgramCache` keeps entries in the process;
:class:`FileStreamProgramCache` keeps them in a directory that any number of
processes may share.
"""

from __future__ import annotations

import cuda_core._slots as _slots
from cuda_core.utils._program_cache._file_stream import *  # noqa: F403
from cuda_core.utils._program_cache._file_stream import __all__ as _file_stream_all
from cuda_core.utils._program_cache._in_memory import *  # noqa: F403
from cuda_core.utils._program_cache._in_memory import __all__ as _in_memory_all
from cuda_core.utils._program_cache._keys import *  # noqa: F403
from cuda_core.utils._program_cache._keys import __all__ as _keys_all
from cuda_core.utils._program_cache._resource import *  # noqa: F403
from cuda_core.utils._program_cache._resource import __all__ as _resource_all

__all__ = [*_file_stream_all, *_in_memory_all, *_keys_all, *_resource_all]

# Program.compile(cache=...) sits below this package: hand it the cache type
# and the key builder.
_slots.program_cache = (ProgramCacheResource, make_program_cache_key)  # noqa: F405
