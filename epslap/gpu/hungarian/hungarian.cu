// Classical (Munkres) Hungarian algorithm on the GPU: one cooperative persistent kernel.
//
// Compiler options set by the host (solver.py): COST_ST, the storage type of the costs (float, int
// or double), and THREADS; the statuses come from the generated header epslap_status.cuh
// (``epslap._status.cuda_defines()``), which the host writes into a directory on the include path.
// CPU reference of exactly these steps: reference.py (same names, same comparisons).
//
// Papers: Lopes et al., JPDC 130 (2019) (block-distributed alternating-path search, conditions
// S1-S5, several augmenting paths per round, steps 5a/5b); Kawtikwar et al., "Improvements to the
// Hungarian LAP solver" (per-block zero counters instead of a global atomic, dual update fused
// with the compression, one cooperative kernel, slack held in a register).
//
// Differences from the published codes (their limits fixed):
//  * any n: rows are split into gridDim.x contiguous ranges of R = ceil(n / gridDim.x) rows;
//  * 64-bit linear indices into the cost matrix (i * n + j as long long); a zero is stored as a
//    32-bit index local to its block's row range, (i - i0) * n + j < R * n < 2^32 (host checks);
//  * no slack matrix: a slack is recomputed as c_ij - u_i - v_j in float64 wherever it is needed
//    (no drift; exact for integer costs), "zero" means slack <= tol (tol = 0 for integers);
//  * rectangular problems: rows n1..n-1 are virtual (cost 0, never stored);
//  * +inf costs are forbidden pairs: a row/column without a finite entry, or a dual update whose
//    minimum is +inf, ends the kernel with STATUS_INFEASIBLE;
//  * reductions with __shfl_xor_sync / __ballot_sync over full warps and __syncthreads between
//    warps (no implicit warp-synchronous code); grid-wide steps separated by grid.sync();
//  * a prime is claimed by compare-and-swap (the first prime of a row wins and never changes),
//    which makes every alternating path finite without relying on a serial equivalent;
//  * the search of a phase runs until nothing more is reachable (Lopes et al. stop at the first
//    row without a star), so one phase applies every vertex-disjoint augmenting path found;
//  * step 6 reads the matrix once (minimum and zero candidates in one pass) and gathers only the
//    uncovered columns when few of them are left.
//
// Phases of the kernel (names shared with reference.py):
//   step 1 row then column reduction -> compress (per-block zero lists) -> step 2 greedy stars
//   loop: step 3 (reset, cover starred columns, compact lists, count stars; stop at n)
//         { step 4 search round | grid.sync } until no column was uncovered in a round;
//         no augmenting path yet -> step 6 (dual update + new zeros) and search again;
//         else step 5a (forward walks, greens) | grid.sync | step 5b (flip paths) | grid.sync
//
// Launch (host): grid = 2 blocks per multiprocessor (__launch_bounds__(THREADS, 2) guarantees that
// two blocks fit one SM, so the cooperative launch is co-resident), block = THREADS threads. All
// blocks run the same control flow; every branch decision after a grid.sync() is read from values
// that no block can change before the next grid.sync() (see the comments at each decision).

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#include "epslap_status.cuh"

#ifndef COST_ST
#define COST_ST float
#endif
typedef COST_ST cost_st;
#ifndef THREADS
#define THREADS 256
#endif
#define WARPS (THREADS / 32)
#ifndef COLCAP
#define COLCAP 4096   // uncovered columns gathered from shared memory in step 6 (16 KiB)
#endif
#ifndef COL_DIV
#define COL_DIV 8     // ... when at most n / COL_DIV of them are uncovered
#endif
#define FULL_MASK 0xffffffffu
#define DINF (__longlong_as_double(0x7ff0000000000000LL))

// ctl[] slots (int64): outputs, then stamps/flags written during the solve
#define CTL_STATUS 0
#define CTL_PHASES 1
#define CTL_DUAL_UPDATES 2
#define CTL_ROUNDS 3
#define CTL_INITIAL_STARS 4
#define CTL_PROGRESS 5      // last search round in which some zero was primed (monotone)
#define CTL_GOTO5 6         // last search round in which a row without a star was primed
#define CTL_ROW_INF 7       // a row without a finite cost
#define CTL_COL_INF 8       // a column without a finite cost
#define CTL_BROKEN_A 9      // step 5a: a forward walk did not close
#define CTL_BROKEN_B 10     // step 5b: a backward walk did not close
#define CTL_GATHERED 11     // dual updates that gathered the uncovered columns (output)
#define CTL_LEN 16

__device__ __forceinline__ double cost_at(const cost_st* __restrict__ C, long long n1, long long n,
                                          long long i, long long j) {
    return i < n1 ? (double)C[i * n + j] : 0.0;   // virtual rows cost 0 (padding)
}

__device__ __forceinline__ double warp_min(double x) {
    for (int off = 16; off > 0; off >>= 1) x = fmin(x, __shfl_xor_sync(FULL_MASK, x, off));
    return x;
}

__device__ __forceinline__ long long warp_sum(long long x) {
    for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(FULL_MASK, x, off);
    return x;
}

// Block-wide min; every thread gets the result. s_red: WARPS doubles of shared memory.
__device__ double block_min(double x, double* s_red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    x = warp_min(x);
    __syncthreads();                  // s_red free (a previous call may still be reading it)
    if (lane == 0) s_red[warp] = x;
    __syncthreads();
    double r = DINF;
    for (int w = 0; w < WARPS; ++w) r = fmin(r, s_red[w]);
    return r;
}

__device__ long long block_sum(long long x, long long* s_red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    x = warp_sum(x);
    __syncthreads();
    if (lane == 0) s_red[warp] = x;
    __syncthreads();
    long long r = 0;
    for (int w = 0; w < WARPS; ++w) r += s_red[w];
    return r;
}

// Exclusive block scan of one flag per thread; returns the position, *total gets the count.
__device__ unsigned block_scan_flag(bool f, unsigned* s_cnt, unsigned* total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned mask = __ballot_sync(FULL_MASK, f);
    __syncthreads();
    if (lane == 0) s_cnt[warp] = __popc(mask);
    __syncthreads();
    unsigned before = 0, all = 0;
    for (int w = 0; w < WARPS; ++w) {
        const unsigned c = s_cnt[w];
        if (w < warp) before += c;
        all += c;
    }
    *total = all;
    return before + __popc(mask & ((1u << lane) - 1u));
}

// Append, for row i of this block, every column j with slack(i, j) <= tol to the block's zero
// list (the initial compression). One warp per row; the warp aggregates its hits with a ballot
// and reserves space with one shared-memory atomic (Kawtikwar: per-block counters, never a
// global atomic); the slack lives only in a register.
__device__ void append_row_zeros(const cost_st* __restrict__ C, long long n1, long long n,
                                 long long i, long long i0, double ui, const double* v,
                                 double tol, unsigned* seg, unsigned* s_zcount) {
    const int lane = threadIdx.x & 31;
    const cost_st* row = C + i * n;
    const bool real = i < n1;
    const unsigned local_row = (unsigned)((i - i0) * n);
    for (long long j0 = 0; j0 < n; j0 += 32) {
        const long long j = j0 + lane;
        bool z = false;
        if (j < n) z = (real ? (double)row[j] : 0.0) - ui - v[j] <= tol;
        const unsigned mask = __ballot_sync(FULL_MASK, z);
        if (mask) {
            unsigned base = 0;
            if (lane == 0) base = atomicAdd(s_zcount, (unsigned)__popc(mask));
            base = __shfl_sync(FULL_MASK, base, 0);
            if (z) seg[base + __popc(mask & ((1u << lane) - 1u))] = local_row + (unsigned)j;
        }
    }
}

// Sweep this block's zero list (seg[0 .. count), each entry row-local row * n + column; each
// thread its share) with visit(i, j), again and again until a sweep ends with no thread having
// raised `flag` (visit raises it where the sweep must repeat).
template <typename Visit>
__device__ __forceinline__ void sweep_zeros_until_quiet(const unsigned* seg, const unsigned& count,
                                                        int& flag, long long i0, long long n,
                                                        Visit visit) {
    for (;;) {
        if (threadIdx.x == 0) flag = 0;
        __syncthreads();
        const unsigned cnt = count;
        for (unsigned k = threadIdx.x; k < cnt; k += THREADS) {
            const unsigned z = seg[k];
            visit(i0 + z / (unsigned)n, (int)(z % (unsigned)n));
        }
        __syncthreads();
        const int again = flag;
        __syncthreads();
        if (!again) break;
    }
}

// Keep, in place and in order, the entries of seg[begin, end) that are zeros when row i's dual
// is u_i + add: c_ij - (u_i + add) - v_j <= tol. Returns the new end (in every thread). Each
// chunk is read completely (inside the block scan) before any of it is overwritten, and writes
// never pass the chunk being read, so the compaction is safe in place.
__device__ unsigned compact_zeros(const cost_st* __restrict__ C, long long n1, long long n,
                                  long long i0, const double* u,
                                  const double* v, double add, double tol,
                                  unsigned* seg, unsigned begin, unsigned end, unsigned* s_cnt,
                                  unsigned* s_w) {
    __syncthreads();                       // s_w free (a previous use may still be reading it)
    if (threadIdx.x == 0) *s_w = begin;
    __syncthreads();
    for (unsigned base = begin; base < end; base += THREADS) {
        const unsigned k = base + threadIdx.x;
        bool keep = false;
        unsigned z = 0;
        if (k < end) {
            z = seg[k];
            const long long i = i0 + z / (unsigned)n;
            const long long j = z % (unsigned)n;
            keep = cost_at(C, n1, n, i, j) - (u[i] + add) - v[j] <= tol;
        }
        unsigned total;
        const unsigned pos = block_scan_flag(keep, s_cnt, &total);   // all reads done
        const unsigned at = *s_w;
        if (keep) seg[at + pos] = z;
        __syncthreads();
        if (threadIdx.x == 0) *s_w = at + total;
        __syncthreads();
    }
    return *s_w;
}

// Step 6 helper: the uncovered columns, ascending, into shared memory `s_cols` when they are
// few (at most COLCAP and at most n / COL_DIV: then gathering them from each row beats streaming the
// whole row). Returns their number, or -1 (too many: stream whole rows). Same answer in every
// thread; each block builds its own copy (n bytes read from L2, no grid barrier needed).
__device__ long long list_uncovered_columns(long long n, const volatile unsigned char* cover_col,
                                            int* s_cols, unsigned* s_cnt, unsigned* s_n) {
    const long long limit = COLCAP < n / COL_DIV ? COLCAP : n / COL_DIV;
    __syncthreads();                       // s_n / s_cols free (a previous use may be reading)
    if (threadIdx.x == 0) *s_n = 0;
    __syncthreads();
    for (long long base = 0; base < n; base += THREADS) {
        const long long j = base + threadIdx.x;
        const bool f = j < n && cover_col[j] == 0;
        unsigned total;
        const unsigned pos = block_scan_flag(f, s_cnt, &total);
        const unsigned at = *s_n;
        if (f && at + pos < limit) s_cols[at + pos] = (int)j;
        __syncthreads();
        if (threadIdx.x == 0) *s_n = at + total;
        __syncthreads();
        if (*s_n > limit) return -1;
    }
    return *s_n;
}

// ---------------------------------------------------------------------------------------------
// The solver. Arrays (device, n = padded square size = n2, n1 real rows):
//   C         (n1, n) cost_st, row-major, canonical (minimised), +inf = forbidden (float types)
//   u, v      (n) float64 duals; slack s_ij = c_ij - u_i - v_j >= 0
//   star_col  (n) int32  row -> column of its star (-1: none); star_row: column -> row
//   prime_col (n) int32  row -> column of its prime (-1: none); at most one per row (S1)
//   green_row (n) int32  column -> row of its green (step 5a/5b)
//   row_lock  (n) int32  0; step 2 only
//   cover_row, cover_col (n) uint8
//   zeros     (gridDim.x * R * n) uint32: block b's list at offset b * R * n
//   bmin      (gridDim.x) float64, bcount (gridDim.x) int64: per-block partial results
//   paths     (n + 1) int32: augmenting paths applied in each phase
//   ctl       (CTL_LEN) int64: see CTL_*
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(THREADS, 2)
hungarian_solve(const cost_st* __restrict__ C, const long long n1, const long long n,
                const long long R, const double tol, const long long max_dual_updates,
                double* u, double* v,
                int* star_col, int* star_row, int* prime_col, int* green_row, int* row_lock,
                unsigned char* cover_row_, unsigned char* cover_col_,
                unsigned* zeros, double* bmin, long long* bcount, int* paths, long long* ctl_)
{
    cg::grid_group grid = cg::this_grid();
    volatile long long* ctl = ctl_;
    volatile unsigned char* cover_row = cover_row_;
    volatile unsigned char* cover_col = cover_col_;
    volatile int* vstar_col = star_col;
    volatile int* vstar_row = star_row;

    __shared__ double s_red[WARPS];
    __shared__ long long s_redl[WARPS];
    __shared__ unsigned s_cnt[WARPS];
    __shared__ unsigned s_zcount;     // this block's zero-list length (persists: one kernel)
    __shared__ unsigned s_w;
    __shared__ unsigned s_cand;       // step 6: end of the candidate entries behind the list
    __shared__ int s_cols[COLCAP];    // step 6: the uncovered columns, when few
    __shared__ int s_flag;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const long long b = blockIdx.x;
    const long long i0 = b * R < n ? b * R : n;
    const long long i1 = (b + 1) * R < n ? (b + 1) * R : n;
    unsigned* seg = zeros + b * R * n;
    const long long gtid = b * THREADS + tid, gthreads = (long long)gridDim.x * THREADS;
    const bool leader = b == 0 && tid == 0;

    // ---- step 1: row minima (one warp per row), then column minima of c - u ----
    for (long long i = i0 + warp; i < i1; i += WARPS) {
        double mn = 0.0;                                   // virtual rows: u = 0
        if (i < n1) {
            const cost_st* row = C + i * n;
            mn = DINF;
            for (long long j = lane; j < n; j += 32) mn = fmin(mn, (double)row[j]);
            mn = warp_min(mn);
        }
        if (lane == 0) {
            u[i] = mn;
            if (!(mn < DINF)) ctl[CTL_ROW_INF] = 1;
        }
    }
    grid.sync();
    // decision: CTL_ROW_INF is written only before this barrier
    if (ctl[CTL_ROW_INF]) { if (leader) ctl[CTL_STATUS] = STATUS_INFEASIBLE; return; }
    for (long long j = gtid; j < n; j += gthreads) {       // one thread per column, rows in order
        double mn = n1 < n ? 0.0 : DINF;                   // a virtual row: 0 - 0
#pragma unroll 8
        for (long long i = 0; i < n1; ++i) mn = fmin(mn, (double)C[i * n + j] - u[i]);
        v[j] = mn;
        if (!(mn < DINF)) ctl[CTL_COL_INF] = 1;
    }
    grid.sync();
    if (ctl[CTL_COL_INF]) { if (leader) ctl[CTL_STATUS] = STATUS_INFEASIBLE; return; }

    // ---- compress: each block lists the zeros of its own rows (per-block counter) ----
    if (tid == 0) s_zcount = 0;
    __syncthreads();
    for (long long i = i0 + warp; i < i1; i += WARPS)
        append_row_zeros(C, n1, n, i, i0, u[i], v, tol, seg, &s_zcount);
    __syncthreads();

    // ---- step 2: greedy stars from each block's zeros (row lock, then column CAS) ----
    sweep_zeros_until_quiet(seg, s_zcount, s_flag, i0, n, [&](long long i, int j) {
        if (vstar_col[i] >= 0 || vstar_row[j] >= 0) return;
        if (atomicCAS(&row_lock[i], 0, 1) != 0) { s_flag = 1; return; }   // retry later
        __threadfence();   // acquire: see the star a previous holder wrote before unlocking
        if (vstar_col[i] < 0 && atomicCAS(&star_row[j], -1, (int)i) == -1) vstar_col[i] = j;
        __threadfence();
        atomicExch(&row_lock[i], 0);
    });
    grid.sync();

    long long round = 0, dual_updates = 0, phase = 0;
    for (;;) {
        // ---- step 3: reset the search, cover the starred columns, compact the lists ----
        long long stars = 0;
        for (long long i = i0 + tid; i < i1; i += THREADS) {
            prime_col[i] = -1;
            cover_row[i] = 0;
            stars += star_col[i] >= 0;
        }
        for (long long j = gtid; j < n; j += gthreads) {
            cover_col[j] = star_row[j] >= 0;
            green_row[j] = -1;
        }
        if (phase > 0) {   // drop entries that stopped being zeros (only in rows covered before)
            const unsigned kept = compact_zeros(C, n1, n, i0, u, v, 0.0, tol, seg, 0, s_zcount,
                                                s_cnt, &s_w);
            if (tid == 0) s_zcount = kept;
            __syncthreads();
        }
        stars = block_sum(stars, s_redl);
        if (tid == 0) bcount[b] = stars;
        grid.sync();
        // decision: bcount is next written in the next step 3, after further barriers
        long long total_stars = 0;
        for (int k = 0; k < (int)gridDim.x; ++k) total_stars += bcount[k];
        if (phase == 0 && leader) ctl[CTL_INITIAL_STARS] = total_stars;
        if (total_stars == n) break;

        // ---- steps 4 and 6 until a search ends with rows without a star primed ----
        const long long first_round = round + 1;
        for (;;) {
            ++round;
            // step 4, this block's part of one round (Lopes et al. Alg. 2, S1-S5): pass over the
            // list until a pass uncovers nothing. Column checked before row (S2); the row is
            // covered, fenced, then the star's column uncovered (S3); covers are volatile global
            // memory read by every block (S4); rounds repeat after a grid barrier (S5). The
            // compare-and-swap keeps the FIRST prime of a row: a primed row never changes its
            // prime, which makes every alternating path finite (see reference._step4).
            // Unlike Lopes et al. the search does not stop at the first row without a star: it
            // runs until nothing more is reachable, so one phase applies every disjoint path.
            sweep_zeros_until_quiet(seg, s_zcount, s_flag, i0, n, [&](long long i, int j) {
                if (cover_col[j]) return;
                if (cover_row[i]) return;
                if (atomicCAS(&prime_col[i], -1, j) != -1) return;
                const int s = star_col[i];          // stars are constant during step 4
                if (s < 0) {
                    ctl[CTL_GOTO5] = round;         // an augmenting path ends here
                } else {
                    s_flag = 1;
                    cover_row[i] = 1;
                    __threadfence();
                    cover_col[s] = 0;
                    ctl[CTL_PROGRESS] = round;
                }
            });
            grid.sync();
            // decisions: during the next interval (until the next barrier) a block writes
            // CTL_PROGRESS/CTL_GOTO5 only if it continues the search, and then only round + 1,
            // so ">= round" reads the same truth in every block; when nobody continues, nobody
            // writes them, so the CTL_GOTO5 test is stable too.
            if (ctl[CTL_PROGRESS] >= round) continue;
            if (ctl[CTL_GOTO5] >= first_round) break;   // -> step 5

            // ---- step 6: dual update fused with the compression of the new zeros ----
            // One pass over uncovered rows x uncovered columns (gathered from the list of
            // uncovered columns when they are few, else streamed over whole rows) finds
            // m = min slack AND records, behind the block's list, every entry within 2 tol of
            // the lane's running minimum: a superset of the entries that become zeros
            // (s - m <= tol implies s <= m + tol <= running min + tol, as m <= running min).
            // After the barrier that makes m known, the candidates are compacted into the list
            // (Kawtikwar: dual update fused with compression; the slack stays in a register).
            // The candidates are entries of uncovered rows and columns, none of them in the
            // list, so the block's segment (R * n entries) cannot overflow.
            if (tid == 0) s_cand = s_zcount;
            const long long ncols = list_uncovered_columns(n, cover_col, s_cols, s_cnt, &s_w);
            const unsigned cand0 = s_zcount;
            double wm = DINF;                                   // this lane's running minimum
            for (long long i = i0 + warp; i < i1; i += WARPS) {
                if (cover_row[i]) continue;
                const double ui = u[i];
                const cost_st* row = C + i * n;
                const bool real = i < n1;
                const unsigned local_row = (unsigned)((i - i0) * n);
                const long long len = ncols < 0 ? n : ncols;
                for (long long k0 = 0; k0 < len; k0 += 32) {
                    const long long k = k0 + lane;
                    bool rec = false;
                    long long j = 0;
                    if (k < len) {
                        j = ncols < 0 ? k : (long long)s_cols[k];
                        const double sl = (real ? (double)row[j] : 0.0) - ui - v[j];
                        if (sl < DINF && sl <= wm + 2.0 * tol &&
                            (ncols >= 0 || cover_col[j] == 0)) {
                            rec = true;
                            wm = fmin(wm, sl);
                        }
                    }
                    const unsigned mask = __ballot_sync(FULL_MASK, rec);
                    if (mask) {
                        unsigned base = 0;
                        if (lane == 0) base = atomicAdd(&s_cand, (unsigned)__popc(mask));
                        base = __shfl_sync(FULL_MASK, base, 0);
                        if (rec) seg[base + __popc(mask & ((1u << lane) - 1u))] = local_row + (unsigned)j;
                    }
                }
            }
            const double mn = block_min(wm, s_red);             // its barriers publish s_cand
            if (tid == 0) bmin[b] = mn;
            const unsigned cand1 = s_cand;
            grid.sync();
            // decision: bmin is next written in the next step 6, after further barriers
            double m = DINF;
            for (int k = 0; k < (int)gridDim.x; ++k) m = fmin(m, bmin[k]);
            if (!(m < DINF)) { if (leader) ctl[CTL_STATUS] = STATUS_INFEASIBLE; return; }
            m = fmax(m, 0.0);   // m < 0 only through float drift (tolerance mode)
            ++dual_updates;
            if (ncols >= 0 && leader) ctl[CTL_GATHERED] = ctl[CTL_GATHERED] + 1;
            if (dual_updates > max_dual_updates) {
                if (leader) ctl[CTL_STATUS] = STATUS_ITERATION_LIMIT;
                return;
            }
            // keep the candidates that are zeros under u_i + m (they lie in uncovered rows and
            // columns; v there does not change), then uncovered rows: u += m, covered columns:
            // v -= m. v is read here only at uncovered columns, which nobody writes, so no
            // barrier separates the two. The barrier after them keeps the next search round
            // (which uncovers columns) from changing cover_col while a block still reads it.
            const unsigned kept = compact_zeros(C, n1, n, i0, u, v, m, tol, seg, cand0, cand1,
                                                s_cnt, &s_w);
            if (tid == 0) s_zcount = kept;
            for (long long i = i0 + tid; i < i1; i += THREADS)   // after the compaction's reads
                if (!cover_row[i]) u[i] += m;
            for (long long j = gtid; j < n; j += gthreads)
                if (cover_col[j]) v[j] -= m;
            grid.sync();
        }

        // ---- step 5a: walk forward from every primed row without a star, mark greens ----
        for (long long i = gtid; i < n; i += gthreads) {
            int c = prime_col[i];
            if (c < 0 || star_col[i] >= 0) continue;
            green_row[c] = (int)i;
            for (long long steps = 0;; ++steps) {
                const int r2 = star_row[c];
                if (r2 < 0) break;
                const int c2 = prime_col[r2];
                if (c2 < 0 || steps > n) { ctl[CTL_BROKEN_A] = 1; break; }
                green_row[c2] = r2;
                c = c2;
            }
        }
        grid.sync();
        if (ctl[CTL_BROKEN_A]) { if (leader) ctl[CTL_STATUS] = STATUS_BROKEN_PATH; return; }
        // ---- step 5b: from every green column without a star, flip the path backward ----
        // Greens are injective (green_row[c] = r implies prime_col[r] = c), so backward walks
        // are vertex-disjoint and each thread reads/writes only the rows/columns of its own path.
        int found = 0;
        for (long long j = gtid; j < n; j += gthreads) {
            int r = green_row[j];
            if (r < 0 || star_row[j] >= 0) continue;
            ++found;
            int jj = (int)j;
            for (long long steps = 0;; ++steps) {
                const int prev = star_col[r];
                star_col[r] = jj;
                star_row[jj] = r;
                if (prev < 0) break;
                const int nr = green_row[prev];
                if (nr < 0 || steps > n) { ctl[CTL_BROKEN_B] = 1; break; }
                jj = prev;
                r = nr;
            }
        }
        found = (int)block_sum(found, s_redl);
        if (tid == 0 && found) atomicAdd(&paths[phase < n ? phase : n], found);
        grid.sync();
        if (ctl[CTL_BROKEN_B]) { if (leader) ctl[CTL_STATUS] = STATUS_BROKEN_PATH; return; }
        ++phase;
    }
    if (leader) {
        ctl[CTL_STATUS] = STATUS_OK;
        ctl[CTL_PHASES] = phase;
        ctl[CTL_DUAL_UPDATES] = dual_updates;
        ctl[CTL_ROUNDS] = round;
    }
}

// Certificate of the result against the stored costs (tolerance mode and exact mode alike):
// worst[b] = max over this block's rows i < n1 and finite c_ij of  u_i + v_j - c_ij  with
// u_i = c_{i, star_col[i]} - v_{star_col[i]}. Grid: any (grid-stride over rows, warp per row).
extern "C" __global__ void __launch_bounds__(THREADS)
hungarian_check(const cost_st* __restrict__ C, const long long n1, const long long n,
                const int* __restrict__ star_col, const double* __restrict__ v,
                double* worst)
{
    __shared__ double s_red[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    double w = -DINF;
    for (long long i = (long long)blockIdx.x * WARPS + warp; i < n1;
         i += (long long)gridDim.x * WARPS) {
        const cost_st* row = C + i * n;
        const int s = star_col[i];
        const double ui = (double)row[s] - v[s];
        for (long long j = lane; j < n; j += 32) {
            const double c = (double)row[j];
            if (c < DINF) w = fmax(w, ui + v[j] - c);
        }
    }
    w = -block_min(-w, s_red);
    if (threadIdx.x == 0) worst[blockIdx.x] = w;
}
