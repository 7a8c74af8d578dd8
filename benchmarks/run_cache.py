"""On-demand solves vs cache size and policy (issue 4), against the dense solve of the same problem.

    python benchmarks/run_cache.py --n 16000 --classes geometric random --json benchmarks/cache.json

For each class: the dense solve (matrix generated first, not timed), then the on-demand solve with
the whole matrix as a table (100 %), and row caches of 25 %, 5 % and one row under LFU and SLRU.
Reports solve seconds (estimate + passes), ratio to dense, rows evaluated, rows computed (cache
misses), hit rate, and the process's peak RSS so far (``resource.getrusage``).
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import time

import costfns
import epslap


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=16000)
    ap.add_argument("--classes", nargs="+", default=["geometric", "random"])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.05])
    ap.add_argument("--threads", type=int, default=None,
                    help="solver threads for every solve (default: automatic)")
    ap.add_argument("--no-table", action="store_true",
                    help="skip the 100%% run (it holds a second copy of the matrix)")
    ap.add_argument("--json")
    args = ap.parse_args()
    epslap.precompile()
    out = []
    print("| class | n | cache | policy | solve s | / dense | rows evaluated | rows computed | "
          "hit rate | peak RSS GiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
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
            rec = dict(cls=name, n=args.n, cache=label, threads=st.get("threads"), policy=st.get("cache_policy", "dense"),
                       solve_s=t, ratio=t / t_dense, rows_evaluated=st["rows_evaluated"],
                       rows_computed=misses, hit_rate=rate, peak_rss_gib=_rss_gib())
            out.append(rec)
            print(f"| {name} | {args.n} | {label} | {rec['policy']} | {t:.2f} | {rec['ratio']:.2f} | "
                  f"{rec['rows_evaluated']:,} | {misses:,} | {rate:.1%} | {rec['peak_rss_gib']:.2f} |",
                  flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(machine=platform.platform(), date=time.strftime("%Y-%m-%d"),
                           results=out), fh, indent=1)


if __name__ == "__main__":
    main()
