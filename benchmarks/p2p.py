"""What one Dijkstra step's agreement would cost across two GPUs, for a problem split by columns.

    python -m benchmarks p2p [--steps 200000]

A problem split over two GPUs (each scans its half of the row) must agree on the step's
minimum once per step: each GPU publishes its (value, column) to the other and waits for the
other's. This program measures that on the machine's GPUs 0 and 1 with peer-to-peer access
(NVLink where the GPUs have it): two single-block kernels, one per GPU, run at once; at step
k each writes k into the other GPU's memory (a system-scope fence after) and spins on its own
word until the other's k arrives. Also measured: the same exchange between two blocks of one
GPU (the cost the one-GPU kernel already pays per step, for comparison), and a ping-pong (one
side waits for the other's answer: a round trip). Needs CuPy and, for the cross-GPU rows, two
GPUs with peer access.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ._common import Output, markdown, require_gpu

NEEDS_GPU = True

_SOURCE = r"""
extern "C" __global__ void exchange(volatile long long* mine, volatile long long* theirs,
                                    long long steps, int first) {
    // symmetric: publish k, wait for the other's k (first < 0); ping-pong: side 1 waits for
    // k before it answers (first == 1 answers, first == 0 starts)
    if (threadIdx.x != 0) return;
    for (long long k = 1; k <= steps; ++k) {
        if (first == 1) { while (*mine < k) {} }
        *theirs = k;
        __threadfence_system();
        if (first != 1) { while (*mine < k) {} }
    }
}
"""


def _pair(cupy, dev_a: int, dev_b: int, steps: int, mode: str) -> float:
    """µs per step: symmetric exchange or ping-pong round trip between dev_a and dev_b (the
    same device: two blocks of it, launched on two streams)."""
    words, kernels, streams = [], [], []
    for dev in (dev_a, dev_b):
        with cupy.cuda.Device(dev):
            words.append(cupy.zeros(1, dtype=np.int64))
            kernels.append(cupy.RawKernel(_SOURCE, "exchange"))
            streams.append(cupy.cuda.Stream(non_blocking=True))
    flags = (-1, -1) if mode == "symmetric" else (0, 1)
    t0 = time.perf_counter()
    for side in (1, 0):  # the waiting side first
        dev = (dev_a, dev_b)[side]
        with cupy.cuda.Device(dev):
            kernels[side]((1,), (32,), (words[side], words[1 - side], np.int64(steps),
                                        np.int32(flags[side])), stream=streams[side])
    for side in (0, 1):
        with cupy.cuda.Device((dev_a, dev_b)[side]):
            streams[side].synchronize()
    dt = time.perf_counter() - t0
    assert int(words[0].get()[0]) == steps and int(words[1].get()[0]) == steps
    return 1e6 * dt / steps


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--steps", type=int, default=200000)


def run(args: argparse.Namespace, out: Output) -> None:
    cupy = require_gpu("p2p")
    rt = cupy.cuda.runtime
    count = rt.getDeviceCount()
    names = [rt.getDeviceProperties(d)["name"].decode() for d in range(count)]
    out.meta["gpu"] = " + ".join(names)
    _pair(cupy, 0, 0, 1000, "symmetric")  # compile, warm
    for mode in ("symmetric", "pingpong"):
        out.add(dict(where="one GPU, two blocks", mode=mode, steps=args.steps,
                     us_per_step=_pair(cupy, 0, 0, args.steps, mode)))
    if count < 2 or not (rt.deviceCanAccessPeer(0, 1) and rt.deviceCanAccessPeer(1, 0)):
        print("benchmarks p2p: no second GPU with peer access; one-GPU rows only")
        return
    for a, b in ((0, 1), (1, 0)):
        with cupy.cuda.Device(a):
            try:
                rt.deviceEnablePeerAccess(b)
            except rt.CUDARuntimeError:
                pass  # already enabled
    _pair(cupy, 0, 1, 1000, "symmetric")
    for mode in ("symmetric", "pingpong"):
        out.add(dict(where="two GPUs, one block each (peer access)", mode=mode,
                     steps=args.steps, us_per_step=_pair(cupy, 0, 1, args.steps, mode)))


_MODES = {"symmetric": "both publish, then wait for the other's word",
          "pingpong": "a round trip: one side answers the other"}


def render(meta: dict, rows: list[dict]) -> str:
    body = [[r["where"], _MODES[r["mode"]], f"{r['steps']:,}", f"{r['us_per_step']:.2f}"]
            for r in rows]
    return markdown(["between", "exchange", "steps", "µs per step"], body)
