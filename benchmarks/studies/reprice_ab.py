"""A/B of two checkouts on the CPU: the candidates method where more than REPRICE_ABOVE of the
rows fail the first certificate pass (its second candidate pass by reduced cost), one solve per
case and checkout in turns, each answer certified by ``epslap.verify`` of the point set.

    git archive <old commit> epslap costfns | tar -x -C /tmp/old
    for r in 1 2; do python benchmarks/studies/reprice_ab.py /tmp/old old$r
                     python benchmarks/studies/reprice_ab.py . new$r; done > out.jsonl

Cases: 32,000 uniform points in the unit square with 16 candidates per row (one thread); 10,000
points of 20 Gaussian clusters (sigma 0.01) in 3-D whose clusters hold different numbers of
each side's points (one thread); 200,000 points of 20 such clusters in 2-D holding as many of
each side (two threads). reprice_ab.json holds the runs of 2026-11-30 (each failing row's
cheapest by reduced cost, against every row's: epslap 5fc3d8d).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.abspath(sys.argv[1]))
import numpy as np  # noqa: E402

import costfns  # noqa: E402
import epslap  # noqa: E402

assert epslap.__file__.startswith(os.path.abspath(sys.argv[1]))


def clusters(n, d, balanced):
    """20 Gaussian clusters (sigma 0.01) of the unit cube; ``balanced``: each holds as many
    points of each side."""
    rng = np.random.default_rng(5)
    centres = rng.random((20, d))
    lab = rng.integers(0, 20, n)
    x = centres[lab] + rng.normal(scale=0.01, size=(n, d))
    other = rng.permutation(lab) if balanced else rng.integers(0, 20, n)
    return x, centres[other] + rng.normal(scale=0.01, size=(n, d))


rng = np.random.default_rng(5)
cases = {
    "uniform 32000, k=16, 1 thread": (costfns.SqEuclidean(rng.random((32000, 2)),
                                                          rng.random((32000, 2))), 16, 1),
    "clustered unbalanced 10000 3-D, 1 thread": (costfns.SqEuclidean(*clusters(10000, 3, False)),
                                                 True, 1),
    "clustered balanced 200000 2-D, 2 threads": (costfns.SqEuclidean(*clusters(200000, 2, True)),
                                                 True, 2),
}
res = {"which": sys.argv[2]}
for threads in (1, 2):  # compiled (or loaded) before the clock: a small case of each kind
    epslap.solve(costfns.SqEuclidean(*clusters(3000, 3, False)), candidates=True, threads=threads)
for name, (src, k, threads) in cases.items():
    t = time.perf_counter()
    sol = epslap.solve(src, candidates=k, threads=threads)
    seconds = time.perf_counter() - t
    report = epslap.verify(src, sol.row_ind, sol.col_ind, sol.u, sol.v)
    st = sol.stats
    res[name] = dict(seconds=round(seconds, 2), optimal=bool(report["optimal"]),
                     cost=float(sol.cost), rounds=st.get("rounds"),
                     first_failing=st.get("first_failing"), repriced=st.get("repriced_edges"),
                     edges=st.get("edges"))
    print(json.dumps({"which": sys.argv[2], name: res[name]}), file=sys.stderr, flush=True)
print(json.dumps(res), flush=True)
