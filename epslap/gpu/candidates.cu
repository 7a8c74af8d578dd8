// Candidates, then certify on the device (epslap/candidates.py has the method): the streaming
// pass over every cost that keeps each row's cheapest columns (the candidates) or the columns
// that violate the certificate, and the auction phases of the sparse solve over the candidates.
//
// scan_rows: one thread per row of a list, every column of that row in turn; a warp's 32 rows
// read the same column j at once, so v[j] and the column's operands of cost_fn are one load
// for the warp. A row keeps its best K in a small sorted list (in local memory: inserts are
// rare once the list holds K, a compare against its last entry is the common case).
//
// auction_phase: one ε-phase of a Jacobi auction on a CSR problem, every free row bidding at
// once, in one cooperative launch (grid-wide barriers between the bid, claim and award steps
// of each round) until few rows are free; a round reads a list of its bidders. Bids lower a
// column's price v (the solver's convention: rows take the smallest c - v); the lowest bid wins
// a column, ties to the first claim.
#include "cost.cuh"

#ifndef K_MAX  // the largest list a row keeps (epslap.candidates.K_MAX)
#define K_MAX 64
#endif
// threads per block and blocks per multiprocessor (epslap/gpu/candidates.py: BLOCK,
// PASS_BLOCKS_PER_SM, AUCTION_BLOCKS_PER_SM); the bounds keep that many blocks resident, which a
// cooperative launch (every kernel of the module) requires
#define BLOCK 256

#if COST_INTEGRAL
__device__ __forceinline__ long long order_key(cost_t x) { return x; }
__device__ __forceinline__ cost_t key_value(long long k) { return k; }
#else
// a double's order as a signed 64-bit integer (negative values: magnitude bits flipped)
__device__ __forceinline__ long long order_key(cost_t x) {
    const long long b = __double_as_longlong(x);
    return b >= 0 ? b : (b ^ 0x7fffffffffffffffLL);
}
__device__ __forceinline__ cost_t key_value(long long k) {
    return __longlong_as_double(k >= 0 ? k : (k ^ 0x7fffffffffffffffLL));
}
#endif

__device__ __forceinline__ double magnitude(cost_t x) { return x < 0 ? -(double)x : (double)x; }

// A row's best list: entries enter it in ascending order of (value, column), so that ties go
// to the lower column whatever order the columns are read in (as cpu/candidates._insert, which
// reads them in order); once it holds k, its last entry is the bar.
struct BestList {
    cost_t r[K_MAX];
    long long j[K_MAX];
    int count;
};

__device__ __forceinline__ void list_insert(BestList& l, int k, cost_t r, long long j) {
    int q;
    if (l.count == k) { q = k - 1; } else { q = l.count; ++l.count; }
    while (q > 0 && (l.r[q - 1] > r || (l.r[q - 1] == r && l.j[q - 1] > j))) {
        l.r[q] = l.r[q - 1];
        l.j[q] = l.j[q - 1];
        --q;
    }
    l.r[q] = r;
    l.j[q] = j;
}

// Rows rows[0..m): with u == nullptr, the (at most k) columns of smallest c_ij - v_j (finite
// costs), ascending, ties to the lower column, and diag[t] = c_ii; NaN and -inf raise bits of
// *flags (1, 2, as cpu/candidates.py), the largest finite |c| goes to *biggest (its bits).
// With u: the (at most k) columns most below u_i, counting only pairs beyond rel * (|c| + |u_i|
// + |v_j|) below it (0 for integer costs: exact), and row_min[t] the least c_ij - v_j beside
// the row's own column own[i] (a lower bound of it where tiles were skipped, below), as
// cpu/candidates.certify_rows. Written at t: out_cols[t * k + q], out_vals (the costs c_ij),
// out_counts[t].
// Columns go in tiles of TILE, and inside a tile in groups of SCAN_UNROLL whose costs are
// computed before any is compared, so that their loads are in flight together; the rare entry
// into a list is the slow path. A warp reads the tiles cyclically from the place of its first
// row in the column order (rows and columns of a point set relabeled in one spatial order,
// epslap/locality.py: its near columns first, so that the lists fill with near entries and
// later columns rarely enter; read from column 0, such a row met its columns from far to near
// and nearly every one entered).
// Box bound (POINT_DIM > 0 and tile_box given: a squared Euclidean or Euclidean point set, the
// row points in row_points (n1, POINT_DIM)): tile_box[tile] holds the least and the largest
// coordinate of the tile's column points (POINT_DIM each), tile_vmax[tile] its largest price.
// Then every c_ij - v_j of the tile is at least dist(x_i, box) - vmax (the distance summed in
// the cost's own order; rounding is monotone, and BOX_SLACK covers a fused multiply-add), and
// a warp skips a tile when that bound is above every lane's current limit: no entry of the
// tile could enter a list. A point set in a spatial order then reads the few tiles around its
// rows instead of all n2 columns (the pass's cost drops from n1 n2 to about n1 times a few
// tiles, plus one bound per tile).
#ifndef POINT_DIM
#define POINT_DIM 0
#endif
#ifndef POINT_ROOT  // 1: the cost is the distance (Euclidean), 0: its square
#define POINT_ROOT 0
#endif
#ifndef TILE  // columns per tile (epslap/gpu/modules.py: CANDIDATE_TILE, always defined there)
#define TILE 128
#endif
#define SCAN_UNROLL 4
#define BOX_SLACK 1e-12
extern "C" __global__ void __launch_bounds__(BLOCK, 4) scan_rows(
        COST_PARAMS, const cost_t* __restrict__ v, const cost_t* __restrict__ u, double rel,
        const long long* __restrict__ rows, const long long* __restrict__ own, long long m,
        int k, const double* __restrict__ row_points, const double* __restrict__ tile_box,
        const double* __restrict__ tile_vmax, double* __restrict__ row_min,
        long long* __restrict__ out_cols, cost_t* __restrict__ out_vals,
        int* __restrict__ out_counts, cost_t* __restrict__ diag,
        unsigned long long* __restrict__ biggest, int* __restrict__ flags) {
    COST_BUILD
    const long long n2 = a.n2;
    const long long tiles = (n2 + TILE - 1) / TILE;
    const long long stride = (long long)gridDim.x * blockDim.x;  // a multiple of 32
    const int lane = threadIdx.x & 31;
    const bool certify = u != nullptr;
    double big = 0.0;
    bool nan_seen = false;
    BestList l;
    // a warp's lanes take consecutive entries of rows and go round together (a uniform trip
    // count: the tile vote is warp-wide); lanes past m repeat the last row and write nothing
    for (long long base = blockIdx.x * (long long)blockDim.x + (threadIdx.x - lane); base < m;
         base += stride) {
        const long long t = base + lane;
        const bool live = t < m;
        const long long i = rows[live ? t : m - 1];
        const long long lead = rows[base];  // the warp's first row
        long long first = (long long)((double)lead / (double)a.n1 * (double)tiles);
        first = first < tiles ? first : 0;
        const cost_t ui = certify ? u[i] : (cost_t)0;
        const double aui = magnitude(ui);
        const long long mine = certify ? own[i] : -1;
        double least = INFINITY;
        l.count = 0;
        cost_t limit = certify ? ui : (cost_t)COST_INF;  // what an entry must be below
#if POINT_DIM > 0
        const bool boxed = tile_box != nullptr;
        double xi[POINT_DIM];
#pragma unroll
        for (int d = 0; d < POINT_DIM; ++d) xi[d] = boxed ? row_points[i * POINT_DIM + d] : 0.0;
#endif
        for (long long s = 0; s < tiles; ++s) {
            const long long tile = first + s < tiles ? first + s : first + s - tiles;
#if POINT_DIM > 0
            if (boxed) {
                const double* box = tile_box + tile * (2 * POINT_DIM);
                double d2 = 0.0;
#pragma unroll
                for (int d = 0; d < POINT_DIM; ++d) {
                    const double below = __ldg(box + d) - xi[d];
                    const double above = xi[d] - __ldg(box + POINT_DIM + d);
                    double e = below > above ? below : above;
                    e = e > 0.0 ? e : 0.0;
                    d2 += e * e;
                }
                const double bound = (POINT_ROOT ? sqrt(d2) : d2) * (1.0 - BOX_SLACK)
                                     - __ldg(tile_vmax + tile);
                const bool over = bound > (double)limit;
                if (__all_sync(FULL_MASK, over)) {
                    least = bound < least ? bound : least;
                    continue;
                }
            }
#endif
            for (long long j0 = tile * TILE; j0 < tile * TILE + TILE && j0 < n2;
                 j0 += SCAN_UNROLL) {
                // columns j0 .. j0 + SCAN_UNROLL - 1; past n2 (the last tile) skipped
                cost_t c[SCAN_UNROLL], r[SCAN_UNROLL];
#pragma unroll
                for (int q = 0; q < SCAN_UNROLL; ++q) {
                    const long long j = j0 + q < n2 ? j0 + q : n2 - 1;
                    c[q] = cost_fn(a, i, j);
                    r[q] = c[q] - __ldg(v + j);
                }
#pragma unroll
                for (int q = 0; q < SCAN_UNROLL; ++q) {
#if !COST_INTEGRAL
                    if (!certify) {
                        nan_seen |= c[q] != c[q];
                        const double ac = magnitude(c[q]);
                        big = ac < INFINITY && ac > big ? ac : big;
                    }
#endif
                    if (certify && (double)r[q] < least && j0 + q != mine && j0 + q < n2)
                        least = (double)r[q];
                    if (!(r[q] <= limit) || j0 + q >= n2) continue;
                    const long long j = j0 + q;
                    // a tie with the full list's last entry enters when its column is lower
                    // (a pair at u_i itself never violates)
                    if (r[q] == limit && !(l.count == k && r[q] == l.r[k - 1] && j < l.j[k - 1]
                                           && !(certify && !(r[q] < ui)))) continue;
#if !COST_INTEGRAL
                    if (c[q] == -INFINITY) { atomicOr(flags, 2); continue; }
#endif
                    if (certify && rel != 0.0 &&
                        !((double)(ui - r[q]) > rel * (magnitude(c[q]) + aui
                                                        + magnitude(__ldg(v + j))))) continue;
                    list_insert(l, k, r[q], j);
                    if (l.count == k) limit = certify && ui < l.r[k - 1] ? ui : l.r[k - 1];
                }
            }
        }
        if (!live) continue;
        for (int q = 0; q < l.count; ++q) {
            out_cols[t * k + q] = l.j[q];
            out_vals[t * k + q] = cost_fn(a, i, l.j[q]);
        }
        out_counts[t] = l.count;
        if (certify) row_min[t] = least;
        else diag[t] = cost_fn(a, i, i);
    }
    if (!certify && big > 0.0)
        atomicMax(biggest, (unsigned long long)__double_as_longlong(big));
    if (nan_seen) atomicOr(flags, 1);
}

// counters of auction_phase
#define AUC_FREE0 0   // rows in the free list of an even round
#define AUC_FREE1 1   // ... of an odd round
#define AUC_ROUNDS 2
#define AUC_BIDS 3
#define AUC_STATUS 4  // 1: a row without a stored pair; 2: max_bids reached

// Append `row` to list[*count] when `want`, one atomic per warp (every lane of the warp calls it).
__device__ __forceinline__ void list_append(long long* list, unsigned long long* count,
                                            bool want, long long row) {
    const unsigned lanes = __ballot_sync(FULL_MASK, want);
    if (!lanes) return;
    const int lane = threadIdx.x & 31;
    const int leader = __ffs(lanes) - 1;
    unsigned long long base = 0;
    if (lane == leader) base = atomicAdd(count, (unsigned long long)__popc(lanes));
    base = __shfl_sync(FULL_MASK, base, leader);
    if (want) list[base + __popc(lanes & ((1u << lane) - 1))] = row;
}

// Of two (best, second, column) triples of a row's reduced costs, the merged one (ties of the
// best to the lower column).
__device__ __forceinline__ void merge_bids(cost_t& best, cost_t& second, long long& arg,
                                           cost_t b2, cost_t s2, long long a2) {
    if (b2 < best || (b2 == best && a2 >= 0 && (arg < 0 || a2 < arg))) {
        second = best < s2 ? best : s2;
        best = b2;
        arg = a2;
    } else {
        second = b2 < second ? b2 : second;
    }
}

// One ε-phase (the host resets the assignment before it): rounds of bid, claim and award until
// fewer than min_free rows are free (then the host's Gauss–Seidel auction assigns the rest: a
// round costs a few microseconds whatever the number of bidders, a host bid a fraction of one).
// The free rows of a round are a list (free_list, two halves of n1 each: this round's and the
// next's), so a round costs its bidders, not n1. A row's pairs are scanned by a group of g
// lanes (g = 1 while the bidders fill the grid, up to 32 as they thin out: a lone bidder's
// scan is one memory latency deep, not one per pair). col_key[] must hold LLONG_MAX and
// winner[] -1 on entry (left so on exit).
extern "C" __global__ void __launch_bounds__(BLOCK, 2) auction_phase(const long long* __restrict__ indptr,
                                         const long long* __restrict__ indices,
                                         const cost_t* __restrict__ data, cost_t* v,
                                         long long* row_to_col, long long* col_to_row,
                                         unsigned long long* col_key_u, long long* winner,
                                         long long* bid_col, long long* bid_key,
                                         long long* free_list, cost_t eps,
                                         cost_t jump, long long n1, long long max_bids,
                                         long long min_free, unsigned long long* counters) {
    cg::grid_group grid = cg::this_grid();
    long long* col_key = (long long*)col_key_u;
    const long long start = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long threads = (long long)gridDim.x * blockDim.x;  // a multiple of 32
    // the first list: the rows free on entry (a uniform trip count: list_append is warp-wide)
    for (long long b = 0; b < n1; b += threads) {
        const long long i = b + start;
        list_append(free_list, counters + AUC_FREE0,
                    i < n1 && __ldcg(row_to_col + i) < 0, i);
    }
    grid.sync();
    for (long long round = 0;; ++round) {
        const int now = round & 1;
        const long long* list = free_list + now * n1;
        long long* next = free_list + (1 - now) * n1;
        // written before the last barrier only (the count and the bids by thread 0 after the
        // first barrier of a round): every thread reads the same values and leaves together
        const long long m = (long long)__ldcg(counters + now);
        const unsigned long long bids = __ldcg(counters + AUC_BIDS);
        const bool over = bids + m > (unsigned long long)max_bids;
        if (m < min_free || over) {
            if (start == 0 && over && m >= min_free) counters[AUC_STATUS] = 2;
            break;
        }
        // bid: group size g (a power of two, uniform over the grid) as the bidders allow
        int g = 1;
        while (g < 32 && m * (2 * g) <= threads) g *= 2;
        const long long groups = threads / g;
        const long long gid = start / g;
        const int gl = (int)(start % g);
        for (long long b = 0; b < m; b += groups) {
            const long long t = b + gid;
            cost_t best = (cost_t)COST_INF, second = (cost_t)COST_INF;
            long long arg = -1;
            long long i = -1;
            if (t < m) {
                i = __ldcg(list + t);
                for (long long p = indptr[i] + gl; p < indptr[i + 1]; p += g) {
                    const long long j = indices[p];
                    merge_bids(best, second, arg, data[p] - __ldcg(v + j), (cost_t)COST_INF, j);
                }
            }
            for (int off = g >> 1; off > 0; off >>= 1) {  // the group's triples merged
                const cost_t b2 = __shfl_xor_sync(FULL_MASK, best, off);
                const cost_t s2 = __shfl_xor_sync(FULL_MASK, second, off);
                const long long a2 = __shfl_xor_sync(FULL_MASK, arg, off);
                merge_bids(best, second, arg, b2, s2, a2);
            }
            if (t < m && gl == 0) {
                if (arg < 0) {
                    atomicOr(counters + AUC_STATUS, 1ull);
                    bid_col[t] = -1;
                } else {
                    const cost_t step = second < (cost_t)COST_INF ? second - best : jump;
                    const long long key = order_key(__ldcg(v + arg) - step - eps);
                    bid_col[t] = arg;
                    bid_key[t] = key;
                    atomicMin(col_key + arg, key);
                }
            }
        }
        if (start == 0) counters[1 - now] = 0;  // the next list's count (read a round ago)
        grid.sync();
        if (__ldcg(counters + AUC_STATUS) != 0) {  // a row without a pair: all leave here,
            for (long long t = start; t < m; t += threads) {  // the columns bid on reset
                const long long j = __ldcg(bid_col + t);
                if (j >= 0) col_key[j] = 0x7fffffffffffffffLL;
            }
            break;
        }
        if (start == 0) {
            counters[AUC_ROUNDS] = round + 1;
            counters[AUC_BIDS] = bids + m;
        }
        // claim: the rows whose bid is their column's lowest try to take it
        for (long long t = start; t < m; t += threads) {
            const long long j = __ldcg(bid_col + t);
            if (j >= 0 && __ldcg(col_key + j) == __ldcg(bid_key + t)) atomicCAS(
                (unsigned long long*)(winner + j), 0xffffffffffffffffull,
                (unsigned long long)__ldcg(list + t));
        }
        grid.sync();
        // award: each won column takes its new price and owner and its old owner joins the next
        // list; a row that lost stays free and joins it too (every column bid on has a winner)
        for (long long b = 0; b < m; b += threads) {
            const long long t = b + start;
            bool lost = false;
            long long prev = -1;
            long long i = -1;
            if (t < m) {
                i = __ldcg(list + t);
                const long long j = __ldcg(bid_col + t);
                if (j >= 0 && __ldcg(winner + j) == i) {
                    v[j] = key_value(__ldcg(col_key + j));
                    col_key[j] = 0x7fffffffffffffffLL;
                    winner[j] = -1;
                    prev = __ldcg(col_to_row + j);
                    if (prev >= 0) row_to_col[prev] = -1;
                    col_to_row[j] = i;
                    row_to_col[i] = j;
                } else {
                    lost = true;
                }
            }
            list_append(next, counters + (1 - now), lost, i);
            list_append(next, counters + (1 - now), prev >= 0, prev);
        }
        grid.sync();
    }
}
