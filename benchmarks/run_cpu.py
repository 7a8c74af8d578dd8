"""CPU speed: epslap vs scipy.optimize.linear_sum_assignment and lap.lapjv, single thread.

    python benchmarks/run_cpu.py --sizes 1000 2000 4000 8000 --repeats 3 --json benchmarks/cpu.json

Solve time only: the matrix is generated first and epslap's kernels are compiled on a small
matrix beforehand (compile time is reported separately by ``stats["compile_s"]``). Every peer's
optimal value is checked against epslap's. A peer that took longer than ``--peer-cap`` seconds
at one size is skipped at larger sizes of that class (marked "–"). Median of ``--repeats`` runs
(one run for a peer slower than 10 s); the runs are interleaved (epslap, peer, epslap, peer, …)
so that a shared machine's load hits every solver alike.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

import costfns
import epslap

CLASSES = ["random", "geometric", "disjoint", "sanity", "rank1", "rank8", "integer"]


def _time_interleaved(fns: dict, repeats: int):
    """Median seconds and last result of every function, timed round-robin (one run of each per
    round) so that load from other processes on a shared machine hits all of them alike. A
    function slower than 10 s runs once."""
    times = {k: [] for k in fns}
    out = {}
    for _ in range(repeats):
        for k, fn in fns.items():
            if times[k] and times[k][-1] > 10:
                continue
            t0 = time.perf_counter()
            out[k] = fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(t) for k, t in times.items()}, out


def _peers():
    peers = {}
    try:
        from scipy.optimize import linear_sum_assignment

        def scipy_solve(c):
            r, k = linear_sum_assignment(c)
            return float(c[r, k].sum())
        peers["scipy"] = scipy_solve
    except ImportError:
        pass
    try:
        import lap

        def lap_solve(c):
            return float(lap.lapjv(np.asarray(c, dtype=np.float64))[0])
        peers["lap"] = lap_solve
    except ImportError:
        pass
    return peers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    ap.add_argument("--classes", nargs="+", default=CLASSES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer-cap", type=float, default=30.0)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--peers", nargs="+", help="only these peers (e.g. lap)")
    ap.add_argument("--json")
    args = ap.parse_args()
    epslap.precompile()
    peers = {} if args.no_peers else _peers()
    if args.peers:
        peers = {k: f for k, f in peers.items() if k in args.peers}
    results = []
    skip: set[tuple[str, str]] = set()
    print("| class | n | epslap s | rows evaluated | passes | " +
          " | ".join(f"{p} s" for p in peers) + " | epslap / fastest peer |")
    print("|---" * (5 + len(peers)) + "|---|")
    for name in args.classes:
        for n in args.sizes:
            c = costfns.generate(name, n, seed=1)
            fns = {"epslap": lambda: epslap.solve(c)}
            fns.update({p: (lambda fn=fn: fn(c)) for p, fn in peers.items()
                        if (p, name) not in skip})
            med, out = _time_interleaved(fns, args.repeats)
            t_ours, sol = med["epslap"], out["epslap"]
            rec = dict(cls=name, n=n, epslap_s=t_ours, rows_evaluated=sol.stats["rows_evaluated"],
                       passes=sol.stats["passes"], cost=sol.cost, peers={},
                       estimate_s=sol.stats["time_estimate_s"],
                       certified_by_estimate=sol.stats.get("certified_by_estimate", False))
            for pname in peers:
                if pname not in med:
                    rec["peers"][pname] = None
                    continue
                val = out[pname]
                if abs(val - float(sol.cost)) > 1e-9 * max(1.0, abs(val)) * n:
                    raise SystemExit(f"{pname} and epslap disagree on {name} n={n}: "
                                     f"{val} vs {sol.cost}")
                rec["peers"][pname] = med[pname]
                if med[pname] > args.peer_cap:
                    skip.add((pname, name))
            results.append(rec)
            times = [t for t in rec["peers"].values() if t is not None]
            ratio = f"{t_ours / min(times):.2f}" if times else "–"
            cells = " | ".join(f"{t:.3f}" if t is not None else "–" for t in rec["peers"].values())
            print(f"| {name} | {n} | {t_ours:.3f} | {rec['rows_evaluated']:,} | {rec['passes']} | "
                  f"{cells} | {ratio} |", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(machine=platform.platform(), cpus=os.cpu_count(),
                           date=time.strftime("%Y-%m-%d"), results=results), fh, indent=1)


if __name__ == "__main__":
    main()
