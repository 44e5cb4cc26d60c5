// gpumem generic pointer-chase kernels (core's fallback; architecture plugins may supply
// tuned ones through the gpumem_kernel_source hook, with the same arguments).
//
// One thread walks the chain arr[j] -> j. After `warmup` untimed loads it times `record`
// loads one by one, Mei & Chu style: t0 = clock64(); j = load(arr + j); s_next[i] = j;
// t1 = clock64(). The shared-memory store needs j, so (with in-order issue) t1 is read only
// after the load returned. Latencies and loaded values stay in shared memory during the
// loop, so recording does not disturb the caches under test, and are copied out at the end.
// The timer overhead (same sequence with a register move instead of a load) is timed too.
//
// Arguments: arr (ARR_T: a pointer, or a texture object for texture paths), start element,
// warmup, record, out_lat[record] (cycles incl. overhead),
// out_next[record] (value loaded by access i), out_state[3] = {element read after warm-up,
// last element reached, SM it ran on}, out_overhead[record] (cycles of the empty timed
// sequence), target_sm (-1: the block runs wherever it lands; else the grid holds several
// blocks and only the first to land on that SM, by %smid and an atomic on *claim, runs).
// Dynamic shared memory: record * 12 bytes.

//
// NAME_global: the same chase recording straight to global memory with st.global.cg (cached
// in L2, never in L1), 32-bit latencies. On GPUs whose L1 and shared memory are one array
// (Volta on), a record kept in shared memory takes capacity from the L1 under test (48 KB of
// record moved the H200's L1 plateau); this variant uses no shared memory, so it serves the
// L1-level paths and records of any length. out_lat and out_overhead are 32-bit here; the
// overhead loop runs min(record, 1024) times (out_overhead holds 2048: the upper half takes
// the stores that mirror the chase's).
//
// GPUMEM_CHASE_KERNEL(NAME, ARR_T, LOAD) defines both; LOAD(dst, arr, j) reads element j.
// Architecture plugins append their own paths to this file with it (texture fetches).

// The two kernels' common steps: run only on the SM asked for (else return), and the
// untimed warm-up from element j.
#define GPUMEM_CHASE_PIN()                                                                  \
    unsigned int smid;                                                                      \
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));                                       \
    if (target_sm >= 0 && ((int)smid != target_sm || atomicCAS(claim, 0u, 1u) != 0u))       \
        return;                                                                             \
    out_state[2] = smid

#define GPUMEM_CHASE_WARM(LOAD)                                                             \
    for (int i = 0; i < warmup; ++i) {                                                      \
        unsigned int n;                                                                     \
        LOAD(n, arr, j);                                                                    \
        j = n;                                                                              \
    }                                                                                       \
    out_state[0] = j

// The chase proper after its warm-up (j: the element it starts on), recording to shared
// memory (_SMEM) or to global memory (_GLOBAL), and the timer overhead after it.
#define GPUMEM_CHASE_RECORD_SMEM(LOAD)                                                      \
    for (int i = 0; i < record; ++i) {                                                      \
        unsigned long long t0, t1;                                                          \
        unsigned int n;                                                                     \
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");                     \
        LOAD(n, arr, j);                                                                    \
        s_next[i] = n;                                                                      \
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) :: "memory");                     \
        s_lat[i] = t1 - t0;                                                                 \
        j = n;                                                                              \
    }                                                                                       \
    out_state[1] = j;                                                                       \
    for (int i = 0; i < record; ++i) { out_lat[i] = s_lat[i]; out_next[i] = s_next[i]; }    \
    unsigned int k = j;                                                                     \
    for (int i = 0; i < record; ++i) {                                                      \
        unsigned long long t0, t1;                                                          \
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");                     \
        asm volatile("mov.u32 %0, %1;" : "=r"(k) : "r"(k + i));                             \
        s_next[i] = k;                                                                      \
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) :: "memory");                     \
        s_lat[i] = t1 - t0;                                                                 \
    }                                                                                       \
    for (int i = 0; i < record; ++i) out_overhead[i] = s_lat[i]

#define GPUMEM_CHASE_RECORD_GLOBAL(LOAD)                                                    \
    for (int i = 0; i < record; ++i) {                                                      \
        unsigned long long t0, t1;                                                          \
        unsigned int n;                                                                     \
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");                     \
        LOAD(n, arr, j);                                                                    \
        asm volatile("st.global.cg.u32 [%0], %1;" :: "l"(out_next + i), "r"(n) : "memory");\
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) :: "memory");                     \
        asm volatile("st.global.cg.u32 [%0], %1;"                                           \
                     :: "l"(out_lat + i), "r"((unsigned int)(t1 - t0)) : "memory");         \
        j = n;                                                                              \
    }                                                                                       \
    out_state[1] = j;                                                                       \
    unsigned int k = j;                                                                     \
    const int reps = record < 1024 ? record : 1024;                                         \
    for (int i = 0; i < reps; ++i) {                                                        \
        unsigned long long t0, t1;                                                          \
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");                     \
        asm volatile("mov.u32 %0, %1;" : "=r"(k) : "r"(k + i));                             \
        asm volatile("st.global.cg.u32 [%0], %1;"                                           \
                     :: "l"(out_overhead + 1024 + i), "r"(k) : "memory");                   \
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) :: "memory");                     \
        asm volatile("st.global.cg.u32 [%0], %1;"                                           \
                     :: "l"(out_overhead + i), "r"((unsigned int)(t1 - t0)) : "memory");    \
    }

#define GPUMEM_CHASE_ARGS_SMEM(ARR_T)                                                        \
    ARR_T arr, unsigned int start, int warmup, int record, unsigned long long* out_lat,     \
    unsigned int* out_next, unsigned int* out_state, unsigned long long* out_overhead,      \
    int target_sm, unsigned int* claim
#define GPUMEM_CHASE_ARGS_GLOBAL(ARR_T)                                                      \
    ARR_T arr, unsigned int start, int warmup, int record, unsigned int* out_lat,          \
    unsigned int* out_next, unsigned int* out_state, unsigned int* out_overhead,            \
    int target_sm, unsigned int* claim
#define GPUMEM_CHASE_SMEM_RECORD_BUFFERS()                                                  \
    extern __shared__ unsigned long long smem[];                                            \
    unsigned long long* s_lat = smem;                                                       \
    unsigned int* s_next = reinterpret_cast<unsigned int*>(smem + record)

#define GPUMEM_CHASE_KERNEL(NAME, ARR_T, LOAD)                                            \
extern "C" __global__ void NAME(GPUMEM_CHASE_ARGS_SMEM(ARR_T)) {                           \
    GPUMEM_CHASE_PIN();                                                                     \
    GPUMEM_CHASE_SMEM_RECORD_BUFFERS();                                                     \
    unsigned int j = start;                                                                 \
    GPUMEM_CHASE_WARM(LOAD);                                                                \
    GPUMEM_CHASE_RECORD_SMEM(LOAD);                                                         \
}                                                                                           \
extern "C" __global__ void NAME##_global(GPUMEM_CHASE_ARGS_GLOBAL(ARR_T)) {                \
    GPUMEM_CHASE_PIN();                                                                     \
    unsigned int j = start;                                                                 \
    GPUMEM_CHASE_WARM(LOAD);                                                                \
    GPUMEM_CHASE_RECORD_GLOBAL(LOAD);                                                       \
}

// NAME_ilpK / NAME_global_ilpK: the same chase, its warm-up walked in the same kernel by
// the same thread in chain order with K loads in flight (ChaseRequest.warm_ilp): warm-up
// position p (0 .. warmup-1) reads element (p * s) mod n of a sequential chain (order 0: n
// elements, stride s) or the first element of line perm(p mod n) of a random one (order 1:
// n lines of s elements; gpumem_permute below). The addresses come from p, not from the
// loaded values, so K loads overlap; every line is touched once, in the chase's order, from
// its SM, in the chase's kernel (an L1 keeps nothing across kernels), in a fraction of a
// dependent walk's time. Positions 0 .. first-1 (the warm-up's accesses to lines the chase
// then records, gpumem.contracts.chains.warm_segments) are walked dependently, as before.
// Every warm-up load has returned before the first timed one (their values are folded into
// acc, which decides a store before the first clock read). The chase then starts at
// element `start` (the host's: chain position `warmup`).
__device__ __forceinline__ unsigned long long gpumem_permute(unsigned long long x, int bits,
        unsigned long long k0, unsigned long long k1, unsigned long long k2,
        unsigned long long k3, unsigned long long n);
#define GPUMEM_CHASE_ILP_ARGS                                                               \
    , int first, int order, unsigned long long n, unsigned long long s, int bits,           \
    unsigned long long k0, unsigned long long k1, unsigned long long k2, unsigned long long k3
#define GPUMEM_WARM_NEXT(e, q)  /* element of chain position q, then q one further */       \
    if (order == 0) { e = q; q += s; if (q >= n) q -= n; }                                  \
    else { e = gpumem_permute(q, bits, k0, k1, k2, k3, n) * s; if (++q == n) q = 0; }
#define GPUMEM_CHASE_WARM_ILP(LOAD, K)                                                      \
    {                                                                                       \
        unsigned int acc = 0;                                                               \
        unsigned long long q = 0, e;                                                        \
        int p = 0;                                                                          \
        if (first > 0) { /* the recorded lines' warm-up accesses: dependent, as before */  \
            GPUMEM_WARM_NEXT(e, q);                                                         \
            unsigned int i = (unsigned int)e;                                               \
            for (; p < first; ++p) {                                                        \
                unsigned int nx;                                                            \
                LOAD(nx, arr, i);                                                           \
                i = nx;                                                                     \
                if (p + 1 < first) { GPUMEM_WARM_NEXT(e, q); }                              \
            }                                                                               \
            acc ^= i;                                                                       \
        }                                                                                   \
        for (; p + K <= warmup; p += K) {                                                   \
            unsigned int v[K];                                                              \
            _Pragma("unroll")                                                               \
            for (int u = 0; u < K; ++u) {                                                   \
                GPUMEM_WARM_NEXT(e, q);                                                     \
                LOAD(v[u], arr, e);                                                         \
            }                                                                               \
            _Pragma("unroll")                                                               \
            for (int u = 0; u < K; ++u) acc ^= v[u];                                        \
        }                                                                                   \
        for (; p < warmup; ++p) {                                                           \
            unsigned int v;                                                                 \
            GPUMEM_WARM_NEXT(e, q);                                                         \
            LOAD(v, arr, e);                                                                \
            acc ^= v;                                                                       \
        }                                                                                   \
        if (acc == 0x9E3779B9u) out_state[1] = acc;                                         \
    }                                                                                       \
    unsigned int j = start;                                                                 \
    out_state[0] = j

#define GPUMEM_CHASE_ILP_KERNEL(NAME, ARR_T, LOAD, K)                                       \
extern "C" __global__ void NAME##_ilp##K(GPUMEM_CHASE_ARGS_SMEM(ARR_T)                     \
                                         GPUMEM_CHASE_ILP_ARGS) {                           \
    GPUMEM_CHASE_PIN();                                                                     \
    GPUMEM_CHASE_SMEM_RECORD_BUFFERS();                                                     \
    GPUMEM_CHASE_WARM_ILP(LOAD, K);                                                         \
    GPUMEM_CHASE_RECORD_SMEM(LOAD);                                                         \
}                                                                                           \
extern "C" __global__ void NAME##_global_ilp##K(GPUMEM_CHASE_ARGS_GLOBAL(ARR_T)            \
                                                GPUMEM_CHASE_ILP_ARGS) {                    \
    GPUMEM_CHASE_PIN();                                                                     \
    GPUMEM_CHASE_WARM_ILP(LOAD, K);                                                         \
    GPUMEM_CHASE_RECORD_GLOBAL(LOAD);                                                       \
}

// NAME_warm: a chase's warm-up walked by the threads of one block on target_sm (the first
// block to land there runs, by %smid and an atomic on *claim; claim[1] is a sink). Thread 0
// first walks `first` accesses from element starts[0], alone: the warm-up's accesses to the
// lines the chase then records. Then thread t walks the chain positions bounds[t] ..
// bounds[t+1]-1 from element starts[t + 1], all threads at once, each segment in chain order
// (gpumem.chains.warm_segments). Every other line is touched after the recorded ones, as a
// one-thread warm-up touches them, in a fraction of its time.
#define GPUMEM_CHASE_WARM_KERNEL(NAME, ARR_T, LOAD)                                          \
extern "C" __global__ void NAME##_warm(ARR_T arr, const unsigned int* starts,               \
                                       const long long* bounds, int first, int target_sm,   \
                                       unsigned int* claim) {                               \
    __shared__ int mine;                                                                    \
    if (threadIdx.x == 0) {                                                                 \
        unsigned int smid;                                                                  \
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));                                   \
        mine = (int)smid == target_sm && atomicCAS(claim, 0u, 1u) == 0u;                    \
    }                                                                                       \
    __syncthreads();                                                                        \
    if (!mine) return;                                                                      \
    unsigned int j = starts[0];                                                             \
    if (threadIdx.x == 0) {                                                                 \
        for (int i = 0; i < first; ++i) {                                                   \
            unsigned int n;                                                                 \
            LOAD(n, arr, j);                                                                \
            j = n;                                                                          \
        }                                                                                   \
    }                                                                                       \
    __syncthreads();                                                                        \
    unsigned int k = starts[threadIdx.x + 1];                                               \
    const long long steps = bounds[threadIdx.x + 1] - bounds[threadIdx.x];                  \
    for (long long i = 0; i < steps; ++i) {                                                 \
        unsigned int n;                                                                     \
        LOAD(n, arr, k);                                                                    \
        k = n;                                                                              \
    }                                                                                       \
    if ((j ^ k) == 0xFFFFFFFFu) claim[1] = k;                                               \
}

#define GPUMEM_LD_CA(dst, arr, j) asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(dst) : "l"(arr + j) : "memory")
#define GPUMEM_LD_CG(dst, arr, j) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(dst) : "l"(arr + j) : "memory")
#define GPUMEM_LD_NC(dst, arr, j) asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(dst) : "l"(arr + j) : "memory")

typedef const unsigned int* __restrict__ gpumem_chain_t;
GPUMEM_CHASE_KERNEL(pointer_chase_ca, gpumem_chain_t, GPUMEM_LD_CA)
GPUMEM_CHASE_KERNEL(pointer_chase_cg, gpumem_chain_t, GPUMEM_LD_CG)
GPUMEM_CHASE_KERNEL(pointer_chase_nc, gpumem_chain_t, GPUMEM_LD_NC)
GPUMEM_CHASE_WARM_KERNEL(pointer_chase_ca, gpumem_chain_t, GPUMEM_LD_CA)
GPUMEM_CHASE_WARM_KERNEL(pointer_chase_cg, gpumem_chain_t, GPUMEM_LD_CG)
GPUMEM_CHASE_WARM_KERNEL(pointer_chase_nc, gpumem_chain_t, GPUMEM_LD_NC)
GPUMEM_CHASE_ILP_KERNEL(pointer_chase_ca, gpumem_chain_t, GPUMEM_LD_CA, 8)
GPUMEM_CHASE_ILP_KERNEL(pointer_chase_cg, gpumem_chain_t, GPUMEM_LD_CG, 8)
GPUMEM_CHASE_ILP_KERNEL(pointer_chase_nc, gpumem_chain_t, GPUMEM_LD_NC, 8)

// pointer_chase_cg_hammered: the L2-only chase (record in shared memory) on target_sm while
// one block on each SM that hammer_on flags loads the lines `hammer` (n_hammer element
// offsets) over and over through the L2 (ld.global.cg), a warp a whole line (32 lanes x 4 B:
// one request of four sectors), four lines in flight per warp: an L2 slice that homes them
// queues their requests, and a chased line homed there waits behind them (ChaseRequest
// .hammer). The hammering blocks count themselves in sync[0] as they start; the chase waits
// for `expect` of them (at most wait_cycles), says how many came in out_state[3], and sets
// sync[1] once its record is taken; each hammering block stops then, or after max_cycles.
// The grid is launched with more blocks than SMs: the first block on target_sm chases (by
// *claim), the first on each flagged SM hammers (by sm_claim[smid]), the others return;
// hammer_on and sm_claim hold 1024 entries (an %smid beyond them never hammers).
extern "C" __global__ void pointer_chase_cg_hammered(
        GPUMEM_CHASE_ARGS_SMEM(gpumem_chain_t), const unsigned int* hammer, int n_hammer,
        const unsigned char* hammer_on, unsigned int* sm_claim, unsigned int* sync,
        unsigned int expect, long long wait_cycles, long long max_cycles) {
    __shared__ int role;  // 0: return, 1: chase, 2: hammer
    __shared__ unsigned int lines[64];
    if (threadIdx.x == 0) {
        unsigned int smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        role = 0;
        if ((int)smid == target_sm) {
            if (atomicCAS(claim, 0u, 1u) == 0u) { role = 1; out_state[2] = smid; }
        } else if (smid < 1024u && hammer_on[smid] &&
                   atomicCAS(sm_claim + smid, 0u, 1u) == 0u) {
            role = 2;
        }
    }
    __syncthreads();
    if (role == 0) return;
    if (role == 2) {
        for (int i = threadIdx.x; i < n_hammer; i += blockDim.x) lines[i] = hammer[i];
        __syncthreads();
        if (threadIdx.x == 0) atomicAdd(sync, 1u);
        const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
        int k = (threadIdx.x >> 5) % n_hammer;
        unsigned int acc = 0;
        const long long t0 = clock64();
        volatile unsigned int* stop = sync + 1;
        for (int it = 0;; ++it) {
            unsigned int v[4];
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                GPUMEM_LD_CG(v[u], arr, lines[k] + lane);
                k = (k + warps) % n_hammer;
            }
            #pragma unroll
            for (int u = 0; u < 4; ++u) acc ^= v[u];
            if ((it & 15) == 15) {
                int s = 0;
                if (lane == 0) s = *stop != 0u || clock64() - t0 > max_cycles;
                if (__shfl_sync(0xffffffffu, s, 0)) break;
            }
        }
        if (acc == 0x9E3779B9u) sync[2] = acc;
        return;
    }
    if (threadIdx.x != 0) return;
    {
        const long long t0 = clock64();
        volatile unsigned int* started = sync;
        while (*started < expect && clock64() - t0 < wait_cycles) {}
        out_state[3] = *started;
    }
    GPUMEM_CHASE_SMEM_RECORD_BUFFERS();
    unsigned int j = start;
    GPUMEM_CHASE_WARM(GPUMEM_LD_CG);
    GPUMEM_CHASE_RECORD_SMEM(GPUMEM_LD_CG);
    __threadfence();
    atomicExch(sync + 1, 1u);
}

// Chain builders (device side, so an 8 GB chain never crosses PCIe).
// Sequential: arr[i] = (i + s) mod n.
extern "C" __global__ void chain_sequential(unsigned int* arr, unsigned long long n,
                                            unsigned long long s) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long v = i + s;
        arr[i] = (unsigned int)(v >= n ? v - n : v);
    }
}

// Random: the keyed permutation of gpumem/chains.py (permute_vec) over `lines` blocks of
// `per_line` elements; block perm(k) points to block perm(k+1).
__device__ __forceinline__ unsigned long long gpumem_permute(unsigned long long x, int bits,
        unsigned long long k0, unsigned long long k1, unsigned long long k2,
        unsigned long long k3, unsigned long long n) {
    const unsigned long long mask = (1ull << bits) - 1ull;
    const int sh = (bits + 1) / 2;
    unsigned long long v = x;
    while (true) {
        v = (v ^ k0) & mask;
        v = (v * k1) & mask;
        v ^= v >> sh;
        v = (v * k2) & mask;
        v ^= v >> sh;
        v = (v + k3) & mask;
        if (v < n) return v;
    }
}

extern "C" __global__ void chain_random(unsigned int* arr, unsigned long long lines,
                                        unsigned long long per_line, int bits,
                                        unsigned long long k0, unsigned long long k1,
                                        unsigned long long k2, unsigned long long k3) {
    for (unsigned long long k = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         k < lines; k += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long a = gpumem_permute(k, bits, k0, k1, k2, k3, lines);
        unsigned long long b = gpumem_permute(k + 1 == lines ? 0 : k + 1, bits, k0, k1, k2, k3, lines);
        arr[a * per_line] = (unsigned int)(b * per_line);
    }
}

// Scattered: blocks in address order, each read at a hashed element inside it
// (gpumem/chains.py, scatter_vec): block k's element points to block k+1's.
__device__ __forceinline__ unsigned long long gpumem_scatter(unsigned long long block,
        unsigned long long key, unsigned long long per_block) {
    unsigned long long z = (block + key) * 0x9E3779B97F4A7C15ull;
    z ^= z >> 29;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 32;
    return block * per_block + z % per_block;
}

extern "C" __global__ void chain_scattered(unsigned int* arr, unsigned long long blocks,
                                           unsigned long long per_block,
                                           unsigned long long key) {
    for (unsigned long long k = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         k < blocks; k += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long a = gpumem_scatter(k, key, per_block);
        unsigned long long b = gpumem_scatter(k + 1 == blocks ? 0 : k + 1, key, per_block);
        arr[a] = (unsigned int)b;
    }
}
