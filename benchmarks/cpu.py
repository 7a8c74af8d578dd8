"""CPU speed: epslap against every CPU peer installed, per problem class and size.

    python -m benchmarks cpu --sizes 1000 2000 4000 --repeats 3
    python -m benchmarks cpu --classes random --peers lap lapx --lapx-python /tmp/lapxenv/bin/python

Peers (those importable here; ``--peers`` picks some): scipy ``linear_sum_assignment``; lapx's
``lapjv``, ``lapjvx`` and ``lapjvr`` (or the original lap's ``lapjv`` when the ``lap`` module
comes from the lap distribution: both install the import name ``lap``); lapcpp ``lapjv``; POT
``ot.emd`` with unit masses (network simplex; the plan of an assignment problem is a
permutation, and POT reports the plan's cost). ``--lapx-python`` adds lapx ``lapjvr`` as the
peer "lapx", run in another interpreter (for an environment whose ``lap`` is the original lap):
a worker there loads each matrix once from a temporary .npy file and times the call itself, so
the transfer is not counted.

Solve time only: the matrix is generated first (and, for the peers that take float64, converted
once outside the timing), and epslap's kernels are compiled beforehand. epslap runs on
``--threads`` threads (default 1: the bar is single-thread). Every peer's optimal value is
checked against epslap's. A peer that took longer than ``--peer-cap`` seconds at one size is
skipped at larger sizes of that class ("–"). Median of ``--repeats`` runs (one run for a solver
slower than 10 s); the runs are interleaved (epslap, peer, peer, ..., epslap, ...) so that a
shared machine's load hits every solver alike: compare ratios within one run.
"""
from __future__ import annotations

import argparse
import atexit
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable

import numpy as np

from ._common import Output, markdown, seconds

CLASSES = ["random", "geometric", "disjoint", "sanity", "rank1", "rank8", "integer"]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    ap.add_argument("--classes", nargs="+", default=CLASSES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer-cap", type=float, default=30.0,
                    help="skip a peer at larger sizes of a class once it took this long")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--peers", nargs="+", help="only these peers (names as in the table)")
    ap.add_argument("--threads", type=int, default=1,
                    help="epslap's solver threads (default 1: the bar is single-thread)")
    ap.add_argument("--lapx-python", help="an interpreter with lapx installed (see above)")
    ap.add_argument("--seed", type=int, default=1)


class SelfTimed:
    """A peer's result with the seconds it measured itself (a peer in another process)."""

    def __init__(self, value: float, seconds: float):
        self.value, self.seconds = value, seconds


def time_interleaved(fns: dict[str, Callable[[], object]],
                     repeats: int) -> tuple[dict[str, float], dict[str, object]]:
    """Median seconds and last result of every function, timed round-robin (one run of each per
    round) so that load from other processes on a shared machine hits all of them alike. A
    function slower than 10 s runs once."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    out = {}
    for _ in range(repeats):
        for k, fn in fns.items():
            if times[k] and times[k][-1] > 10:
                continue
            t0 = time.perf_counter()
            res = fn()
            elapsed = time.perf_counter() - t0
            if isinstance(res, SelfTimed):
                res, elapsed = res.value, res.seconds
            out[k] = res
            times[k].append(elapsed)
    return {k: statistics.median(t) for k, t in times.items()}, out


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
        self.matrix_id: int | None = None
        self.path: str | None = None

    def __call__(self, c: np.ndarray, c64: np.ndarray) -> SelfTimed:
        if self.matrix_id != id(c):  # a new matrix: replace the previous file
            if self.path is not None:
                os.remove(self.path)
            self.matrix_id = id(c)
            self.path = os.path.join(self.tmp, f"m{id(c)}.npy")
            np.save(self.path, c64)
        self.proc.stdin.write(self.path + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the lapx worker ended; is lapx installed in --lapx-python?")
        secs, total = line.split()
        return SelfTimed(float(total), float(secs))


def _lap_distribution() -> str | None:
    from importlib import metadata
    dists = metadata.packages_distributions().get("lap", [])
    return dists[0] if dists else None


def peers(lapx_python: str | None = None) -> dict[str, Callable]:
    """The peers importable here: name -> f(c, c64) returning the optimal cost, where ``c64`` is
    ``c`` as C-contiguous float64 (prepared outside the timing)."""
    out: dict[str, Callable] = {}
    try:
        from scipy.optimize import linear_sum_assignment

        def scipy_solve(c, c64):
            r, k = linear_sum_assignment(c)
            return float(c[r, k].sum())
        out["scipy"] = scipy_solve
    except ImportError:
        pass
    try:
        import lap
        if _lap_distribution() == "lapx":
            out["lapx.lapjv"] = lambda c, c64: float(lap.lapjv(c64)[0])
            out["lapx.lapjvx"] = lambda c, c64: float(lap.lapjvx(c64)[0])
            out["lapx.lapjvr"] = lambda c, c64: float(lap.lapjvr(c64)[0])
            if hasattr(lap, "lapjvh"):
                out["lapx.lapjvh"] = lambda c, c64: float(lap.lapjvh(c64)[0])
        else:
            out["lap"] = lambda c, c64: float(lap.lapjv(c64)[0])
    except ImportError:
        pass
    try:
        import lapcpp
        out["lapcpp"] = lambda c, c64: float(lapcpp.lapjv(c64)[0])
    except ImportError:
        pass
    try:
        import ot

        def pot_solve(c, c64):
            ones = np.ones(c64.shape[0])
            _, log = ot.emd(ones, ones, c64, numItermax=2**31 - 1, log=True)
            if log["warning"]:
                raise RuntimeError(f"POT: {log['warning']}")
            return float(log["cost"])
        out["pot"] = pot_solve
    except ImportError:
        pass
    if lapx_python:
        out["lapx"] = LapxPeer(lapx_python)
    return out


def run(args: argparse.Namespace, out: Output) -> None:
    import costfns
    import epslap
    out.meta["compile_s"] = epslap.precompile()
    found = {} if args.no_peers else peers(args.lapx_python)
    if args.peers:
        missing = set(args.peers) - set(found)
        if missing:
            raise SystemExit(f"benchmarks cpu: peers not installed here: {sorted(missing)} "
                             f"(installed: {sorted(found)})")
        found = {k: f for k, f in found.items() if k in args.peers}
    out.meta["peers"] = list(found)
    skip: set[tuple[str, str]] = set()
    for name in args.classes:
        for n in args.sizes:
            c = costfns.generate(name, n, seed=args.seed)
            c64 = np.ascontiguousarray(c, dtype=np.float64)
            fns = {"epslap": lambda c=c: epslap.solve(c, threads=args.threads)}
            fns.update({p: (lambda fn=fn, c=c, c64=c64: fn(c, c64)) for p, fn in found.items()
                        if (p, name) not in skip})
            med, res = time_interleaved(fns, args.repeats)
            sol = res["epslap"]
            rec = dict(cls=name, n=n, epslap_s=med["epslap"],
                       rows_evaluated=sol.stats["rows_evaluated"], passes=sol.stats["passes"],
                       cost=float(sol.cost), peers={}, estimate_s=sol.stats["time_estimate_s"],
                       certified_by_estimate=sol.stats.get("certified_by_estimate", False),
                       threads=sol.stats.get("threads"))
            for pname in found:
                if pname not in med:
                    rec["peers"][pname] = None
                    continue
                val = res[pname]
                if abs(val - float(sol.cost)) > 1e-9 * max(1.0, abs(val)) * n:
                    raise SystemExit(f"{pname} and epslap disagree on {name} n={n}: "
                                     f"{val} vs {sol.cost}")
                rec["peers"][pname] = med[pname]
                if med[pname] > args.peer_cap:
                    skip.add((pname, name))
            out.add(rec)
            print(_line(rec), flush=True)


def _line(rec: dict) -> str:
    cells = " ".join(f"{p} {seconds(t)}" for p, t in rec["peers"].items())
    return f"{rec['cls']:>9} n={rec['n']:>6} epslap {seconds(rec['epslap_s'])} s  {cells}"


def render(meta: dict, rows: list[dict]) -> str:
    """class | n | epslap | rows evaluated | passes | each peer | fastest peer | ratio."""
    names: list[str] = []
    for r in rows:
        names += [p for p in r["peers"] if p not in names]
    head = ["class", "n", "epslap s", "rows evaluated", "passes"] + [f"{p} s" for p in names]
    head += ["fastest peer", "epslap / fastest"]
    body = []
    for r in rows:
        times = {p: r["peers"].get(p) for p in names}
        measured = {p: t for p, t in times.items() if t is not None}
        best = min(measured, key=measured.get) if measured else None
        body.append([r["cls"], r["n"], seconds(r["epslap_s"]), f"{r['rows_evaluated']:,}",
                     r["passes"]] + [seconds(t) for t in times.values()]
                    + [best or "–",
                       f"{r['epslap_s'] / measured[best]:.2f}" if best else "–"])
    return markdown(head, body)
