"""Rectangular problems (n1 < n2): epslap against scipy and lapcpp, one thread (or the GPU).

Shapes 2×n2, 20×n2, 200×n2 and n2/2×n2, classes random (U[0,1)) and geometric (squared distances
of random points in the unit square). Columns up to ``--dense-max`` are solved as a matrix in
memory; wider ones through a cost source (epslap's time then includes computing every cost it
reads; scipy and lapcpp get the matrix, where it fits in ``--peer-max`` entries). A cell is the
best of ``--repeats`` calls after one warm-up call; every optimum is compared with scipy's.

    python -m benchmarks rectangular --n2 4000 100000
    python -m benchmarks rectangular --backend gpu --n2 4000 20000 100000
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ._common import Output, markdown, seconds

CLASSES = ["random", "geometric"]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--n2", type=int, nargs="+", default=[4000, 100_000])
    ap.add_argument("--rows", type=int, nargs="+", default=[2, 20, 200, 0],
                    help="row counts; 0 means n2/2 (default: %(default)s)")
    ap.add_argument("--classes", nargs="+", default=CLASSES)
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dense-max", type=int, default=4000,
                    help="widest problem solved from a matrix in memory (default: %(default)s)")
    ap.add_argument("--peer-max", type=float, default=2e7,
                    help="largest matrix (entries) built for scipy and lapcpp")
    ap.add_argument("--skip-half-above", type=int, default=100_000,
                    help="skip n2/2 x n2 above this many columns")
    ap.add_argument("--seed", type=int, default=1)


def _source(name: str, n1: int, n2: int, seed: int):
    import costfns
    if name == "random":
        return costfns.Random(n1, seed=seed, n2=n2)
    rng = np.random.default_rng(seed)
    return costfns.SqEuclidean(rng.random((n1, 2)), rng.random((n2, 2)))


def _best(fn, repeats: int) -> tuple[float, object]:
    out = fn()  # warm-up (compilation, caches)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run(args, out: Output) -> int:
    import epslap
    from scipy.optimize import linear_sum_assignment
    try:
        import lapcpp
    except ImportError:
        lapcpp = None
    threads = 1 if args.backend == "cpu" else None
    for n2 in args.n2:
        for rows in args.rows:
            n1 = rows or n2 // 2
            if rows == 0 and n2 > args.skip_half_above:
                continue
            for name in args.classes:
                src = _source(name, n1, n2, args.seed)
                dense = n2 <= args.dense_max
                c = src.dense() if dense or n1 * n2 <= args.peer_max else None
                problem = c if dense else src
                t, sol = _best(lambda: epslap.solve(problem, backend=args.backend,
                                                    threads=threads), args.repeats)
                row = dict(n1=n1, n2=n2, cls=name, input="matrix" if dense else "source",
                           backend=args.backend, epslap_s=t, method=sol.stats.get("method"),
                           rows_evaluated=sol.stats["rows_evaluated"], cost=float(sol.cost),
                           device=sol.stats.get("device"))
                if c is not None:
                    ts, (r, k) = _best(lambda: linear_sum_assignment(c), args.repeats)
                    ref = float(c[r, k].sum())
                    row.update(scipy_s=ts, optimum_ok=abs(ref - sol.cost) <= 1e-9 * max(1, ref))
                    if lapcpp is not None:
                        tl, res = _best(lambda: lapcpp.lapjv(c, extend_cost=True), args.repeats)
                        row.update(lapcpp_s=tl, lapcpp_ok=abs(res[0] - ref) <= 1e-9 * max(1, ref))
                out.add(row)
                print(f"{n1}x{n2} {name}: epslap {t:.4f}s ({row['method']}), scipy "
                      f"{row.get('scipy_s', float('nan')):.4f}s, lapcpp "
                      f"{row.get('lapcpp_s', float('nan')):.4f}s", flush=True)
    return 0


def render(meta: dict, rows: list) -> str:
    head = ["shape", "class", "input", "backend", "epslap", "scipy", "lapcpp", "epslap/scipy",
            "rows evaluated", "optimum"]
    body = []
    for r in rows:
        ratio = (f"{r['epslap_s'] / r['scipy_s']:.2f}" if r.get("scipy_s") else "—")
        ok = {True: "same", False: "DIFFERS", None: "—"}[r.get("optimum_ok")]
        body.append([f"{r['n1']}×{r['n2']}", r["cls"], r["input"], r["backend"],
                     seconds(r["epslap_s"]), seconds(r.get("scipy_s")),
                     seconds(r.get("lapcpp_s")), ratio, f"{r['rows_evaluated']:,}", ok])
    return markdown(head, body)
