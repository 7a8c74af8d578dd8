"""Point sets of several layouts solved by candidates on the GPU, each answer checked by
``epslap.verify`` (on the CPU from the pairs below each row's dual for a squared Euclidean source,
on the GPU by a scan of every cost for a Euclidean one): random sizes 20,000-400,000 (Euclidean at most
100,000), 2-D or 3-D, uniform in the unit cube, 20 Gaussian clusters (sigma 0.01) holding as
many points of each side, or integer grid points (many exact ties), for a time budget:

    python benchmarks/studies/gpu_points_verify.py SECONDS SEED   # log: $OUT/gpu_big_SEED.log

gpu_points_verify_h200.log: seed 22, 270 s, one NVIDIA H200 (2026-11-30, epslap bb7390e; the run was
stopped inside its seventh case by the command's limit).
"""
import os, sys, time, traceback
import numpy as np
import epslap, costfns

budget = float(sys.argv[1]); seed0 = int(sys.argv[2])
out = os.environ.get("OUT", "/tmp")
log = open(os.path.join(out, f"gpu_big_{seed0}.log"), "w")
rng = np.random.default_rng(seed0)
warm = costfns.problem("geometric", 300, seed=2)
epslap.solve(warm, candidates=True, backend="gpu")
t0 = time.time(); i = 0; fails = 0; rows = []
while time.time() - t0 < budget:
    i += 1
    n = int(rng.choice([20000, 50000, 100000, 200000, 400000]))
    d = int(rng.choice([2, 2, 3]))
    layout = rng.choice(["uniform", "clusters", "grid"])
    if layout == "uniform":
        X, Y = rng.random((n, d)), rng.random((n, d))
    elif layout == "clusters":
        c = rng.random((20, d))
        lab = rng.integers(0, 20, n)  # balanced: every cluster holds as many of X as of Y
        X = c[lab] + rng.normal(scale=0.01, size=(n, d))
        Y = c[rng.permutation(lab)] + rng.normal(scale=0.01, size=(n, d))
    else:  # many exact ties: integer grid points
        X = rng.integers(0, 200, (n, d)).astype(float); Y = rng.integers(0, 200, (n, d)).astype(float)
    euclid = rng.random() < 0.3
    if euclid:
        n = min(n, 100000); X, Y = X[:n], Y[:n]
    src = (costfns.Euclidean if euclid else costfns.SqEuclidean)(X, Y)
    what = f"{i} n={n} d={d} {layout} {'euclid' if euclid else 'sq'}"
    log.write("start " + what + "\n"); log.flush()
    try:
        t = time.perf_counter()
        sol = epslap.solve(src, backend="gpu", candidates=True)
        ts = time.perf_counter() - t
        r, k = np.asarray(sol.row_ind), np.asarray(sol.col_ind)
        assert len(np.unique(k)) == n, f"{what}: not a permutation"
        t = time.perf_counter()
        rep = epslap.verify(src, r, k, np.asarray(sol.u), np.asarray(sol.v),
                            backend="gpu" if euclid else "cpu")
        tv = time.perf_counter() - t
        assert rep["optimal"], f"{what}: verify {rep.get('reason')}"
        rows.append(f"{what}: solve {ts:.1f} s, verify {tv:.1f} s, rounds {sol.stats.get('rounds')}, method {sol.stats.get('method')}")
        log.write(rows[-1] + "\n"); log.flush()
    except Exception as e:
        fails += 1
        log.write(f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}\n---\n"); log.flush()
msg = f"gpu big fuzz seed {seed0}: {i} cases, {fails} failures"
log.write(msg + "\n"); log.close()
print("\n".join(rows)); print(msg)
