// gpumem bulk-copy (TMA) kernel (sm_90+): the "bulk_copy" probe.
//
// bulk_read<S>: each block streams its share of the buffer into shared memory with 1-D bulk
// copies (cp.async.bulk ... mbarrier::complete_tx::bytes, the tensor memory accelerator's
// non-tensor mode: no tensor map needed) of `chunk` bytes, S copies in flight in S
// shared-memory stages, each with its own mbarrier. One thread issues and waits: the copy
// engine moves the data, not the threads. Chunks are dealt grid-strided (block b copies
// chunks b, b + grid, ... of the buffer's `chunks`, wrapping), `iters` per block. A word of
// every landed chunk is folded into a value the compiler cannot drop.

#ifndef GPUMEM_BULK_WAIT  // try_wait may suspend the thread until the phase completes;
#define GPUMEM_BULK_WAIT "try_wait"  // benchmarks/bulk_wait.py compares test_wait (a spin)
#endif

__device__ __forceinline__ unsigned int gpumem_smem_addr(const void* p) {
    return (unsigned int)__cvta_generic_to_shared(p);
}

template <int S>
__global__ void bulk_read(const unsigned char* __restrict__ a, unsigned long long chunks,
                          unsigned int chunk, unsigned long long iters, unsigned int* sink) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char buf[];  // S stages of `chunk` bytes
    __shared__ __align__(8) unsigned long long bar[S];
    if (threadIdx.x != 0) return;
    for (int s = 0; s < S; ++s)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(gpumem_smem_addr(bar + s))
                     : "memory");
    // make the initialised barriers visible to the copy engine (the async proxy)
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    unsigned int acc = 0;
    for (unsigned long long i = 0; i < iters + S; ++i) {
        if (i >= S) {  // wait for the copy issued S iterations ago, consume it
            const unsigned long long j = i - S;
            const int s = (int)(j % S);
            const unsigned int parity = (unsigned int)((j / S) & 1ull);
            unsigned int done = 0;
            while (!done) {
                asm volatile("{\n\t.reg .pred p;\n\t"
                             "mbarrier." GPUMEM_BULK_WAIT ".parity.shared::cta.b64 p, [%1], %2;\n\t"
                             "selp.u32 %0, 1, 0, p;\n\t}"
                             : "=r"(done) : "r"(gpumem_smem_addr(bar + s)), "r"(parity)
                             : "memory");
            }
            acc ^= *(volatile unsigned int*)(buf + (unsigned long long)s * chunk +
                                             ((j * 4) % chunk));
        }
        if (i < iters) {  // issue the next copy into the stage just freed
            const int s = (int)(i % S);
            const unsigned long long c = (blockIdx.x + i * gridDim.x) % chunks;
            const unsigned int b = gpumem_smem_addr(bar + s);
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         :: "r"(b), "r"(chunk) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                         "[%0], [%1], %2, [%3];"
                         :: "r"(gpumem_smem_addr(buf + (unsigned long long)s * chunk)),
                            "l"(a + c * chunk), "r"(chunk), "r"(b) : "memory");
        }
    }
    if (acc == 0x9E3779B9u) sink[0] = acc;
#endif
}
