// What a Dijkstra step cannot go below on this GPU (a diagnostic of the GPU step latency).
//
// A step of the pass kernel is: read the winner's row (for a dense matrix: from HBM, at an index
// known only once the previous step's exchange ended), reduce, agree grid-wide on the argmin.
// This program measures the latencies that chain makes unavoidable, and a skeleton of the step
// that keeps only that chain (no column state, no bookkeeping), to say how far the pass kernel
// is from the floor of its own design.
//
//   nvcc -O3 -arch=sm_90 -o /tmp/floor benchmarks/studies/gpu_step_floor.cu && /tmp/floor
//   (and with -DFAST_MIN: the warp minima's single-lane shortcut, see warp_min)
//
// 1. Dependent load latency, one thread, pointer chase (ld.global.cg): an array that fits in L2,
//    and a 4 GiB one (HBM).
// 2. One thread's own store -> load round trip on one word: st then poll until seen, for
//    volatile, relaxed.gpu and release/acquire.gpu accesses; and a chain of atomics.
// 3. Ping-pong between two blocks on different multiprocessors: a one-way latency through L2.
// 4. The step skeleton on B x T threads: each thread loads 2 columns of row i of an n x n matrix
//    (i derived from the last winner), takes their minimum, and the grid agrees on the argmin
//    with the pass kernel's short path (redux.sync warp minima, two __syncthreads, one slot per
//    block polled by warp 0). Variants: the whole chain; the exchange alone (no loads); loads and
//    in-block reduction alone (the row index from the block's own result, no cross-block
//    exchange); the matrix replaced by one that fits in L2. (The 8 GB matrix is zero apart from
//    every 997th row, so its values tie: the worst case of the -DFAST_MIN shortcut below.)
// 5. The exchange piece by piece (see `anatomy`).
// 6. The step skeleton at large n2 (rows from L2, what an on-demand cost reads; see skeleton_wide).
#include <vector>
#include "gpu_microbench.cuh"

// ---- 1. pointer chase -------------------------------------------------------------------------
__global__ void chase(const unsigned long long* next, long long steps, unsigned long long start,
                      long long* cycles, unsigned long long* sink) {
    unsigned long long p = start;
    const long long t0 = clock64();
    for (long long s = 0; s < steps; ++s) p = __ldcg(next + p);
    cycles[0] = clock64() - t0;
    sink[0] = p;
}

// ---- 2. one thread's round trip ---------------------------------------------------------------
__device__ __forceinline__ void st_rlx(unsigned* p, unsigned x) { asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(x) : "memory"); }
__device__ __forceinline__ unsigned ld_rlx(const unsigned* p) { unsigned x; asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(x) : "l"(p) : "memory"); return x; }
__device__ __forceinline__ void st_rel(unsigned* p, unsigned x) { asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(x) : "memory"); }
__device__ __forceinline__ unsigned ld_acq(const unsigned* p) { unsigned x; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(x) : "l"(p) : "memory"); return x; }

template <int MODE>
__device__ __forceinline__ void put(unsigned* p, unsigned x) { if (MODE == 0) st_vol(p, x); else if (MODE == 1) st_rlx(p, x); else st_rel(p, x); }
template <int MODE>
__device__ __forceinline__ unsigned get(const unsigned* p) { return MODE == 0 ? ld_vol(p) : MODE == 1 ? ld_rlx(p) : ld_acq(p); }

template <int MODE>
__global__ void self_round_trip(unsigned* word, int iters, long long* cycles) {
    const long long t0 = clock64();
    for (unsigned it = 1; it <= (unsigned)iters; ++it) {
        put<MODE>(word, it);
        while (get<MODE>(word) != it) {}
    }
    cycles[0] = clock64() - t0;
}

__global__ void atomic_chain(unsigned* word, int iters, long long* cycles, unsigned* sink) {
    unsigned x = 0;
    const long long t0 = clock64();
    for (int it = 0; it < iters; ++it) x = atomicAdd(word, x & 1u);   // each add waits for the last
    cycles[0] = clock64() - t0;
    sink[0] = x;
}

// ---- 3. ping-pong between two blocks ----------------------------------------------------------
template <int MODE>
__global__ void ping_pong(unsigned* words, int other, int iters, long long* cycles, int* smids) {
    if (threadIdx.x == 0) smids[blockIdx.x] = (int)smid();
    if (threadIdx.x != 0 || (blockIdx.x != 0 && (int)blockIdx.x != other)) return;
    unsigned* a = words;            // written by block 0
    unsigned* b = words + 32;       // written by the other block (another 128-byte line)
    const long long t0 = clock64();
    for (unsigned it = 1; it <= (unsigned)iters; ++it) {
        if (blockIdx.x == 0) { put<MODE>(a, it); while (get<MODE>(b) != it) {} }
        else { while (get<MODE>(a) != it) {} put<MODE>(b, it); }
    }
    if (blockIdx.x == 0) cycles[0] = clock64() - t0;
}

// ---- 4. the step skeleton ---------------------------------------------------------------------
// variant: 0 whole step, 1 exchange alone (no loads), 2 loads + in-block reduction (no exchange)
// slots: (2, gridDim.x, 32) words, zeroed. m: rows x n2 doubles.
__global__ void __launch_bounds__(1024, 1) skeleton(int variant, int iters, const double* m, long long rows,
                                                    long long n2, unsigned* slots, long long* cycles,
                                                    double* sink) {
    __shared__ VK part[2][33];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long S = (long long)gridDim.x * blockDim.x;
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned win = 12345u;
    double acc = 0.0;
    const long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        const int p = it & 1;
        const unsigned seq = (unsigned)it + 1u;
        double v = 1e300; unsigned k = FULL;
        if (variant == 1) {
            v = (double)(((unsigned)g * 2654435761u ^ win) >> 8); k = (unsigned)g;
        } else {
            const long long i = (long long)((win * 2654435761u + (unsigned)it) % (unsigned long long)rows);
            const double* row = m + i * n2;
            const long long j0 = min(g, n2 - 1), j1 = min(g + S, n2 - 1);
            const double c0 = __ldcg(row + j0), c1 = __ldcg(row + j1);   // both loads in flight
            if (c0 < c1 || (c0 == c1)) { v = c0; k = (unsigned)j0; } else { v = c1; k = (unsigned)j1; }
        }
        block_min_to_warp0(v, k, part[p]);
        if (warp == 0) {
            if (variant != 2) {
                unsigned* buf = slots + p * gridDim.x * 32;
                if (lane == 0) publish_vk(buf + 32 * blockIdx.x, seq, v, k);
                double rv = 1e300; unsigned rk = FULL;
                if ((unsigned)lane < gridDim.x) poll_vk(buf + 32 * lane, seq, rv, rk);
                warp_min(rv, rk);
                v = rv; k = rk;
            }
            if (lane == 0) { part[p][32].v = v; part[p][32].k = k; }
        }
        __syncthreads();
        win = part[p][32].k;
        acc += part[p][32].v;
    }
    const long long t1 = clock64();
    if (g == 0) cycles[0] = t1 - t0;
    if (acc == -1.0) sink[g] = acc;
}

// ---- 5. the exchange's anatomy ----------------------------------------------------------------
// mode 0: the short path as in the skeleton's "exchange alone" (in-block part, then warp 0 publishes
//         two quads and lane l polls block l's two quads); mode 1: warp 0 alone (no in-block part,
//         no __syncthreads; the other warps exit); mode 2: mode 1 polling one quad per slot;
//         mode 3: mode 2, and the lane of the block's own slot takes its value without polling;
//         mode 4: the in-block part alone (no cross-block transport).
__global__ void __launch_bounds__(1024, 1) anatomy(int mode, int iters, unsigned* slots, long long* cycles,
                                                   double* sink) {
    __shared__ VK part[2][33];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if ((mode == 1 || mode == 2 || mode == 3) && warp != 0) return;
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned win = 12345u;
    double acc = 0.0;
    const long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        const int p = it & 1;
        const unsigned seq = (unsigned)it + 1u;
        double v = (double)((g * 2654435761u ^ (win * 40503u)) >> 8); unsigned k = g;
        if (mode == 0 || mode == 4) block_min_to_warp0(v, k, part[p]);
        else warp_min(v, k);
        if (mode != 4 && warp == 0) {
            unsigned* buf = slots + p * gridDim.x * 32;
            const unsigned long long b = (unsigned long long)__double_as_longlong(v);
            if (lane == 0) {
                if (mode <= 1) publish_vk(buf + 32 * blockIdx.x, seq, v, k);
                else st_v4(buf + 32 * blockIdx.x, (unsigned)b, seq, (unsigned)(b >> 32), seq);
            }
            double rv = 1e300; unsigned rk = FULL;
            if ((unsigned)lane < gridDim.x) {
                if (mode == 3 && (unsigned)lane == blockIdx.x) { rv = v; rk = k; }
                else if (mode <= 1) poll_vk(buf + 32 * lane, seq, rv, rk);
                else {
                    uint4 a;
                    do { a = ld_v4(buf + 32 * lane); } while (a.y != seq || a.w != seq);
                    rv = __longlong_as_double(((long long)a.z << 32) | a.x); rk = (unsigned)lane;
                }
            }
            warp_min(rv, rk);
            v = rv; k = rk;
        }
        if (mode == 0 || mode == 4) {
            if (warp == 0 && lane == 0) { part[p][32].v = v; part[p][32].k = k; }
            __syncthreads();
            v = part[p][32].v; k = part[p][32].k;
        }
        win = k;
        acc += v;
    }
    const long long t1 = clock64();
    if (g == 0) cycles[0] = t1 - t0;
    if (acc == -1.0) sink[g] = acc;
}

// ---- 6. the step skeleton at large n2 ---------------------------------------------------------
// As 4 with the row from L2 (what an on-demand cost reads), any number of columns per thread (UN
// loads in flight: 2, 4 or 8), and grids of more than 32 blocks: there every thread t < gridDim.x polls
// slot t, and the block reduces what its warps polled (two more __syncthreads, as the pass
// kernel's large-grid path).
template <int UN>
__global__ void __launch_bounds__(1024, 1) skeleton_wide(int iters, const double* m, long long rows,
                                                         long long n2, unsigned* slots,
                                                         long long* cycles, double* sink) {
    __shared__ VK part[2][33];
    __shared__ VK gpart[2][33];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const long long S = (long long)gridDim.x * blockDim.x;
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned win = 12345u;
    double acc = 0.0;
    const long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        const int p = it & 1;
        const unsigned seq = (unsigned)it + 1u;
        const long long i = (long long)((win * 2654435761u + (unsigned)it) % (unsigned long long)rows);
        const double* row = m + i * n2;
        double v = 1e300; unsigned k = FULL;
        for (long long j0 = g; j0 < n2; j0 += UN * S) {
            double c[UN]; long long jj[UN];
#pragma unroll
            for (int u = 0; u < UN; ++u) { jj[u] = min(j0 + u * S, n2 - 1); c[u] = __ldcg(row + jj[u]); }
#pragma unroll
            for (int u = 0; u < UN; ++u)
                if (j0 + u * S < n2 && c[u] < v) { v = c[u]; k = (unsigned)jj[u]; }
        }
        block_min_to_warp0(v, k, part[p]);
        unsigned* buf = slots + p * gridDim.x * 32;
        if (warp == 0 && lane == 0) publish_vk(buf + 32 * blockIdx.x, seq, v, k);
        double rv = 1e300; unsigned rk = FULL;
        const bool short_path = gridDim.x <= 32;
        if (!short_path || warp == 0) {
            for (unsigned t = short_path ? (unsigned)lane : threadIdx.x; t < gridDim.x;
                 t += short_path ? 32u : blockDim.x) {
                double ov; unsigned ok;
                poll_vk(buf + 32 * t, seq, ov, ok);
                if (ov < rv || (ov == rv && ok < rk)) { rv = ov; rk = ok; }
            }
            warp_min(rv, rk);
        }
        if (!short_path) {
            if (lane == 0) { gpart[p][warp].v = rv; gpart[p][warp].k = rk; }
            __syncthreads();
            if (warp == 0) {
                rv = lane < warps ? gpart[p][lane].v : 1e300;
                rk = lane < warps ? gpart[p][lane].k : FULL;
                warp_min(rv, rk);
            }
        }
        if (warp == 0 && lane == 0) { part[p][32].v = rv; part[p][32].k = rk; }
        __syncthreads();
        win = part[p][32].k;
        acc += part[p][32].v;
    }
    const long long t1 = clock64();
    if (g == 0) cycles[0] = t1 - t0;
    if (acc == -1.0) sink[g] = acc;
}

static int clock_khz() { int k; CHECK(cudaDeviceGetAttribute(&k, cudaDevAttrClockRate, 0)); return k; }

int main() {
    cudaDeviceProp prop; CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d multiprocessors, L2 %d MiB%s\n\n", prop.name, prop.multiProcessorCount,
           prop.l2CacheSize >> 20,
#ifdef FAST_MIN
           ", warp minima with the single-lane shortcut (-DFAST_MIN)"
#else
           ""
#endif
           );
    long long* cyc; unsigned long long* sink64; unsigned* words; int* smids; double* sinkd;
    CHECK(cudaMalloc(&cyc, 8 * sizeof(long long)));
    CHECK(cudaMalloc(&sink64, sizeof(unsigned long long)));
    CHECK(cudaMalloc(&words, 4096));
    CHECK(cudaMalloc(&smids, 1024 * sizeof(int)));
    long long c = 0;
    auto get_cycles = [&]() { CHECK(cudaMemcpy(&c, cyc, sizeof(c), cudaMemcpyDeviceToHost)); return (double)c; };

    // 1. pointer chase: a random cycle over `words` elements spaced by 256 bytes
    printf("| dependent load (ld.global.cg, one thread) | cycles per load |\n|---|---|\n");
    for (long long bytes : {16ll << 20, 4ll << 30}) {
        const long long stride = 32, n = bytes / 8 / stride;   // one element per 256 bytes
        std::vector<unsigned long long> order(n), next(n * stride, 0);
        for (long long x = 0; x < n; ++x) order[x] = x;
        srand(1);
        for (long long x = n - 1; x > 0; --x) { long long y = ((long long)rand() * RAND_MAX + rand()) % (x + 1); std::swap(order[x], order[y]); }
        for (long long x = 0; x < n; ++x) next[order[x] * stride] = order[(x + 1) % n] * stride;
        unsigned long long* d_next;
        CHECK(cudaMalloc(&d_next, n * stride * 8));
        CHECK(cudaMemcpy(d_next, next.data(), n * stride * 8, cudaMemcpyHostToDevice));
        const long long steps = 20000;
        // the warm-up run: the same lines for the array that fits in L2; other lines for the HBM one
        chase<<<1, 1>>>(d_next, steps, order[bytes > (64ll << 20) ? n / 2 : 0] * stride, cyc, sink64);
        chase<<<1, 1>>>(d_next, steps, order[0] * stride, cyc, sink64);
        CHECK(cudaDeviceSynchronize());
        printf("| %lld MiB array | %.0f |\n", bytes >> 20, get_cycles() / steps);
        CHECK(cudaFree(d_next));
    }

    // 2. one thread's round trip
    const int iters = 20000;
    printf("\n| one thread: store, then poll the same word until seen | cycles per round trip |\n|---|---|\n");
    const char* modes[] = {"volatile", "relaxed.gpu", "release / acquire .gpu"};
    for (int mode = 0; mode < 3; ++mode) {
        CHECK(cudaMemset(words, 0, 4096));
        if (mode == 0) self_round_trip<0><<<1, 1>>>(words, iters, cyc);
        if (mode == 1) self_round_trip<1><<<1, 1>>>(words, iters, cyc);
        if (mode == 2) self_round_trip<2><<<1, 1>>>(words, iters, cyc);
        CHECK(cudaDeviceSynchronize());
        printf("| %s | %.0f |\n", modes[mode], get_cycles() / iters);
    }
    atomic_chain<<<1, 1>>>(words, iters, cyc, (unsigned*)sink64);
    CHECK(cudaDeviceSynchronize());
    printf("| chain of atomicAdd (returned value used) | %.0f |\n", get_cycles() / iters);

    // 3. ping-pong: block 0 with block `other` of a grid of one block per multiprocessor
    printf("\n| ping-pong, block 0 and block b | SMs | cycles per round trip (two one-way trips) |\n|---|---|---|\n");
    const int B = prop.multiProcessorCount;
    CHECK(cudaFuncSetAttribute(ping_pong<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024));
    CHECK(cudaFuncSetAttribute(ping_pong<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024));
    for (int mode = 0; mode < 3; mode += 2) {
        for (int other : {1, 2, B / 2, B - 1}) {
            CHECK(cudaMemset(words, 0, 4096));
            // a large shared-memory request keeps one block per multiprocessor
            if (mode == 0) ping_pong<0><<<B, 32, 100 * 1024>>>(words, other, iters, cyc, smids);
            else ping_pong<2><<<B, 32, 100 * 1024>>>(words, other, iters, cyc, smids);
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
            std::vector<int> sm(B);
            CHECK(cudaMemcpy(sm.data(), smids, B * sizeof(int), cudaMemcpyDeviceToHost));
            printf("| %s, b = %d | %d, %d | %.0f |\n", modes[mode], other, sm[0], sm[other], get_cycles() / iters);
        }
    }

    // 4. the step skeleton
    const long long n2 = 32000;
    double* big; double* small;
    const long long big_rows = 32000, small_rows = 64;
    CHECK(cudaMalloc(&big, big_rows * n2 * 8));
    CHECK(cudaMalloc(&small, small_rows * n2 * 8));
    {
        std::vector<double> row(n2);
        for (long long j = 0; j < n2; ++j) row[j] = (double)((j * 2654435761ull) % 1000003ull);
        for (long long r = 0; r < small_rows; ++r) CHECK(cudaMemcpy(small + r * n2, row.data(), n2 * 8, cudaMemcpyHostToDevice));
        CHECK(cudaMemset(big, 0, big_rows * n2 * 8));       // touched; values do not matter
        for (long long r = 0; r < big_rows; r += 997) CHECK(cudaMemcpy(big + r * n2, row.data(), n2 * 8, cudaMemcpyHostToDevice));
    }
    unsigned* slots; CHECK(cudaMalloc(&slots, 2 * 256 * 32 * sizeof(unsigned)));
    CHECK(cudaMalloc(&sinkd, 1024 * 1024 * sizeof(double)));
    cudaEvent_t ea, eb; CHECK(cudaEventCreate(&ea)); CHECK(cudaEventCreate(&eb));
    printf("\n| step skeleton, n2 = 32000 (2 columns per thread on 32 x 512) | grid | cycles per step | us per step |\n|---|---|---|---|\n");
    struct V { int variant; bool big; const char* name; };
    const V vs[] = {{0, true, "whole step, row from a 8 GB matrix (HBM)"},
                    {0, false, "whole step, row from a 64-row matrix (L2)"},
                    {1, false, "exchange alone (no loads)"},
                    {2, true, "HBM row + in-block reduction, no exchange"},
                    {2, false, "L2 row + in-block reduction, no exchange"}};
    const int grids[][2] = {{32, 512}, {16, 1024}, {32, 256}, {16, 512}};
    const int steps = 20000;
    for (auto& gr : grids) {
        for (const V& x : vs) {
            float best = 1e30f; double cy = 0;
            for (int rep = 0; rep < 3; ++rep) {
                CHECK(cudaMemset(slots, 0, 2 * 256 * 32 * sizeof(unsigned)));
                CHECK(cudaEventRecord(ea));
                skeleton<<<gr[0], gr[1]>>>(x.variant, steps, x.big ? big : small, x.big ? big_rows : small_rows,
                                           n2, slots, cyc, sinkd);
                CHECK(cudaEventRecord(eb));
                CHECK(cudaEventSynchronize(eb));
                CHECK(cudaGetLastError());
                float ms; CHECK(cudaEventElapsedTime(&ms, ea, eb));
                if (ms < best) { best = ms; cy = get_cycles(); }
            }
            printf("| %s | %d x %d | %.0f | %.3f |\n", x.name, gr[0], gr[1], cy / steps, 1000.0 * best / steps);
        }
    }
    // 5. the exchange's anatomy
    printf("\n| exchange anatomy | grid | cycles per step | us per step |\n|---|---|---|---|\n");
    const char* anames[] = {"short path (in-block part + two quads polled per slot)",
                            "warp 0 alone, two quads polled per slot", "warp 0 alone, one quad per slot",
                            "warp 0 alone, one quad, own slot not polled", "in-block part alone (no transport)"};
    const int agrids[][2] = {{32, 512}, {32, 32}, {16, 32}, {8, 32}, {2, 32}, {1, 32}, {1, 512}};
    for (auto& gr : agrids) {
        for (int mode = 0; mode < 5; ++mode) {
            if (gr[1] == 32 && (mode == 0 || mode == 4)) continue;
            if (gr[1] == 512 && gr[0] == 1 && mode != 0 && mode != 4) continue;
            float best = 1e30f; double cy = 0;
            for (int rep = 0; rep < 3; ++rep) {
                CHECK(cudaMemset(slots, 0, 2 * 256 * 32 * sizeof(unsigned)));
                CHECK(cudaEventRecord(ea));
                anatomy<<<gr[0], gr[1]>>>(mode, steps, slots, cyc, sinkd);
                CHECK(cudaEventRecord(eb));
                CHECK(cudaEventSynchronize(eb));
                CHECK(cudaGetLastError());
                float ms; CHECK(cudaEventElapsedTime(&ms, ea, eb));
                if (ms < best) { best = ms; cy = get_cycles(); }
            }
            printf("| %s | %d x %d | %.0f | %.3f |\n", anames[mode], gr[0], gr[1], cy / steps, 1000.0 * best / steps);
        }
    }
    // 6. the step skeleton at large n2, rows from L2
    {
        const long long wide_n2 = 128000, wide_rows = 16;   // 16 MB: stays in L2
        double* wide; CHECK(cudaMalloc(&wide, wide_rows * wide_n2 * 8));
        std::vector<double> row(wide_n2);
        for (long long r = 0; r < wide_rows; ++r) {
            for (long long j = 0; j < wide_n2; ++j) row[j] = (double)(((j + 7 * r) * 2654435761ull) % 1000003ull);
            CHECK(cudaMemcpy(wide + r * wide_n2, row.data(), wide_n2 * 8, cudaMemcpyHostToDevice));
        }
        printf("\n| step skeleton, row from L2 (16-row matrix) | n2 | grid | columns per thread | loads in flight per thread | cycles per step | us per step |\n|---|---|---|---|---|---|---|\n");
        const int B = prop.multiProcessorCount;
        const int wgrids[][2] = {{32, 512}, {64, 512}, {B, 512}, {B, 256}, {B, 1024}};
        for (long long nn : {32000ll, 128000ll}) {
            for (auto& gr : wgrids) for (int un : {2, 4, 8}) {
                float best = 1e30f; double cy = 0;
                for (int rep = 0; rep < 3; ++rep) {
                    CHECK(cudaMemset(slots, 0, 2 * 256 * 32 * sizeof(unsigned)));
                    CHECK(cudaEventRecord(ea));
                    if (un == 2) skeleton_wide<2><<<gr[0], gr[1]>>>(steps, wide, wide_rows, nn, slots, cyc, sinkd);
                    if (un == 4) skeleton_wide<4><<<gr[0], gr[1]>>>(steps, wide, wide_rows, nn, slots, cyc, sinkd);
                    if (un == 8) skeleton_wide<8><<<gr[0], gr[1]>>>(steps, wide, wide_rows, nn, slots, cyc, sinkd);
                    CHECK(cudaEventRecord(eb));
                    CHECK(cudaEventSynchronize(eb));
                    CHECK(cudaGetLastError());
                    float ms; CHECK(cudaEventElapsedTime(&ms, ea, eb));
                    if (ms < best) { best = ms; cy = get_cycles(); }
                }
                printf("| whole step | %lld | %d x %d | %.1f | %d | %.0f | %.3f |\n", nn, gr[0], gr[1],
                       (double)nn / ((double)gr[0] * gr[1]), un, cy / steps, 1000.0 * best / steps);
            }
        }
        CHECK(cudaFree(wide));
    }
    printf("\n(SM clock attribute: %d MHz)\n", clock_khz() / 1000);
    return 0;
}
