"""One point set of ``tree_passes_ab.py`` (200,000 points, uniform or in 20 balanced Gaussian
clusters) solved by candidates on the GPU with ``progress=True``, then checked by
``epslap.verify`` on the CPU; prints the solve's parts as JSON.

    python benchmarks/studies/gpu_clusters.py 200000 clusters

gpu_clusters_h200.json: 2026-11-30, one NVIDIA H200 (device kind nvidia-h200, 16 vCPU),
epslap bb7390e.
"""
import json
import os
import sys
import time

import costfns
import epslap

sys.path.insert(0, os.path.dirname(__file__))
from tree_passes_ab import points  # noqa: E402


def main():
    n, layout = int(sys.argv[1]), sys.argv[2]
    x, y = points(n, layout)
    src = costfns.SqEuclidean(x, y)
    warm = costfns.SqEuclidean(x[:300], y[:300])
    epslap.solve(warm, candidates=True, backend="gpu")
    t = time.perf_counter()
    sol = epslap.solve(src, candidates=True, backend="gpu", progress=True)
    solve_s = time.perf_counter() - t
    t = time.perf_counter()
    report = epslap.verify(src, sol.row_ind, sol.col_ind, sol.u, sol.v)
    verify_s = time.perf_counter() - t
    parts = ("rounds", "time_candidates_s", "time_certify_s", "time_auction_s", "time_sparse_s",
             "edges_added", "candidate_edges", "first_failing", "repriced_edges", "method",
             "candidates")
    print(json.dumps(dict(n=n, layout=layout, solve_s=round(solve_s, 2),
                          verify_s=round(verify_s, 2), optimal=report["optimal"],
                          **{k: (round(v, 2) if isinstance(v, float) else v)
                             for k, v in sol.stats.items() if k in parts})))


if __name__ == "__main__":
    main()
