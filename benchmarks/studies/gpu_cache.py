"""GPU row cache: solve time vs cache size for rows that come from the host or a user's kernel.

    PYTHONPATH=. python benchmarks/studies/gpu_cache.py --n 16000 --fractions 1 0.25 0.05 --json out.json

Geometric problem (seed 1). Rows per run: the dense matrix on the device (reference); the same
NumPy matrix streamed through the device row cache (pinned memory) at each cache fraction; a
``costfns.RowKernel`` (user CUDA kernel of squared distances) at each fraction; the device cost
with an explicit LFU cache. Solve time includes the host estimate where the rows come from the
host (it reads every row there); compile time is excluded (a warm-up solve at n = 300 first).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import costfns
import epslap
from costfns.device import EXAMPLE_SOURCE as _SQDIST




def _budget(n, rows):
    import cupy
    from epslap.gpu.rowcache import DeviceRowCache
    from epslap.gpu.solver import search_bytes
    return search_bytes(cupy, n, n) + DeviceRowCache.device_bytes(rows, n, n)


def main() -> None:
    import cupy
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, nargs="+", default=[16000])
    ap.add_argument("--fractions", type=float, nargs="+", default=[1.0, 0.25, 0.05])
    ap.add_argument("--json")
    args = ap.parse_args()
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    kernel = cupy.RawKernel(_SQDIST, "sqdist")
    out = []
    for n in [300] + args.n:  # 300: warm-up (compiles every module), not reported
        src = costfns.Geometric(n, seed=1)
        x, y = (np.ascontiguousarray(a) for a in (src.X, src.Y))
        dense = src.dense()
        rk = costfns.RowKernel(kernel, (n, n), args=(cupy.asarray(x), cupy.asarray(y)))
        runs = [("dense on device", dense, {})]
        for f in args.fractions:
            rows = max(1, int(f * n))
            runs.append((f"NumPy streamed, {f:.0%} cache", dense, dict(memory=_budget(n, rows))))
            runs.append((f"RowKernel, {f:.0%} cache", rk, dict(memory=_budget(n, rows))))
            runs.append((f"device cost + LFU, {f:.0%} cache", src,
                         dict(memory=_budget(n, rows), cache="lfu")))
        ref = None
        for label, cost, kw in runs:
            t0 = time.perf_counter()
            sol = epslap.solve(cost, backend="gpu", **kw)
            total = time.perf_counter() - t0
            st = sol.stats
            ref = sol.cost if ref is None else ref
            assert abs(sol.cost - ref) <= 1e-9 * n * max(1.0, abs(ref)), (label, sol.cost, ref)
            rec = dict(n=n, run=label, total_s=total, estimate_s=st["time_estimate_s"],
                       passes_s=st["time_solve_s"], rows_evaluated=st["rows_evaluated"],
                       cache_rows=st.get("cache_rows"), hits=st.get("cache_hits"),
                       misses=st.get("cache_misses"), suspensions=st.get("gpu_suspensions"),
                       device=device)
            if n != 300:
                out.append(rec)
                print(f"| {n} | {label} | {total:.2f} | {st['time_estimate_s']:.2f} | "
                      f"{st['time_solve_s']:.2f} | {st['rows_evaluated']:,} | "
                      f"{rec['misses'] if rec['misses'] is not None else '–'} | "
                      f"{rec['suspensions'] if rec['suspensions'] is not None else '–'} |",
                      flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(device=device, date=time.strftime("%Y-%m-%d"), results=out), fh,
                      indent=1)


if __name__ == "__main__":
    main()
