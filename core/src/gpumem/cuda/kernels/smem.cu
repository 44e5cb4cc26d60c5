// gpumem generic shared-memory kernels: the "smem" probe.
//
// smem_latency: one warp; thread t starts at word t * stride of a 2048-word array in which
// s[i] = (i + 32 * stride) mod 2048 (Mei & Chu's shared_bankconflict.cu layout) and follows
// the chain with dependent loads. Two timed loops, of n and 2n loads, give the cycles per
// load as their difference / n: the clock reads and the final store cancel out exactly.
// out[t] = cycles per load seen by thread t, times 1000 (rounded).
//
// smem_throughput<K>: blocks of up to 1024 threads, as many per SM as the warps need; every
// thread issues K independent conflict-free loads per iteration; thread 0 of each block
// records the SM clock at two barriers around the loop and its SM: out[3 * block + {0, 1, 2}]
// = start, end, %smid. Per SM, the span is the last end minus the first start over its
// blocks (Mei & Chu's method): blocks of one SM need not run at the same time, so one
// block's cycles would overstate the SM's throughput (an H200 "delivered" 253 B/cycle). The loads are ld.volatile: the addresses do not
// change between iterations, and ptxas hoists plain loads out of such a loop (a first
// version "measured" 486 B/cycle on an H200, four times what 32 banks can deliver).

extern "C" __global__ void smem_latency(unsigned int stride, int n, unsigned long long* out,
                                        unsigned int* sink) {
    __shared__ unsigned int s[2048];
    __shared__ unsigned int keep[32];
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) s[i] = (i + 32u * stride) & 2047u;
    __syncthreads();
    unsigned int j = (threadIdx.x * stride) & 2047u;
    for (int k = 0; k < n; ++k) j = s[j];  // warm up
    unsigned long long t0, t1, t2, t3;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");
    for (int k = 0; k < n; ++k) {
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(j) : "r"((unsigned int)__cvta_generic_to_shared(s + j)) : "memory");
    }
    keep[threadIdx.x & 31] = j;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) :: "memory");
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t2) :: "memory");
    for (int k = 0; k < 2 * n; ++k) {
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(j) : "r"((unsigned int)__cvta_generic_to_shared(s + j)) : "memory");
    }
    keep[threadIdx.x & 31] = j;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t3) :: "memory");
    long long diff = (long long)(t3 - t2) - (long long)(t1 - t0);
    out[threadIdx.x] = (unsigned long long)(diff > 0 ? diff * 1000 / n : 0);
    if (keep[threadIdx.x & 31] == 0xFFFFFFFFu) sink[0] = j;
}

template <int K>
__global__ void smem_throughput(int iterations, unsigned long long* out, unsigned int* sink) {
    extern __shared__ unsigned int s[];  // K * blockDim.x words
    for (int i = threadIdx.x; i < K * blockDim.x; i += blockDim.x) s[i] = i * 2654435761u;
    __syncthreads();
    unsigned int acc = 0;
    unsigned long long t0 = 0, t1 = 0;
    if (threadIdx.x == 0) asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");
    __syncthreads();
    for (int it = 0; it < iterations; ++it) {
        unsigned int v[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v[k])
                         : "r"((unsigned int)__cvta_generic_to_shared(s + k * blockDim.x + threadIdx.x)) : "memory");
        }
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
}
