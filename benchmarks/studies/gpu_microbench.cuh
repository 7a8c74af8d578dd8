// Helpers shared by the standalone CUDA microbenchmarks of the GPU step latency (gpu_step_floor.cu,
// gpu_placement.cu): error checks, strong accesses to global memory, the warp minimum of
// (value, key) as eps_ssp.cu's warp_best computes it, and one block's (value, key) slot.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("CUDA error %s at line %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)
#define FULL 0xffffffffu

__device__ __forceinline__ unsigned smid() { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); return s; }

__device__ __forceinline__ void st_vol(unsigned* p, unsigned x) { asm volatile("st.volatile.global.u32 [%0], %1;" :: "l"(p), "r"(x) : "memory"); }
__device__ __forceinline__ unsigned ld_vol(const unsigned* p) { unsigned x; asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(x) : "l"(p) : "memory"); return x; }
__device__ __forceinline__ void st_v4(unsigned* p, unsigned a, unsigned b, unsigned c, unsigned d) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
__device__ __forceinline__ uint4 ld_v4(const unsigned* p) {
    uint4 r;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p) : "memory");
    return r;
}

__device__ __forceinline__ unsigned long long ordered(double x) {
    const unsigned long long b = (unsigned long long)__double_as_longlong(x + 0.0);
    return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}

// The lexicographic minimum of (value, key) over the warp, in every lane (as eps_ssp.cu's
// warp_best). With -DFAST_MIN, a shortcut tried for warp_best (faster here, not in solves, so not
// taken: docs/design-notes.md, 2026-11-24):
// the low word, then the key, are reduced only while more than one lane is still at the minimum
// (a ballot says so).
__device__ __forceinline__ void warp_min(double& v, unsigned& k) {
    const unsigned long long o = ordered(v);
    const unsigned hi = (unsigned)(o >> 32), lo = (unsigned)o;
    const unsigned mhi = __reduce_min_sync(FULL, hi);
#ifdef FAST_MIN
    bool at = hi == mhi;
    unsigned lanes = __ballot_sync(FULL, at);
    if (lanes & (lanes - 1)) {
        const unsigned mlo = __reduce_min_sync(FULL, at ? lo : FULL);
        at = at && lo == mlo;
        lanes = __ballot_sync(FULL, at);
        if (lanes & (lanes - 1)) {
            const unsigned mk = __reduce_min_sync(FULL, at ? k : FULL);
            lanes = __ballot_sync(FULL, at && k == mk);
        }
    }
    const int s = __ffs(lanes) - 1;
    v = __shfl_sync(FULL, v, s);
    k = __shfl_sync(FULL, k, s);
#else
    const unsigned mlo = __reduce_min_sync(FULL, hi == mhi ? lo : FULL);
    const bool at = hi == mhi && lo == mlo;
    const unsigned mk = __reduce_min_sync(FULL, at ? k : FULL);
    const int src = __ffs(__ballot_sync(FULL, at && k == mk)) - 1;
    v = __shfl_sync(FULL, v, src);
    k = mk;
#endif
}

struct __align__(16) VK { double v; unsigned k; unsigned pad; };

// One block's (value, key) of step `seq` in its slot: two 16-byte quads of (data, seq) word pairs,
// so that a poller that finds seq in all four flags holds both (as eps_ssp.cu's slots, shorter).
__device__ __forceinline__ void publish_vk(unsigned* slot, unsigned seq, double v, unsigned k) {
    const unsigned long long b = (unsigned long long)__double_as_longlong(v);
    st_v4(slot, (unsigned)b, seq, (unsigned)(b >> 32), seq);
    st_v4(slot + 4, k, seq, 0u, seq);
}
__device__ __forceinline__ void poll_vk(const unsigned* slot, unsigned seq, double& v, unsigned& k) {
    uint4 a, c;
    do { a = ld_v4(slot); c = ld_v4(slot + 4); } while (a.y != seq || a.w != seq || c.y != seq || c.w != seq);
    v = __longlong_as_double(((long long)a.z << 32) | a.x);
    k = c.x;
}

// The first half of a block's reduction: every warp's minimum into part[warp], a barrier, then
// warp 0's lanes hold the block's minimum (the other warps keep their own warp's).
__device__ __forceinline__ void block_min_to_warp0(double& v, unsigned& k, VK* part) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    warp_min(v, k);
    if (lane == 0) { part[warp].v = v; part[warp].k = k; }
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? part[lane].v : 1e300;
        k = lane < warps ? part[lane].k : FULL;
        warp_min(v, k);
    }
}
