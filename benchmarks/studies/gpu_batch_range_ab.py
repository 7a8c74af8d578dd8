"""A/B of two checkouts on one GPU: solve_batch (and solve) on a batch of one, detection-shaped
batches and 1000 x 100x100, best and median of 40 calls after three warm-up calls.

    git archive <old commit> epslap costfns | tar -x -C /tmp/old
    for r in 1 2; do python benchmarks/studies/gpu_batch_range_ab.py /tmp/old old$r
                     python benchmarks/studies/gpu_batch_range_ab.py . new$r; done

Writes ab_<name>.json under $OUT (or here). gpu_batch_range_ab_h200.json holds the four runs of
2026-11-29 (the batch sweep's float range check, epslap 7c822c7, against the code before it);
gpu_single_readback_ab_h200.json those of 2026-11-30 (a batch of one's outputs in one device
buffer read back once, against epslap 93052f0); gpu_single_stage_ab_h200.json six runs of the
same day (a batch of one's matrix read from shared memory, against epslap 750d12d).
"""
import json, os, sys, time
sys.path.insert(0, os.path.abspath(sys.argv[1]))
import numpy as np
import cupy
import epslap
assert epslap.__file__.startswith(os.path.abspath(sys.argv[1])), epslap.__file__
from epslap.batch import solve_batch

def best(f, reps=40):
    for _ in range(3): f()
    ts = []
    for _ in range(reps):
        cupy.cuda.Device().synchronize()
        t = time.perf_counter(); f(); cupy.cuda.Device().synchronize()
        ts.append(time.perf_counter() - t)
    return round(min(ts) * 1e3, 4), round(float(np.median(ts)) * 1e3, 4)

rng = np.random.default_rng(0)
res = {"which": sys.argv[2]}
for b, n1, n2 in ((1, 10, 10), (1, 100, 100), (64, 300, 20), (1024, 100, 10), (1000, 100, 100)):
    h = rng.random((b, n1, n2))
    c = cupy.asarray(h)
    res[f"batch {b}x{n1}x{n2} cupy"] = best(lambda: solve_batch(c, backend="gpu"))
    res[f"batch {b}x{n1}x{n2} numpy"] = best(lambda: solve_batch(h, backend="gpu"))
    if b == 1:
        res[f"solve {n1}x{n2} cupy"] = best(lambda: epslap.solve(c[0], backend="gpu"))
        res[f"solve {n1}x{n2} numpy"] = best(lambda: epslap.solve(h[0], backend="gpu"))
print(json.dumps(res), flush=True)
with open(os.path.join(os.environ.get("OUT", "."), f"ab_{sys.argv[2]}.json"), "w") as f:
    json.dump(res, f)
