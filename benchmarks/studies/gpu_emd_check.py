"""Image EMD on the GPU backend, checked against the CPU backend (one device call).

    PYTHONPATH=. python benchmarks/studies/gpu_emd_check.py benchmarks/photos/*.jpg --size 11000

For the first pair: the GPU and CPU distances (must agree) and both times; then every pair on
the GPU with the time per pair.
"""
from __future__ import annotations

import argparse
import itertools
import time

import epslap


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("images", nargs="+")
    ap.add_argument("--size", type=int, default=11000)
    args = ap.parse_args()
    a, b = args.images[:2]
    epslap.emd(a, b, size=500, backend="gpu")  # compile
    t0 = time.perf_counter()
    gpu = epslap.emd(a, b, size=args.size, backend="gpu")
    t_gpu = time.perf_counter() - t0
    t0 = time.perf_counter()
    cpu = epslap.emd(a, b, size=args.size, backend="cpu")
    t_cpu = time.perf_counter() - t0
    print(f"pair 1: pixels {len(gpu.pixels_a)}; GPU distance {gpu.distance:.10f} in {t_gpu:.2f} s "
          f"({gpu.stats['device']}); CPU distance {cpu.distance:.10f} in {t_cpu:.2f} s; "
          f"agree: {abs(gpu.distance - cpu.distance) <= 1e-9 * max(1.0, cpu.distance)}")
    times = []
    for x, y in itertools.combinations(args.images, 2):
        t0 = time.perf_counter()
        r = epslap.emd(x, y, size=args.size, backend="gpu")
        times.append(time.perf_counter() - t0)
        print(f"{x} vs {y}: {r.distance:.6f} in {times[-1]:.2f} s, rows evaluated "
              f"{r.stats['rows_evaluated']:,}", flush=True)
    times.sort()
    print(f"{len(times)} pairs on the GPU: median {times[len(times) // 2]:.2f} s per pair")


if __name__ == "__main__":
    main()
