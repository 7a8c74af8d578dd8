// What the pass kernel's per-step exchange costs, piece by piece (a diagnostic of the GPU
// step latency).
//
// The exchange as it was before commit 0e95092 (warp reductions by five rounds of shuffles and
// comparisons; eps_ssp.cu's warp_best now uses redux.sync): this is what measured those rounds.
// Each variant runs ITER steps of one piece of that short-path exchange on a grid of
// BLOCKS x THREADS (all blocks co-resident: BLOCKS <= multiprocessors) and reports cycles per
// step (block 0, thread 0) and µs per step (events):
//   0 __syncthreads only
//   1 one warp reduction of (double value, 32-bit key): 5 rounds of 3 shuffles + compare
//   2 the in-block part: warp reduction, partials to shared memory, __syncthreads, warp 0's
//     reduction, result to shared memory, __syncthreads (block_best of the short path)
//   3 variant 2 plus the cross-block slot exchange through L2 (publish, poll, warp reduction):
//     the whole short path, as in the pass kernel
//   4 variant 3 without the in-block part: warp 0 of each block exchanges alone (what the
//     cross-block transport costs)
//
//   nvcc -O3 -arch=sm_90 -o /tmp/xparts benchmarks/studies/gpu_exchange_parts.cu && /tmp/xparts 32 512
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define FULL 0xffffffffu
#define NO_KEY 0xffffffffu

__device__ __forceinline__ bool less_vk(double av, unsigned ak, double bv, unsigned bk) {
    if (ak == NO_KEY) return false;
    if (bk == NO_KEY) return true;
    return av < bv || (av == bv && ak < bk);
}

__device__ __forceinline__ void warp_min(double& v, unsigned& k) {
    for (int off = 16; off > 0; off >>= 1) {
        const double ov = __shfl_xor_sync(FULL, v, off);
        const unsigned ok = __shfl_xor_sync(FULL, k, off);
        if (less_vk(ov, ok, v, k)) { v = ov; k = ok; }
    }
}

struct __align__(16) VK { double v; unsigned k; unsigned pad; };

__device__ __forceinline__ void st_pair(unsigned* p, unsigned a, unsigned b, unsigned c, unsigned d) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

__device__ __forceinline__ uint4 ld_pair(const unsigned* p) {
    uint4 r;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p) : "memory");
    return r;
}

// slots: (2, gridDim.x, 8) words: (val lo, seq, val hi, seq), (key, seq, 0, seq)
__device__ __forceinline__ void cross(double& v, unsigned& k, unsigned* slots, unsigned seq, int parity) {
    const int lane = threadIdx.x & 31;
    unsigned* buf = slots + parity * gridDim.x * 8;
    const unsigned long long b = (unsigned long long)__double_as_longlong(v);
    if (lane == 0) {
        st_pair(buf + 8 * blockIdx.x, (unsigned)b, seq, (unsigned)(b >> 32), seq);
        st_pair(buf + 8 * blockIdx.x + 4, k, seq, 0u, seq);
    }
    double rv = 0.0; unsigned rk = NO_KEY;
    if ((unsigned)lane < gridDim.x) {
        uint4 a, c;
        do { a = ld_pair(buf + 8 * lane); c = ld_pair(buf + 8 * lane + 4); }
        while (a.y != seq || a.w != seq || c.y != seq || c.w != seq);
        rv = __longlong_as_double(((long long)a.z << 32) | a.x); rk = c.x;
    }
    warp_min(rv, rk);
    v = rv; k = rk;
}

__global__ void __launch_bounds__(1024) parts(int variant, int iters, unsigned* slots,
                                              double* sink, long long* cycles) {
    __shared__ VK part[2][33];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0.0;
    const long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        const unsigned h = (g * 2654435761u) ^ ((unsigned)it * 40503u + 12345u);
        double v = (double)((h >> 7) % 1000u);
        unsigned k = g;
        const int p = it & 1;
        if (variant == 0) {
            __syncthreads();
        } else if (variant == 1) {
            warp_min(v, k);
        } else if (variant == 4) {
            if (warp == 0) { warp_min(v, k); cross(v, k, slots, (unsigned)it + 1u, p); }
        } else {
            warp_min(v, k);
            if (lane == 0) { part[p][warp].v = v; part[p][warp].k = k; }
            __syncthreads();
            if (warp == 0) {
                v = lane < warps ? part[p][lane].v : 0.0;
                k = lane < warps ? part[p][lane].k : NO_KEY;
                warp_min(v, k);
                if (variant == 3) cross(v, k, slots, (unsigned)it + 1u, p);
                if (lane == 0) { part[p][32].v = v; part[p][32].k = k; }
            }
            __syncthreads();
            v = part[p][32].v; k = part[p][32].k;
        }
        acc += v + (double)k;
    }
    const long long t1 = clock64();
    if (g == 0) cycles[0] = t1 - t0;
    if (acc == -1.0) sink[g] = acc;   // keeps the work alive
}

int main(int argc, char** argv) {
    const int blocks = argc > 1 ? atoi(argv[1]) : 32, threads = argc > 2 ? atoi(argv[2]) : 512;
    const int iters = 20000;
    unsigned* slots; double* sink; long long* cyc;
    cudaMalloc(&slots, 2 * blocks * 8 * sizeof(unsigned));
    cudaMalloc(&sink, blocks * threads * sizeof(double));
    cudaMalloc(&cyc, sizeof(long long));
    cudaEvent_t a, b;
    cudaEventCreate(&a); cudaEventCreate(&b);
    const char* names[] = {"__syncthreads only", "one warp reduction", "in-block part (short path)",
                           "whole short path (in-block + L2 slots)", "L2 slots alone (warp 0)"};
    printf("| %d x %d: variant | cycles / step | us / step |\n|---|---|---|\n", blocks, threads);
    for (int variant = 0; variant < 5; ++variant) {
        float best = 1e30f; long long c = 0;
        for (int rep = 0; rep < 3; ++rep) {
            cudaMemset(slots, 0, 2 * blocks * 8 * sizeof(unsigned));
            cudaEventRecord(a);
            parts<<<blocks, threads>>>(variant, iters, slots, sink, cyc);
            cudaEventRecord(b);
            cudaEventSynchronize(b);
            cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess) { printf("error: %s\n", cudaGetErrorString(e)); return 1; }
            float ms; cudaEventElapsedTime(&ms, a, b);
            if (ms < best) { best = ms; cudaMemcpy(&c, cyc, sizeof(c), cudaMemcpyDeviceToHost); }
        }
        printf("| %s | %.0f | %.3f |\n", names[variant], (double)c / iters, 1000.0 * best / iters);
    }
    return 0;
}
