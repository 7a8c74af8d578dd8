// Warp reductions shared by the pass kernel's exchange (exchange.cuh) and the estimate
// (estimate.cu).
#ifndef EPSLAP_REDUCE_CUH
#define EPSLAP_REDUCE_CUH

#include "common.cuh"

// An unsigned image of a value with the same order (-0.0 is taken as +0.0, as `<` and `==` do).
__device__ __forceinline__ unsigned long long ordered(double x) {
    const unsigned long long b = (unsigned long long)__double_as_longlong(x + 0.0);
    return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}
__device__ __forceinline__ unsigned long long ordered(long long x) {
    return (unsigned long long)x ^ 0x8000000000000000ull;
}

// (val, key) of the warp's best candidate, in every lane: the lexicographic minimum of (value,
// key), which is cand_less's order (a NO_KEY candidate always carries COST_INF and the largest
// key), found with three 32-bit warp reductions (redux.sync) instead of five rounds of shuffles
// and comparisons, which cost about 700 cycles per warp reduction on an H100
// (benchmarks/studies/gpu_exchange_parts.cu). (Also for double values in an integer build: estimate.cu.)
template <typename T>
__device__ __forceinline__ void warp_best(T& v, unsigned& k) {
    const unsigned long long o = ordered(v);
    const unsigned hi = (unsigned)(o >> 32), lo = (unsigned)o;
    const unsigned mhi = __reduce_min_sync(FULL_MASK, hi);
    const unsigned mlo = __reduce_min_sync(FULL_MASK, hi == mhi ? lo : 0xffffffffu);
    const bool at_min = hi == mhi && lo == mlo;
    const unsigned mk = __reduce_min_sync(FULL_MASK, at_min ? k : 0xffffffffu);
    const int src = __ffs(__ballot_sync(FULL_MASK, at_min && k == mk)) - 1;
    v = __shfl_sync(FULL_MASK, v, src);
    k = mk;
}

#endif  // EPSLAP_REDUCE_CUH
