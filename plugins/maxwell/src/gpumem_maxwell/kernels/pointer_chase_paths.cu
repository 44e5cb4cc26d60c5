// gpumem-maxwell: the load paths Maxwell (GM1xx/GM2xx, sm_50/52/53) needs beyond core's
// ca/cg/nc. Appended to core's pointer_chase.cu (it uses its GPUMEM_CHASE_KERNEL macro).
//
// Maxwell unifies L1, texture and read-only caches in one array (Mei & Chu sec. 3.2):
// ld.global.ca ('ca') is L1-cached only on GPUs and drivers that allow it (GM20x honours the
// .ca operator; GM10x caches globals in L1 only for read-only data), ld.global.nc ('nc')
// takes the read-only route, and the texture path ('tex') fetches through a texture object.
//
// Toolkit: sm_50/52 are supported up to CUDA 12.x (CUDA 13 dropped them) with cupy-cuda12x.
// This file compiles for sm_75 with CUDA 13, as tests/test_kernels.py checks.

#define GPUMEM_LD_TEX(dst, tex, j) (dst) = tex1Dfetch<unsigned int>((tex), (int)(j))

GPUMEM_CHASE_KERNEL(pointer_chase_tex, cudaTextureObject_t, GPUMEM_LD_TEX)
