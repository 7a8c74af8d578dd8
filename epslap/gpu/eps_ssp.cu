// ε-pricing successive shortest paths on the GPU: device-resident passes and estimation sweeps.
//
// Guthe & Thuerck, "Algorithm 1015", ACM TOMS 47(2), 2021, doi:10.1145/3442348 (docs/algorithm.md §1–4).
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

#ifndef UNROLL  // set by the host: columns per thread whose loads a scan issues together (1-4)
#define UNROLL 1
#endif

#ifndef SMEM_STATE  // set by the host: 1 when the pass kernel's column state fits in shared memory
#define SMEM_STATE 0
#endif

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

// ---- one pass (docs/algorithm.md §1, §4): every real row in perm order (reversed when `reverse`),
// ---- then every virtual row.
//
// Column j belongs to thread j % S of the grid (S = gridDim.x · blockDim.x): its d, pred, open
// flag, owner, v, cpred and cmatch are read and written by that thread alone during the pass
// (thread 0 of the same block also writes owner[j] and cmatch[j] in the path flip, before a
// __syncthreads), so they are plain cached accesses, or shared memory (SMEM_STATE below). The
// blocks agree on each Dijkstra step's argmin through `slots` (Slot below), which is also the only
// grid-wide synchronisation: no grid.sync() in the pass. Every block records the steps' winners and
// flips the augmenting path for its own columns itself. (The clamped loads of a scan may read
// column n2 - 1 of another thread while it writes it: the value is discarded, it only keeps the
// loads unconditional.)

// A candidate column of one step. key = (column assigned ? 1u << 31 : 0) | column, so that after
// the value a smaller key is better: the tie rule (an unassigned column, then the lowest index).
// own: the column's owner row (-1 free); vj: its price; pred: its predecessor row; cm: the cost
// of the column's matched pair (own, column), so that the next step needs no cost evaluation
// between the exchange and the scan.
struct Cand { cost_t val; unsigned key; int own; cost_t vj; int pred; cost_t cm; };
#define NO_KEY 0xffffffffu
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ Cand no_cand() { Cand c; c.val = COST_INF; c.key = NO_KEY; c.own = -1; c.vj = 0; c.pred = -1; c.cm = 0; return c; }

__device__ __forceinline__ bool cand_less(cost_t av, unsigned ak, cost_t bv, unsigned bk) {
    if (ak == NO_KEY) return false;
    if (bk == NO_KEY) return true;
    return av < bv || (av == bv && ak < bk);
}

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
// (benchmarks/gpu_exchange_parts.cu). (Also for double values in an integer build: estimate.cu.)
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

// The block's best candidate, returned to every thread. Only (val, key) go through the warp
// reductions; the thread that proposed the winner stores the whole candidate (keys are unique).
__device__ Cand block_best(const Cand& mine, Cand* sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    cost_t v = mine.val; unsigned k = mine.key;
    warp_best(v, k);
    __syncthreads();                                   // sh may still be read from the last call
    if (k == NO_KEY) { if (lane == 0) sh[warp] = no_cand(); }
    else if (mine.key == k) sh[warp] = mine;
    __syncthreads();
    if (warp == 0) {
        const Cand c = lane < WARPS ? sh[lane] : no_cand();
        v = c.val; k = c.key;
        warp_best(v, k);
        if (k == NO_KEY) { if (lane == 0) sh[WARPS] = no_cand(); }
        else if (c.key == k) sh[WARPS] = c;
    }
    __syncthreads();
    return sh[WARPS];
}

// One block's candidate of one step, as five 16-byte quads of two (data, flag) 8-byte words.
// The writer stores each quad in one access and a reader loads each quad in one access; an
// 8-byte word is never seen torn, so a reader that finds the step's sequence number in all ten
// flags holds the whole candidate, without a fence or a barrier (the protocol NCCL calls "LL").
// Quad 0, the head, packs the value (64 bits) and the key (32 bits) into two words with 16-bit
// flags (the low 16 bits of the sequence number), so that one load tells a poller both; quads
// 1-4 are (own, pred), (vj), (cm), (extra) with 32-bit flags. Two buffers used alternately: a
// block can only overwrite a buffer after every block has published the step in between, i.e.
// after every block finished reading it; so a stale flag is 2 or 3 steps old and differs from
// the awaited one even in its low 16 bits (grid_best skips numbers whose low 16 bits are 0).
// Padded to a whole 128-byte line: 80-byte slots straddle lines, and the exchange took 1.61
// instead of 1.52 µs on an H200 (32 x 512; 4.17 instead of 3.74 µs on 132 x 256).
#ifndef SLOT_WORDS  // set by the host (solver.SLOT_WORDS), which allocates the slots
#define SLOT_WORDS 32
#endif
struct __align__(128) Slot { unsigned w[SLOT_WORDS]; };

__device__ __forceinline__ void st_quad(Slot* s, int q, unsigned a, unsigned b, unsigned c, unsigned d) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};"
                 :: "l"(s->w + 4 * q), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

__device__ __forceinline__ uint4 ld_quad(const Slot* s, int q) {
    uint4 r;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(s->w + 4 * q) : "memory");
    return r;
}

__device__ __forceinline__ unsigned long long bits_of(double x) { return (unsigned long long)__double_as_longlong(x); }
__device__ __forceinline__ unsigned long long bits_of(long long x) { return (unsigned long long)x; }
__device__ __forceinline__ void from_bits(unsigned long long b, double& x) { x = __longlong_as_double((long long)b); }
__device__ __forceinline__ void from_bits(unsigned long long b, long long& x) { x = (long long)b; }

__device__ __forceinline__ void publish(Slot* s, unsigned seq, const Cand& c, unsigned extra) {
    const unsigned long long vb = bits_of(c.val), jb = bits_of(c.vj), mb = bits_of(c.cm);
    const unsigned f = seq << 16;
    st_quad(s, 0, (unsigned)vb, ((unsigned)(vb >> 32) & 0xffffu) | f,
            (unsigned)(vb >> 48) | (c.key << 16), (c.key >> 16) | f);
    st_quad(s, 1, (unsigned)c.own, seq, (unsigned)c.pred, seq);
    st_quad(s, 2, (unsigned)jb, seq, (unsigned)(jb >> 32), seq);
    st_quad(s, 3, (unsigned)mb, seq, (unsigned)(mb >> 32), seq);
    st_quad(s, 4, extra, seq, 0u, seq);
}

__device__ __forceinline__ bool head_ready(const uint4& q, unsigned seq) {
    return (q.y >> 16) == (seq & 0xffffu) && (q.w >> 16) == (seq & 0xffffu);
}

__device__ __forceinline__ void unpack_head(const uint4& q, Cand& c) {
    from_bits(((unsigned long long)(q.z & 0xffffu) << 48)
              | ((unsigned long long)(q.y & 0xffffu) << 32) | q.x, c.val);
    c.key = (q.z >> 16) | (q.w << 16);
}

__device__ __forceinline__ Cand receive(const Slot* s, unsigned seq, unsigned& extra) {
    uint4 q0, q1, q2, q3, q4;
    do {                                               // all five loads in flight per poll
        q0 = ld_quad(s, 0); q1 = ld_quad(s, 1); q2 = ld_quad(s, 2); q3 = ld_quad(s, 3);
        q4 = ld_quad(s, 4);
    } while (!head_ready(q0, seq) || q1.y != seq || q1.w != seq || q2.y != seq ||
             q2.w != seq || q3.y != seq || q3.w != seq || q4.y != seq || q4.w != seq);
    Cand c;
    unpack_head(q0, c);
    c.own = (int)q1.x; c.pred = (int)q1.z;
    from_bits(((unsigned long long)q2.z << 32) | q2.x, c.vj);
    from_bits(((unsigned long long)q3.z << 32) | q3.x, c.cm);
    extra = q4.x;
    return c;
}

// (value, key) of a published candidate from its head alone: what the large-grid exchange polls
// (one load per block instead of five; the winner's other fields are fetched once)
__device__ __forceinline__ Cand receive_head(const Slot* s, unsigned seq) {
    uint4 q0;
    do { q0 = ld_quad(s, 0); } while (!head_ready(q0, seq));
    Cand c = no_cand();
    unpack_head(q0, c);
    return c;
}

// The grid's best candidate of this step, in every thread of every block. `extra` travels with
// block 0's candidate (the host's stop request) and comes back in `got_extra`.
// sh: 2 · (WARPS + 1) candidates, sh_extra: 2 words of shared memory.
//
// Grids of at most 32 blocks take the short path: one warp per block does all the cross-block
// work (the block's best from the warps' partial results, publishing it, one slot polled per
// lane, the reduction over the blocks) between two __syncthreads, with the shared partial
// results double-buffered by step parity (a warp can only overwrite a buffer after every warp has
// passed the next step's first barrier, i.e. after it read this one). Larger grids: block-wide
// reductions before publishing and after gathering (three barriers each); there, every block
// polls every slot, so the L2 serves blocks² polls per step: they read only the slots' heads
// (value and key, one 16-byte load), and thread 0 fetches the winner's whole slot once. On an
// H100 (132 x 256) that took the exchange from 3.81 µs (five loads per slot) to 2.62 µs.
__device__ Cand grid_best(const Cand& mine, Cand* sh, Slot* slots, unsigned& seq, int& parity,
                          unsigned extra, unsigned* sh_extra, unsigned& got_extra) {
    if ((++seq & 0xffffu) == 0) ++seq;                 // 0 marks a never-written slot
    Slot* buf = slots + parity * gridDim.x;
    if (gridDim.x <= 32) {
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        Cand* part = sh + parity * (WARPS + 1);
        cost_t v = mine.val; unsigned k = mine.key;
        warp_best(v, k);
        if (k == NO_KEY) { if (lane == 0) part[warp] = no_cand(); }
        else if (mine.key == k) part[warp] = mine;
        __syncthreads();
        if (warp == 0) {
            const Cand c = lane < WARPS ? part[lane] : no_cand();
            v = c.val; k = c.key;
            warp_best(v, k);
            if (k == NO_KEY) { if (lane == 0) publish(buf + blockIdx.x, seq, no_cand(), extra); }
            else if (c.key == k) publish(buf + blockIdx.x, seq, c, extra);
            Cand r = no_cand();
            unsigned x = 0;
            if ((unsigned)lane < gridDim.x) r = receive(buf + lane, seq, x);
            v = r.val; k = r.key;
            warp_best(v, k);
            if (k == NO_KEY) { if (lane == 0) part[WARPS] = no_cand(); }
            else if (r.key == k) part[WARPS] = r;
            if (lane == 0) sh_extra[parity] = x;      // lane 0 polled block 0's slot
        }
        __syncthreads();
        got_extra = sh_extra[parity];
        parity ^= 1;
        return part[WARPS];
    }
    const Cand b = block_best(mine, sh);
    parity ^= 1;
    if (threadIdx.x == 0) publish(buf + blockIdx.x, seq, b, extra);
    Cand r = no_cand();
    for (unsigned t = threadIdx.x; t < gridDim.x; t += blockDim.x) {
        unsigned x;
        Cand o;
        if (t == 0) { o = receive(buf, seq, x); sh_extra[0] = x; }
        else o = receive_head(buf + t, seq);
        if (cand_less(o.val, o.key, r.val, r.key)) r = o;
    }
    const Cand w = block_best(r, sh);                  // its barriers also publish sh_extra[0]
    got_extra = sh_extra[0];
    if (w.key == NO_KEY) return w;
    const unsigned wb = ((w.key & 0x7fffffffu) % (gridDim.x * blockDim.x)) / blockDim.x;
    if (threadIdx.x == 0) { unsigned x; sh[WARPS + 1] = receive(buf + wb, seq, x); }
    __syncthreads();
    return sh[WARPS + 1];
}

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
// missing row: it saves where it stands in `resume` and returns status 3; the host fills the row
// and launches again, and the kernel continues exactly where it stopped. The column state (d,
// pred, col_open, owner, v, rec) is in global memory (written back first where SMEM_STATE keeps
// it in shared memory); what is saved is the loop state.
// Every access to a present row is appended to `alog` (block 0, thread 0) so that the host can
// replay the access sequence through the very same LFU/SLRU code as the CPU cache (epslap.cache).
// Every block takes the same decisions (same winner, same slot table), so all suspend together.
// resume (int64[32]): [0] phase (0 start of the pass, 1 at the start of augmentation k, 2 inside
// its search), [1] row needed (-1: only the access log is full), [2] k, [3] steps closed,
// [4] jmin, [5] mn, [6..10] the step's winner (val, key, own, vj, pred), [11] rows evaluated,
// [12] Σ ε (doubles and cost_t as bits), [13] entries in alog, [14] seq and [15] parity of the
// slot exchange (it goes on numbering, so the slots need no reset), and from the host before
// a resume: [16] the slot now holding the needed row, [17] the row it evicted (-1: none), which
// every block writes into the slot table itself before reading it; [18] the winner's cm.
// susp_d: (grid threads,) each thread's partial Σ(mn - d_j). alog follows resume in the same allocation (one copy to the
// host reads the record and the start of the log).
enum { R_PHASE, R_NEED, R_K, R_NCLOSED, R_JMIN, R_MN, R_VAL, R_KEY, R_OWN, R_VJ, R_PRED,
       R_ROWS, R_EPS, R_LOGN, R_SEQ, R_PARITY, R_FILL_SLOT, R_EVICT, R_CM };

// d, pred, col_open (all 1 on entry), owner (-1 on entry), v, cpred, cmatch: (n2,) device arrays,
// thread-private as described above; cpred[j] = c[pred[j]][j] and cmatch[j] = c[owner[j]][j]
// (the path flip copies one into the other), so that a step's winner carries the cost of its
// matched pair (Cand::cm). rec: (gridDim.x, 3·(n2 + 1)) int32 scratch, each block's record of the
// steps of the current augmentation (column, its owner, its predecessor), read by the path flip.
// slots: (2, gridDim.x) Slot, zeroed by the host. progress[2]: stop request (host → device).
// out_f64: [rows evaluated, unused, Σ ε, then per block Σ(mn - d_j), then 4 phase clock totals
// (PHASE_CLOCKS builds: scan, exchange, between two steps, price update + flip)]; out_i64[0]: status
// (0 ok, 1 infeasible, 2 stopped, 3 suspended for a row: see above).
#ifdef PHASE_CLOCKS  // one block per multiprocessor: keeps ptxas from capping the registers at 64
extern "C" __global__ void __launch_bounds__(THREADS, 1)
#else
extern "C" __global__ void __launch_bounds__(THREADS)
#endif
eps_pass(COST_PARAMS, const long long* perm, int reverse, cost_t eps, cost_t* v, cost_t* d,
         long long* pred, unsigned char* col_open, long long* owner, cost_t* cpred,
         cost_t* cmatch, int* rec, Slot* slots,
         double* out_f64, long long* out_i64, volatile long long* progress,
         long long* resume, double* susp_d, long long* alog, long long alog_cap)
{
    COST_BUILD
    __shared__ Cand sh[2 * (WARPS + 1)];
    __shared__ unsigned sh_extra[2];
    __shared__ double sh_sum[WARPS];
    unsigned got_extra = 0;
    const long long n1 = a.n1, n2 = a.n2;
    const long long S = (long long)gridDim.x * blockDim.x;
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
    int* my_rec = rec + (long long)blockIdx.x * 3 * (n2 + 1);   // thread 0 of the block only
    unsigned seq = 0;
    int parity = 0;
    double my_total_d = 0.0, rows_eval = 0.0, total_eps = 0.0;
#ifdef PHASE_CLOCKS  // diagnostics: block 0 thread 0's clock cycles per phase of the pass
    long long clk0 = 0, clk1 = 0, clk2 = 0, clk3 = 0, clk_t = clock64();
#define CLOCK_MARK(ph) do { if (leader) { const long long t_ = clock64(); clk##ph += t_ - clk_t; clk_t = t_; } } while (0)
#else
#define CLOCK_MARK(ph) do {} while (0)
#endif
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
#define IX_COL(col) (((col) / S) * THREADS + ((col) % S) - (long long)blockIdx.x * THREADS)
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
    int phase = 0;
#ifdef EXTERNAL_ROWS
    long long log_n = 0;
    bool skip_log = false;          // the first access after a miss: the host counted it already
    phase = (int)resume[R_PHASE];
    if (phase != 0) {
        k_start = resume[R_K];
        my_total_d = susp_d[g];
        from_bits((unsigned long long)resume[R_ROWS], rows_eval);
        from_bits((unsigned long long)resume[R_EPS], total_eps);
        seq = (unsigned)resume[R_SEQ];
        parity = (int)resume[R_PARITY];
        const long long need = resume[R_NEED];
        skip_log = need >= 0;
        if (need >= 0 && threadIdx.x == 0) {        // the host filled a slot: every block
            long long* table = (long long*)a.p[1];  // updates the table the same way
            if (resume[R_EVICT] >= 0) table[resume[R_EVICT]] = -1;
            table[need] = resume[R_FILL_SLOT];
        }
        __syncthreads();
    }
    if (leader) out_i64[0] = STATUS_OK;
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
    for (long long k = k_start; k < n2; ++k) {
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
            const unsigned stop = (blockIdx.x == 0 && threadIdx.x < 32) ? (unsigned)(progress[2] != 0) : 0u;
            r = grid_best(best, sh, slots, seq, parity, stop, sh_extra, got_extra);
            CLOCK_MARK(1);
            if (got_extra != 0) { flush(); if (leader) out_i64[0] = STATUS_INTERRUPTED; return; }  // host: stop
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
            r = grid_best(best, sh, slots, seq, parity, 0u, sh_extra, got_extra);
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
                if (((unsigned)col % (unsigned)S) / blockDim.x == blockIdx.x) {
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
        out_f64[3 + blockIdx.x] = s;
    }
    if (leader) { out_f64[0] = rows_eval; out_f64[2] = total_eps; }
#ifdef PHASE_CLOCKS
    if (leader) {
        out_f64[3 + gridDim.x] = (double)clk0; out_f64[4 + gridDim.x] = (double)clk1;
        out_f64[5 + gridDim.x] = (double)clk2; out_f64[6 + gridDim.x] = (double)clk3;
    }
#endif
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
        const cost_t viol = (u + v[j]) - cij;
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

// Self-test and timing of the pass kernel's exchange (tests and diagnostics): every thread
// proposes a pseudo-random candidate each iteration; every block folds the winners it agreed on
// into a checksum, checksums[block], which the host compares across blocks and with a reference.
extern "C" __global__ void __launch_bounds__(THREADS)
exchange_selftest(Slot* slots, unsigned long long* checksums, int iterations)
{
    __shared__ Cand sh[2 * (WARPS + 1)];
    __shared__ unsigned sh_extra[2];
    unsigned got_extra = 0;
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned seq = 0;
    int parity = 0;
    unsigned long long sum = 0;
    for (int it = 0; it < iterations; ++it) {
        Cand c = no_cand();
        const unsigned h = (g * 2654435761u) ^ ((unsigned)it * 40503u + 12345u);
        c.val = (cost_t)((h >> 7) % 1000u);
        c.key = ((h & 1u) << 31) | g;
        c.own = (int)(h & 1u) - 1; c.vj = (cost_t)it; c.pred = (int)g; c.cm = (cost_t)(2 * g + 1);
        const Cand r = grid_best(c, sh, slots, seq, parity, 0u, sh_extra, got_extra);
        sum = sum * 1000003ull + (unsigned long long)r.key + (unsigned long long)r.pred
              + (unsigned long long)r.cm;
    }
    if (threadIdx.x == 0) checksums[blockIdx.x] = sum;
}
