"""A/B of two checkouts on one GPU: a single problem on ``backend="gpu"`` (a batch of one),
random U[0, 1) float64 on the device, best and median of 40 calls after three warm-up calls:
the call's time and its kernel's (``stats["time_kernel_s"]``), and whether its matrix was read
from shared memory.

    git archive <old commit> epslap costfns | tar -x -C /tmp/old
    for r in 1 2; do python benchmarks/studies/gpu_single_kernel_ab.py /tmp/old old$r
                     python benchmarks/studies/gpu_single_kernel_ab.py . new$r; done

gpu_single_kernel_ab_h200.json holds the four runs of 2026-11-30 (the matrix staged in shared
memory, against epslap 750d12d), one JSON line each.
"""
import json, os, sys, time
sys.path.insert(0, os.path.abspath(sys.argv[1]))
import numpy as np, cupy, epslap
assert epslap.__file__.startswith(os.path.abspath(sys.argv[1]))
rng = np.random.default_rng(0)
res = {"which": sys.argv[2]}
for n1, n2 in ((100, 100), (120, 120), (64, 200), (160, 100)):
    c = cupy.asarray(rng.random((n1, n2)))
    for _ in range(3): epslap.solve(c, backend="gpu")
    ks, ts = [], []
    for _ in range(40):
        cupy.cuda.Device().synchronize(); t = time.perf_counter()
        s = epslap.solve(c, backend="gpu"); cupy.cuda.Device().synchronize()
        ts.append(time.perf_counter() - t); ks.append(s.stats.get("time_kernel_s", 0))
    res[f"{n1}x{n2}"] = dict(total_ms=round(min(ts) * 1e3, 4), kernel_ms=round(min(ks) * 1e3, 4),
                            total_med=round(float(np.median(ts)) * 1e3, 4), kernel_med=round(float(np.median(ks)) * 1e3, 4),
                            staged=s.stats.get("matrix_in_shared_memory"), rows=int(np.sum(s.stats.get("rows_evaluated", 0))))
print(json.dumps(res))
