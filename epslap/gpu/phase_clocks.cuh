// Diagnostics of the pass kernel: block 0 thread 0's clock cycles per phase of a pass (scan,
// exchange, between two steps, price update + flip), in the build with PHASE_CLOCKS defined
// (LaunchConfig(phase_clocks=True)). The pass kernel only names the hooks below; in the product
// build they expand to nothing (and the launch bounds to the product's own).
#ifndef EPSLAP_PHASE_CLOCKS_CUH
#define EPSLAP_PHASE_CLOCKS_CUH

#ifdef PHASE_CLOCKS
// one block per multiprocessor: keeps ptxas from capping the registers at 64
#define PASS_LAUNCH_BOUNDS __launch_bounds__(THREADS, 1)
// the counters, declared at the start of the kernel (after `leader`)
#define CLOCKS_START long long clk0 = 0, clk1 = 0, clk2 = 0, clk3 = 0, clk_t = clock64();
#define CLOCK_MARK(ph) do { if (leader) { const long long t_ = clock64(); clk##ph += t_ - clk_t; clk_t = t_; } } while (0)
// the totals into out[3 + nb ...], after the partial sums of the nb blocks
#define CLOCKS_REPORT(out, nb) do { if (leader) { \
        (out)[3 + (nb)] = (double)clk0; (out)[4 + (nb)] = (double)clk1; \
        (out)[5 + (nb)] = (double)clk2; (out)[6 + (nb)] = (double)clk3; \
    } } while (0)
#else
#define PASS_LAUNCH_BOUNDS __launch_bounds__(THREADS)
#define CLOCKS_START
#define CLOCK_MARK(ph) do {} while (0)
#define CLOCKS_REPORT(out, nb) do {} while (0)
#endif

#endif  // EPSLAP_PHASE_CLOCKS_CUH
