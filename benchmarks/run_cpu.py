"""CPU speed: epslap vs scipy.optimize.linear_sum_assignment and lap.lapjv, single thread.

    python benchmarks/run_cpu.py --sizes 1000 2000 4000 8000 --repeats 3 --json benchmarks/cpu.json
    python benchmarks/run_cpu.py --classes random --peers lapx --lapx-python /tmp/lapxenv/bin/python

lapx installs the import name ``lap`` too, so it lives in its own environment
(``python -m venv /tmp/lapxenv && /tmp/lapxenv/bin/pip install lapx numpy``): ``--lapx-python``
starts a worker in that interpreter that loads each matrix once (from a temporary .npy file) and
times ``lap.lapjvr`` itself, so the transfer is not counted.

Solve time only: the matrix is generated first and epslap's kernels are compiled on a small
matrix beforehand (compile time is reported separately by ``stats["compile_s"]``). Every peer's
optimal value is checked against epslap's. A peer that took longer than ``--peer-cap`` seconds
at one size is skipped at larger sizes of that class (marked "–"). Median of ``--repeats`` runs
(one run for a peer slower than 10 s); the runs are interleaved (epslap, peer, epslap, peer, …)
so that a shared machine's load hits every solver alike.
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
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
            res = fn()
            elapsed = time.perf_counter() - t0
            if isinstance(res, SelfTimed):  # a peer in another process reports its own time
                res, elapsed = res.value, res.seconds
            out[k] = res
            times[k].append(elapsed)
    return {k: statistics.median(t) for k, t in times.items()}, out


class SelfTimed:
    def __init__(self, value, seconds):
        self.value, self.seconds = value, seconds


_LAPX_WORKER = r"""
import sys, time, numpy as np, lap
cache = {}
for line in sys.stdin:
    path = line.strip()
    if path not in cache:
        cache.clear()
        cache[path] = np.ascontiguousarray(np.load(path), dtype=np.float64)
    c = cache[path]
    t0 = time.perf_counter()
    total = lap.lapjvr(c)[0]
    print(time.perf_counter() - t0, float(total), flush=True)
"""


class LapxPeer:
    """``lap.lapjvr`` of lapx, run in another interpreter (see the module docstring)."""

    def __init__(self, python: str):
        self.proc = subprocess.Popen([python, "-c", _LAPX_WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.tmp = tempfile.mkdtemp(prefix="epslap-lapx-")
        atexit.register(shutil.rmtree, self.tmp, True)
        self.matrix_id = None
        self.path = None

    def __call__(self, c):
        if self.matrix_id != id(c):  # a new matrix: replace the previous file
            if self.path is not None:
                os.remove(self.path)
            self.matrix_id = id(c)
            self.path = os.path.join(self.tmp, f"m{id(c)}.npy")
            np.save(self.path, c)
        self.proc.stdin.write(self.path + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the lapx worker ended; is lapx installed in --lapx-python?")
        seconds, total = line.split()
        return SelfTimed(float(total), float(seconds))


def _peers(lapx_python=None):
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
    if lapx_python:
        peers["lapx"] = LapxPeer(lapx_python)
    return peers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    ap.add_argument("--classes", nargs="+", default=CLASSES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer-cap", type=float, default=30.0)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--peers", nargs="+", help="only these peers (e.g. lap)")
    ap.add_argument("--threads", type=int, default=1,
                    help="epslap's solver threads (default 1: the issue's bar is single-thread)")
    ap.add_argument("--lapx-python", help="an interpreter with lapx installed (see above)")
    ap.add_argument("--json")
    args = ap.parse_args()
    epslap.precompile()
    peers = {} if args.no_peers else _peers(args.lapx_python)
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
            fns = {"epslap": lambda: epslap.solve(c, threads=args.threads)}
            fns.update({p: (lambda fn=fn: fn(c)) for p, fn in peers.items()
                        if (p, name) not in skip})
            med, out = _time_interleaved(fns, args.repeats)
            t_ours, sol = med["epslap"], out["epslap"]
            rec = dict(cls=name, n=n, epslap_s=t_ours, rows_evaluated=sol.stats["rows_evaluated"],
                       passes=sol.stats["passes"], cost=sol.cost, peers={},
                       estimate_s=sol.stats["time_estimate_s"],
                       certified_by_estimate=sol.stats.get("certified_by_estimate", False),
                       threads=sol.stats.get("threads"))
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
