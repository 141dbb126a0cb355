# SPDX-License-Identifier: Apache-2.0
"""LaunchConfig: shapes, validation, equality, the prepared C structure (no GPU needed)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from cuda_core import LaunchConfig
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._launch_config import _coerce_config


def test_ints_and_tuples_become_3_tuples():
    c = LaunchConfig(grid=4, block=(2, 3))
    assert c.grid == (4, 1, 1)
    assert c.block == (2, 3, 1)
    assert c.cluster is None
    assert c.shmem_size == 0
    assert c.is_cooperative is False
    assert c.programmatic_stream_serialization is False
    c = LaunchConfig(grid=[5, 6, 7], block=np.int64(128), shmem_size=np.uint32(256))
    assert c.grid == (5, 6, 7)
    assert c.block == (128, 1, 1)
    assert c.shmem_size == 256
    assert type(c.shmem_size) is int
    assert all(type(v) is int for v in c.grid + c.block)


def test_plain_config_needs_no_gpu():
    c = LaunchConfig(grid=(1,), block=(32,), shmem_size=None)
    assert c.shmem_size == 0
    cfg, addr, special = c._prepare()
    assert addr == int(ffi.cast("uintptr_t", cfg))
    assert special is False
    assert (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ) == (1, 1, 1)
    assert (cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ) == (32, 1, 1)
    assert cfg.numAttrs == 0


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(grid=0, block=1), ValueError, "LaunchConfig.grid value must be >= 1"),
        (dict(grid=-3, block=1), ValueError, "got -3"),
        (dict(grid=1, block=(1, 0)), ValueError, "LaunchConfig.block value must be >= 1"),
        (dict(grid=2**32, block=1), ValueError, "fit in 32 bits"),
        (dict(grid=1.5, block=1), TypeError, "LaunchConfig.grid must be an int"),
        (dict(grid=(1, 2, 3, 4), block=1), TypeError, "length 4"),
        (dict(grid=(), block=1), TypeError, "length 0"),
        (dict(grid=True, block=1), TypeError, "bool"),
        (dict(grid=(1, "2"), block=1), TypeError, "'2' of type str"),
        (dict(block=1), TypeError, "LaunchConfig.grid must be an int.*NoneType"),
        (dict(grid=1), TypeError, "LaunchConfig.block must be an int.*NoneType"),
        (dict(grid=1, block=1, shmem_size=-1), ValueError, "shmem_size must be >= 0"),
        (dict(grid=1, block=1, shmem_size=1.5), TypeError, "shmem_size must be an int"),
        (dict(grid=1, block=1, cluster=0), ValueError, "LaunchConfig.cluster value"),
        (dict(grid=(2**31,), block=1, cluster=(4,)), ValueError, "does not fit in 32 bits"),
    ],
)
def test_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        LaunchConfig(**kwargs)


def test_type_errors_are_also_value_errors():
    # NVIDIA's cuda.core raises ValueError for these; code catching either works.
    with pytest.raises(ValueError):
        LaunchConfig(grid="4", block=1)
    with pytest.raises(TypeError):
        LaunchConfig(grid="4", block=1)


def test_repr_eq_hash():
    a = LaunchConfig(grid=(4,), block=(2, 3), shmem_size=16)
    b = LaunchConfig(grid=4, block=[2, 3, 1], shmem_size=16)
    assert a == b
    assert hash(a) == hash(b)
    assert a != LaunchConfig(grid=4, block=(2, 3), shmem_size=32)
    assert a != LaunchConfig(
        grid=4,
        block=(2, 3),
        shmem_size=16,
        is_cooperative=False,
        programmatic_stream_serialization=True,
    )
    assert (a == 5) is False
    assert repr(a) == (
        "LaunchConfig(grid=(4, 1, 1), cluster=None, block=(2, 3, 1), shmem_size=16, "
        "is_cooperative=False)"
    )
    assert len({a, b}) == 1


def test_pickle_round_trip():
    a = LaunchConfig(grid=(4, 2), block=64, shmem_size=8, programmatic_stream_serialization=True)
    b = pickle.loads(pickle.dumps(a))
    assert a == b
    assert b.programmatic_stream_serialization is True


def test_setters_validate_and_rebuild_the_prepared_structure():
    c = LaunchConfig(grid=1, block=1)
    cfg = c._prepare()[0]
    assert cfg.gridDimX == 1
    c.grid = (7, 2)
    assert c.grid == (7, 2, 1)
    cfg = c._prepare()[0]
    assert (cfg.gridDimX, cfg.gridDimY) == (7, 2)
    c.block = 256
    c.shmem_size = 1024
    cfg = c._prepare()[0]
    assert cfg.blockDimX == 256 and cfg.sharedMemBytes == 1024
    with pytest.raises(ValueError):
        c.grid = 0
    assert c.grid == (7, 2, 1)  # unchanged after a failed set
    with pytest.raises(TypeError):
        c.shmem_size = "big"


def test_cluster_grid_counts_clusters_and_sets_the_attribute():
    # Without a current context the device checks are deferred to launch time.
    c = LaunchConfig(grid=(3, 2), cluster=(2, 1, 1), block=32)
    assert c.cluster == (2, 1, 1)
    cfg, _, special = c._prepare()
    assert special is True
    assert (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ) == (6, 2, 1)
    assert cfg.numAttrs == 1
    attr = cfg.attrs[0]
    assert attr.id == lib.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    dim = attr.value.clusterDim
    assert (dim.x, dim.y, dim.z) == (2, 1, 1)


def test_flags_become_launch_attributes():
    c = LaunchConfig(grid=2, block=32, is_cooperative=True, programmatic_stream_serialization=True)
    cfg, _, special = c._prepare()
    assert special is True
    assert cfg.numAttrs == 2
    assert cfg.attrs[0].id == lib.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
    assert cfg.attrs[0].value.cooperative == 1
    assert cfg.attrs[1].id == lib.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    assert cfg.attrs[1].value.programmaticStreamSerializationAllowed == 1
    c.is_cooperative = False
    cfg, _, special = c._prepare()
    assert special is False
    assert cfg.numAttrs == 1
    assert cfg.attrs[0].id == lib.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION


def test_cu_launch_config_for_occupancy_queries():
    c = LaunchConfig(grid=4, cluster=2, block=(8, 8), shmem_size=64)
    out, keep = c._to_cu_launch_config(ffi.cast("CUstream", 0x10))
    assert (out.gridDimX, out.blockDimX, out.blockDimY) == (8, 8, 8)
    assert out.sharedMemBytes == 64
    assert int(ffi.cast("uintptr_t", out.hStream)) == 0x10
    assert out.numAttrs == 1
    assert out.attrs[0].id == lib.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    assert keep is c._prepare()[0]


def test_dict_config():
    c = _coerce_config({"grid": 2, "block": (4, 4)})
    assert c == LaunchConfig(grid=2, block=(4, 4))
    same = LaunchConfig(grid=1, block=1)
    assert _coerce_config(same) is same
    with pytest.raises(TypeError, match="unknown option.*blocks"):
        _coerce_config({"grid": 1, "blocks": 1})
    with pytest.raises(TypeError, match="LaunchConfig or a dict"):
        _coerce_config((1, 1))
