"""A/B of two checkouts on one GPU: the batch kernel's own time (``stats["time_kernel_s"]``) on a
batch of one and on larger batches, best and median after three warm-up calls, with each batch's
total cost (equal on both sides).

    git archive <old commit> epslap costfns | tar -x -C /tmp/old
    for r in 1 2; do python benchmarks/studies/gpu_kernel_ab.py /tmp/old old$r
                     python benchmarks/studies/gpu_kernel_ab.py . new$r; done

gpu_batch_keys_ab_h200.json holds the four runs of 2026-11-30 (one ordered key per lane and
predecessors in registers, against epslap 81cd100).
"""
import json, os, sys
sys.path.insert(0, os.path.abspath(sys.argv[1]))
import numpy as np, cupy, epslap
assert epslap.__file__.startswith(os.path.abspath(sys.argv[1]))
from epslap.batch import solve_batch
rng = np.random.default_rng(0)
res = {"which": sys.argv[2]}
def geo(b, n):
    p = rng.random((b, n, 2)); q = rng.random((b, n, 2))
    return ((p[:, :, None, :] - q[:, None, :, :]) ** 2).sum(-1)
for name, h in (("1x100x100 random", rng.random((1, 100, 100))), ("1x100x100 geometric", geo(1, 100)),
                ("10000x100x100 random", rng.random((10000, 100, 100))), ("10000x100x100 geometric", geo(10000, 100)),
                ("100000x20x20 random", rng.random((100000, 20, 20))), ("100x1000x1000 random", rng.random((100, 1000, 1000))),
                ("1024x100x10 random", rng.random((1024, 100, 10)))):
    c = cupy.asarray(h)
    ks = []; costs = None
    for r in range(43 if h.shape[0] <= 1024 else 8):
        s = solve_batch(c, backend="gpu")
        if r >= 3: ks.append(s.stats["time_kernel_s"])
        costs = s.cost
    res[name] = (round(min(ks) * 1e3, 4), round(float(np.median(ks)) * 1e3, 4), float(cupy.asnumpy(costs).sum()))
print(json.dumps(res), flush=True)
