"""Sparse input: k-nearest-neighbour graphs between two point clouds, against scipy.

    python -m benchmarks sparse --sizes 10000 100000 --k 10 50 --scipy-max 10000 --scipy-k-max 10

For each n and k: uniform points X, Y in the unit square (seed 0), each x's k nearest y by
``scipy.spatial.cKDTree`` (squared distances) plus the pair (i, i), so that a complete matching
exists; ``epslap.solve`` on the CSR matrix, and ``scipy.sparse.csgraph.
min_weight_full_bipartite_matching`` up to ``--scipy-max`` and ``--scipy-k-max`` (it took
214 s at n = 10^4, k = 10), lapx's ``lapmod`` where installed, up to ``--lapmod-max`` (518 s at
n = 10^5, k = 50). Every optimum is checked against each peer's, and epslap's with its duals
(``epslap.verify`` on the stored pairs).

    python -m benchmarks sparse --sizes 1000000 --k 10 50 --scipy-max 0 --lapmod-max 0
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ._common import Output, markdown, seconds


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--k", type=int, nargs="+", default=[10, 50])
    ap.add_argument("--scipy-max", type=int, default=10000,
                    help="largest n timed with scipy (its time grows fast)")
    ap.add_argument("--scipy-k-max", type=int, default=10,
                    help="largest k timed with scipy")
    ap.add_argument("--lapmod-max", type=int, default=None,
                    help="largest n timed with lapx's lapmod (default: every n)")


def knn_graph(n: int, k: int, seed: int = 0):
    """The k-nearest-neighbour graph plus the identity pairs, as a SciPy CSR array."""
    import scipy.sparse as sp
    from scipy.spatial import cKDTree
    rng = np.random.default_rng(seed)
    x, y = rng.random((n, 2)), rng.random((n, 2))
    dist, idx = cKDTree(y).query(x, k=k)
    rows = np.concatenate([np.repeat(np.arange(n), k), np.arange(n)])
    cols = np.concatenate([idx.ravel(), np.arange(n)])
    vals = np.concatenate([(dist ** 2).ravel(), ((x - y) ** 2).sum(1)])
    _, first = np.unique(rows * n + cols, return_index=True)
    return sp.csr_array((vals[first], (rows[first], cols[first])), shape=(n, n))


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def run(args: argparse.Namespace, out: Output) -> None:
    from scipy.sparse.csgraph import min_weight_full_bipartite_matching

    import epslap
    epslap.solve(knn_graph(300, 5))  # compile
    for n in args.sizes:
        for k in args.k:
            m = knn_graph(n, k)
            sol, t = _timed(lambda: epslap.solve(m))
            rep = epslap.verify(m, sol.row_ind, sol.col_ind, sol.u, sol.v)
            assert rep["optimal"], rep["reason"]
            peers = {}
            if n <= args.scipy_max and k <= args.scipy_k_max:
                (r, c), peers["scipy"] = _timed(lambda: min_weight_full_bipartite_matching(m))
                want = float(m[r, c].sum())
                assert abs(sol.cost - want) <= 1e-9 * max(1.0, abs(want)), (sol.cost, want)
            try:
                from lap import lapmod  # lapx
            except ImportError:
                lapmod = None
            if lapmod is not None and (args.lapmod_max is None or n <= args.lapmod_max):
                c = m.tocsr()
                (opt, _, _), peers["lapmod"] = _timed(lambda: lapmod(
                    n, c.data, c.indptr, c.indices))
                assert abs(sol.cost - opt) <= 1e-9 * max(1.0, abs(opt)), (sol.cost, opt)
            best = min(peers.values()) if peers else None
            rec = dict(n=n, k=k, pairs=int(m.nnz), epslap_s=t, peers=peers,
                       ratio=None if best is None else t / best, cost=float(sol.cost),
                       bids=sol.stats["auction_bids"], augmentations=sol.stats["augmentations"])
            out.add(rec)
            print(f"n={n} k={k}: epslap {t:.2f} s " + " ".join(
                f"{name} {s:.2f} s" for name, s in peers.items()), flush=True)


def render(meta: dict, rows: list[dict]) -> str:
    body = [[r["n"], r["k"], f"{r['pairs']:,}", seconds(r["epslap_s"], 2),
             seconds(r["peers"].get("scipy"), 2), seconds(r["peers"].get("lapmod"), 2),
             "–" if r["ratio"] is None else f"{r['ratio']:.4f}"] for r in rows]
    return markdown(["n", "k", "pairs", "epslap s", "scipy s", "lapmod s",
                     "/ fastest peer"], body)
