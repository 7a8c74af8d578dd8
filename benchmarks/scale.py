"""Scale: geometric on demand at large n on one GPU, with its checks.

    python -m benchmarks scale 512000

Needs an NVIDIA GPU with CuPy. The costs (2-D squared distances) are computed inside the
kernels; nothing n x n is stored. After a warm-up solve at n = 2000 (compile), one solve per n,
timed around the call; the optimal cost is recomputed on the host from the points and the
returned assignment, and the assignment is checked to be a permutation. The device checks the
dual certificate over all n² pairs (``certificate_max_violation``).
"""
from __future__ import annotations

import argparse
import time

from ._common import Output, gpu_name, markdown, require_gpu

NEEDS_GPU = True

_STATS = ("rows_evaluated", "passes", "epsilons", "time_estimate_s", "time_solve_s", "grid",
          "threads_per_block", "column_state_bytes_shared", "certificate_max_violation",
          "gpu_single_block_rerun", "host_syncs_per_augmentation")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("n", type=int, nargs="+", help="problem sizes (n x n)")
    ap.add_argument("--seed", type=int, default=1)


def run(args: argparse.Namespace, out: Output) -> None:
    cupy = require_gpu("scale")
    import costfns
    import epslap
    epslap.solve(costfns.Geometric(2000, seed=2), backend="gpu")  # compile, warm
    device = gpu_name(cupy)
    for n in args.n:
        src = costfns.Geometric(n, seed=args.seed)
        t0 = time.perf_counter()
        sol = epslap.solve(src, backend="gpu")
        wall = time.perf_counter() - t0
        st = sol.stats
        d = src.X[sol.row_ind] - src.Y[sol.col_ind]
        recomputed = float((d * d).sum(axis=1).sum())
        out.add(dict(n=n, device=device, wall_s=wall, cost=float(sol.cost),
                     cost_recomputed=recomputed,
                     perm_ok=bool(len(set(sol.col_ind.tolist())) == n),
                     **{k: st[k] for k in _STATS if k in st}))
        print(f"n={n}: {wall:.1f} s, {st['rows_evaluated']:,} rows evaluated", flush=True)


def render(meta: dict, rows: list[dict]) -> str:
    body = []
    for r in rows:
        per_row = r["time_solve_s"] / r["rows_evaluated"] * 1e6
        same = "yes" if abs(r["cost"] - r.get("cost_recomputed", r["cost"])) <= 1e-9 * r["n"] \
            else "NO"
        body.append([r.get("device") or meta.get("gpu") or "–", f"{r['n']:,}",
                     f"{r['wall_s']:.1f}", f"{r['time_estimate_s']:.1f}",
                     f"{r['time_solve_s']:.1f}", f"{r['rows_evaluated']:,}", r["passes"],
                     f"{per_row:.1f}", f"{r['cost']:.10g}", same,
                     f"{r['certificate_max_violation']:.1e}"])
    return markdown(["GPU", "n", "wall s", "estimate s", "passes s", "rows evaluated", "passes",
                     "µs per row", "optimal cost", "= cost recomputed on the host",
                     "certificate: max dual violation"], body)
