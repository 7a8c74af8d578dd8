"""Ragged GPU batches: a list of float matrices of different shapes padded to one slot and solved
in one launch (``epslap/gpu/ragged.py``), against the same list solved one launch per shape (the
route before, forced here by refusing the padding plan). Detection-shaped lists: B images of Q
predictions against 0..T-1 targets each, float32; NumPy and CuPy members; best and median of 30
calls after three warm-up calls, every cost checked against the other route's.

    python benchmarks/studies/gpu_ragged.py            # writes gpu_ragged.json under $OUT or here
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
import cupy  # noqa: E402
import numpy as np  # noqa: E402

import epslap  # noqa: E402
from epslap.gpu import ragged  # noqa: E402


def timed(f, reps=30):
    for _ in range(3):
        f()
    ts = []
    for _ in range(reps):
        cupy.cuda.Device().synchronize()
        t = time.perf_counter()
        f()
        cupy.cuda.Device().synchronize()
        ts.append(time.perf_counter() - t)
    return round(min(ts) * 1e3, 3), round(float(np.median(ts)) * 1e3, 3)


def main():
    rng = np.random.default_rng(0)
    res = {"device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "epslap": os.environ.get("EPSLAP_COMMIT", epslap.__version__)}
    plan = ragged.plan
    for b, q, t in ((64, 300, 60), (1024, 100, 10), (16, 900, 100)):
        host = [rng.random((q, int(k))).astype(np.float32) for k in rng.integers(0, t, b)]
        dev = [cupy.asarray(m) for m in host]
        for name, mats in (("numpy", host), ("cupy", dev)):
            padded = epslap.solve_batch(mats, backend="gpu")
            ragged.plan = lambda *a: None
            try:
                grouped = epslap.solve_batch(mats, backend="gpu")
                per_shape = timed(lambda: epslap.solve_batch(mats, backend="gpu"))
            finally:
                ragged.plan = plan
            np.testing.assert_allclose(padded.cost, grouped.cost, rtol=1e-12)
            res[f"{b} x {q}x(0..{t - 1}) {name}"] = {
                "one launch ms (best, median)": timed(lambda: epslap.solve_batch(mats,
                                                                                 backend="gpu")),
                "launch per shape ms (best, median)": per_shape,
                "launches": [padded.stats["launches"], grouped.stats["launches"]],
                "padded_to": padded.stats["padded_to"]}
            print(json.dumps({k: v for k, v in res.items() if k.startswith(str(b))}), flush=True)
    with open(os.path.join(os.environ.get("OUT", "."), "gpu_ragged.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
