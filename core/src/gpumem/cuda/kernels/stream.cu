// gpumem generic streaming kernels: the "stream" and "async_copy" probes.
//
// stream<W, K, ORDER, KIND>: every thread handles K elements of W bytes per iteration, K
// independent loads (or stores) in flight. The element of load k of thread `tid` in chunk c
// (a chunk is T*K elements, T = all threads of the grid) is
//   ORDER 0 (coalesced): c*T*K + k*T + tid       each load instruction reads a warp-wide run
//   ORDER 1 (thread):    c*T*K + tid*K + k       each thread reads K consecutive elements
//   ORDER 2 (warp):      c*T*K + (warp*K + k)*32 + lane   each warp reads K consecutive runs
//   ORDER 3 (block):     (block % slices)*S + c*B*K + k*B + t   every block re-reads a slice
//                        of S = chunks*B*K elements (B threads per block, t its thread): with
//                        slices = blocks, its own, and the slices of the blocks an SM holds
//                        are all it reads, however many blocks the grid has (how gpu-benches'
//                        cache kernels read); with fewer, blocks on other SMs re-read it too
//                        (how gpu-benches' gpu-l2-cache spreads its re-reads)
// KIND 0 reads a (XOR-folded into a value the compiler cannot drop), 1 writes b, 2 copies a
// to b, 3 reads a through L1 (.ca: path "ca"; each thread re-reads the same elements every
// pass over the buffer, so an SM's share that fits its L1 is served from there). `chunks` is how many
// chunks fit the buffer (ORDER 3: one block's slice), `iters` how many the run processes (a
// run longer than the buffer wraps around); `reverse` walks the chunks backwards.
// Loads and stores use the .cg operator (cache in L2, not L1), so the buffer streams
// through L2 from DRAM as the probe's contract says (path "cg").
//
// async_read<K>: the same coalesced 16-byte reads as cp.async copies into shared memory, K
// commit groups in flight per thread (sm_80 and newer).

template <int W> struct Vec;
template <> struct Vec<4> { typedef unsigned int T; };
template <> struct Vec<8> { typedef uint2 T; };
template <> struct Vec<16> { typedef uint4 T; };

// Global loads of 4, 8 and 16 bytes with an explicit cache operator (OP: cg = L2 only,
// ca = L1 and L2), one overload set per operator.
#define GPUMEM_LOADS(NAME, OP)                                                              \
__device__ __forceinline__ unsigned int NAME(const unsigned int* p) {                       \
    unsigned int v;                                                                         \
    asm volatile("ld.global." #OP ".u32 %0, [%1];" : "=r"(v) : "l"(p));                     \
    return v;                                                                               \
}                                                                                           \
__device__ __forceinline__ uint2 NAME(const uint2* p) {                                     \
    uint2 v;                                                                                \
    asm volatile("ld.global." #OP ".v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p)); \
    return v;                                                                               \
}                                                                                           \
__device__ __forceinline__ uint4 NAME(const uint4* p) {                                     \
    uint4 v;                                                                                \
    asm volatile("ld.global." #OP ".v4.u32 {%0, %1, %2, %3}, [%4];"                         \
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));                    \
    return v;                                                                               \
}
GPUMEM_LOADS(ldcg, cg)
GPUMEM_LOADS(ldca, ca)

__device__ __forceinline__ void stcg(unsigned int* p, unsigned int v) {
    asm volatile("st.global.cg.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void stcg(uint2* p, uint2 v) {
    asm volatile("st.global.cg.v2.u32 [%0], {%1, %2};" :: "l"(p), "r"(v.x), "r"(v.y) : "memory");
}
__device__ __forceinline__ void stcg(uint4* p, uint4 v) {
    asm volatile("st.global.cg.v4.u32 [%0], {%1, %2, %3, %4};"
                 :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ unsigned int fold(unsigned int v) { return v; }
__device__ __forceinline__ unsigned int fold(uint2 v) { return v.x ^ v.y; }
__device__ __forceinline__ unsigned int fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }
__device__ __forceinline__ void fill(unsigned int& v, unsigned int x) { v = x; }
__device__ __forceinline__ void fill(uint2& v, unsigned int x) { v = make_uint2(x, ~x); }
__device__ __forceinline__ void fill(uint4& v, unsigned int x) { v = make_uint4(x, ~x, x ^ 1u, x ^ 2u); }

template <int W, int K, int ORDER, int KIND>
__global__ void stream(const typename Vec<W>::T* __restrict__ a, typename Vec<W>::T* __restrict__ b,
                       unsigned long long chunks, unsigned long long iters, int reverse,
                       unsigned int* sink, unsigned long long slices) {
    typedef typename Vec<W>::T T;
    const unsigned long long nthreads = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long warp = tid >> 5, lane = tid & 31;
    // ORDER 3 strides by the block, not the grid, from the block's slice
    const unsigned long long span = ORDER == 3 ? blockDim.x : nthreads;
    const unsigned long long origin = ORDER == 3 ? (blockIdx.x % slices) * chunks * span * K : 0;
    unsigned int acc = 0;
    unsigned long long c = 0;
    for (unsigned long long it = 0; it < iters; ++it) {
        const unsigned long long chunk = reverse ? chunks - 1 - c : c;
        const unsigned long long base = origin + chunk * span * K;
        if (++c == chunks) c = 0;
        unsigned long long idx[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            idx[k] = ORDER == 0 ? base + k * nthreads + tid
                   : ORDER == 1 ? base + tid * K + k
                   : ORDER == 2 ? base + (warp * K + k) * 32 + lane
                                : base + k * span + threadIdx.x;
        }
        if (KIND == 1) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                T v;
                fill(v, (unsigned int)(idx[k] ^ it));
                stcg(b + idx[k], v);
            }
        } else {
            T v[K];
#pragma unroll
            for (int k = 0; k < K; ++k) v[k] = KIND == 3 ? ldca(a + idx[k]) : ldcg(a + idx[k]);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if (KIND == 2) stcg(b + idx[k], v[k]);
                else acc ^= fold(v[k]);
            }
        }
    }
    if (acc == 0x9E3779B9u) sink[0] = acc;
}

template <int K>
__global__ void async_read(const uint4* __restrict__ a, unsigned long long chunks,
                           unsigned long long iters, int reverse, unsigned int* sink) {
#if __CUDA_ARCH__ >= 800
    extern __shared__ uint4 buf[];  // K slots of blockDim.x entries
    const unsigned long long nthreads = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int acc = 0;
    unsigned long long c = 0;
    for (unsigned long long it = 0; it < iters; ++it) {
        const unsigned long long chunk = reverse ? chunks - 1 - c : c;
        if (++c == chunks) c = 0;
        const uint4* src = a + chunk * nthreads + tid;
        uint4* dst = buf + (it % K) * blockDim.x + threadIdx.x;
        unsigned int saddr = (unsigned int)__cvta_generic_to_shared(dst);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(saddr), "l"(src) : "memory");
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group %0;" :: "n"(K - 1) : "memory");
        acc ^= fold(buf[((it + 1) % K) * blockDim.x + threadIdx.x]);  // oldest slot: landed
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    if (acc == 0x9E3779B9u) sink[0] = acc;
#endif
}
