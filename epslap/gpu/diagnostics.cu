// Self-tests of what the pass kernel relies on, built only by the tests and diagnostics that run
// them (epslap.gpu.modules.diagnostics_module): the cooperative grid barrier and the exchange.
#include "common.cuh"
#include "exchange.cuh"

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
    const GridPart whole = {0u, gridDim.x, nullptr, 0};
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
        const Cand r = grid_best(c, sh, slots, seq, parity, 0u, sh_extra, got_extra, whole);
        sum = sum * 1000003ull + (unsigned long long)r.key + (unsigned long long)r.pred
              + (unsigned long long)r.cm;
    }
    if (threadIdx.x == 0) checksums[blockIdx.x] = sum;
}
