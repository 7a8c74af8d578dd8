"""One problem split over two GPUs against one GPU: geometric on demand (``device=[0, 1]``).

    python -m benchmarks split --rate 256000 1024000 --window 40 --full 128000

Needs CuPy and, for the split rows, two GPUs with peer access. Two measurements, each in a
fresh process per configuration (``--devices``, default ``0`` and ``0,1``), after a warm-up
solve that compiles the kernels:

- ``--rate N ...``: the speed of the first ε-pass at size N, in µs per row evaluated. A thread
  reads the pass kernel's progress counters (augmentations and rows evaluated, written by the
  kernel as it goes) from the device every 0.25 s while the pass runs; the rate is taken
  between the first sample after 5 s and the last one of the window (``--window`` seconds from
  the pass's start), and the process ends there. The grid does not change which column wins a
  step (the tie rule is global), so both configurations evaluate the same rows in the same
  order: the rows per second compare like for like. This is how sizes whose whole solve takes
  longer than one sitting are measured.
- ``--full N ...``: whole solves, timed around the call, certified on the device over all n²
  pairs, with the cost recomputed on the host from the points.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

from ._common import Output, markdown, require_gpu

NEEDS_GPU = True


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--rate", type=int, nargs="*", default=[], metavar="N",
                    help="sizes whose first pass is measured over the window")
    ap.add_argument("--full", type=int, nargs="*", default=[], metavar="N",
                    help="sizes solved whole")
    ap.add_argument("--devices", nargs="+", default=["0", "0,1"],
                    help="configurations: device ids separated by commas")
    ap.add_argument("--window", type=float, default=40.0, help="seconds of the first pass")
    ap.add_argument("--seed", type=int, default=1)


def run(args: argparse.Namespace, out: Output) -> None:
    cupy = require_gpu("split")
    rt = cupy.cuda.runtime
    out.meta["gpu"] = " + ".join(rt.getDeviceProperties(d)["name"].decode()
                                 for d in range(rt.getDeviceCount()))
    jobs = [("rate", n) for n in args.rate] + [("full", n) for n in args.full]
    for mode, n in jobs:
        rows = []
        for conf in args.devices:
            cmd = [sys.executable, "-m", "benchmarks.split", mode, str(n), conf,
                   str(args.window), str(args.seed)]
            res = subprocess.run(cmd, capture_output=True, text=True,
                                 timeout=args.window + 900 if mode == "rate" else 3600)
            line = next((x for x in res.stdout.splitlines()[::-1] if x.startswith("{")), None)
            if res.returncode != 0 or line is None:
                raise SystemExit(f"benchmarks split: {mode} n={n} devices={conf} failed:\n"
                                 f"{res.stdout[-2000:]}{res.stderr[-4000:]}")
            rows.append(json.loads(line))
        if mode == "rate":
            same_work(rows)
        for row in rows:
            out.add(row)
            print(f"{mode} n={n} devices={row['devices']}: {_summary(row)}", flush=True)


def same_work(rows: list[dict]) -> None:
    """Time every configuration over the same augmentations: from the latest start (the first
    sample after 5 s) to the earliest end among them, interpolating each one's samples. (Each
    configuration's own window would give the faster one later, longer augmentations, whose
    rows cost less: the pass's per-augmentation work is spread over more rows.)"""
    k0 = max(next(s[1] for s in r["samples"] if s[0] >= 5.0) for r in rows)
    k1 = min(r["samples"][-1][1] for r in rows)
    for r in rows:
        t, k, n_rows = (np.array(c, dtype=float) for c in zip(*r["samples"]))
        secs = float(np.interp(k1, k, t) - np.interp(k0, k, t))
        span = float(np.interp(k1, k, n_rows) - np.interp(k0, k, n_rows))
        r.update(same_augmentations=[int(k0), int(k1)], same_rows=int(round(span)),
                 same_s=secs, us_per_row=1e6 * secs / max(span, 1.0))


def _summary(row: dict) -> str:
    if row["mode"] == "rate":
        return f"{row['us_per_row']:.2f} µs per row over the same {row['same_rows']:,} rows"
    return f"{row['wall_s']:.1f} s, {row['rows_evaluated']:,} rows"


def _child(mode: str, n: int, conf: str, window: float, seed: int) -> None:
    import cupy

    import costfns
    import epslap
    import epslap.gpu.solver as gs
    devices = [int(d) for d in conf.split(",")]
    device = devices if len(devices) > 1 else devices[0]
    epslap.solve(costfns.Geometric(2000, seed=2), backend="gpu", device=device)  # compile
    names = [cupy.cuda.runtime.getDeviceProperties(d)["name"].decode() for d in devices]
    base = dict(mode=mode, n=n, devices=conf, gpus=names)
    src = costfns.Geometric(n, seed=seed)
    if mode == "full":
        t0 = time.perf_counter()
        sol = epslap.solve(src, backend="gpu", device=device)
        wall = time.perf_counter() - t0
        d = src.X[sol.row_ind] - src.Y[sol.col_ind]
        st = sol.stats
        print(json.dumps(dict(
            base, wall_s=wall, cost=float(sol.cost), cost_recomputed=float((d * d).sum()),
            rows_evaluated=st["rows_evaluated"], passes=st["passes"],
            time_solve_s=st["time_solve_s"], grid=st["grid_per_device"],
            certificate_max_violation=st["certificate_max_violation"],
            rerun=st["gpu_single_block_rerun"])), flush=True)
        return
    first_run = gs._Passes.run
    # the watcher's stream and pinned word, made before any kernel runs (an allocation of
    # pinned memory can wait for the device)
    reader = cupy.cuda.Stream(non_blocking=True)
    host = np.frombuffer(cupy.cuda.alloc_pinned_memory(16), np.int64, 2)

    def watched(self, eps_w, reverse):  # the first pass starts the watcher
        if not getattr(gs, "_watcher", None):
            gs._watcher = threading.Thread(target=_watch, daemon=True, args=(
                cupy, self.r.state.progress, devices[0], window, base, reader, host))
            gs._watcher.start()
        return first_run(self, eps_w, reverse)

    gs._Passes.run = watched
    with cupy.cuda.Stream(non_blocking=True):  # a one-device pass runs on this stream
        epslap.solve(src, backend="gpu", device=device)
    raise SystemExit("the solve ended inside the window: use --full for this size")


def _watch(cupy, progress, device: int, window: float, base: dict, stream, host) -> None:
    """Sample (seconds, augmentations, rows) of the pass under way until ``window``; print the
    rate and end the process."""
    with cupy.cuda.Device(device):
        rt = cupy.cuda.runtime
        samples, t0 = [], time.perf_counter()
        while True:
            time.sleep(0.25)
            rt.memcpyAsync(host.ctypes.data, progress.data.ptr, 16, rt.memcpyDeviceToHost,
                           stream.ptr)
            stream.synchronize()
            t = time.perf_counter() - t0
            if samples and host[0] < samples[-1][1]:
                print("the first pass ended inside the window: shorten --window",
                      file=sys.stderr, flush=True)
                os._exit(2)
            samples.append((t, int(host[0]), int(host[1])))
            if t >= window:
                break
    a = next(s for s in samples if s[0] >= 5.0)
    b = samples[-1]
    rows = b[2] - a[2]
    if rows <= 0 or b is a:
        print(f"no progress read during the pass: {samples}", file=sys.stderr, flush=True)
        os._exit(2)
    print(json.dumps(dict(base, window_s=b[0] - a[0], augmentations=b[1] - a[1], rows=rows,
                          samples=samples)), flush=True)
    os._exit(0)


def render(meta: dict, rows: list[dict]) -> str:
    body = []
    one = {(r["mode"], r["n"]): r for r in rows if "," not in r["devices"]}  # the baseline
    for r in rows:
        ref = one.get((r["mode"], r["n"]))
        ids = r["devices"].split(",")
        gpus = f"{len(set(ids))} × {r['gpus'][0]}" + (
            f", {len(ids)} partitions" if len(set(ids)) < len(ids) else "")
        if r["mode"] == "rate":
            gain = ref["same_s"] / r["same_s"] if ref and r["same_s"] else None
            k0, k1 = r["same_augmentations"]
            body.append([f"{r['n']:,}", gpus, "first pass, same augmentations",
                         f"augmentations {k0:,}–{k1:,}: {r['same_rows']:,} rows in "
                         f"{r['same_s']:.1f} s",
                         f"{r['us_per_row']:.2f}", f"{gain:.2f}×" if gain else "–", "–"])
        else:
            gain = ref["wall_s"] / r["wall_s"] if ref else None
            body.append([f"{r['n']:,}", gpus, "whole solve",
                         f"{r['wall_s']:.1f} s, {r['rows_evaluated']:,} rows",
                         f"{1e6 * r['time_solve_s'] / r['rows_evaluated']:.2f}",
                         f"{gain:.2f}×" if gain else "–",
                         f"{r['certificate_max_violation']:.1e}"])
    return markdown(["n", "GPUs", "measured", "what", "µs per row", "gain over one GPU",
                     "certificate"], body)


if __name__ == "__main__":  # a configuration's process (run above starts it)
    _child(sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))
