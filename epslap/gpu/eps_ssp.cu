// ε-pricing successive shortest paths on the GPU: device-resident passes and estimation sweeps.
//
// Guthe & Thuerck, "Algorithm 1015", ACM TOMS 47(2), 2021, doi:10.1145/3442348 (ALGORITHM.md §1–4).
// The published code launches one kernel and synchronises the host once per scanned row; here a
// persistent cooperative grid runs a whole pass (every augmentation) on the device, with one
// grid-wide barrier per Dijkstra step, and the host is synchronised once per pass.
//
// Launch: grid = one block per multiprocessor (all co-resident: cooperative launch), block =
// THREADS threads. Thread g = blockIdx.x * blockDim.x + threadIdx.x owns columns g, g + G·T, …
// Every block reduces all block results itself after the barrier, so all blocks agree on the
// argmin without a second barrier. Prepended by the host: typedefs cost_t (double or long long),
// the constant COST_INF, and the cost source's `cost_fn(const CostArgs&, i, j)`.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#ifndef INFINITY  // NVRTC compiles without the C math headers
#define INFINITY __longlong_as_double(0x7ff0000000000000LL)
#endif

#ifndef THREADS  // set by the host from the problem size (128, 256 or 512)
#define THREADS 512
#endif
#define WARPS (THREADS / 32)

// Data shared between blocks inside one launch (v, d, pred, owner, col_open, the reduction
// slots) is accessed through volatile pointers: never kept in registers across a barrier and
// never served from a multiprocessor's (non-coherent) L1. LDG / STG mark those accesses.
#define LDG(x) (x)
#define STG(x, y) ((x) = (y))

struct CostArgs {
    const void* p[4];
    double s[4];
    long long k[4];
    long long n1, n2;
};

// The cost source's arguments travel as plain kernel parameters and are gathered here.
#define COST_PARAMS const void* p0, const void* p1, const void* p2, const void* p3, \
    double s0, double s1, double s2, double s3, long long k0, long long k1, long long k2, \
    long long k3, long long n1_, long long n2_
#define COST_BUILD CostArgs a; a.p[0] = p0; a.p[1] = p1; a.p[2] = p2; a.p[3] = p3; \
    a.s[0] = s0; a.s[1] = s1; a.s[2] = s2; a.s[3] = s3; a.k[0] = k0; a.k[1] = k1; \
    a.k[2] = k2; a.k[3] = k3; a.n1 = n1_; a.n2 = n2_;

// ---- the cost source, prepended by the host: __device__ cost_t cost_fn(const CostArgs&, i, j)
// ---- virtual rows (i >= n1) cost 0.
__device__ __forceinline__ cost_t cost_at(const CostArgs& a, long long i, long long j) {
    return i < a.n1 ? cost_fn(a, i, j) : (cost_t)0;
}

// ---- argmin with the tie rule: smaller value; among equals an unassigned column; then the
// ---- lowest index. idx < 0 means "none".
// own, vj, cij: the candidate column's owner row, its price and c[own][idx], filled by the
// proposing thread so that the next Dijkstra step needs no dependent global loads.
struct Cand { cost_t val; int is_free; long long idx; long long own; cost_t vj; cost_t cij; };

__device__ __forceinline__ bool better(const Cand& a, const Cand& b) {
    if (a.idx < 0) return false;
    if (b.idx < 0) return true;
    if (a.val != b.val) return a.val < b.val;
    if (a.is_free != b.is_free) return a.is_free > b.is_free;
    return a.idx < b.idx;
}

__device__ __forceinline__ Cand shfl_down(const Cand& c, int off) {
    Cand o;
    o.val = __shfl_down_sync(0xffffffffu, c.val, off);
    o.is_free = __shfl_down_sync(0xffffffffu, c.is_free, off);
    o.idx = __shfl_down_sync(0xffffffffu, c.idx, off);
    o.own = __shfl_down_sync(0xffffffffu, c.own, off);
    o.vj = __shfl_down_sync(0xffffffffu, c.vj, off);
    o.cij = __shfl_down_sync(0xffffffffu, c.cij, off);
    return o;
}

__device__ Cand block_argmin(Cand c, Cand* sh) {
    for (int off = 16; off > 0; off >>= 1) { Cand o = shfl_down(c, off); if (better(o, c)) c = o; }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();                      // sh may still be read from the previous call
    if (lane == 0) sh[warp] = c;
    __syncthreads();
    if (warp == 0) {
        c = lane < WARPS ? sh[lane] : Cand{(cost_t)0, 0, -1, -1, (cost_t)0, (cost_t)0};
        for (int off = 16; off > 0; off >>= 1) { Cand o = shfl_down(c, off); if (better(o, c)) c = o; }
        if (lane == 0) sh[WARPS] = c;
    }
    __syncthreads();
    return sh[WARPS];
}

// Grid-wide argmin: every block ends with the same winner. `slots` holds 2·gridDim.x entries,
// used alternately (`parity`) so that a fast block never overwrites results a slow block reads.
__device__ Cand grid_argmin(cg::grid_group& grid, const CostArgs& a, Cand c, Cand* sh,
                            volatile Cand* slots, int& parity) {
    if (c.idx >= 0 && c.own >= 0) c.cij = cost_at(a, c.own, c.idx);
    Cand b = block_argmin(c, sh);
    volatile Cand* mine = slots + parity * gridDim.x;
    if (threadIdx.x == 0) {
        volatile Cand* m = mine + blockIdx.x;
        STG(m->val, b.val); STG(m->is_free, b.is_free); STG(m->idx, b.idx);
        STG(m->own, b.own); STG(m->vj, b.vj); STG(m->cij, b.cij);
    }
    grid.sync();
    Cand r{(cost_t)0, 0, -1, -1, (cost_t)0, (cost_t)0};
    for (unsigned t = threadIdx.x; t < gridDim.x; t += blockDim.x) {
        Cand o{LDG(mine[t].val), LDG(mine[t].is_free), LDG(mine[t].idx), LDG(mine[t].own),
               LDG(mine[t].vj), LDG(mine[t].cij)};
        if (better(o, r)) r = o;
    }
    parity ^= 1;
    return block_argmin(r, sh);
}

// ---- one pass: every real row in perm order (reversed when `reverse`), then every virtual row.
// d, pred, col_open (all 1 on entry), owner, row_col: (n2,) device arrays, reset by the host.
// out_f64[0..2] = rows evaluated, Σ(mn - d_j), Σ ε; out_i64[0] = status (0 ok, 1 infeasible).
extern "C" __global__ void __launch_bounds__(THREADS)
eps_pass(COST_PARAMS, const long long* perm, int reverse, cost_t eps, volatile cost_t* v,
         volatile cost_t* d, volatile long long* pred, volatile unsigned char* col_open,
         volatile long long* owner, long long* row_col, volatile long long* closed_list,
         volatile Cand* slots, double* out_f64, long long* out_i64,
         volatile long long* progress)
{
    COST_BUILD
    cg::grid_group grid = cg::this_grid();
    __shared__ Cand sh[WARPS + 1];
    const long long n1 = a.n1, n2 = a.n2;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
    int parity = 0;
    double rows_eval = 0.0, total_d = 0.0, total_eps = 0.0;
    for (long long k = 0; k < n2; ++k) {
        const long long f = k < n1 ? perm[reverse ? n1 - 1 - k : k] : k;
        Cand best{(cost_t)0, 0, -1};
        for (long long j = g; j < n2; j += stride) {
            const cost_t vj = LDG(v[j]);
            const long long own = LDG(owner[j]);
            cost_t dj = cost_at(a, f, j) - vj;
            STG(d[j], dj); STG(pred[j], f);
            Cand c{dj, own < 0, j, own, vj, (cost_t)0};
            if (better(c, best)) best = c;
        }
        Cand r = grid_argmin(grid, a, best, sh, slots, parity);
        if (r.idx < 0 || !(r.val < COST_INF)) { if (leader) out_i64[0] = 1; return; }
        if (f < n1) rows_eval += 1.0;
        long long jmin = r.idx, n_closed = 1, jown = r.own;
        cost_t mn = r.val, cij = r.cij, vj = r.vj;
        if (leader) closed_list[0] = jmin;
        // The owner closes jmin only if the search goes on. A free (terminal) column must not be
        // closed: block 0 reopens every closed column below with no grid barrier in between, and
        // a late close would leave the newly assigned column hidden for the rest of the pass.
        if (jown >= 0 && jmin % stride == g) STG(col_open[jmin], (unsigned char)0);
        while (jown >= 0) {
            const long long i = jown;
            best = Cand{(cost_t)0, 0, -1, -1, (cost_t)0, (cost_t)0};
            for (long long j = g; j < n2; j += stride) {
                if (!LDG(col_open[j])) continue;
                const cost_t vjj = LDG(v[j]);
                const long long own = LDG(owner[j]);
                cost_t cand = ((cost_at(a, i, j) - cij) - (vjj - vj)) + mn;
                cost_t dj = LDG(d[j]);
                if (cand < dj) { STG(d[j], cand); STG(pred[j], i); dj = cand; }
                Cand c{dj, own < 0, j, own, vjj, (cost_t)0};
                if (better(c, best)) best = c;
            }
            r = grid_argmin(grid, a, best, sh, slots, parity);
            if (r.idx < 0 || !(r.val < COST_INF)) { if (leader) out_i64[0] = 1; return; }
            if (i < n1) rows_eval += 1.0;
            jmin = r.idx; jown = r.own; cij = r.cij; vj = r.vj;
            if (r.val > mn) mn = r.val;
            if (leader) closed_list[n_closed] = jmin;
            ++n_closed;
            if (jown >= 0 && jmin % stride == g) STG(col_open[jmin], (unsigned char)0);
        }
        // price update of the closed columns and the path flip: block 0 only, then a barrier
        if (blockIdx.x == 0) {
            __syncthreads();                       // closed_list written by the leader
            for (long long t = threadIdx.x; t < n_closed; t += blockDim.x) {
                const long long j = closed_list[t];
                STG(v[j], LDG(v[j]) - ((mn - LDG(d[j])) + eps));
                STG(col_open[j], (unsigned char)1);
            }
            if (leader) {
                // Σ(mn - d_j) in closed order, exactly as the CPU backend sums it
                for (long long t = 0; t < n_closed; ++t) total_d += (double)(mn - LDG(d[closed_list[t]]));
                total_eps += (double)eps * (double)n_closed;
                long long j = jmin;
                while (true) {
                    const long long i = LDG(pred[j]);
                    STG(owner[j], i);
                    const long long prev = row_col[i];
                    row_col[i] = j;
                    if (i == f) break;
                    j = prev;
                }
                progress[0] = k + 1;
                progress[1] = (long long)rows_eval;
                progress[3] = progress[2];  // one snapshot of the stop request for every block
            }
        }
        grid.sync();
        if (progress[3] != 0) { if (leader) out_i64[0] = 2; return; }   // host asked to stop
    }
    if (leader) { out_f64[0] = rows_eval; out_f64[1] = total_d; out_f64[2] = total_eps; }
}

// ---- estimation sweeps (ALGORITHM.md §2), all statistics in double -----------------------
// mode 0 (stage A, forward): rmin, greedy raw pick, per-column best1/best2 of c - rmin.
// mode 1 (stage B, reverse): min, second order statistic, greedy pick of t = c - v.
// mode 2 (stages C/E): greedy over perm of t = c - v; pick[r], sums.
// mode 3 (stage D): walk perm backwards lowering held columns' v to tie with the row's pick.
// sums[0..1]: mode 0: LB_A, UB_id, G_A; mode 1: LB_B, UB_B; mode 2: UB, LB.
// out_i64[0]: 0 ok, 1 infeasible (a row with no finite entry), 3 NaN or -inf seen.
struct Pair { double v1; double v2; long long idx; double pv; long long pidx; };

__device__ __forceinline__ void pair_merge(Pair& a, const Pair& b) {
    // two smallest values (duplicates count) and the lowest-index minimum of the pick field
    if (b.v1 < a.v1) { a.v2 = fmin(a.v1, b.v2); a.v1 = b.v1; }
    else a.v2 = fmin(a.v2, b.v1);
    if (b.pidx >= 0 && (a.pidx < 0 || b.pv < a.pv || (b.pv == a.pv && b.pidx < a.pidx))) {
        a.pv = b.pv; a.pidx = b.pidx;
    }
}

__device__ Pair block_pair(Pair p, Pair* sh) {
    for (int off = 16; off > 0; off >>= 1) {
        Pair o;
        o.v1 = __shfl_down_sync(0xffffffffu, p.v1, off);
        o.v2 = __shfl_down_sync(0xffffffffu, p.v2, off);
        o.idx = 0;
        o.pv = __shfl_down_sync(0xffffffffu, p.pv, off);
        o.pidx = __shfl_down_sync(0xffffffffu, p.pidx, off);
        pair_merge(p, o);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = p;
    __syncthreads();
    if (warp == 0) {
        p = lane < WARPS ? sh[lane] : Pair{INFINITY, INFINITY, 0, INFINITY, -1};
        for (int off = 16; off > 0; off >>= 1) {
            Pair o;
            o.v1 = __shfl_down_sync(0xffffffffu, p.v1, off);
            o.v2 = __shfl_down_sync(0xffffffffu, p.v2, off);
            o.idx = 0;
            o.pv = __shfl_down_sync(0xffffffffu, p.pv, off);
            o.pidx = __shfl_down_sync(0xffffffffu, p.pidx, off);
            pair_merge(p, o);
        }
        if (lane == 0) sh[WARPS] = p;
    }
    __syncthreads();
    return sh[WARPS];
}

__device__ Pair grid_pair(cg::grid_group& grid, Pair p, Pair* sh, volatile Pair* slots,
                          int& parity) {
    Pair b = block_pair(p, sh);
    volatile Pair* mine = slots + parity * gridDim.x;
    if (threadIdx.x == 0) {
        volatile Pair* m = mine + blockIdx.x;
        STG(m->v1, b.v1); STG(m->v2, b.v2); STG(m->pv, b.pv); STG(m->pidx, b.pidx);
    }
    grid.sync();
    Pair r{INFINITY, INFINITY, 0, INFINITY, -1};
    for (unsigned t = threadIdx.x; t < gridDim.x; t += blockDim.x) {
        Pair o{LDG(mine[t].v1), LDG(mine[t].v2), 0, LDG(mine[t].pv), LDG(mine[t].pidx)};
        pair_merge(r, o);
    }
    parity ^= 1;
    return block_pair(r, sh);
}

extern "C" __global__ void __launch_bounds__(THREADS)
estimate_sweep(COST_PARAMS, int mode, const long long* perm, volatile double* v,
               double* best1, double* best2, unsigned char* flag, long long* pick,
               double* regret, volatile Pair* slots, double* sums, long long* out_i64)
{
    COST_BUILD
    cg::grid_group grid = cg::this_grid();
    __shared__ Pair sh[WARPS + 1];
    const long long n1 = a.n1, n2 = a.n2;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
    int parity = 0;
    double acc0 = 0.0, acc1 = 0.0, acc2 = 0.0;
    if (mode == 3) {
        for (long long k = n1 - 1; k >= 0; --k) {
            const long long r = perm[k], q = pick[r];
            grid.sync();                              // v[q] final for this step everywhere
            const double ref = (double)cost_at(a, r, q) - LDG(v[q]);
            grid.sync();                              // every thread read v[q] before any write
            if (q % stride == g) flag[q] = 0;         // release the row's pick
            if (!isfinite(ref)) continue;
            for (long long j = g; j < n2; j += stride) {
                if (j == q || !flag[j]) continue;
                const double c = (double)cost_at(a, r, j);
                if (c - LDG(v[j]) < ref) STG(v[j], c - ref);
            }
        }
        return;
    }
    for (long long k = 0; k < n1; ++k) {
        const long long r = mode == 0 ? k : (mode == 1 ? n1 - 1 - k : perm[k]);
        Pair p{INFINITY, INFINITY, 0, INFINITY, -1};
        bool bad = false;
        for (long long j = g; j < n2; j += stride) {
            double c = (double)cost_at(a, r, j);
            if (mode == 0 && (c != c || c == -INFINITY)) bad = true;
            const double t = mode == 0 ? c : c - LDG(v[j]);
            Pair o{t, INFINITY, 0, flag[j] ? INFINITY : t, flag[j] ? -1 : j};
            pair_merge(p, o);
        }
        if (bad) out_i64[0] = 3;
        Pair m = grid_pair(grid, p, sh, slots, parity);
        if (m.pidx < 0) { if (leader) out_i64[0] = 1; return; }
        const long long q = m.pidx;
        if (q % stride == g) flag[q] = 1;
        if (mode == 0) {
            if (!(m.v1 < INFINITY)) { if (leader) out_i64[0] = 1; return; }
            for (long long j = g; j < n2; j += stride) {
                const double red = (double)cost_at(a, r, j) - m.v1;
                if (red < best1[j]) { best2[j] = best1[j]; best1[j] = red; }
                else if (red < best2[j]) best2[j] = red;
            }
            if (leader) { acc0 += m.v1; acc1 += (double)cost_at(a, r, r); acc2 += m.pv; }
        } else if (mode == 1) {
            if (leader) { regret[r] = m.v2 - m.v1; acc0 += m.v1 + LDG(v[q]); acc1 += (double)cost_at(a, r, q); }
        } else {
            if (leader) { pick[r] = q; acc0 += (double)cost_at(a, r, q); acc1 += m.v1 + LDG(v[q]); }
        }
    }
    if (leader) { sums[0] = acc0; sums[1] = acc1; sums[2] = acc2; }
}

// out[i] = c[i][row_to_col[i]] for the n real rows (one thread per row).
extern "C" __global__ void gather_costs(COST_PARAMS, const long long* row_to_col, cost_t* out,
                                        long long n)
{
    COST_BUILD
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = cost_at(a, i, row_to_col[i]);
}

// out (n1, n2) = the cost matrix, materialised on the device (benchmarks: dense-on-device runs).
extern "C" __global__ void fill_dense(COST_PARAMS, cost_t* out)
{
    COST_BUILD
    const long long total = a.n1 * a.n2;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x)
        out[t] = cost_fn(a, t / a.n2, t % a.n2);
}

// Dual certificate on the device: worst[0] = max over finite pairs of (u_i + v_j - c_ij) / scale,
// with u_i = c[i][row_col[i]] - v[row_col[i]] (rows < n1). Thread per (i, j), grid-stride.
extern "C" __global__ void check_duals(COST_PARAMS, const long long* row_col, const cost_t* v,
                                       double* worst)
{
    COST_BUILD
    const long long total = a.n1 * a.n2;
    double w = 0.0;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        const long long i = t / a.n2, j = t % a.n2, k = row_col[i];
        const double cij = (double)cost_fn(a, i, j);
        if (!(cij < (double)COST_INF)) continue;
        const double u = (double)cost_fn(a, i, k) - (double)v[k];
        const double viol = (u + (double)v[j]) - cij;
        if (viol > w) w = viol;
    }
    for (int off = 16; off > 0; off >>= 1) w = fmax(w, __shfl_down_sync(0xffffffffu, w, off));
    if ((threadIdx.x & 31) == 0 && w > 0.0)
        atomicMax((unsigned long long*)worst, (unsigned long long)__double_as_longlong(w));
}

// Self-test of the grid barrier (tests and diagnostics): after each barrier every block must see
// every other block's write of the same iteration. errors[0] counts violations.
extern "C" __global__ void barrier_selftest(long long* counters, unsigned long long* errors,
                                            int iterations)
{
    cg::grid_group grid = cg::this_grid();
    for (int it = 1; it <= iterations; ++it) {
        if (threadIdx.x == 0) STG(counters[blockIdx.x], (long long)it);
        grid.sync();
        for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
            if (LDG(counters[b]) != it) atomicAdd(errors, 1ULL);
        grid.sync();
    }
}
