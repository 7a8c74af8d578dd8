// epslap.verify's scan of every cost on the device (epslap/gpu/verify.py): the check of
// epslap/certificate.py, pair by pair, with the costs computed by the cost source's device form
// (or read from a matrix on the device). A thread takes a row, every column in turn: a warp's
// 32 rows read the same column j at once, so v[j] and the column's operands of cost_fn are one
// load for the warp (a block per row, its threads over the columns, read each column's data
// once per row: 7.5 s against 6.0 s for a million points on an H200). Each block writes its
// own result; the host reduces them (no atomics, any sign).
#include "cost.cuh"

#define VBLOCK 256
// flags, as epslap/cpu/verify_rows.py's SAW_*: a NaN cost, a -inf cost (after the sign), a
// cost too large for the arithmetic below (the host's check takes the problem then)
#define SAW_NAN 1
#define SAW_NEG_INF 2
#define SAW_HUGE 4

template <typename T, typename Op>
__device__ __forceinline__ T block_reduce(T x, Op op, T* sh) {
    for (int off = 16; off > 0; off >>= 1) x = op(x, __shfl_down_sync(FULL_MASK, x, off));
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = x;
    __syncthreads();
    if (threadIdx.x < 32) {
        x = threadIdx.x < VBLOCK / 32 ? sh[threadIdx.x] : sh[0];
        for (int off = 16; off > 0; off >>= 1) x = op(x, __shfl_down_sync(FULL_MASK, x, off));
    }
    return x;  // thread 0 holds the block's result
}

struct MaxOp { template <typename T> __device__ T operator()(T a, T b) const { return a > b ? a : b; } };
struct OrOp { __device__ int operator()(int a, int b) const { return a | b; } };

#if COST_INTEGRAL
// integer costs, integer duals: the largest sign * (u_i + v_j - c_ij), exactly (the host bounds
// |u| and |v| below 2**61; a cost of magnitude 2**61 or more is flagged instead of used)
extern "C" __global__ void __launch_bounds__(VBLOCK) verify_scan(
    COST_PARAMS, const long long* u, const long long* v, long long sign, double huge,
    long long* out_worst, int* out_flags)
{
    COST_BUILD
    __shared__ long long sh[VBLOCK / 32];
    __shared__ int shf[VBLOCK / 32];
    long long w = -(1LL << 62) * 2;  // below every excess the bounds allow
    int seen = 0;
    for (long long i = (long long)blockIdx.x * VBLOCK + threadIdx.x; i < a.n1;
         i += (long long)gridDim.x * VBLOCK) {
        const long long ui = u[i];
        for (long long j = 0; j < a.n2; j++) {
            const long long c = (long long)cost_fn(a, i, j);
            if (fabs((double)c) >= huge) { seen |= SAW_HUGE; continue; }
            const long long red = sign * ((ui + v[j]) - c);
            w = red > w ? red : w;
        }
    }
    w = block_reduce(w, MaxOp(), sh);
    seen = block_reduce(seen, OrOp(), shf);
    if (threadIdx.x == 0) { out_worst[blockIdx.x] = w; out_flags[blockIdx.x] = seen; }
}
#else
// (u + v) - c accurate to a unit in the last place (epslap/_exact.py: TwoSum on each sum; the
// module is compiled without fused multiply-add, so each operation rounds as on the CPU)
__device__ __forceinline__ double exact_excess(double u, double v, double c) {
    const double s = u + v;
    const double bb = s - u;
    const double e1 = (u - (s - bb)) + (v - bb);
    const double d = s - c;
    const double dd = d - s;
    const double e2 = (s - (d - dd)) + (-c - dd);
    return d + (e1 + e2);
}

// float costs: the largest excess u_i + v_j - c_ij over finite pairs (from 0) and the largest
// excess less its tolerance rtol * (|c| + au_i + av_j) (from -1), au and av the duals'
// magnitudes in canonical position
extern "C" __global__ void __launch_bounds__(VBLOCK) verify_scan(
    COST_PARAMS, const double* u, const double* v, const double* au, const double* av,
    double sign, double rtol, double huge, double* out_worst, double* out_over, int* out_flags)
{
    COST_BUILD
    __shared__ double sh[VBLOCK / 32];
    __shared__ int shf[VBLOCK / 32];
    double w = 0.0, x = -1.0;
    int seen = 0;
    for (long long i = (long long)blockIdx.x * VBLOCK + threadIdx.x; i < a.n1;
         i += (long long)gridDim.x * VBLOCK) {
        const double ui = u[i], ai = au[i];
        for (long long j = 0; j < a.n2; j++) {
            const double c = sign * (double)cost_fn(a, i, j);
            if (c != c) { seen |= SAW_NAN; continue; }
            if (c == INFINITY) continue;
            if (c == -INFINITY) { seen |= SAW_NEG_INF; continue; }
            const double ac = fabs(c);
            if (ac >= huge) { seen |= SAW_HUGE; continue; }
            const double red = exact_excess(ui, v[j], c);
            w = red > w ? red : w;
            const double over = red - rtol * ((ac + ai) + av[j]);
            x = over > x ? over : x;
        }
    }
    w = block_reduce(w, MaxOp(), sh);
    x = block_reduce(x, MaxOp(), sh);
    seen = block_reduce(seen, OrOp(), shf);
    if (threadIdx.x == 0) {
        out_worst[blockIdx.x] = w;
        out_over[blockIdx.x] = x;
        out_flags[blockIdx.x] = seen;
    }
}
#endif

// the costs of the pairs (r[t], k[t])
extern "C" __global__ void pair_costs(COST_PARAMS, const long long* r, const long long* k,
                                      long long m, cost_t* out)
{
    COST_BUILD
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < m;
         t += (long long)gridDim.x * blockDim.x)
        out[t] = cost_fn(a, r[t], k[t]);
}
