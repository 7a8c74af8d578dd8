"""Memory-bandwidth ceiling of this machine for 1 and 2 threads (context for the parallel CPU
kernel's speed-ups).

    python benchmarks/studies/bandwidth.py --gib 2 --repeats 5

Sums a float64 array larger than every cache, once with one thread and once split in two halves
on two threads (Numba, nogil, the same split as the solver's column slices), interleaved; prints
the median GB/s of each and their ratio. A solve phase that streams the cost matrix (the
estimate's sweeps, the scan of a row read from memory) cannot gain more with 2 threads than this
ratio.
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def _sum(a):
    s0 = s1 = s2 = s3 = 0.0
    n = a.shape[0] - a.shape[0] % 4
    for i in range(0, n, 4):
        s0 += a[i]
        s1 += a[i + 1]
        s2 += a[i + 2]
        s3 += a[i + 3]
    return s0 + s1 + s2 + s3


def _two_threads(a):
    half = a.shape[0] // 2
    out = [0.0, 0.0]

    def work(k, part):
        out[k] = _sum(part)
    t = threading.Thread(target=work, args=(1, a[half:]))
    t.start()
    work(0, a[:half])
    t.join()
    return out[0] + out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    a = np.random.default_rng(0).random(int(args.gib * 2**30 / 8))
    _sum(a[:1024])
    one, two = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        _sum(a)
        one.append(a.nbytes / (time.perf_counter() - t0) / 1e9)
        t0 = time.perf_counter()
        _two_threads(a)
        two.append(a.nbytes / (time.perf_counter() - t0) / 1e9)
    m1, m2 = statistics.median(one), statistics.median(two)
    print(f"1 thread {m1:.1f} GB/s, 2 threads {m2:.1f} GB/s, ratio {m2 / m1:.2f} "
          f"(medians of {args.repeats}, {a.nbytes / 1e9:.1f} GB)")


if __name__ == "__main__":
    main()
