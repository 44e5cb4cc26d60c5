// gpumem distributed shared memory kernels (sm_90+): the "dsmem" probe.
//
// A cluster of C blocks (compile-time __cluster_dims__, so a plain launch forms the clusters)
// can load from each other's shared memory: mapa turns a shared address of this block into
// the same address in block `rank` of the cluster, ld.shared::cluster loads through it. The
// reader targets its own block (distance 0: local, the same instruction and path) or the
// block `distance` ranks further. Every block passes a cluster barrier after filling its
// shared memory and another before leaving, so no block's shared memory goes away while a
// neighbour still reads it.
//
// dsmem_latency<C>: thread 0 of rank 0 follows a chain s[i] = (i + 97) mod 2048 in the
// target block's shared memory with dependent loads. Two timed loops of n and 2n loads give
// the cycles per load as their difference / n (clock reads cancel, as in smem_latency).
// out[0] = cycles per load times 1000; out[1] = the rank read.
//
// dsmem_throughput<C, K>: every thread of every block issues K independent coalesced loads
// per iteration from the target block; thread 0 records the SM clock around the loop and its
// SM: out[3 * block + {0, 1, 2}] = start, end, %smid. The loads are volatile
// (ld.volatile.shared::cluster): the addresses repeat every iteration and plain loads would
// be hoisted out of the loop.

#ifndef GPUMEM_DSMEM_LOAD  // benchmarks/dsmem_loads.py compares other load flavours
#define GPUMEM_DSMEM_LOAD "ld.volatile.shared::cluster.u32 %0, [%1];"
#endif

__device__ __forceinline__ void gpumem_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ unsigned int gpumem_cluster_rank() {
    unsigned int r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ unsigned int gpumem_map_rank(const void* p, unsigned int rank) {
    unsigned int local = (unsigned int)__cvta_generic_to_shared(p), remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    return remote;
}

template <int C>
__global__ void __cluster_dims__(C, 1, 1) dsmem_latency(int distance, int n,
                                                        unsigned long long* out,
                                                        unsigned int* sink) {
    __shared__ unsigned int s[2048];
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) s[i] = (i + 97u) & 2047u;
    gpumem_cluster_sync();
    const unsigned int rank = gpumem_cluster_rank();
    if (rank == 0 && threadIdx.x == 0 && blockIdx.x < C) {
        const unsigned int target = (unsigned int)distance % C;
        const unsigned int base = gpumem_map_rank(s, target);
        unsigned int j = 0;
        for (int k = 0; k < n; ++k)  // warm up
            asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(j) : "r"(base + 4u * j) : "memory");
        unsigned long long t0, t1, t2, t3;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");
        for (int k = 0; k < n; ++k)
            asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(j) : "r"(base + 4u * j) : "memory");
        sink[1] = j;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) :: "memory");
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t2) :: "memory");
        for (int k = 0; k < 2 * n; ++k)
            asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(j) : "r"(base + 4u * j) : "memory");
        sink[1] = j;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t3) :: "memory");
        long long diff = (long long)(t3 - t2) - (long long)(t1 - t0);
        out[0] = (unsigned long long)(diff > 0 ? diff * 1000 / n : 0);
        out[1] = target;
    }
    gpumem_cluster_sync();
}

template <int C, int K>
__global__ void __cluster_dims__(C, 1, 1) dsmem_throughput(int distance, int iterations,
                                                           unsigned long long* out,
                                                           unsigned int* sink) {
    extern __shared__ unsigned int s[];  // K * blockDim.x words
    for (int i = threadIdx.x; i < K * blockDim.x; i += blockDim.x) s[i] = i * 2654435761u;
    gpumem_cluster_sync();
    const unsigned int target = (gpumem_cluster_rank() + (unsigned int)distance) % C;
    const unsigned int base = gpumem_map_rank(s, target) + 4u * threadIdx.x;
    unsigned int acc = 0;
    unsigned long long t0 = 0, t1 = 0;
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");
    for (int it = 0; it < iterations; ++it) {
        unsigned int v[K];
#pragma unroll
        for (int k = 0; k < K; ++k)
            asm volatile(GPUMEM_DSMEM_LOAD : "=r"(v[k]) : "r"(base + 4u * k * blockDim.x)
                         : "memory");
#pragma unroll
        for (int k = 0; k < K; ++k) acc += v[k];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) :: "memory");
        unsigned int smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        out[3 * blockIdx.x] = t0;
        out[3 * blockIdx.x + 1] = t1;
        out[3 * blockIdx.x + 2] = smid;
    }
    if (acc == 0x9E3779B9u) sink[0] = acc;
    gpumem_cluster_sync();
}
