"""Grid-shape sweep of the GPU pass kernel: solve time and µs per Dijkstra step for several
(blocks, threads per block), dense on the device and on demand.

    PYTHONPATH=. python benchmarks/studies/gpu_sweep.py --n 32000 --classes random geometric --grids 132x128 66x256
"""
from __future__ import annotations

import argparse

import costfns
import epslap
from epslap.gpu import LaunchConfig
from epslap.gpu.solver import import_cupy, materialise


def _time_exchange(cupy, grids, iterations=20000):
    """µs per step of the pass kernel's cross-block exchange alone (``exchange_selftest``)."""
    import numpy as np
    import time
    from epslap.gpu.launch import exchange_slots
    from epslap.gpu.modules import diagnostics_module
    print("| exchange only: blocks x threads | µs / step |")
    print("|---|---|")
    for grid in grids:
        blocks, threads = map(int, grid.split("x"))
        mod = diagnostics_module(cupy, threads)
        fn = mod.get_function("exchange_selftest")
        slots = exchange_slots(cupy, blocks, threads)
        sums = cupy.zeros(blocks, dtype=np.uint64)
        fn((blocks,), (threads,), (slots, sums, np.int32(100)))
        slots.fill(0)
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn((blocks,), (threads,), (slots, sums, np.int32(iterations)))
        cupy.cuda.Device().synchronize()
        dt = time.perf_counter() - t0
        agree = len(set(sums.get().tolist())) == 1
        print(f"| {grid} | {1e6 * dt / iterations:.2f} (blocks agree: {agree}) |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=32000)
    ap.add_argument("--classes", nargs="+", default=["random", "geometric"])
    ap.add_argument("--grids", nargs="+", default=["132x128", "66x128", "33x256", "16x512"])
    ap.add_argument("--exchange-only", action="store_true")
    ap.add_argument("--phase-clocks", action="store_true",
                    help="the diagnostic build: clock cycles per phase of a Dijkstra step")
    ap.add_argument("--on-demand-only", action="store_true",
                    help="skip the dense runs (n too large for an n x n matrix on the device)")
    args = ap.parse_args()
    cupy = import_cupy()
    print("device:", cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
    _time_exchange(cupy, args.grids)
    if args.exchange_only:
        return
    print("| problem | n | blocks x threads | solve s | passes s | rows evaluated | µs / row |")
    print("|---|---|---|---|---|---|---|")
    for cls in args.classes:
        src = costfns.problem(cls, args.n, seed=1)
        m = None if args.on_demand_only else materialise(src)
        runs = (("on demand", src),) if m is None else (("dense on device", m), ("on demand", src))
        for label, cost in runs:
            for grid in args.grids:
                blocks, threads = grid.split("x")
                launch = LaunchConfig(blocks=int(blocks), threads=int(threads),
                                      phase_clocks=args.phase_clocks)
                epslap.solve(costfns.problem(cls, 500, seed=2), backend="gpu",
                             launch=launch)  # compile/warm
                st = epslap.solve(cost, backend="gpu", launch=launch).stats
                t = st["time_estimate_s"] + st["time_solve_s"]
                per = 1e6 * st["time_solve_s"] / st["rows_evaluated"]
                print(f"| {cls}, {label} | {args.n} | {grid} | {t:.3f} | {st['time_solve_s']:.3f} "
                      f"| {st['rows_evaluated']:,} | {per:.2f} |", flush=True)
                if any(st.get("phase_cycles", ())):  # the diagnostic build
                    per_step = [c / st["rows_evaluated"] for c in st["phase_cycles"]]
                    print("|   cycles per step (block 0, thread 0): scan {:.0f}, exchange {:.0f}, "
                          "between {:.0f}, price update + flip {:.0f} |".format(*per_step), flush=True)
        del m
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
