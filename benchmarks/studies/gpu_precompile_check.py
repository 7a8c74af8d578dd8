"""The first call of each kind of batch-kernel launch in a fresh process, after
``epslap.precompile(gpu=True)`` (or ``epslap.gpu.precompile.precompile_batch_kernels()``) ran
in another process with the same CuPy kernel cache:

    export CUPY_CACHE_DIR=$(mktemp -d)
    python -c "from epslap.gpu.precompile import precompile_batch_kernels as p; print(p())"
    python benchmarks/studies/gpu_precompile_check.py

Writes ``precompile_check.json`` into ``$OUT`` (or the working directory)."""
import os, sys, time, json
sys.path.insert(0, ".")
t0 = time.perf_counter()
import numpy as np, cupy, epslap
rng = np.random.default_rng(0)
cupy.zeros(1).sum()  # CUDA context
print("start", round(time.perf_counter() - t0, 2), flush=True)
out = []
for b, n1, n2, dt in [(1, 10, 10, "float64"), (1, 100, 100, "float64"), (1, 300, 300, "float32"),
                      (1, 1000, 1000, "float64"), (64, 300, 20, "float32"), (1024, 100, 10, "float64"),
                      (10000, 100, 100, "float32"), (1000, 20, 20, "int64"), (100, 50, 60, "int32"),
                      (2, 500, 3000, "float64")]:
    c = (rng.random((b, n1, n2)) * 100).astype(dt)
    arg = c[0] if b == 1 else c
    t = time.perf_counter()
    sol = epslap.solve(arg, backend="gpu") if b == 1 else epslap.solve_batch(cupy.asarray(c), backend="gpu")
    cupy.cuda.Device().synchronize()
    first = time.perf_counter() - t
    row = dict(shape=[b, n1, n2], dtype=dt, first_s=round(first, 4), compile_s=round(float(sol.stats.get("compile_s", -1)), 4))
    print(row, flush=True); out.append(row)
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "precompile_check.json"), "w"), indent=1)
