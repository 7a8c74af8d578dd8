"""The scale run of issue 5: geometric on demand at one n on the GPU, with its checks.

    python benchmarks/gpu_scale.py 512000      # JSON to $OUT (or .): geometric_<n>.json

The costs (2-D squared distances) are computed inside the kernels; nothing n x n is stored. The
optimal cost is recomputed on the host from the points and the returned assignment.
"""
import json, os, sys, time

import costfns
import epslap

n = int(sys.argv[1])
epslap.solve(costfns.Geometric(2000, seed=2), backend="gpu")          # compile, warm
src = costfns.Geometric(n, seed=1)
t0 = time.perf_counter()
sol = epslap.solve(src, backend="gpu")
wall = time.perf_counter() - t0
st = sol.stats
d = src.X[sol.row_ind] - src.Y[sol.col_ind]
recomputed = float((d * d).sum(axis=1).sum())
out = dict(n=n, wall_s=wall, cost=float(sol.cost), cost_recomputed=recomputed,
           perm_ok=bool(len(set(sol.col_ind.tolist())) == n),
           **{k: st[k] for k in ("rows_evaluated", "passes", "epsilons", "time_estimate_s",
                                 "time_solve_s", "grid", "threads_per_block",
                                 "column_state_bytes_shared", "certificate_max_violation",
                                 "gpu_single_block_rerun", "host_syncs_per_augmentation")})
print(json.dumps(out, indent=1))
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), f"geometric_{n}.json"), "w"), indent=1)
