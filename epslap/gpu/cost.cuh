// The cost source's costs as the kernels read them: cost_at(a, i, j), virtual rows included.
//
// The cost source comes in through the generated header epslap_cost.cuh (written by the host for
// each cost code, into a directory on the include path): it defines
// `__device__ cost_t cost_fn(const CostArgs&, long long i, long long j)` and, for rows from a
// device row cache, EXTERNAL_ROWS and `row_slot(a, i)` (epslap/gpu/rowcache.py).
#ifndef EPSLAP_COST_CUH
#define EPSLAP_COST_CUH

#include "common.cuh"
#include "epslap_cost.cuh"

// ---- virtual rows (i >= n1) cost 0.
// A device cost is evaluated unconditionally, at row n1 - 1 for a virtual row, and the result
// discarded there: behind a branch per column (`i < n1 ? cost_fn : 0`), the compiler gave each
// column of a scan's batch its own branch region, so one column's loads and arithmetic finished
// before the next column's loads were issued. Rows from a device row cache (EXTERNAL_ROWS) keep
// the branch: only the rows present there may be read.
__device__ __forceinline__ cost_t cost_at(const CostArgs& a, long long i, long long j) {
#ifdef EXTERNAL_ROWS
    return i < a.n1 ? cost_fn(a, i, j) : (cost_t)0;
#else
    const cost_t c = cost_fn(a, i < a.n1 ? i : a.n1 - 1, j);
    return i < a.n1 ? c : (cost_t)0;
#endif
}

#endif  // EPSLAP_COST_CUH
