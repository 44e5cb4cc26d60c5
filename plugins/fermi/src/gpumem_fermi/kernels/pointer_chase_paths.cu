// gpumem-fermi: the load paths Fermi (GF1xx, sm_20/21) needs beyond core's ca/cg.
// Appended to core's pointer_chase.cu (it uses its GPUMEM_CHASE_KERNEL macro).
//
// Fermi has no read-only path (ld.global.nc is sm_35+) and no texture objects (sm_30+): its
// texture L1 (12 KB, 4 sets x 96 ways of 32-B lines, Mei & Chu sec. 3.1) is reached through a
// texture *reference* bound to the chain. Toolkit: sm_20 was dropped in CUDA 9, so a real
// Fermi needs CUDA <= 8.0, whose toolchain compiles the GPUMEM_FERMI_TEXREF variant below (no
// current CuPy supports CUDA 8; drive it through the authors'-style host code or an old
// CuPy). Texture references were removed in CUDA 12, so with a current toolkit (CUDA 13,
// sm_75+, as tests/test_kernels.py compiles it) the same kernel is built on a texture object:
// the code path that lets the fermi plugin's texture chase run on any newer GPU.
//
// Loads on Fermi cache in L1 by default (-dlcm=ca); core's pointer_chase_ca uses the explicit
// .ca operator, pointer_chase_cg bypasses L1 (.cg), as the paper's L2 experiments did.

#if defined(GPUMEM_FERMI_TEXREF)
texture<unsigned int, 1, cudaReadModeElementType> gpumem_chain_texref;
#define GPUMEM_LD_TEXREF(dst, unused, j) (dst) = tex1Dfetch(gpumem_chain_texref, (int)(j))
GPUMEM_CHASE_KERNEL(pointer_chase_tex, int, GPUMEM_LD_TEXREF)
#else
#define GPUMEM_LD_TEX(dst, tex, j) (dst) = tex1Dfetch<unsigned int>((tex), (int)(j))
GPUMEM_CHASE_KERNEL(pointer_chase_tex, cudaTextureObject_t, GPUMEM_LD_TEX)
#endif
