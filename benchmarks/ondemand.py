"""Costs on demand under a memory budget: cache size and policy against the dense solve.

    python -m benchmarks ondemand --n 16000 --classes geometric random
    python -m benchmarks ondemand --n 32000 --fractions 0.25 0.05 --threads 1 --no-table

For each class: the dense solve (matrix generated first, not timed), then the on-demand solve
with the whole matrix as a table (100 %), and row caches of each ``--fractions`` of the rows and
of one row, under LFU and SLRU. Reports solve seconds (estimate + passes), the ratio to the
dense solve, rows evaluated, rows computed (cache misses), hit rate, and the process's peak RSS
so far (``resource.getrusage``; it includes the dense matrix built for the reference solve).
Every on-demand solve must return the dense solve's optimal cost.
"""
from __future__ import annotations

import argparse
import resource

from ._common import Output, markdown, seconds


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--n", type=int, default=16000)
    ap.add_argument("--classes", nargs="+", default=["geometric", "random"])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.05])
    ap.add_argument("--threads", type=int, default=None,
                    help="solver threads for every solve (default: automatic)")
    ap.add_argument("--no-table", action="store_true",
                    help="skip the 100%% run (it holds a second copy of the matrix)")


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run(args: argparse.Namespace, out: Output) -> None:
    import costfns
    import epslap
    epslap.precompile()
    for name in args.classes:
        src = costfns.problem(name, args.n, seed=1)
        row_bytes = args.n * 8
        dense = epslap.solve(src.dense(), threads=args.threads)
        t_dense = dense.stats["time_estimate_s"] + dense.stats["time_solve_s"]
        runs = [("dense", None, "-")]
        if not args.no_table:
            runs.append(("100%", args.n * row_bytes, "auto"))
        for frac in args.fractions:
            for policy in ("lfu", "slru"):
                runs.append((f"{frac:.0%}", int(frac * args.n) * row_bytes, policy))
        for policy in ("lfu", "slru"):
            runs.append(("1 row", row_bytes, policy))
        for label, memory, policy in runs:
            if label == "dense":
                sol = dense
            else:
                sol = epslap.solve(src, memory=memory, threads=args.threads,
                                   cache=policy if policy != "-" else "auto")
                assert abs(sol.cost - dense.cost) <= 1e-9 * max(1.0, abs(dense.cost)) * args.n
            st = sol.stats
            t = st["time_estimate_s"] + st["time_solve_s"]
            hits, misses = st.get("cache_hits", 0), st.get("cache_misses", 0)
            rate = hits / (hits + misses) if hits + misses else 0.0
            rec = dict(cls=name, n=args.n, cache=label, threads=st.get("threads"),
                       policy=st.get("cache_policy", "dense"), solve_s=t, ratio=t / t_dense,
                       rows_evaluated=st["rows_evaluated"], rows_computed=misses, hit_rate=rate,
                       peak_rss_gib=_rss_gib())
            out.add(rec)
            print(f"{name} n={args.n} {label} {rec['policy']}: {t:.2f} s "
                  f"({rec['ratio']:.2f} x dense)", flush=True)


def render(meta: dict, rows: list[dict]) -> str:
    body = []
    for r in rows:
        dense = r["cache"] == "dense"
        body.append([r["cls"], r["n"], r["cache"], "–" if dense else r["policy"],
                     r.get("threads", "–"), seconds(r["solve_s"], 2),
                     f"{r['ratio']:.2f}", f"{r['rows_evaluated']:,}", f"{r['rows_computed']:,}",
                     "–" if dense else f"{r['hit_rate']:.1%}", f"{r['peak_rss_gib']:.2f}"])
    return markdown(["class", "n", "cache", "policy", "threads", "solve s", "/ dense",
                     "rows evaluated", "rows computed", "hit rate", "peak RSS GiB"], body)
