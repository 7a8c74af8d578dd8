"""Do groups of multiprocessors keep their step latency when several run at once?

The premise of running several augmentations of a pass at once, each on its own group of 32
blocks (benchmarks/studies/parallel_replay.py). Measured two ways: the pass kernel's exchange alone
(``exchange_selftest``, 32 x 512, one block per multiprocessor through 120 KiB of dynamic shared
memory) on m non-blocking streams at once; and m whole solves of the same matrix at once, each in
its own thread under its own non-blocking stream (the first solve compiles; the estimates'
full-grid kernels cannot overlap, the passes can).

    PYTHONPATH=. python benchmarks/studies/gpu_concurrent_groups.py
"""
import threading
import time

import cupy
import numpy as np

import costfns
import epslap
from epslap.gpu.device_costs import materialise
from epslap.gpu.launch import exchange_slots
from epslap.gpu.modules import diagnostics_module


def exchange_at_once(groups, blocks=32, threads=512, iterations=20000):
    """µs per step of ``exchange_selftest`` with ``groups`` grids running at once."""
    mod = diagnostics_module(cupy, threads)
    fn = mod.get_function("exchange_selftest")
    smem = 120 * 1024                     # one block per multiprocessor
    fn.max_dynamic_shared_size_bytes = smem
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(groups)]
    slots = [exchange_slots(cupy, blocks, threads) for _ in range(groups)]
    sums = [cupy.zeros(blocks, dtype=np.uint64) for _ in range(groups)]
    for _ in range(2):                    # the second run is timed
        for s in slots:
            s.fill(0)
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for stream, s, out in zip(streams, slots, sums):
            with stream:
                fn((blocks,), (threads,), (s, out, np.int32(iterations)), shared_mem=smem)
        cupy.cuda.Device().synchronize()
        dt = time.perf_counter() - t0
    firsts = {int(out[0]) for out in sums}
    agree = len(firsts) == 1 and all(len(set(out.get().tolist())) == 1 for out in sums)
    return 1e6 * dt / iterations, agree


def solves_at_once(mat, count):
    """(wall seconds, each solve's stats) for ``count`` solves of ``mat`` in threads at once."""
    stats = [None] * count

    def one(q):
        with cupy.cuda.Stream(non_blocking=True):
            stats[q] = epslap.solve(mat, backend="gpu").stats

    workers = [threading.Thread(target=one, args=(q,)) for q in range(count)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - t0, stats


def main():
    print("device:", cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
    for groups in (1, 2, 4):
        us, agree = exchange_at_once(groups)
        print(f"| {groups} groups of 32x512 at once | {us:.2f} µs per step (agree: {agree}) |",
              flush=True)
    n = 16000
    mat = materialise(costfns.problem("random", n, seed=1))
    for count in (1, 1, 2, 4):
        wall, stats = solves_at_once(mat, count)
        print(f"| {count} solves at once, random dense n = {n} | wall {wall:.2f} s | " + " | ".join(
            f"rows {r['rows_evaluated']:,}, passes {r['time_solve_s']:.2f} s, "
            f"{1e6 * r['time_solve_s'] / r['rows_evaluated']:.2f} µs/row" for r in stats) + " |",
            flush=True)


if __name__ == "__main__":
    main()
