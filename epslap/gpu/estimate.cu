// ---- estimation (docs/algorithm.md §2) on the device, all statistics in double ------------------
// Compiler options set by the host: COST_INTEGRAL, THREADS (common.cuh), LIST_K, SUB_ROWS (below);
// the cost source comes through cost.cuh.
//
// Stages A, B, C and E are greedy sweeps over the rows: each row takes the column of its
// smallest t not yet taken by an earlier row (ties: lowest index), where t = c (stage A) or
// c - v (B, C, E), and the sweep also needs each row's two smallest t over all columns.
// estimate_greedy runs a sweep with one grid-wide agreement per *fallback* row, not per row:
//  1. each warp lists one row's smallest t (up to LIST_K, in (t, column) order) — rows in
//     parallel, a chunk of rows at a time;
//  2. every block walks the chunk's rows in sweep order, each with its own copy of the taken
//     columns (a bitmap); a row takes the first untaken column of its list. All blocks take the
//     same decisions, so they need not talk.
//  3. a row whose whole list is taken ("fallback") is scanned by the whole grid, which agrees
//     on its pick through grid_pair, as every row did before.
// The lists are exact prefixes of the row's order (see build_list), so the picks, the two
// smallest values and the sums (added in row order by one thread) are those of a row-by-row
// sweep, and of the CPU's estimate.
//
// mode 0 (stage A, forward): rmin[r], greedy raw pick; estimate_colstats then takes every
//        column's two smallest c - rmin over the rows (best1, best2).
// mode 1 (stage B, reverse): regret[r] = second smallest - smallest of t = c - v; greedy pick.
// mode 2 (stages C/E): greedy over perm of t = c - v; pick[r].
// estimate_release (stage D): walk perm backwards lowering held columns' v to tie with the
//        row's pick.
// sums[0..2]: mode 0: LB_A, UB_id, G_A; mode 1: LB_B, UB_B; mode 2: UB, LB.
// out_i64[0]: STATUS_OK, STATUS_INFEASIBLE (a row with no finite entry or no column left) or
// STATUS_INVALID (NaN or -inf), the largest one seen (atomicMax: NaN is reported first).
#include "common.cuh"
#include "cost.cuh"
#include "reduce.cuh"

struct Pair { double v1; double v2; long long idx; double pv; long long pidx; };

__device__ __forceinline__ void pair_merge(Pair& a, const Pair& b) {
    // two smallest values (duplicates count) and the lowest-index minimum of the pick field
    if (b.v1 < a.v1) { a.v2 = fmin(a.v1, b.v2); a.v1 = b.v1; }
    else a.v2 = fmin(a.v2, b.v1);
    if (b.pidx >= 0 && (a.pidx < 0 || b.pv < a.pv || (b.pv == a.pv && b.pidx < a.pidx))) {
        a.pv = b.pv; a.pidx = b.pidx;
    }
}

// Fold the warp's pairs into lane 0 (shuffles down).
__device__ __forceinline__ void warp_pair(Pair& p) {
    for (int off = 16; off > 0; off >>= 1) {
        Pair o;
        o.v1 = __shfl_down_sync(0xffffffffu, p.v1, off);
        o.v2 = __shfl_down_sync(0xffffffffu, p.v2, off);
        o.idx = 0;
        o.pv = __shfl_down_sync(0xffffffffu, p.pv, off);
        o.pidx = __shfl_down_sync(0xffffffffu, p.pidx, off);
        pair_merge(p, o);
    }
}

__device__ Pair block_pair(Pair p, Pair* sh) {
    warp_pair(p);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = p;
    __syncthreads();
    if (warp == 0) {
        p = lane < WARPS ? sh[lane] : Pair{INFINITY, INFINITY, 0, INFINITY, -1};
        warp_pair(p);
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

// LIST_K (entries of a row's list: at most one per lane of the warp that walks it) and SUB_ROWS
// (rows whose lists a block copies to shared memory at once, at most 32) are set by the host,
// which sizes the dynamic shared memory from them (device_estimate.py, _GREEDY_SMEM).
#ifndef LIST_K
#define LIST_K 32
#endif
#ifndef SUB_ROWS
#define SUB_ROWS 32
#endif
#ifndef LANE_KEEP   // candidates a lane keeps of its columns while a warp lists a row
#define LANE_KEEP 8
#endif
#define LIST_LOADS 8    // columns per lane whose loads a listing warp issues together
#define NO_COL 0x7fffffffu
#define LIST_COMPLETE 0x10000   // in a list's length word: the list holds every column of the row

__device__ __forceinline__ bool ent_less(double av, unsigned ak, double bv, unsigned bk) {
    return av < bv || (av == bv && ak < bk);
}

// the sweep's value of (r, j): the raw cost (mode 0) or the reduced cost (modes 1, 2)
__device__ __forceinline__ double sweep_t(const CostArgs& a, int mode, const double* v,
                                          long long r, long long j, double& c) {
    c = (double)cost_at(a, r, j);
    return mode == 0 ? c : c - v[j];
}

__device__ __forceinline__ long long sweep_row(int mode, const long long* perm, long long n1,
                                               long long k) {
    return mode == 0 ? k : (mode == 1 ? n1 - 1 - k : perm[k]);
}

// One warp lists row r: its smallest t in (t, column) order, as long a prefix of the row's
// order as is certain. Each lane keeps the LANE_KEEP smallest of its columns (j ≡ lane mod 32);
// the warp then takes the smallest head of all lanes, LIST_K times. Once a lane that dropped
// columns has given all it kept, the next entry could be one it dropped: the list stops there
// (it still holds at least LANE_KEEP entries). NaN values are never listed (stage A reports them).
__device__ void build_list(const CostArgs& a, int mode, const double* v, long long r,
                           double* val, unsigned* col, int* len, long long* out_i64) {
    const int lane = threadIdx.x & 31;
    double kv[LANE_KEEP];
    unsigned kc[LANE_KEEP];
#pragma unroll
    for (int u = 0; u < LANE_KEEP; ++u) { kv[u] = INFINITY; kc[u] = NO_COL; }
    bool dropped = false, bad = false;
    for (long long j0 = lane; j0 < a.n2; j0 += 32 * LIST_LOADS) {
        double t_[LIST_LOADS];                         // all loads in flight before any is used
#pragma unroll
        for (int u = 0; u < LIST_LOADS; ++u) {
            const long long j = min(j0 + 32 * u, a.n2 - 1);
            double c;
            t_[u] = sweep_t(a, mode, v, r, j, c);
            if (mode == 0 && (c != c || c == -INFINITY)) bad = true;
        }
#pragma unroll
        for (int u = 0; u < LIST_LOADS; ++u) {
            const long long j = j0 + 32 * u;
            if (j >= a.n2) break;
            const double t = t_[u];
            const unsigned jc = (unsigned)j;
            if (!ent_less(t, jc, kv[LANE_KEEP - 1], kc[LANE_KEEP - 1])) { dropped = true; continue; }
            dropped |= kc[LANE_KEEP - 1] != NO_COL;
#pragma unroll
            for (int w = LANE_KEEP - 1; w > 0; --w) {  // insertion: shift the larger ones up
                if (ent_less(t, jc, kv[w - 1], kc[w - 1])) { kv[w] = kv[w - 1]; kc[w] = kc[w - 1]; }
                else if (ent_less(t, jc, kv[w], kc[w])) { kv[w] = t; kc[w] = jc; }
            }
            if (ent_less(t, jc, kv[0], kc[0])) { kv[0] = t; kc[0] = jc; }
        }
    }
    if (bad) atomicMax((unsigned long long*)out_i64, (unsigned long long)STATUS_INVALID);
    int n = 0, complete = 0;
    for (; n < LIST_K; ++n) {
        if (__any_sync(FULL_MASK, dropped && kc[0] == NO_COL)) break;  // uncertain from here
        double hv = kv[0];
        unsigned hc = kc[0];
        warp_best(hv, hc);
        if (hc == NO_COL) { complete = LIST_COMPLETE; break; }        // every column listed
        if (lane == 0) { val[n] = hv; col[n] = hc; }
        if (kc[0] == hc) {                                             // pop this lane's head
#pragma unroll
            for (int u = 0; u < LANE_KEEP - 1; ++u) { kv[u] = kv[u + 1]; kc[u] = kc[u + 1]; }
            kv[LANE_KEEP - 1] = INFINITY; kc[LANE_KEEP - 1] = NO_COL;
        }
    }
    if (lane == 0) *len = n | complete;
}

__device__ __forceinline__ bool is_taken(volatile const unsigned* bits, long long j) {
    return (bits[j >> 5] >> (j & 31)) & 1u;
}

// One greedy sweep (mode 0, 1 or 2), see the top of this file. Lists of `chunk` rows at a time
// in lval/lcol/llen (chunk * LIST_K entries). Dynamic shared memory: the sub-chunk's lists and
// picks, then (bits_in_smem) the block's bitmap of taken columns, else that bitmap is
// gbits + blockIdx.x * words in global memory.
extern "C" __global__ void __launch_bounds__(THREADS)
estimate_greedy(COST_PARAMS, int mode, const long long* perm, const double* v,
                unsigned char* flag, long long* pick, double* regret, double* rmin,
                double* lval, unsigned* lcol, int* llen, long long chunk, unsigned* gbits,
                int bits_in_smem, volatile Pair* slots, double* sums, long long* out_i64)
{
    COST_BUILD
    cg::grid_group grid = cg::this_grid();
    extern __shared__ __align__(16) unsigned char dyn[];
    double* s_val = (double*)dyn;                                   // SUB_ROWS * LIST_K
    double* s_x = s_val + SUB_ROWS * LIST_K;                        // 3 * SUB_ROWS: the sums' terms
    double* s_pv = s_x + 3 * SUB_ROWS;                              // SUB_ROWS: the pick's value
    unsigned* s_col = (unsigned*)(s_pv + SUB_ROWS);                 // SUB_ROWS * LIST_K
    int* s_len = (int*)(s_col + SUB_ROWS * LIST_K);                 // SUB_ROWS
    long long* s_q = (long long*)(s_len + SUB_ROWS);                // SUB_ROWS
    __shared__ Pair sh[WARPS + 1];
    __shared__ int s_stop;
    const long long n1 = a.n1, n2 = a.n2, words = (n2 + 31) / 32;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long gwarp = g >> 5, nwarps = stride >> 5;
    const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
    volatile unsigned* bits = bits_in_smem ? (volatile unsigned*)(s_q + SUB_ROWS)
                                           : gbits + blockIdx.x * words;
    for (long long w = threadIdx.x; w < words; w += blockDim.x) bits[w] = 0u;
    int parity = 0;
    double acc0 = 0.0, acc1 = 0.0, acc2 = 0.0;
    // A row left without a column (the same decision in every block): stage A still lists the
    // later chunks, so that a NaN or -inf there is reported first, as the CPU does.
    bool infeasible = false;
    __syncthreads();
    for (long long c0 = 0; c0 < n1; c0 += chunk) {
        const long long c_end = min(n1, c0 + chunk);
        for (long long k = c0 + gwarp; k < c_end; k += nwarps) {
            const long long at = (k - c0) * LIST_K;
            build_list(a, mode, v, sweep_row(mode, perm, n1, k), lval + at, lcol + at,
                       llen + (k - c0), out_i64);
        }
        grid.sync();                                                // the chunk's lists are out
        for (long long p0 = c0; p0 < c_end && !infeasible; p0 += SUB_ROWS) {
            const int nsub = (int)min((long long)SUB_ROWS, c_end - p0);
            for (int t = threadIdx.x; t < nsub * LIST_K; t += blockDim.x) {  // L2, not a stale L1
                s_val[t] = __ldcg(lval + (p0 - c0) * LIST_K + t);
                s_col[t] = __ldcg(lcol + (p0 - c0) * LIST_K + t);
            }
            if (threadIdx.x < nsub) s_len[threadIdx.x] = __ldcg(llen + (p0 - c0) + threadIdx.x);
            __syncthreads();
            int p = 0;
            while (p < nsub) {
                if (warp == 0) {                     // walk rows p.. until one needs the grid
                    int q = p;
                    for (; q < nsub; ++q) {
                        const int n = s_len[q] & 0xffff;
                        if (mode == 0 && !(s_val[q * LIST_K] < INFINITY)) { q = -1; break; }
                        const unsigned j = lane < n ? s_col[q * LIST_K + lane] : 0u;
                        const unsigned free_lanes = __ballot_sync(FULL_MASK, lane < n && !is_taken(bits, j));
                        if (free_lanes == 0) {
                            if (s_len[q] & LIST_COMPLETE) q = -1;          // no column left
                            break;
                        }
                        const int f = __ffs(free_lanes) - 1;
                        if (lane == f) {
                            bits[j >> 5] |= 1u << (j & 31);
                            s_q[q] = j; s_pv[q] = s_val[q * LIST_K + f];
                        }
                        __syncwarp();
                    }
                    if (lane == 0) s_stop = q;
                }
                __syncthreads();
                const int stop = s_stop;
                if (stop < 0) { infeasible = true; break; }
                if (stop < nsub) {                   // every block: the grid scans this row
                    const long long r = sweep_row(mode, perm, n1, p0 + stop);
                    Pair mine{INFINITY, INFINITY, 0, INFINITY, -1};
                    for (long long j = g; j < n2; j += stride) {
                        if (is_taken(bits, j)) continue;
                        double c;
                        const double t = sweep_t(a, mode, v, r, j, c);
                        pair_merge(mine, Pair{INFINITY, INFINITY, 0, t, j});
                    }
                    const Pair m = grid_pair(grid, mine, sh, slots, parity);
                    if (m.pidx < 0) { infeasible = true; break; }
                    if (threadIdx.x == 0) {
                        bits[m.pidx >> 5] |= 1u << (m.pidx & 31);
                        s_q[stop] = m.pidx; s_pv[stop] = m.pv;
                    }
                    __syncthreads();
                    p = stop + 1;
                } else {
                    p = nsub;
                }
            }
            if (infeasible) break;
            if (blockIdx.x == 0) {                   // the rows' outputs, then the sums in order
                if (threadIdx.x < nsub) {
                    const int t = threadIdx.x;
                    const long long r = sweep_row(mode, perm, n1, p0 + t), q = s_q[t];
                    const double v1 = s_val[t * LIST_K];
                    const double v2 = (s_len[t] & 0xffff) > 1 ? s_val[t * LIST_K + 1] : INFINITY;
                    flag[q] = 1;
                    if (mode == 0) {
                        rmin[r] = v1;
                        s_x[t] = v1; s_x[SUB_ROWS + t] = (double)cost_at(a, r, r);
                        s_x[2 * SUB_ROWS + t] = s_pv[t];
                    } else if (mode == 1) {
                        regret[r] = v2 - v1;
                        s_x[t] = v1 + v[q]; s_x[SUB_ROWS + t] = (double)cost_at(a, r, q);
                    } else {
                        pick[r] = q;
                        s_x[t] = (double)cost_at(a, r, q); s_x[SUB_ROWS + t] = v1 + v[q];
                    }
                }
                __syncthreads();
                if (leader) {
                    for (int t = 0; t < nsub; ++t) {
                        acc0 += s_x[t]; acc1 += s_x[SUB_ROWS + t];
                        if (mode == 0) acc2 += s_x[2 * SUB_ROWS + t];
                    }
                }
            }
            __syncthreads();                         // shared memory is refilled next
        }
        grid.sync();                                 // every block has read the chunk's lists
        if (infeasible && mode != 0) break;
    }
    if (infeasible) {
        if (leader) atomicMax((unsigned long long*)out_i64, (unsigned long long)STATUS_INFEASIBLE);
        return;
    }
    if (leader) { sums[0] = acc0; sums[1] = acc1; sums[2] = acc2; }
}

// Stage A's per-column statistics: best1[j], best2[j] = the two smallest c[r][j] - rmin[r] over
// the rows, taken in row order (thread per column, grid-stride).
extern "C" __global__ void estimate_colstats(COST_PARAMS, const double* rmin, double* best1,
                                             double* best2)
{
    COST_BUILD
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < a.n2;
         j += (long long)gridDim.x * blockDim.x) {
        double b1 = INFINITY, b2 = INFINITY;
        for (long long r0 = 0; r0 < a.n1; r0 += LIST_LOADS) {
            double red[LIST_LOADS];                    // all loads in flight before any is used
#pragma unroll
            for (int u = 0; u < LIST_LOADS; ++u) {
                const long long r = min(r0 + u, a.n1 - 1);
                red[u] = (double)cost_at(a, r, j) - rmin[r];
            }
#pragma unroll
            for (int u = 0; u < LIST_LOADS; ++u) {
                if (r0 + u >= a.n1) break;
                if (red[u] < b1) { b2 = b1; b1 = red[u]; }
                else if (red[u] < b2) b2 = red[u];
            }
        }
        best1[j] = b1; best2[j] = b2;
    }
}

// Stage D: rows in perm order backwards; each releases its pick q and lowers every still-held
// column's v to tie with (r, q): v[j] = c[r][j] - ref, ref = c[r][q] - v[q], where that is lower.
// Rows go in groups of RELEASE_ROWS with two grid barriers per group, not per row: every block
// first works out the group's refs itself (each ref needs v[q] after the group's earlier rows,
// from the RELEASE_ROWS² costs c[r'][q]), then each thread applies the group's rows to its held
// columns in row order. Same comparisons in the same order per column as row by row.
#define RELEASE_ROWS 32
extern "C" __global__ void __launch_bounds__(THREADS)
estimate_release(COST_PARAMS, const long long* perm, volatile double* v, unsigned char* flag,
                 const long long* pick)
{
    COST_BUILD
    cg::grid_group grid = cg::this_grid();
    __shared__ double s_c[RELEASE_ROWS * RELEASE_ROWS];   // s_c[i][i'] = c[r_i'][q_i], i' < i
    __shared__ double s_ref[RELEASE_ROWS], s_cq[RELEASE_ROWS], s_vq[RELEASE_ROWS];
    __shared__ long long s_r[RELEASE_ROWS], s_q[RELEASE_ROWS];
    const long long n1 = a.n1, n2 = a.n2;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long k1 = n1 - 1; k1 >= 0; k1 -= RELEASE_ROWS) {
        const int nb = (int)min((long long)RELEASE_ROWS, k1 + 1);      // rows k1, k1 - 1, ...
        grid.sync();                              // v final after the previous group everywhere
        if (threadIdx.x < nb) {
            const long long r = perm[k1 - threadIdx.x], q = pick[r];
            s_r[threadIdx.x] = r; s_q[threadIdx.x] = q; s_vq[threadIdx.x] = LDG(v[q]);
        }
        grid.sync();                              // every block read v[q] before any write
        for (int t = threadIdx.x; t < nb * nb; t += blockDim.x) {
            const int i = t / nb, ip = t % nb;
            if (ip < i) s_c[i * RELEASE_ROWS + ip] = (double)cost_at(a, s_r[ip], s_q[i]);
            else if (ip == i) s_cq[i] = (double)cost_at(a, s_r[i], s_q[i]);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int i = 0; i < nb; ++i) {
                double vq = s_vq[i];                  // v[q_i] after the group's rows before i
                for (int ip = 0; ip < i; ++ip) {
                    const double ref = s_ref[ip], c = s_c[i * RELEASE_ROWS + ip];
                    if (isfinite(ref) && c - vq < ref) vq = c - ref;
                }
                s_ref[i] = s_cq[i] - vq;
            }
        }
        __syncthreads();
        for (long long j = g; j < n2; j += stride) {
            if (!flag[j]) continue;
            double vj = LDG(v[j]);
            bool lowered = false;
            for (int i = 0; i < nb; ++i) {
                if (j == s_q[i]) { flag[j] = 0; break; }   // released: later rows leave it
                const double ref = s_ref[i];
                if (!isfinite(ref)) continue;
                const double c = (double)cost_at(a, s_r[i], j);
                if (c - vj < ref) { vj = c - ref; lowered = true; }
            }
            if (lowered) STG(v[j], vj);
        }
    }
}
