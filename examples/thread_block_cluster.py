# SPDX-License-Identifier: Apache-2.0
"""Thread block clusters (compute capability 9.0+, e.g. H100).

With ``cluster`` set in :class:`LaunchConfig`, ``grid`` counts clusters: here
4 clusters of 2 blocks.  Each block publishes a value in its shared memory;
after a cluster barrier, every block reads its neighbour's value through
distributed shared memory.  The host checks every block's rank in its
cluster, the cluster size, the cluster id and the neighbour's value.

Run: ``python examples/thread_block_cluster.py`` (exits 0 with a message
when no GPU, or no GPU with clusters, is present).
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

CODE = r"""
extern "C" __global__ void cluster_neighbors(unsigned int *out) {
    __shared__ unsigned int value;
    unsigned int rank, size, cluster_id;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cluster_id));
    if (threadIdx.x == 0) value = 1000u * cluster_id + rank;
    // every block of the cluster has written its value
    asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory");
    if (threadIdx.x == 0) {
        unsigned int local = (unsigned int)__cvta_generic_to_shared(&value);
        unsigned int remote, v;
        unsigned int target = (rank + 1) % size;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                     : "=r"(remote) : "r"(local), "r"(target));
        asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(remote) : "memory");
        out[4 * blockIdx.x + 0] = rank;
        out[4 * blockIdx.x + 1] = size;
        out[4 * blockIdx.x + 2] = cluster_id;
        out[4 * blockIdx.x + 3] = v;
    }
    // keep this block's shared memory alive until its neighbour has read it
    asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory");
}
"""


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except (CUDAError, ValueError) as exc:
        print(f"thread_block_cluster: skipped, no usable CUDA GPU ({exc})")
        return 0
    if dev.compute_capability < (9, 0):
        major, minor = dev.compute_capability
        print(
            "thread_block_cluster: skipped, clusters need compute capability 9.0 "
            f"(this GPU has {major}.{minor})"
        )
        return 0
    stream = dev.create_stream()
    prog = Program(CODE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    module = prog.compile("cubin")
    kernel = module.get_kernel("cluster_neighbors")

    clusters, cluster_size = 4, 2
    config = LaunchConfig(grid=clusters, cluster=cluster_size, block=32)
    print(
        "thread_block_cluster: up to "
        f"{kernel.occupancy.max_active_clusters(config, stream=stream)} clusters of "
        f"{cluster_size} blocks can be resident at once"
    )
    nblocks = clusters * cluster_size
    nbytes = nblocks * 4 * 4
    out = dev.allocate(nbytes, stream=stream)
    host = LegacyPinnedMemoryResource().allocate(nbytes, stream=stream)
    launch(stream, config, kernel, out)
    out.copy_to(host, stream=stream)
    stream.sync()

    got = np.asarray(host).view(np.uint32).reshape(nblocks, 4).copy()
    blocks = np.arange(nblocks)
    rank = blocks % cluster_size
    cluster_id = blocks // cluster_size
    expected = np.stack(
        [
            rank,
            np.full(nblocks, cluster_size),
            cluster_id,
            1000 * cluster_id + (rank + 1) % cluster_size,
        ],
        axis=1,
    ).astype(np.uint32)
    out.close(stream)
    host.close(stream)
    stream.close()
    module.close()
    if not np.array_equal(got, expected):
        print("thread_block_cluster: FAILED\n got:\n", got, "\n expected:\n", expected)
        return 1
    print(
        f"thread_block_cluster: OK ({clusters} clusters x {cluster_size} blocks: ranks, "
        "cluster ids and distributed shared memory reads match)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
