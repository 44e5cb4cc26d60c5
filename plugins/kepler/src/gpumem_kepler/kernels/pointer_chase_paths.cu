// gpumem-kepler: the load paths Kepler (GK1xx, sm_30/35/37) needs beyond core's ca/cg/nc.
// Appended to core's pointer_chase.cu (it uses its GPUMEM_CHASE_KERNEL macro).
//
// Texture path ('tex'): tex1Dfetch through a texture object over the linear chain (texture
// objects exist from sm_30). Kepler's read-only path ('nc', ld.global.nc = __ldg) reaches the
// same texture L1 through the load/store pipe; the tex fetch goes through the texture unit,
// the route Mei & Chu's texture-L1 dissection (sec. 3.1) took.
//
// Toolkit: a GK110 (sm_35) needs CUDA 11.x at the newest (CUDA 12 dropped sm_35/sm_37) and a
// CuPy built for it (cupy-cuda11x). With CUDA 11 the 8-byte shared-memory bank mode is set
// by the device (cuCtxSetSharedMemConfig) before smem kernels run; the mode is a context
// setting, not code. This file compiles for sm_75 with CUDA 13, as tests/test_kernels.py checks.

#define GPUMEM_LD_TEX(dst, tex, j) (dst) = tex1Dfetch<unsigned int>((tex), (int)(j))

GPUMEM_CHASE_KERNEL(pointer_chase_tex, cudaTextureObject_t, GPUMEM_LD_TEX)
