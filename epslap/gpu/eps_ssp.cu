// ε-pricing successive shortest paths on the GPU: the device-resident pass, and the kernels that
// read the cost source on the device (assigned costs, range, rows, the dense matrix, the dual
// certificate). The estimate is estimate.cu; the self-tests are diagnostics.cu.
//
// Guthe & Thuerck, "Algorithm 1015", ACM TOMS 47(2), 2021, doi:10.1145/3442348 (docs/algorithm.md §1–4).
// The published code launches one kernel and synchronises the host once per scanned row; here a
// persistent cooperative grid runs a whole pass (every augmentation) on the device, with one
// grid-wide agreement per Dijkstra step, and the host is synchronised once per pass.
//
// Launch: grid = up to one block per multiprocessor (all co-resident: cooperative launch), block =
// THREADS threads. Thread g = blockIdx.x * blockDim.x + threadIdx.x owns columns g, g + G·T, …
// Every block reduces all block results itself, so all blocks agree on the argmin. Compiler
// options set by the host: COST_INTEGRAL, THREADS (common.cuh), UNROLL, SMEM_STATE, SLOT_WORDS
// (exchange.cuh), PHASE_CLOCKS (phase_clocks.cuh); the cost source comes through cost.cuh.
#include "common.cuh"
#include "cost.cuh"
#include "exchange.cuh"
#include "phase_clocks.cuh"

#ifndef UNROLL  // set by the host: columns per thread whose loads a scan issues together (1-4)
#define UNROLL 1
#endif

#ifndef SMEM_STATE  // set by the host: 1 when the pass kernel's column state fits in shared memory
#define SMEM_STATE 0
#endif

// ---- one pass (docs/algorithm.md §1, §4): every real row in perm order (reversed when `reverse`),
// ---- then every virtual row: n_aug = n2 rows; n_aug = n1 augments the real rows only (a
// ---- rectangular problem solved from v = 0, docs/algorithm.md §10).
//
// Column j belongs to thread j % S of the grid (S = gridDim.x · blockDim.x): its d, pred, open
// flag, owner, v, cpred and cmatch are read and written by that thread alone during the pass
// (thread 0 of the same block also writes owner[j] and cmatch[j] in the path flip, before a
// __syncthreads), so they are plain cached accesses, or shared memory (SMEM_STATE below). The
// blocks agree on each Dijkstra step's argmin through `slots` (Slot, exchange.cuh), which is also
// the only grid-wide synchronisation: no grid.sync() in the pass. Every block records the steps'
// winners and flips the augmenting path for its own columns itself. (The clamped loads of a scan
// may read column n2 - 1 of another thread while it writes it: the value is discarded, it only
// keeps the loads unconditional.)

__device__ __forceinline__ void consider(Cand& best, cost_t dj, long long j, long long own,
                                         cost_t vj, long long pred, cost_t cm) {
    const unsigned key = (own >= 0 ? 0x80000000u : 0u) | (unsigned)j;
    if (cand_less(dj, key, best.val, best.key)) {
        best.val = dj; best.key = key; best.own = (int)own; best.vj = vj; best.pred = (int)pred;
        best.cm = cm;
    }
}

// ---- rows from a device row cache (EXTERNAL_ROWS, defined by the cache's cost code) ----------
// The cost code then also defines row_slot(a, i): the cache slot holding row i, -1 when the row
// is not on the device. The slots are filled by the host between launches (rows from host memory,
// a user's kernel, or an expensive device cost), so the pass kernel *suspends* when it needs a
// missing row: it saves where it stands in `resume` and returns STATUS_SUSPENDED; the host fills
// the row and launches again, and the kernel continues exactly where it stopped. The column state (d,
// pred, col_open, owner, v, rec) is in global memory (written back first where SMEM_STATE keeps
// it in shared memory); what is saved is the loop state.
// Every access to a present row is appended to `alog` (block 0, thread 0) so that the host can
// replay the access sequence through the very same LFU/SLRU code as the CPU cache (epslap.cache).
// Every block takes the same decisions (same winner, same slot table), so all suspend together.
// (A stop the host requests through progress[2] saves the same record, phase 1, in every build.)
// resume (int64[32]): [0] phase (0 start of the pass, 1 at the start of augmentation k, 2 inside
// its search), [1] row needed (-1: only the access log is full), [2] k, [3] steps closed,
// [4] jmin, [5] mn, [6..10] the step's winner (val, key, own, vj, pred), [11] rows evaluated,
// [12] Σ ε (doubles and cost_t as bits), [13] entries in alog, [14] seq and [15] parity of the
// slot exchange (it goes on numbering, so the slots need no reset), and from the host before
// a resume: [16] the slot now holding the needed row, [17] the row it evicted (-1: none), which
// every block writes into the slot table itself before reading it; [18] the winner's cm.
// susp_d: (grid threads,) each thread's partial Σ(mn - d_j). alog follows resume in the same
// allocation (one copy to the host reads the record and the start of the log).
enum { R_PHASE, R_NEED, R_K, R_NCLOSED, R_JMIN, R_MN, R_VAL, R_KEY, R_OWN, R_VJ, R_PRED,
       R_ROWS, R_EPS, R_LOGN, R_SEQ, R_PARITY, R_FILL_SLOT, R_EVICT, R_CM };

// d, pred, col_open (all 1 on entry), owner (-1 on entry), v, cpred, cmatch: (n2,) device arrays,
// thread-private as described above; cpred[j] = c[pred[j]][j] and cmatch[j] = c[owner[j]][j]
// (the path flip copies one into the other), so that a step's winner carries the cost of its
// matched pair (Cand::cm). rec: (gridDim.x, 3·(n2 + 1)) int32 scratch, each block's record of the
// steps of the current augmentation (column, its owner, its predecessor), read by the path flip.
// slots: (2, grid_blocks) Slot, zeroed by the host. progress[2]: stop request (host → device).
// out_f64: [rows evaluated, unused, Σ ε, then per block Σ(mn - d_j), then 4 phase clock totals
// (PHASE_CLOCKS builds: scan, exchange, between two steps, price update + flip)]; out_i64[0]: status
// (STATUS_OK, _INFEASIBLE, _INTERRUPTED for a stop, _SUSPENDED for a row: see above).
// block_base, grid_blocks, peer_slots, n_peers: the logical grid (GridPart, exchange.cuh) when
// one pass runs as several launches (one problem over several GPUs: each launch holds its own
// copy of every array above and works on its own threads' columns; the host merges them after
// the pass). "Block" and "thread" above mean the logical ones, except in rec (this launch's
// blocks). The leader (logical block 0) writes out_f64[0, 2], out_i64, progress and resume.
extern "C" __global__ void PASS_LAUNCH_BOUNDS
eps_pass(COST_PARAMS, const long long* perm, int reverse, long long n_aug, cost_t eps, cost_t* v,
         cost_t* d, long long* pred, unsigned char* col_open, long long* owner, cost_t* cpred,
         cost_t* cmatch, int* rec, Slot* slots,
         double* out_f64, long long* out_i64, volatile long long* progress,
         long long* resume, double* susp_d, long long* alog, long long alog_cap,
         unsigned block_base, unsigned grid_blocks, Slot* const* peer_slots, int n_peers)
{
    COST_BUILD
    __shared__ Cand sh[2 * (WARPS + 1)];
    __shared__ unsigned sh_extra[2];
    __shared__ double sh_sum[WARPS];
    unsigned got_extra = 0;
    const long long n1 = a.n1, n2 = a.n2;
    // the logical grid (GridPart, exchange.cuh): this launch's blocks are its blocks block_base ..
    const GridPart gp = {block_base, grid_blocks, peer_slots, n_peers};
    const unsigned B = block_base + blockIdx.x;                  // this block in the logical grid
    const long long S = (long long)grid_blocks * blockDim.x;
    const long long g = (long long)B * blockDim.x + threadIdx.x;
    const bool leader = B == 0 && threadIdx.x == 0;
    int* my_rec = rec + (long long)blockIdx.x * 3 * (n2 + 1);   // thread 0 of the block only
    unsigned seq = 0;
    int parity = 0;
    double my_total_d = 0.0, rows_eval = 0.0, total_eps = 0.0;
    CLOCKS_START  // diagnostics only (phase_clocks.cuh)
    // The column state that every scan reads (v, d, the matched cost, owner, pred, open flag):
    // in shared memory when the host asks for it (SMEM_STATE: from 4 columns per thread, where
    // it fits), loaded at the launch's start and written back at its end (also before a
    // suspension); a thread's t-th column (j = g + t·S) then sits at slot t·THREADS +
    // threadIdx.x. Otherwise the global arrays themselves, read through L1. (NVIDIA H100,
    // geometric on demand, µs per step shared / global: 4.41 / 4.59 at n = 256000, but
    // 3.87 / 3.65 at 128000, where a thread owns 2 columns.)
#if SMEM_STATE
    extern __shared__ __align__(16) unsigned char col_sh[];
    const long long CT = ((n2 + S - 1) / S) * THREADS;  // slots of the block
    cost_t* const V = (cost_t*)col_sh;
    cost_t* const D = V + CT;
    cost_t* const CM = D + CT;
    int* const OWN = (int*)(CM + CT);
    int* const PRED = OWN + CT;
    unsigned char* const OPEN = (unsigned char*)(PRED + CT);
#define IX(t, j) ((t) * THREADS + threadIdx.x)
#define IX_COL(col) (((col) / S) * THREADS + ((col) % S) - (long long)B * THREADS)
    for (long long t = 0, j = g; j < n2; ++t, j += S) {
        V[IX(t, j)] = v[j]; D[IX(t, j)] = d[j]; CM[IX(t, j)] = cmatch[j];
        OWN[IX(t, j)] = (int)owner[j]; PRED[IX(t, j)] = (int)pred[j]; OPEN[IX(t, j)] = col_open[j];
    }
    __syncthreads();
    auto flush = [&]() {                        // the state back to the global arrays
        __syncthreads();
        for (long long t = 0, j = g; j < n2; ++t, j += S) {
            v[j] = V[IX(t, j)]; d[j] = D[IX(t, j)]; cmatch[j] = CM[IX(t, j)];
            owner[j] = OWN[IX(t, j)]; pred[j] = PRED[IX(t, j)]; col_open[j] = OPEN[IX(t, j)];
        }
    };
#else
    cost_t* const V = v;
    cost_t* const D = d;
    cost_t* const CM = cmatch;
    long long* const OWN = owner;
    long long* const PRED = pred;
    unsigned char* const OPEN = col_open;
#define IX(t, j) (j)
#define IX_COL(col) (col)
    auto flush = [&]() {};
#endif
    const long long t_last = g < n2 ? (n2 - 1 - g) / S : 0;   // this thread's last slot
    long long k_start = 0;
    // a resumed launch (phase != 0): after a suspension for a row, or after the host's stop
    // request (phase 1, at the start of augmentation k: a checkpoint or Ctrl-C)
    const int phase = (int)resume[R_PHASE];
#ifdef EXTERNAL_ROWS
    long long log_n = 0;
    bool skip_log = false;          // the first access after a miss: the host counted it already
#endif
    if (phase != 0) {
        k_start = resume[R_K];
        my_total_d = susp_d[g];
        from_bits((unsigned long long)resume[R_ROWS], rows_eval);
        from_bits((unsigned long long)resume[R_EPS], total_eps);
        seq = (unsigned)resume[R_SEQ];
        parity = (int)resume[R_PARITY];
#ifdef EXTERNAL_ROWS
        const long long need = resume[R_NEED];
        skip_log = need >= 0;
        if (need >= 0 && threadIdx.x == 0) {        // the host filled a slot: every block
            long long* table = (long long*)a.p[1];  // updates the table the same way
            if (resume[R_EVICT] >= 0) table[resume[R_EVICT]] = -1;
            table[need] = resume[R_FILL_SLOT];
        }
#endif
        __syncthreads();
    }
    if (leader) out_i64[0] = STATUS_OK;
#ifdef EXTERNAL_ROWS
    // 0: row i can be read now; 1: row i is missing; 2: the access log is full
    auto access = [&](long long i) -> int {
        if (i >= n1) return 0;
        if (skip_log) { skip_log = false; return 0; }
        if (row_slot(a, i) < 0) return 1;
        if (log_n >= alog_cap) return 2;
        if (leader) alog[log_n] = i;
        ++log_n;
        return 0;
    };
    // every thread saves its partial sum; thread 0 of block 0 the loop state (all blocks stop here)
    auto suspend = [&](int ph, long long need, long long k, long long n_closed, long long jmin,
                       cost_t mn, const Cand& r) {
        flush();
        susp_d[g] = my_total_d;
        if (leader) {
            resume[R_PHASE] = ph; resume[R_NEED] = need; resume[R_K] = k;
            resume[R_NCLOSED] = n_closed; resume[R_JMIN] = jmin;
            resume[R_MN] = (long long)bits_of(mn); resume[R_VAL] = (long long)bits_of(r.val);
            resume[R_KEY] = r.key; resume[R_OWN] = r.own; resume[R_VJ] = (long long)bits_of(r.vj);
            resume[R_PRED] = r.pred; resume[R_CM] = (long long)bits_of(r.cm);
            resume[R_ROWS] = (long long)bits_of(rows_eval);
            resume[R_EPS] = (long long)bits_of(total_eps); resume[R_LOGN] = log_n;
            resume[R_SEQ] = seq; resume[R_PARITY] = parity;
            out_i64[0] = STATUS_SUSPENDED;
        }
    };
#endif
    for (long long k = k_start; k < n_aug; ++k) {
        const long long f = k < n1 ? perm[reverse ? n1 - 1 - k : k] : k;
        Cand r, best;
        long long jmin, n_closed;
        cost_t mn;
        int my_closed;
        if (phase == 2 && k == k_start) {                   // resume inside this augmentation's search
#ifdef EXTERNAL_ROWS
            n_closed = resume[R_NCLOSED]; jmin = resume[R_JMIN];
            from_bits((unsigned long long)resume[R_MN], mn);
            from_bits((unsigned long long)resume[R_VAL], r.val); r.key = (unsigned)resume[R_KEY];
            r.own = (int)resume[R_OWN]; from_bits((unsigned long long)resume[R_VJ], r.vj);
            r.pred = (int)resume[R_PRED]; from_bits((unsigned long long)resume[R_CM], r.cm);
#endif
            my_closed = 1;                             // may own closed columns (only a shortcut)
        } else {
#ifdef EXTERNAL_ROWS
            const int acc = access(f);
            if (acc != 0) { suspend(1, acc == 1 ? f : -1, k, 0, 0, (cost_t)0, no_cand()); return; }
#endif
            CLOCK_MARK(2);
            best = no_cand();
            // UNROLL columns at a time, all their loads issued before any is used (the load of a
            // clamped index past n2 is only a duplicate)
            for (long long j0 = g, t0 = 0; j0 < n2; j0 += UNROLL * S, t0 += UNROLL) {
                cost_t c_[UNROLL], v_[UNROLL], m_[UNROLL];
                long long o_[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    const long long j = min(j0 + u * S, n2 - 1), t = min(t0 + u, t_last);
                    c_[u] = cost_at(a, f, j); v_[u] = V[IX(t, j)]; o_[u] = OWN[IX(t, j)];
                    m_[u] = CM[IX(t, j)];
                }
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    const long long j = j0 + u * S, t = t0 + u;
                    if (j >= n2) break;
                    const cost_t dj = c_[u] - v_[u];
                    D[IX(t, j)] = dj; PRED[IX(t, j)] = f; cpred[j] = c_[u];
                    consider(best, dj, j, o_[u], v_[u], f, m_[u]);
                }
            }
            CLOCK_MARK(0);
            // the stop request travels with block 0's candidate (read by its first warp)
            const unsigned stop = (B == 0 && threadIdx.x < 32) ? (unsigned)(progress[2] != 0) : 0u;
            r = grid_best(best, sh, slots, seq, parity, stop, sh_extra, got_extra, gp);
            CLOCK_MARK(1);
            if (got_extra != 0) {   // the host's stop: before augmentation k changed anything
                flush();
                susp_d[g] = my_total_d;
                if (leader) {       // phase 1 at k; the slot exchange starts afresh (zeroed slots)
                    resume[R_PHASE] = 1; resume[R_NEED] = -1; resume[R_K] = k;
                    resume[R_ROWS] = (long long)bits_of(rows_eval);
                    resume[R_EPS] = (long long)bits_of(total_eps);
                    resume[R_SEQ] = 0; resume[R_PARITY] = 0;
#ifdef EXTERNAL_ROWS
                    resume[R_LOGN] = log_n;
#endif
                    out_i64[0] = STATUS_INTERRUPTED;
                }
                return;
            }
            if (r.key == NO_KEY || !(r.val < COST_INF)) { flush(); if (leader) out_i64[0] = STATUS_INFEASIBLE; return; }
            if (f < n1) rows_eval += 1.0;
            jmin = r.key & 0x7fffffffu; n_closed = 1;
            mn = r.val;
            my_closed = 0;
            if (threadIdx.x == 0) { my_rec[0] = (int)jmin; my_rec[1] = r.own; my_rec[2] = r.pred; }
        }
        while (r.own >= 0) {
            const long long i = r.own;
            const long long jmin_thread = (unsigned)jmin % (unsigned)S;   // n2 < 2^31
#ifdef EXTERNAL_ROWS
            const int acc = access(i);
            if (acc != 0) { suspend(2, acc == 1 ? i : -1, k, n_closed, jmin, mn, r); return; }
#endif
            if (jmin_thread == g) { OPEN[IX(jmin / S, jmin)] = 0; ++my_closed; }  // its owner closes jmin
            const cost_t cij = r.cm, vjmin = r.vj;             // = cost_at(a, i, jmin)
            CLOCK_MARK(2);
            best = no_cand();
            for (long long j0 = g, t0 = 0; j0 < n2; j0 += UNROLL * S, t0 += UNROLL) {  // as above
                cost_t c_[UNROLL], v_[UNROLL], d_[UNROLL], m_[UNROLL];
                long long p_[UNROLL], o_[UNROLL];
                unsigned char open_[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    const long long j = min(j0 + u * S, n2 - 1), t = min(t0 + u, t_last);
                    open_[u] = OPEN[IX(t, j)]; c_[u] = cost_at(a, i, j); v_[u] = V[IX(t, j)];
                    d_[u] = D[IX(t, j)]; p_[u] = PRED[IX(t, j)]; o_[u] = OWN[IX(t, j)];
                    m_[u] = CM[IX(t, j)];
                }
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    const long long j = j0 + u * S, t = t0 + u;
                    if (j >= n2) break;
                    if (!open_[u]) continue;
                    const cost_t cand = ((c_[u] - cij) - (v_[u] - vjmin)) + mn;
                    cost_t dj = d_[u];
                    long long pj = p_[u];
                    if (cand < dj) {
                        dj = cand; pj = i; D[IX(t, j)] = cand; PRED[IX(t, j)] = i; cpred[j] = c_[u];
                    }
                    consider(best, dj, j, o_[u], v_[u], pj, m_[u]);
                }
            }
            CLOCK_MARK(0);
            r = grid_best(best, sh, slots, seq, parity, 0u, sh_extra, got_extra, gp);
            CLOCK_MARK(1);
            if (r.key == NO_KEY || !(r.val < COST_INF)) { flush(); if (leader) out_i64[0] = STATUS_INFEASIBLE; return; }
            if (i < n1) rows_eval += 1.0;
            jmin = r.key & 0x7fffffffu;
            if (r.val > mn) mn = r.val;
            if (threadIdx.x == 0) {
                int* e = my_rec + 3 * n_closed;
                e[0] = (int)jmin; e[1] = r.own; e[2] = r.pred;
            }
            ++n_closed;
        }
        // price update of the closed columns (and the free terminal one), by their owners
        if (my_closed > 0 || (unsigned)jmin % (unsigned)S == g) {
            for (long long t = 0, j = g; j < n2; ++t, j += S) {
                if (OPEN[IX(t, j)] && j != jmin) continue;
                const cost_t delta = mn - D[IX(t, j)];
                V[IX(t, j)] = V[IX(t, j)] - (delta + eps);
                my_total_d += (double)delta;
                OPEN[IX(t, j)] = 1;
            }
        }
        total_eps += (double)eps * (double)n_closed;
        // path flip, for this block's columns: walk the record back from the terminal column;
        // the row expanded after step t is my_rec[t].own, so each predecessor row is found by
        // searching the record backwards (O(steps) in all)
        if (threadIdx.x == 0) {
            long long t = n_closed - 1, col = jmin, p = my_rec[3 * t + 2];
            while (true) {
                if (((unsigned)col % (unsigned)S) / blockDim.x == B) {
                    OWN[IX_COL(col)] = p; CM[IX_COL(col)] = cpred[col];
                }
                if (p == f) break;
                do { --t; } while (my_rec[3 * t + 1] != p);
                col = my_rec[3 * t]; p = my_rec[3 * t + 2];
            }
        }
        __syncthreads();                                   // the block's new owners are visible
        CLOCK_MARK(3);
        if (leader) { progress[0] = k + 1; progress[1] = (long long)rows_eval; }
    }
    flush();
    // Σ(mn - d_j) per block (the host adds the blocks in order: deterministic for a given grid)
    for (int off = 16; off > 0; off >>= 1) my_total_d += __shfl_xor_sync(FULL_MASK, my_total_d, off);
    if ((threadIdx.x & 31) == 0) sh_sum[threadIdx.x >> 5] = my_total_d;
    __syncthreads();
    if (threadIdx.x == 0) {
        double s = 0.0;
        for (int w = 0; w < WARPS; ++w) s += sh_sum[w];
        out_f64[3 + B] = s;
    }
    if (leader) { out_f64[0] = rows_eval; out_f64[2] = total_eps; }
    CLOCKS_REPORT(out_f64, grid_blocks);
}

// out[i] = c[i][row_to_col[i]] for the n real rows, grid-stride: every kernel of this module is
// launched cooperatively, and CuPy caps a cooperative grid at the blocks that fit on the device at
// once (1056 of 256 threads on an H100), so one thread per row would skip every row past 270336.
extern "C" __global__ void gather_costs(COST_PARAMS, const long long* row_to_col, cost_t* out,
                                        long long n)
{
    COST_BUILD
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = cost_at(a, i, row_to_col[i]);
}

// lohi = (min, max) of every cost, for integer costs (the host holds them to the range rule of
// ``epslap._validate.check_int_range`` before the solve); lohi starts at (LLONG_MAX, LLONG_MIN).
extern "C" __global__ void cost_range(COST_PARAMS, long long* lohi)
{
    COST_BUILD
    const long long total = a.n1 * a.n2;
    long long lo = 0x7FFFFFFFFFFFFFFFLL, hi = -lo - 1;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        const long long c = (long long)cost_fn(a, t / a.n2, t % a.n2);
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
    }
    atomicMin(lohi, lo);
    atomicMax(lohi + 1, hi);
}

// out (n2,) = row i of the cost matrix (a device row cache filling a slot from a device cost).
extern "C" __global__ void fill_row(COST_PARAMS, long long i, cost_t* out)
{
    COST_BUILD
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < a.n2;
         j += (long long)gridDim.x * blockDim.x)
        out[j] = cost_fn(a, i, j);
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
// The dual certificate of the result, with the rule of ``epslap.verify``: u_i = c[i][k] - v[k]
// (k the column of row i) and, over every finite pair, the violation u_i + v_j - c_ij. Integer
// costs: exact, in cost_t (the range rule keeps |c| * (4n + 8) below 2**62: no overflow); float
// costs: the violation beyond rtol * (|c_ij| + |u_i| + |v_j|). worst[0] = the largest violation,
// worst[1] = the largest violation beyond its tolerance (> 0: the certificate fails); both start
// at 0 and only positive values are written (the bits of a positive double order as integers).
extern "C" __global__ void check_duals(COST_PARAMS, const long long* row_col, const cost_t* v,
                                       double rtol, double* worst)
{
    COST_BUILD
    const long long total = a.n1 * a.n2;
    double w = 0.0, x = 0.0;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        const long long i = t / a.n2, j = t % a.n2, k = row_col[i];
        const cost_t cij = cost_fn(a, i, j);
        if (!(cij < COST_INF)) continue;
        const cost_t u = cost_fn(a, i, k) - v[k];
#if COST_INTEGRAL
        const cost_t viol = (u + v[j]) - cij;
#else
        // (u + v_j) - c_ij exactly as epslap.verify computes it (epslap/_exact.py: TwoSum
        // carries each sum's rounding; adds only, nothing to contract into a fused
        // multiply-add), so that this check and verify's agree to the last unit
        const double s = u + v[j];
        const double bb = s - u;
        const double e1 = (u - (s - bb)) + (v[j] - bb);
        const double d = s - cij;
        const double dd = d - s;
        const double e2 = (s - (d - dd)) + (-cij - dd);
        const double viol = d + (e1 + e2);
#endif
        const double tol = rtol * ((fabs((double)cij) + fabs((double)u)) + fabs((double)v[j]));
        w = fmax(w, (double)viol);
        x = fmax(x, (double)viol - tol);
    }
    for (int off = 16; off > 0; off >>= 1) {
        w = fmax(w, __shfl_down_sync(0xffffffffu, w, off));
        x = fmax(x, __shfl_down_sync(0xffffffffu, x, off));
    }
    if ((threadIdx.x & 31) == 0 && w > 0.0)
        atomicMax((unsigned long long*)worst, (unsigned long long)__double_as_longlong(w));
    if ((threadIdx.x & 31) == 0 && x > 0.0)
        atomicMax((unsigned long long*)worst + 1, (unsigned long long)__double_as_longlong(x));
}
