// Does where the blocks and the slots sit on the chip change what an exchange costs? (GPU step
// latency)
//
// An H100/H200 splits its L2 in two partitions; a strong (volatile) access goes to the line's home
// partition, so a multiprocessor far from it waits longer (gpu_step_floor.cu: a ping-pong round
// trip takes 940-1360 cycles depending on the pair). The pass kernel's exchange waits for its
// slowest pair every step. This program
//   1. measures, one multiprocessor at a time, the store -> poll round trip from every
//      multiprocessor to each of L candidate slot lines;
//   2. splits the lines into two groups by their latency from one reference multiprocessor, and
//      ranks the multiprocessors by their mean latency to the near group;
//   3. times the pass kernel's short-path exchange (as gpu_step_floor.cu's "exchange alone", on
//      32 blocks of 512 threads) with the blocks placed on chosen multiprocessors (a grid of one
//      block per multiprocessor; the others exit) and the slots on chosen lines.
//
//   nvcc -O3 -arch=sm_90 -o /tmp/place benchmarks/studies/gpu_placement.cu && /tmp/place
#include <algorithm>
#include <numeric>
#include <vector>
#include "gpu_microbench.cuh"

#define LINE_WORDS 1056   // candidate lines 4224 bytes apart (a line and a page offset that moves)

// one block per multiprocessor; blocks take turns (turn counter), thread 0 measures every line
__global__ void line_latency(unsigned* lines, int L, int reps, unsigned* turn, float* lat, int* sm_of_block) {
    if (threadIdx.x != 0) return;
    sm_of_block[blockIdx.x] = (int)smid();
    while (ld_vol(turn) != blockIdx.x) {}
    for (int l = 0; l < L; ++l) {
        unsigned* w = lines + (long long)l * LINE_WORDS;
        const long long t0 = clock64();
        for (int r = 1; r <= reps; ++r) {
            const unsigned tag = (blockIdx.x << 16) | (unsigned)r;
            st_vol(w, tag);
            while (ld_vol(w) != tag) {}
        }
        lat[blockIdx.x * L + l] = (float)(clock64() - t0) / reps;
    }
    __threadfence();
    st_vol(turn, blockIdx.x + 1);
}

// The short-path exchange on P participating blocks. role[smid] = logical block id or -1 (exit).
// slot_line[b]: the candidate line (index) holding logical block b's slot; each line holds two
// buffers (parity) of 8 words. cycles[0]: logical block 0's clock cycles; results[b]: logical
// block b's last result, which the host checks is the same in every block.
__global__ void __launch_bounds__(512, 1) exchange(const int* role, int P, const int* slot_line,
                                                   unsigned* lines, int iters, long long* cycles,
                                                   double* results) {
    __shared__ VK part[2][33];
    const int lb = role[smid()];
    if (lb < 0) return;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned g = (unsigned)lb * blockDim.x + threadIdx.x;
    unsigned win = 12345u;
    const long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        const int p = it & 1;
        const unsigned seq = (unsigned)it + 1u;
        double v = (double)((g * 2654435761u ^ (win * 40503u)) >> 8); unsigned k = g;
        block_min_to_warp0(v, k, part[p]);
        if (warp == 0) {
            if (lane == 0) publish_vk(lines + (long long)slot_line[lb] * LINE_WORDS + 8 * p, seq, v, k);
            double rv = 1e300; unsigned rk = FULL;
            if (lane < P) poll_vk(lines + (long long)slot_line[lane] * LINE_WORDS + 8 * p, seq, rv, rk);
            warp_min(rv, rk);
            if (lane == 0) { part[p][32].v = rv; part[p][32].k = rk; }
        }
        __syncthreads();
        win = part[p][32].k;
        if (threadIdx.x == 0 && it == iters - 1) results[lb] = part[p][32].v + (double)win;
    }
    const long long t1 = clock64();
    if (lb == 0 && threadIdx.x == 0) cycles[0] = t1 - t0;
}

int main() {
    cudaDeviceProp prop; CHECK(cudaGetDeviceProperties(&prop, 0));
    const int B = prop.multiProcessorCount, L = 64, reps = 200;
    printf("device: %s, %d multiprocessors\n", prop.name, B);
    unsigned *lines, *turn; float* d_lat; int* d_sm;
    CHECK(cudaMalloc(&lines, (size_t)L * LINE_WORDS * 4));
    CHECK(cudaMalloc(&turn, 4));
    CHECK(cudaMalloc(&d_lat, (size_t)B * L * 4));
    CHECK(cudaMalloc(&d_sm, B * 4));
    CHECK(cudaMemset(lines, 0, (size_t)L * LINE_WORDS * 4));
    CHECK(cudaMemset(turn, 0, 4));
    CHECK(cudaFuncSetAttribute(line_latency, cudaFuncAttributeMaxDynamicSharedMemorySize, 120 * 1024));
    line_latency<<<B, 32, 120 * 1024>>>(lines, L, reps, turn, d_lat, d_sm);
    CHECK(cudaDeviceSynchronize());
    std::vector<float> lat((size_t)B * L); std::vector<int> sm(B);
    CHECK(cudaMemcpy(lat.data(), d_lat, lat.size() * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(sm.data(), d_sm, B * 4, cudaMemcpyDeviceToHost));
    std::vector<float> by_sm((size_t)B * L);          // by smid
    for (int b = 0; b < B; ++b) for (int l = 0; l < L; ++l) by_sm[(size_t)sm[b] * L + l] = lat[(size_t)b * L + l];

    // lines near / far from the reference multiprocessor 0
    std::vector<float> r0(by_sm.begin(), by_sm.begin() + L);
    const float lo = *std::min_element(r0.begin(), r0.end()), hi = *std::max_element(r0.begin(), r0.end());
    std::vector<int> near, far;
    for (int l = 0; l < L; ++l) (r0[l] < 0.5f * (lo + hi) ? near : far).push_back(l);
    printf("round trip from SM 0 to the %d lines: %.0f - %.0f cycles; near group %zu lines, far %zu\n",
           L, lo, hi, near.size(), far.size());
    printf("per-line round trip from SM 0:");
    for (int l = 0; l < L; ++l) printf(" %.0f", r0[l]);
    printf("\n");
    // every multiprocessor's mean round trip to the near group and to the far group
    std::vector<float> mnear(B), mfar(B);
    for (int s = 0; s < B; ++s) {
        double a = 0, c = 0;
        for (int l : near) a += by_sm[(size_t)s * L + l];
        for (int l : far) c += by_sm[(size_t)s * L + l];
        mnear[s] = near.empty() ? 0 : (float)(a / near.size()); mfar[s] = far.empty() ? 0 : (float)(c / far.size());
    }
    printf("| smid | mean to near lines | mean to far lines |\n|---|---|---|\n");
    for (int s = 0; s < B; ++s) printf("| %d | %.0f | %.0f |\n", s, mnear[s], mfar[s]);

    // placements
    const int P = 32, iters = 20000;
    std::vector<int> order(B); std::iota(order.begin(), order.end(), 0);
    std::vector<int> by_near = order; std::sort(by_near.begin(), by_near.end(), [&](int x, int y) { return mnear[x] < mnear[y]; });
    std::vector<int> by_far = order; std::sort(by_far.begin(), by_far.end(), [&](int x, int y) { return mfar[x] < mfar[y]; });
    struct Place { const char* name; std::vector<int> sms; std::vector<int> slot_lines; };
    auto first = [](const std::vector<int>& v, int n) { return std::vector<int>(v.begin(), v.begin() + std::min<int>(n, (int)v.size())); };
    auto cyc_lines = [&](const std::vector<int>& grp) { std::vector<int> r(P); for (int b = 0; b < P; ++b) r[b] = grp[b % grp.size()]; return r; };
    std::vector<int> all_lines(L); std::iota(all_lines.begin(), all_lines.end(), 0);
    std::vector<int> spread(P); for (int b = 0; b < P; ++b) spread[b] = sm[b];   // where blocks 0..31 of a 132-block grid land
    std::vector<Place> places = {
        {"blocks 0-31 of the grid (as the pass kernel), consecutive lines", spread, first(all_lines, P)},
        {"SMs 0-31 by smid, consecutive lines", first(order, P), first(all_lines, P)},
        {"32 SMs nearest the near lines, slots on near lines", first(by_near, P), cyc_lines(near)},
        {"the same SMs, slots on far lines", first(by_near, P), cyc_lines(far)},
        {"32 SMs nearest the far lines, slots on far lines", first(by_far, P), cyc_lines(far)},
        {"32 SMs farthest from the near lines, slots on near lines", std::vector<int>(by_near.end() - P, by_near.end()), cyc_lines(near)},
    };
    int *d_role, *d_slot; long long* d_cyc; double* d_res;
    CHECK(cudaMalloc(&d_role, 1024 * 4)); CHECK(cudaMalloc(&d_slot, P * 4)); CHECK(cudaMalloc(&d_cyc, 8));
    CHECK(cudaMalloc(&d_res, P * 8));
    // 120 KiB of dynamic shared memory keeps one block per multiprocessor
    CHECK(cudaFuncSetAttribute(exchange, cudaFuncAttributeMaxDynamicSharedMemorySize, 120 * 1024));
    cudaEvent_t ea, eb; CHECK(cudaEventCreate(&ea)); CHECK(cudaEventCreate(&eb));
    printf("\n| placement (32 x 512, short-path exchange alone) | cycles per step | us per step | blocks agree |\n|---|---|---|---|\n");
    for (int rep_all = 0; rep_all < 2; ++rep_all) {
        for (const Place& pl : places) {
            if ((int)pl.sms.size() < P || pl.slot_lines.empty()) { printf("| %s | - | - | - |\n", pl.name); continue; }
            std::vector<int> role(1024, -1);
            for (int b = 0; b < P; ++b) role[pl.sms[b]] = b;
            CHECK(cudaMemcpy(d_role, role.data(), 1024 * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(d_slot, pl.slot_lines.data(), P * 4, cudaMemcpyHostToDevice));
            float best = 1e30f; long long cy = 0; bool agree = true;
            for (int rep = 0; rep < 3; ++rep) {
                CHECK(cudaMemset(lines, 0, (size_t)L * LINE_WORDS * 4));
                CHECK(cudaEventRecord(ea));
                exchange<<<B, 512, 120 * 1024>>>(d_role, P, d_slot, lines, iters, d_cyc, d_res);
                CHECK(cudaEventRecord(eb)); CHECK(cudaEventSynchronize(eb)); CHECK(cudaGetLastError());
                float ms; CHECK(cudaEventElapsedTime(&ms, ea, eb));
                std::vector<double> res(P); CHECK(cudaMemcpy(res.data(), d_res, P * 8, cudaMemcpyDeviceToHost));
                for (int b = 1; b < P; ++b) agree = agree && res[b] == res[0];
                if (ms < best) { best = ms; CHECK(cudaMemcpy(&cy, d_cyc, 8, cudaMemcpyDeviceToHost)); }
            }
            printf("| %s | %.0f | %.3f | %s |\n", pl.name, (double)cy / iters, 1000.0 * best / iters, agree ? "yes" : "NO");
        }
    }
    return 0;
}
