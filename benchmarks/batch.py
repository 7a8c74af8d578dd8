"""Batches of small problems: ``epslap.solve_batch`` against lapcpp's ``lapjv_batch``, lapx's
``lapjvx_batch``, ``lapjvr_batch`` and ``lapjvh_batch``, fastlap's ``lapjvx_batch`` where
installed, and a loop of scipy calls.

One 3-D array (B, n, n) per row, random or geometric, float64; each solver timed on 1 thread and
on every thread, best of ``--rounds``, solvers taking turns; every batch's total cost checked
against epslap's.

    python -m benchmarks batch --shapes 1000x100 10000x20 --classes random geometric
"""
from __future__ import annotations

import argparse
import os
import time
from typing import Callable

import numpy as np

from ._common import Output, markdown, seconds


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--shapes", nargs="+", default=["1000x100", "10000x20"],
                    help="BxN: B problems of N x N")
    ap.add_argument("--classes", nargs="+", default=["random", "geometric"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)


def _batch(cls: str, b: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if cls == "random":
        return rng.random((b, n, n))
    p, q = rng.random((b, n, 2)), rng.random((b, n, 2))
    return ((p[:, :, None, :] - q[:, None, :, :]) ** 2).sum(-1)


def solvers(threads: int) -> dict[str, Callable]:
    """name -> f(c) returning the batch's total optimal cost, run on ``threads`` threads."""
    import epslap
    out: dict[str, Callable] = {
        "epslap": lambda c: float(epslap.solve_batch(c, threads=threads).cost.sum())}
    try:
        import lapcpp
        out["lapcpp"] = lambda c: float(np.sum(lapcpp.lapjv_batch(c, n_threads=threads)[0]))
    except ImportError:
        pass
    try:
        import lap
        if hasattr(lap, "lapjvx_batch"):
            out["lapx"] = lambda c: float(np.sum(lap.lapjvx_batch(c, n_threads=threads)[0]))
        for name in ("lapjvr", "lapjvh"):  # lapx's fastest variants
            if hasattr(lap, f"{name}_batch"):
                fn = getattr(lap, f"{name}_batch")
                out[f"lapx.{name}"] = (lambda c, fn=fn: float(np.sum(fn(c, n_threads=threads)[0])))
    except (ImportError, TypeError):
        pass
    try:
        import fastlap
        out["fastlap"] = lambda c: float(np.sum(fastlap.lapjvx_batch(c)[0]))
    except ImportError:
        pass
    if threads == 1:
        from scipy.optimize import linear_sum_assignment

        def scipy_loop(c):  # each call's columns kept, the total taken once after the loop
            cols = np.empty(c.shape[:2], np.int64)
            for t, m in enumerate(c):
                cols[t] = linear_sum_assignment(m)[1]
            return float(np.take_along_axis(c, cols[:, :, None], axis=2).sum())
        out["scipy loop"] = scipy_loop
    return out


def run(args: argparse.Namespace, out: Output) -> None:
    every = os.cpu_count() or 1
    for cls in args.classes:
        for shape in args.shapes:
            b, n = (int(x) for x in shape.split("x"))
            c = _batch(cls, b, n, args.seed)
            for threads in sorted({1, every}):
                fns = solvers(threads)
                usable = {}
                ref = fns["epslap"](c)
                for name, fn in fns.items():
                    try:
                        got = fn(c)
                    except Exception:  # noqa: BLE001 - a peer without this option is left out
                        continue
                    if abs(got - ref) > 1e-9 * max(1.0, abs(ref)):
                        raise SystemExit(f"benchmarks batch: {name} total {got}, epslap {ref}")
                    usable[name] = fn
                best = {k: float("inf") for k in usable}
                for _ in range(args.rounds):
                    for k, fn in usable.items():
                        t0 = time.perf_counter()
                        fn(c)
                        best[k] = min(best[k], time.perf_counter() - t0)
                out.add(dict(cls=cls, batch=b, n=n, threads=threads, times=best))
                print(cls, shape, threads, {k: round(t, 4) for k, t in best.items()}, flush=True)


def render(meta: dict, rows: list[dict]) -> str:
    names = sorted({k for r in rows for k in r["times"]}, key=lambda k: (k != "epslap", k))
    head = (["class", "batch", "threads"] + [f"{k} s" for k in names]
            + ["fastest peer", "epslap / fastest"])
    body = []
    for r in rows:
        t = r["times"]
        peers = {k: v for k, v in t.items() if k != "epslap"}
        fastest = min(peers, key=peers.get) if peers else None
        ratio = f"{t['epslap'] / peers[fastest]:.2f}" if fastest else "–"
        body.append([r["cls"], f"{r['batch']} × {r['n']}×{r['n']}", r["threads"]]
                    + [seconds(t.get(k)) for k in names] + [fastest or "–", ratio])
    return markdown(head, body)
