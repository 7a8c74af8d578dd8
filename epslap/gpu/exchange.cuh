// The pass kernel's agreement on each Dijkstra step's winner across the blocks (eps_ssp.cu), also
// run on its own by exchange_selftest (diagnostics.cu).
#ifndef EPSLAP_EXCHANGE_CUH
#define EPSLAP_EXCHANGE_CUH

#include "common.cuh"
#include "reduce.cuh"

// A candidate column of one step. key = (column assigned ? 1u << 31 : 0) | column, so that after
// the value a smaller key is better: the tie rule (an unassigned column, then the lowest index).
// own: the column's owner row (-1 free); vj: its price; pred: its predecessor row; cm: the cost
// of the column's matched pair (own, column), so that the next step needs no cost evaluation
// between the exchange and the scan.
struct Cand { cost_t val; unsigned key; int own; cost_t vj; int pred; cost_t cm; };
#define NO_KEY 0xffffffffu

__device__ __forceinline__ Cand no_cand() { Cand c; c.val = COST_INF; c.key = NO_KEY; c.own = -1; c.vj = 0; c.pred = -1; c.cm = 0; return c; }

__device__ __forceinline__ bool cand_less(cost_t av, unsigned ak, cost_t bv, unsigned bk) {
    if (ak == NO_KEY) return false;
    if (bk == NO_KEY) return true;
    return av < bv || (av == bv && ak < bk);
}

// The warp's best of its lanes' candidates `c`; only (val, key) go through the reduction. The
// lane whose candidate it is (keys are unique) calls take(c); where no lane has one, lane 0
// calls take(no_cand()).
template <typename Take>
__device__ __forceinline__ void warp_winner(const Cand& c, Take take) {
    cost_t v = c.val; unsigned k = c.key;
    warp_best(v, k);
    if (k == NO_KEY) { if ((threadIdx.x & 31) == 0) take(no_cand()); }
    else if (c.key == k) take(c);
}

// The block's best candidate, returned to every thread.
__device__ Cand block_best(const Cand& mine, Cand* sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();                                   // sh may still be read from the last call
    warp_winner(mine, [&](const Cand& w) { sh[warp] = w; });
    __syncthreads();
    if (warp == 0)
        warp_winner(lane < WARPS ? sh[lane] : no_cand(), [&](const Cand& w) { sh[WARPS] = w; });
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
#ifndef SLOT_WORDS  // set by the host (launch.SLOT_WORDS), which allocates the slots
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

// The logical grid of a pass whose blocks run as several launches: on several devices (one
// problem split over GPUs) or, for tests, as partitions of one device. This launch's blocks are
// the logical blocks base .. base + gridDim.x - 1 of `blocks`. Every launch has its own slots
// (room for all logical blocks); a block publishes its candidate into its own launch's slots and
// into each peer's (`peers`: the other launches' slot arrays, peer-mapped where on another
// device), and polls only its own: the reads stay local, the writes cross once. A single launch:
// base 0, blocks = gridDim.x, no peers.
struct GridPart { unsigned base, blocks; Slot* const* peers; int n_peers; };

__device__ __forceinline__ void publish_all(const GridPart& gp, int par, unsigned me,
                                            unsigned seq, Slot* buf, const Cand& c,
                                            unsigned extra) {
    publish(buf + me, seq, c, extra);
    for (int p = 0; p < gp.n_peers; ++p) publish(gp.peers[p] + par * gp.blocks + me, seq, c, extra);
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
                          unsigned extra, unsigned* sh_extra, unsigned& got_extra,
                          const GridPart& gp) {
    if ((++seq & 0xffffu) == 0) ++seq;                 // 0 marks a never-written slot
    const unsigned nb = gp.blocks, me = gp.base + blockIdx.x;
    const int par = parity;                            // this step's buffer
    Slot* buf = slots + par * nb;
    if (nb <= 32) {
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        Cand* part = sh + parity * (WARPS + 1);
        warp_winner(mine, [&](const Cand& w) { part[warp] = w; });
        __syncthreads();
        if (warp == 0) {
            warp_winner(lane < WARPS ? part[lane] : no_cand(),
                        [&](const Cand& w) { publish_all(gp, par, me, seq, buf, w, extra); });
            Cand r = no_cand();
            unsigned x = 0;
            if ((unsigned)lane < nb) r = receive(buf + lane, seq, x);
            warp_winner(r, [&](const Cand& w) { part[WARPS] = w; });
            if (lane == 0) sh_extra[parity] = x;      // lane 0 polled block 0's slot
        }
        __syncthreads();
        got_extra = sh_extra[parity];
        parity ^= 1;
        return part[WARPS];
    }
    const Cand b = block_best(mine, sh);
    parity ^= 1;
    if (threadIdx.x == 0) publish_all(gp, par, me, seq, buf, b, extra);
    Cand r = no_cand();
    for (unsigned t = threadIdx.x; t < nb; t += blockDim.x) {
        unsigned x;
        Cand o;
        if (t == 0) { o = receive(buf, seq, x); sh_extra[0] = x; }
        else o = receive_head(buf + t, seq);
        if (cand_less(o.val, o.key, r.val, r.key)) r = o;
    }
    const Cand w = block_best(r, sh);                  // its barriers also publish sh_extra[0]
    got_extra = sh_extra[0];
    if (w.key == NO_KEY) return w;
    const unsigned wb = ((w.key & 0x7fffffffu) % (nb * blockDim.x)) / blockDim.x;
    if (threadIdx.x == 0) { unsigned x; sh[WARPS + 1] = receive(buf + wb, seq, x); }
    __syncthreads();
    return sh[WARPS + 1];
}

#endif  // EPSLAP_EXCHANGE_CUH
