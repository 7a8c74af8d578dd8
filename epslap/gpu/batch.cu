// Many independent assignment problems per launch (epslap/gpu/batch.py): shortest augmenting
// paths with Jonker-Volgenant's initialisation, the algorithm of the CPU's small path
// (epslap/cpu/jv.py, docs/algorithm.md section 9), one team of threads per problem.
//
// A team is a group of TEAM lanes of one warp (8, 16 or 32: several problems per block) or the
// whole block (TEAM == THREADS > 32). Lane `rank` owns the columns rank + TEAM * k, k < K: their
// Dijkstra distances and open/assigned flags live in its registers, so one step of a search is
// K loads of the expanded row, K compares and one team-wide argmin (three warp reductions, and
// for a block one barrier). The prices v, the assignment (x: row -> column, y: column -> row)
// and the search's predecessors live in the team's slice of dynamic shared memory. Teams take
// problems from a global counter, so a team that drew easy problems takes more of them.
//
// Per problem (canonical: n1 <= n2, minimised: costs read as IN_T, negated when maximising):
//   1. one sweep over the matrix: NaN / -inf (STATUS_INVALID), a finite |cost| beyond the float
//      range rule (STATUS_OUT_OF_RANGE), +inf, the column minima;
//   2. square problems without +inf: column reduction, reduction transfer and one round of
//      augmenting row reduction, as jv.py does them; rectangular ones start from v = 0;
//   3. a shortest augmenting path for every row still free (difference form of section 4, tie
//      rule: smallest distance, then a free column, then the lowest index), its distances
//      counted from the row's smallest reduced cost (they start at 0, as jv.py's _start_row);
//   4. the result: v shifted to a maximum of 0, u from the assigned pairs, the total;
//   5. the certificate of epslap.verify per entry: u_i + v_j - c_ij <= rtol (|c_ij| + |u_i| +
//      |v_j|) for floats, exact for integers, and every unassigned column at price 0 (the gap
//      of a rectangular problem);
//   6. where the certificate misses, the polish of jv.py: prices shifted to a maximum of 0, every
//      row free, steps 3-5 once more (each row's path mostly one edge long). The prices left by
//      step 3 were rounded at the magnitude of the distances and prices they held then (tenths,
//      for squared distances of points in the unit square), not at that of the duals reported:
//      an entry whose cost and duals are all near 0 (1e-5 to 1e-3) can miss its tolerance,
//      which is relative to them, by a few times (up to 7 seen). The pass recomputes the
//      prices at the duals' own magnitude. A member that misses the rule even then gets UNCERTIFIED and is
//      solved again on the host. counter[1] counts the members polished.
//
// Set by the host (-D): COST_INTEGRAL (work in int64, else double), IN_T (the input's C type),
// THREADS, TEAM, K (columns per lane), MINB (blocks per multiprocessor the registers are
// sized for), UNCERTIFIED (the status of a member whose duals missed the rule, polish included).
#include "common.cuh"
#include "reduce.cuh"

#ifndef IN_T
#define IN_T double
#endif
#ifndef TEAM
#define TEAM 32
#endif
#ifndef K
#define K 4
#endif
#ifndef MINB
#define MINB 4
#endif
#ifndef UNCERTIFIED
#define UNCERTIFIED 64
#endif
// STAGE: each team copies its member's matrix into shared memory after its workspace and reads
// it there (a single small problem: every search step waits on its row's loads, which come from
// L2 otherwise; epslap/gpu/batch_plan.py sets it for a batch of one whose matrix fits)
#ifndef STAGE
#define STAGE 0
#endif

#define BLOCK_TEAM (TEAM > 32)
#define TEAMS (THREADS / TEAM)
#define ASSIGNED_BIT 0x40000000u  // in a search key: the column has an owner (ties prefer free)
#define COL_BITS 0x3fffffffu
#define NO_KEY 0xffffffffu
#define NO_VAL 0xffffffffffffffffull
// rows whose loads a sweep issues together: about 8 loads in flight per lane
#ifndef SWEEP_ROWS
#define SWEEP_ROWS (K >= 8 ? 1 : 8 / K)
#endif

typedef cost_t work_t;  // int64 or double (common.cuh)
typedef unsigned long long u64;

#if COST_INTEGRAL
#define W_INF COST_INF
__device__ __forceinline__ work_t from_ordered(u64 o) { return (long long)(o ^ 0x8000000000000000ull); }
__device__ __forceinline__ u64 to_bits(work_t x) { return (u64)x; }
__device__ __forceinline__ work_t from_bits(u64 b) { return (long long)b; }
#else
#define W_INF INFINITY
__device__ __forceinline__ work_t from_ordered(u64 o) {
    return __longlong_as_double((o >> 63) ? (long long)(o & 0x7fffffffffffffffull) : (long long)~o);
}
__device__ __forceinline__ u64 to_bits(work_t x) { return (u64)__double_as_longlong(x); }
__device__ __forceinline__ work_t from_bits(u64 b) { return __longlong_as_double((long long)b); }
#endif

#if BLOCK_TEAM
// the block's reduction slots, double-buffered: a reduction writes one buffer, meets at one
// barrier and reads it; the next reduction uses the other, so no second barrier is needed
__shared__ u64 red_o[2][WARPS];
__shared__ unsigned red_k[2][WARPS];
__shared__ long long next_problem;
#endif

struct Team {
    int rank;       // lane within the team
    unsigned mask;  // the team's lanes in its warp
    int par;        // the block's reduction buffer to use next
};

__device__ __forceinline__ void team_sync(const Team& t) {
#if BLOCK_TEAM
    __syncthreads();
#else
    __syncwarp(t.mask);
#endif
}

__device__ __forceinline__ bool team_any(const Team& t, bool b) {
#if BLOCK_TEAM
    return __syncthreads_or(b) != 0;
#else
    return __any_sync(t.mask, b);
#endif
}

// the lexicographic minimum of (o, k) over the team, in every lane
__device__ __forceinline__ void team_min(Team& t, u64& o, unsigned& k) {
    const unsigned hi = (unsigned)(o >> 32), lo = (unsigned)o;
    const unsigned mhi = __reduce_min_sync(t.mask, hi);
    const unsigned mlo = __reduce_min_sync(t.mask, hi == mhi ? lo : 0xffffffffu);
    k = __reduce_min_sync(t.mask, (hi == mhi && lo == mlo) ? k : NO_KEY);
    o = ((u64)mhi << 32) | mlo;
#if BLOCK_TEAM
    const int w = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0) {
        red_o[t.par][w] = o;
        red_k[t.par][w] = k;
    }
    __syncthreads();
    o = red_o[t.par][0];
    k = red_k[t.par][0];
#pragma unroll
    for (int q = 1; q < WARPS; ++q) {
        const u64 a = red_o[t.par][q];
        const unsigned b = red_k[t.par][q];
        if (a < o || (a == o && b < k)) {
            o = a;
            k = b;
        }
    }
    t.par ^= 1;
#endif
}

__device__ __forceinline__ work_t team_max(Team& t, work_t x) {
    u64 o = ~ordered(x);
    unsigned k = 0;
    team_min(t, o, k);
    return from_ordered(~o);
}

__device__ __forceinline__ work_t team_sum(Team& t, work_t s) {
#pragma unroll
    for (int off = (TEAM < 32 ? TEAM : 32) / 2; off > 0; off >>= 1)
        s += __shfl_xor_sync(t.mask, s, off);
#if BLOCK_TEAM
    const int w = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0) red_o[t.par][w] = to_bits(s);
    __syncthreads();
    s = 0;
#pragma unroll
    for (int q = 0; q < WARPS; ++q) s += from_bits(red_o[t.par][q]);
    t.par ^= 1;
#endif
    return s;
}

// where the members' results go (every array indexed by problem, then row or column)
struct Outputs {
    long long* __restrict__ x;       // row -> column
    work_t* __restrict__ u;
    work_t* __restrict__ v;
    work_t* __restrict__ total;
    int* __restrict__ status;
    long long* __restrict__ rows;    // rows evaluated
    long long* row_ind;              // the pairs in the caller's orientation, or null (the host
    long long* col_ind;              // orients them): written by warp teams
    bool swap;                       // the caller's matrix is the canonical one transposed
};

// one problem's costs: entry (i, j) of the canonical n1 x n2 problem at p[i * rs + j * cs]
// (row-major: rs = n2, cs = 1; a small transposed member read where it lies: rs = 1, cs = n1),
// negated as they are read when maximising
struct Costs {
    const IN_T* __restrict__ p;
    long long rs, cs;
    bool negate;
    double limit;  // the float range rule's largest |cost| (epslap._validate.float_cost_limit)
};

__device__ __forceinline__ work_t load(const Costs& c, int i, int j) {
    const long long idx = (long long)i * c.rs + (long long)j * c.cs;
#if STAGE
    const work_t x = (work_t)c.p[idx];  // the team's copy in shared memory
#else
    const work_t x = (work_t)__ldg(c.p + idx);
#endif
    return c.negate ? -x : x;
}

// (u1, j1, u2, j2) of row i over the team: its smallest and second smallest reduced cost
// c_ij - v_j in (value, column) order (jv.py's _two_smallest)
__device__ __forceinline__ void two_smallest(Team& t, const Costs& c, int i, int n2,
                                             const work_t* v, work_t& u1, int& j1, work_t& u2,
                                             int& j2) {
    work_t h[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = t.rank + TEAM * k;
        h[k] = j < n2 ? load(c, i, j) : (work_t)0;
    }
    u64 o1 = NO_VAL, o2 = NO_VAL;
    unsigned k1 = NO_KEY, k2 = NO_KEY;
#pragma unroll
    for (int k = 0; k < K; ++k) {  // this lane's columns in increasing order
        const int j = t.rank + TEAM * k;
        if (j < n2) {
            const u64 o = ordered(h[k] - v[j]);
            if (o < o1) {
                o2 = o1;
                k2 = k1;
                o1 = o;
                k1 = j;
            } else if (o < o2) {
                o2 = o;
                k2 = j;
            }
        }
    }
    u64 a = o1;
    unsigned ka = k1;
    team_min(t, a, ka);
    u64 b = ka == k1 ? o2 : o1;
    unsigned kb = ka == k1 ? k2 : k1;
    team_min(t, b, kb);
    u1 = from_ordered(a);
    j1 = (int)ka;
    u2 = from_ordered(b);
    j2 = kb == NO_KEY ? -1 : (int)kb;
}

// bytes of one team's shared state: v (n2 work_t), y and pred (n2 ints), x and the free list
// (n1 ints); epslap/gpu/batch_plan.py computes the same
__device__ __forceinline__ long long team_bytes(int n1, int n2) {
    return ((8LL * n2 + 8LL * n2 + 8LL * n1) + 15) / 16 * 16;
}

// a team's workspace at `base` (team_bytes): prices v[n2], then y[n2] (column -> row), pred[n2]
// (the search's predecessors), x[n1] (row -> column) and fl[n1] (the free rows)
__device__ __forceinline__ void work_at(unsigned char* base, int n1, int n2, work_t*& v, int*& y,
                                        int*& pred, int*& x, int*& fl) {
    v = (work_t*)base;
    y = (int*)(base + 8LL * n2);
    pred = y + n2;
    x = pred + n2;
    fl = x + n1;
}

// Steps 3 to 5 of problem p from the prices in v and the assignment in x and y: a shortest
// augmenting path for each of the nfree free rows (fl[0 .. nfree) if `listed`, else rows
// 0 .. nfree), the result and its certificate. Writes every output of p and returns false,
// except where the certificate misses and this is not the `last` try: then it returns true, the
// outputs holding the duals that missed (the polish starts from them).
__device__ __forceinline__ bool search_and_certify(Team& t, const Costs& c, int n1, int n2,
                                                   long long p, unsigned char* base,
                                                   const Outputs& out, int nfree, bool listed,
                                                   long long& rows, double rtol, bool last) {
    work_t* v;
    int *y, *pred, *x, *fl;
    work_at(base, n1, n2, v, y, pred, x, fl);
    const int rank = t.rank;
    int status = STATUS_OK;

    // 3. shortest augmenting paths
    unsigned valid = 0, asg = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = rank + TEAM * k;
        if (j < n2) {
            valid |= 1u << k;
            if (y[j] >= 0) asg |= 1u << k;
        }
    }
    for (int q = 0; q < nfree && status == STATUS_OK; ++q) {
        const int f = listed ? fl[q] : q;
        work_t d[K], h[K];
        int pr[K];  // this lane's columns' predecessors; one goes to pred[] as its column closes
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int j = rank + TEAM * k;
            h[k] = j < n2 ? load(c, f, j) : (work_t)0;
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int j = rank + TEAM * k;
            d[k] = 0;
            pr[k] = f;
            if (j < n2) d[k] = h[k] - v[j];
        }
        ++rows;
        unsigned open = valid;
        work_t mn = 0;
        bool first = true;
        int jmin = -1;
        for (;;) {
            // this lane's least open distance, then the least key among its columns at it (one
            // ordered key per lane instead of one per column)
            work_t lm = W_INF;
#pragma unroll
            for (int k = 0; k < K; ++k)
                if (((open >> k) & 1u) && d[k] < lm) lm = d[k];
            unsigned bk = NO_KEY;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const unsigned key = (unsigned)(rank + TEAM * k)
                    | (((asg >> k) & 1u) ? ASSIGNED_BIT : 0u);
                if (((open >> k) & 1u) && d[k] == lm && key < bk) bk = key;
            }
            u64 bo = bk == NO_KEY ? NO_VAL : ordered(lm);
            team_min(t, bo, bk);
            const work_t dmin = from_ordered(bo);
            if (bk == NO_KEY || !(dmin < W_INF)) {
                status = STATUS_INFEASIBLE;
                break;
            }
            jmin = (int)(bk & COL_BITS);
            if (jmin % TEAM == rank) {
                const int kmin = jmin / TEAM;
                open &= ~(1u << kmin);
#pragma unroll
                for (int k = 0; k < K; ++k)
                    if (k == kmin) pred[jmin] = pr[k];  // final: the column is closed
            }
            if (first) {  // distances from the row's smallest reduced cost: the path's
                // arithmetic then runs at the magnitude of its own reduced costs
#pragma unroll
                for (int k = 0; k < K; ++k) d[k] -= dmin;
                mn = 0;
                first = false;
            } else if (dmin > mn) {
                mn = dmin;
            }
            if (!(bk & ASSIGNED_BIT)) break;  // a free column: the path ends here
            const int i = y[jmin];
            const work_t cm = load(c, i, jmin), vm = v[jmin];
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int j = rank + TEAM * k;
                h[k] = j < n2 ? load(c, i, j) : (work_t)0;
            }
            ++rows;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if ((open >> k) & 1u) {
                    const int j = rank + TEAM * k;
                    const work_t cand = (h[k] - cm) - (v[j] - vm) + mn;
                    if (cand < d[k]) {
                        d[k] = cand;
                        pr[k] = i;
                    }
                }
            }
        }
        if (status != STATUS_OK) break;
        // prices of the columns this search closed
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (((valid & ~open) >> k) & 1u) {
                const int j = rank + TEAM * k;
                v[j] -= mn - d[k];
            }
        }
        if (jmin % TEAM == rank) asg |= 1u << (jmin / TEAM);
        team_sync(t);
        if (rank == 0) {  // flip the alternating path back to f
            int j = jmin;
            for (;;) {
                const int i = pred[j];
                y[j] = i;
                const int prev = x[i];
                x[i] = j;
                if (i == f) break;
                j = prev;
            }
        }
        team_sync(t);
    }
    if (status != STATUS_OK) {
        if (rank == 0) {
            out.status[p] = status;
            out.rows[p] = rows;
        }
        return false;
    }

    // 4. the result: v shifted to a maximum of 0, u from the assigned pairs
    bool fail = false;
    work_t top = -W_INF;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = rank + TEAM * k;
        if (j < n2) top = v[j] > top ? v[j] : top;
    }
    top = team_max(t, top);
    work_t vq[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = rank + TEAM * k;
        vq[k] = 0;
        if (j < n2) {
            vq[k] = v[j] - top;
            out.v[p * n2 + j] = vq[k];
            fail |= y[j] < 0 && vq[k] != 0;
        }
    }
    work_t part = 0;
    for (int i = rank; i < n1; i += TEAM) {
        const int j = x[i];
        const work_t cx = load(c, i, j);
        out.u[p * n1 + i] = cx - (v[j] - top);
        out.x[p * n1 + i] = j;
        part += cx;
    }
    const work_t total = team_sum(t, part);

    // 5. the certificate, entry by entry (epslap.verify's rule)
    for (int i0 = 0; i0 < n1; i0 += SWEEP_ROWS) {
        work_t buf[SWEEP_ROWS][K], ui[SWEEP_ROWS];
#pragma unroll
        for (int r = 0; r < SWEEP_ROWS; ++r) {
            const int i = i0 + r < n1 ? i0 + r : n1 - 1;
            const int xi = x[i];
            ui[r] = load(c, i, xi) - (v[xi] - top);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int j = rank + TEAM * k;
                buf[r][k] = j < n2 ? load(c, i, j) : (work_t)0;
            }
        }
#pragma unroll
        for (int r = 0; r < SWEEP_ROWS; ++r)
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int j = rank + TEAM * k;
                if (i0 + r < n1 && j < n2) {
                    const work_t cij = buf[r][k];
#if COST_INTEGRAL
                    fail |= ui[r] + vq[k] > cij;
#else
                    if (cij < W_INF) {  // the tolerance summed in either order (verify's
                        // order depends on the caller's orientation): the smaller
                        const double a = fabs(cij), b = fabs(ui[r]), e = fabs(vq[k]);
                        const double tol = rtol * fmin((a + b) + e, (a + e) + b);
                        fail |= (ui[r] + vq[k]) - cij > tol;
                    }
#endif
                }
            }
    }
    fail = team_any(t, fail);
    if (fail && !last) return true;
#if !BLOCK_TEAM
    // the pairs in the caller's orientation (a block team leaves them to the host's launch of
    // orient.cu, as does a member the host solves again)
    if (out.row_ind != nullptr && !fail) {
        if (!out.swap) {
            for (int i = rank; i < n1; i += TEAM) {
                out.row_ind[p * n1 + i] = i;
                out.col_ind[p * n1 + i] = x[i];
            }
        } else {  // the caller's rows are the canonical columns, ranked among the assigned
            const unsigned below = t.mask & ((1u << (threadIdx.x & 31)) - 1u);
            int at = 0;
            for (int j0 = 0; j0 < n2; j0 += TEAM) {
                const int j = j0 + rank;
                const bool a = j < n2 && y[j] >= 0;
                const unsigned m = __ballot_sync(t.mask, a);
                if (a) {
                    const long long q = p * n1 + at + __popc(m & below);
                    out.row_ind[q] = j;
                    out.col_ind[q] = y[j];
                }
                at += __popc(m & t.mask);
            }
        }
    }
#endif
    if (rank == 0) {
        out.total[p] = total;
        out.status[p] = fail ? UNCERTIFIED : STATUS_OK;
        out.rows[p] = rows;
    }
    return false;
}

// Steps 1 and 2 of problem p, then search_and_certify. Returns whether p needs the polish
// (its outputs then hold the duals that missed the rule; `rows`: the rows it read so far).
__device__ __forceinline__ bool solve_one(Team& t, const Costs& c, int n1, int n2, long long p,
                                          unsigned char* base, const Outputs& out,
                                          long long& rows, double rtol) {
    work_t* v;
    int *y, *pred, *x, *fl;
    work_at(base, n1, n2, v, y, pred, x, fl);
    const int rank = t.rank;
    rows = 0;

    // 1. the sweep: validity, +inf, column minima (first row of the minimum)
    work_t cmin[K];
    int imin[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        cmin[k] = W_INF;
        imin[k] = 0;
    }
    bool bad = false, has_inf = false, big = false;
    for (int i0 = 0; i0 < n1; i0 += SWEEP_ROWS) {
        work_t buf[SWEEP_ROWS][K];
#pragma unroll
        for (int r = 0; r < SWEEP_ROWS; ++r)
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int j = rank + TEAM * k, i = i0 + r;
                buf[r][k] = (i < n1 && j < n2) ? load(c, i, j) : (work_t)0;
            }
#pragma unroll
        for (int r = 0; r < SWEEP_ROWS; ++r)
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int j = rank + TEAM * k, i = i0 + r;
                if (i < n1 && j < n2) {
                    const work_t a = buf[r][k];
#if !COST_INTEGRAL
                    bad |= (a != a) | (a == -W_INF);
                    has_inf |= a == W_INF;
                    big |= (a != W_INF) & (fabs((double)a) > c.limit);
#endif
                    if (a < cmin[k]) {
                        cmin[k] = a;
                        imin[k] = i;
                    }
                }
            }
    }
#if !COST_INTEGRAL
    bad = team_any(t, bad);
    has_inf = team_any(t, has_inf);
    big = team_any(t, big);
    if (bad || big) {
        if (rank == 0) {
            out.status[p] = bad ? STATUS_INVALID : STATUS_OUT_OF_RANGE;
            out.rows[p] = 0;
        }
        return false;
    }
#endif

    // 2. the initialisation
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = rank + TEAM * k;
        if (j < n2) {
            v[j] = 0;
            y[j] = -1;
        }
    }
    for (int i = rank; i < n1; i += TEAM) x[i] = -1;
    int nfree = n1;
    bool listed = false;  // the free rows are fl[0 .. nfree) (else rows 0 .. n1)
    if (n1 == n2 && n2 > 1 && !has_inf) {
        int* match = pred;  // columns each row is the minimum of, during the initialisation
        for (int i = rank; i < n1; i += TEAM) match[i] = 0;
        team_sync(t);
        // column reduction: each column to the row of its minimum if that row has none yet,
        // columns from the last to the first (a row keeps its largest column)
        work_t top = -W_INF;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int j = rank + TEAM * k;
            if (j < n2) {
                atomicMax(&x[imin[k]], j);
                atomicAdd(&match[imin[k]], 1);
                top = cmin[k] > top ? cmin[k] : top;
            }
        }
        top = team_max(t, top);
        team_sync(t);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int j = rank + TEAM * k;
            if (j < n2) {
                y[j] = x[imin[k]] == j ? imin[k] : -1;
                v[j] = cmin[k] - top;  // prices at most 0 (jv.py: _shift_to_max_zero)
            }
        }
        rows += n1;
        team_sync(t);
        // reduction transfer, row by row as jv.py does it
        nfree = 0;
        for (int i = 0; i < n1; ++i) {
            const int m = match[i];
            if (m == 0) {
                if (rank == 0) fl[nfree] = i;
                ++nfree;
            } else if (m == 1) {
                const int j1 = x[i];
                u64 o = NO_VAL;
                work_t c1 = 0;
#pragma unroll
                for (int k = 0; k < K; ++k) {
                    const int j = rank + TEAM * k;
                    if (j < n2) {
                        const work_t cij = load(c, i, j);
                        if (j != j1) {
                            const u64 r = ordered(cij - v[j]);
                            o = r < o ? r : o;
                        } else {
                            c1 = cij;
                        }
                    }
                }
                unsigned kk = 0;
                team_min(t, o, kk);
                ++rows;
                if (j1 % TEAM == rank) {
                    const work_t mu = from_ordered(o);
                    v[j1] -= mu - (c1 - v[j1]);
                }
                team_sync(t);
            }
        }
        team_sync(t);  // the free list is complete
        // augmenting row reduction: one round over the free rows, at most 2 row scans per row
        // of the problem (long displacement chains on near ties cost more here than in step 3)
        {
            int k = 0, scans = 0;
            const int todo = nfree;
            nfree = 0;
            while (k < todo) {
                const int i = fl[k];
                ++k;
                if (scans >= 2 * n1) {  // the rest go to step 3
                    team_sync(t);
                    if (rank == 0) fl[nfree] = i;
                    ++nfree;
                    team_sync(t);
                    continue;
                }
                work_t u1, u2;
                int j1, j2;
                two_smallest(t, c, i, n2, v, u1, j1, u2, j2);
                ++rows;
                ++scans;
                int i0 = y[j1];
                const int i0b = j2 >= 0 ? y[j2] : -1;
                team_sync(t);  // every lane has read fl, y and v
                const bool lower = j2 >= 0 && u1 < u2;
                if (!lower && i0 >= 0 && j2 >= 0) {  // a tie with an assigned column
                    j1 = j2;
                    i0 = i0b;
                }
                if (rank == 0) {
                    if (lower) v[j1] -= u2 - u1;
                    x[i] = j1;
                    y[j1] = i;
                    if (i0 >= 0) x[i0] = -1;
                }
                if (i0 >= 0) {
                    if (lower) {  // the displaced row goes next
                        --k;
                        if (rank == 0) fl[k] = i0;
                    } else {
                        if (rank == 0) fl[nfree] = i0;
                        ++nfree;
                    }
                }
                team_sync(t);
            }
        }
        listed = true;
    }
    team_sync(t);
    return search_and_certify(t, c, n1, n2, p, base, out, nfree, listed, rows, rtol, false);
}

// Step 6, the polish of problem p, whose certificate missed: every row free again, from the
// prices just reported (out.v, at most 0), steps 3 to 5 once more.
__device__ __forceinline__ void polish_one(Team& t, const Costs& c, int n1, int n2, long long p,
                                           unsigned char* base, const Outputs& out,
                                           long long rows, double rtol) {
    work_t* v = (work_t*)base;
    int* y = (int*)(base + 8LL * n2);
    int* x = y + 2 * n2;  // (work_at's layout)
    team_sync(t);  // every lane is done with x, y and v
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = t.rank + TEAM * k;
        if (j < n2) {
            v[j] = out.v[p * n2 + j];  // written by this lane
            y[j] = -1;
        }
    }
    for (int i = t.rank; i < n1; i += TEAM) x[i] = -1;
    team_sync(t);
    search_and_certify(t, c, n1, n2, p, base, out, n1, false, rows, rtol, true);
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
batch_solve(const IN_T* __restrict__ costs, long long nprob, int n1, int n2, int negate,
            long long* __restrict__ x_out, work_t* __restrict__ u_out,
            work_t* __restrict__ v_out, work_t* __restrict__ total_out,
            int* __restrict__ status_out, long long* __restrict__ rows_out,
            unsigned long long* __restrict__ counter, double rtol, double limit, long long rs,
            long long cs, long long* row_ind_out, long long* col_ind_out, int swap) {
    // counter[0]: the next problem to take; counter[1]: the members polished (step 6)
    extern __shared__ __align__(16) unsigned char smem[];
    Team t;
    t.rank = threadIdx.x % TEAM;
    t.par = 0;
#if BLOCK_TEAM || TEAM == 32
    t.mask = FULL_MASK;
#else
    t.mask = ((1u << TEAM) - 1u) << ((threadIdx.x & 31) & ~(TEAM - 1));
#endif
    unsigned char* base = smem + (threadIdx.x / TEAM) * team_bytes(n1, n2);
    Outputs out;
    out.x = x_out;
    out.u = u_out;
    out.v = v_out;
    out.total = total_out;
    out.status = status_out;
    out.rows = rows_out;
    out.row_ind = row_ind_out;
    out.col_ind = col_ind_out;
    out.swap = swap != 0;
    const long long size = (long long)n1 * n2;
    for (;;) {
        long long p;
#if BLOCK_TEAM
        if (threadIdx.x == 0) next_problem = (long long)atomicAdd(counter, 1ull);
        __syncthreads();
        p = next_problem;
        __syncthreads();
#else
        unsigned long long got = 0;
        if (t.rank == 0) got = atomicAdd(counter, 1ull);
        p = (long long)__shfl_sync(t.mask, got, (threadIdx.x & 31) & ~(TEAM - 1));
#endif
        if (p >= nprob) break;
        Costs c;
        c.rs = rs;
        c.cs = cs;
#if STAGE
        {
            IN_T* stage = (IN_T*)(smem + TEAMS * team_bytes(n1, n2)) + (threadIdx.x / TEAM) * size;
            const IN_T* __restrict__ from = costs + p * size;
            if (cs == 1) {
                long long q = t.rank;
                for (; q + 7 * TEAM < size; q += 8 * TEAM) {  // eight loads in flight per lane
                    IN_T r[8];
#pragma unroll
                    for (int e = 0; e < 8; ++e) r[e] = __ldg(from + q + e * TEAM);
#pragma unroll
                    for (int e = 0; e < 8; ++e) stage[q + e * TEAM] = r[e];
                }
                for (; q < size; q += TEAM) stage[q] = __ldg(from + q);
            } else {  // a transposed member, row-major in the copy
                for (int q = t.rank; q < (int)size; q += TEAM) {
                    const int i = q / n2, j = q - i * n2;
                    stage[q] = __ldg(from + (long long)i * rs + (long long)j * cs);
                }
            }
            team_sync(t);
            c.p = stage;
            c.rs = n2;
            c.cs = 1;
        }
#else
        c.p = costs + p * size;
#endif
        c.negate = negate != 0;
        c.limit = limit;
        long long rows;
        if (solve_one(t, c, n1, n2, p, base, out, rows, rtol)) {
            if (t.rank == 0) atomicAdd(counter + 1, 1ull);
            polish_one(t, c, n1, n2, p, base, out, rows, rtol);
        }
        team_sync(t);
    }
}
