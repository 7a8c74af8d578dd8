"""Two checkouts in turns on the CPU: the point passes and ``epslap.verify`` of a squared
Euclidean point set by the lifted nearest-neighbour query (before) and by the tree of boxes
(``epslap/cpu/point_tree.py``). 200,000 points in the unit square, uniform or in 20 Gaussian
clusters (σ 0.01, as many points of each side in each), on 2 threads; a small solve first, so
that the timed one compiles nothing.

    PYTHONPATH=<checkout> python benchmarks/studies/tree_passes_ab.py 200000 clusters solve
    PYTHONPATH=<checkout> python benchmarks/studies/tree_passes_ab.py 200000 clusters verify
    PYTHONPATH=<checkout> python benchmarks/studies/tree_passes_ab.py 32000 uniform both euclidean 1

(optional: the metric, ``sqeuclidean`` or ``euclidean``, and the threads, 2 by default).

tree_passes_ab.json holds the runs of 2026-11-30 (2-core machine; before: epslap d46df82,
after: 0567fd0 for the solves, 94ee4d5 for verify, e82c7ce for Euclidean costs).
"""
import json
import sys
import time

import numpy as np

import costfns
import epslap


def points(n: int, layout: str):
    rng = np.random.default_rng(5)
    if layout == "clusters":
        centres = rng.random((20, 2))
        label = rng.integers(0, 20, n)
        return (centres[label] + rng.normal(scale=0.01, size=(n, 2)),
                centres[rng.permutation(label)] + rng.normal(scale=0.01, size=(n, 2)))
    return rng.random((n, 2)), rng.random((n, 2))


def main():
    n, layout, what = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    metric = costfns.Euclidean if sys.argv[4:5] == ["euclidean"] else costfns.SqEuclidean
    threads = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    x, y = points(n, layout)
    src = metric(x, y)
    small = metric(x[:300], y[:300])
    warm = epslap.solve(small, candidates=True, threads=threads)
    epslap.verify(small, warm.row_ind, warm.col_ind, warm.u, warm.v)
    t = time.perf_counter()
    sol = epslap.solve(src, candidates=True, threads=threads)
    solve_s = time.perf_counter() - t
    out = dict(n=n, layout=layout, metric=metric.__name__, threads=threads,
               pass_method=sol.stats.get("pass_method"),
               rounds=sol.stats.get("rounds"), cost=float(sol.cost))
    if what in ("solve", "both"):
        out.update(solve_s=round(solve_s, 2),
                   certify_s=round(sol.stats["time_certify_s"], 2),
                   candidates_s=round(sol.stats["time_candidates_s"], 2),
                   sparse_s=round(sol.stats["time_sparse_s"], 2))
    if what in ("verify", "both"):
        t = time.perf_counter()
        report = epslap.verify(src, sol.row_ind, sol.col_ind, sol.u, sol.v)
        out.update(verify_s=round(time.perf_counter() - t, 2), optimal=report["optimal"],
                   max_violation=report["max_violation"])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
