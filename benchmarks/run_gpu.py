"""GPU backend timings in one go: dense on the device and on demand, vs the CPU backend.

    python benchmarks/run_gpu.py --json gpu.json [--sizes 16000 32000] [--demand 64000 128000]

Dense-on-device matrices are materialised on the GPU from the same cost source the on-demand
runs use (so both solve the same instance). Solve time = estimate + passes, compile excluded
(a warm-up solve compiles the kernels first). The CPU backend runs only up to --cpu-max.
"""
from __future__ import annotations

import argparse
import json
import time

import costfns
import epslap
from epslap.gpu.solver import import_cupy, materialise


def _row(label, n, sol, extra=""):
    st = sol.stats
    t = st["time_estimate_s"] + st["time_solve_s"]
    print(f"| {label} | {n} | {t:.3f} | {st['time_estimate_s']:.3f} | {st['rows_evaluated']:,} | "
          f"{st['passes']} | {st.get('host_syncs_per_augmentation', 0):.2g} | {extra} |", flush=True)
    return dict(label=label, n=n, solve_s=t, estimate_s=st["time_estimate_s"],
                rows_evaluated=st["rows_evaluated"], passes=st["passes"], cost=sol.cost)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--classes", nargs="+", default=["random", "geometric", "integer"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[16000, 32000])
    ap.add_argument("--demand", type=int, nargs="+", default=[])
    ap.add_argument("--demand-classes", nargs="+", default=["geometric"])
    ap.add_argument("--cpu-max", type=int, default=8000)
    ap.add_argument("--json")
    args = ap.parse_args()
    cupy = import_cupy()
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"device: {name}")
    epslap.solve(costfns.problem("geometric", 300, 0), backend="gpu")  # compile / warm up
    epslap.solve(costfns.problem("integer", 300, 0), backend="gpu")
    out = []
    print("| problem | n | solve s | estimate s | rows evaluated | passes | host syncs/aug | note |")
    print("|---|---|---|---|---|---|---|---|")
    for cls in args.classes:
        for n in args.sizes:
            src = costfns.problem(cls, n, seed=1)
            m = materialise(src)
            sol = epslap.solve(m, backend="gpu")
            out.append(_row(f"{cls}, dense on device", n, sol))
            del m
            cupy.get_default_memory_pool().free_all_blocks()
            sol2 = epslap.solve(src, backend="gpu")
            assert abs(sol2.cost - sol.cost) <= 1e-9 * max(1.0, abs(sol.cost)) * n
            out.append(_row(f"{cls}, on demand", n, sol2))
            if n <= args.cpu_max:
                t0 = time.perf_counter()
                cpu = epslap.solve(src.dense())
                out.append(_row(f"{cls}, CPU backend (1 thread)", n, cpu,
                                f"same optimum: {abs(cpu.cost - sol.cost) <= 1e-9 * n}"))
    for cls in args.demand_classes:
        for n in args.demand:
            sol = epslap.solve(costfns.problem(cls, n, seed=1), backend="gpu")
            out.append(_row(f"{cls}, on demand", n, sol))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(device=name, date=time.strftime("%Y-%m-%d"), results=out), fh, indent=1)


if __name__ == "__main__":
    main()
