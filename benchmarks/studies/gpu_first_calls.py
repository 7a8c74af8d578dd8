"""First and second call of ``epslap.solve(c, backend="gpu")`` for shapes in turn, in one
process: which shapes build a CUDA module (a kernel variant) and which reuse one built for an
earlier shape. Run with an empty CuPy kernel cache so that a build is a compile:

    CUPY_CACHE_DIR=$(mktemp -d) python benchmarks/studies/gpu_first_calls.py

Writes ``gpu_first_calls.json`` into ``$OUT`` (or the working directory)."""
import os, sys, time, json
sys.path.insert(0, ".")
import numpy as np, cupy, epslap
from epslap.gpu import modules, batch_plan
rng = np.random.default_rng(0)
shapes = [(2, 4000), (2, 20000), (3, 30000), (2, 50000), (20, 300), (64, 200), (10, 10), (100, 100),
          (120, 120), (300, 300), (1000, 1000), (500, 20000), (2000, 2000), (3000, 3000), (5000, 5000), (40, 6000)]
out = []
for shape in shapes:
    c = rng.random(shape)
    before = len(modules._MODULES) + len(batch_plan._KERNELS)
    t = time.perf_counter(); sol = epslap.solve(c, backend="gpu"); cupy.cuda.Device().synchronize(); first = time.perf_counter() - t
    t = time.perf_counter(); epslap.solve(c, backend="gpu"); cupy.cuda.Device().synchronize(); second = time.perf_counter() - t
    built = len(modules._MODULES) + len(batch_plan._KERNELS) - before
    row = dict(shape=shape, first_s=round(first, 4), second_s=round(second, 4), modules_built=built,
               method=sol.stats.get("method"), route=sol.stats.get("route", sol.stats.get("solved_by")))
    print(row, flush=True); out.append(row)
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "first_calls.json"), "w"), indent=1)
