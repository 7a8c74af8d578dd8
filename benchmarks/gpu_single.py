"""One small problem on the GPU: ``epslap.solve(c, backend="gpu")`` as a batch of one (the route a
matrix with sides up to ``epslap.gpu.batch.SINGLE_MAX_SIDE`` takes) against the single-problem ε
solver (the route forced with that bound at 0).

    python -m benchmarks gpusingle --shapes 10x10 100x100 20x300 300x300 1000x1000 2000x2000

Random U[0, 1) float64 matrices, from a CuPy input (read where it is) and from a NumPy input
(uploaded by the call). Each time is the best of ``--rounds`` calls after three warm-up calls,
the device synchronised around each; the median is kept beside it. Both routes' costs are checked
to agree. Needs an NVIDIA GPU with CuPy.
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np

from ._common import Output, device_times, markdown, require_gpu

NEEDS_GPU = True


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--shapes", nargs="+",
                    default=["10x10", "100x100", "20x300", "300x300", "1000x1000", "2000x2000"],
                    help="N1xN2")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)


def _timed(cupy, fn, rounds: int):
    """Best and median of ``rounds`` calls after three warm-up calls, and the last result."""
    times, out = device_times(cupy, fn, rounds, warmups=3)
    return min(times), statistics.median(times), out


def run(args: argparse.Namespace, out: Output) -> None:
    cupy = require_gpu("gpusingle")
    import epslap
    from epslap.gpu import batch
    rng = np.random.default_rng(args.seed)
    for shape in args.shapes:
        n1, n2 = (int(x) for x in shape.split("x"))
        host = rng.random((n1, n2))
        dev = cupy.asarray(host)
        row = {"shape": shape, "times": {}, "medians": {}}
        costs = []
        for route, bound in (("batch of one", batch.SINGLE_MAX_SIDE), ("ε solver", 0)):
            saved, batch.SINGLE_MAX_SIDE = batch.SINGLE_MAX_SIDE, bound
            try:
                for form, x in (("CuPy", dev), ("NumPy", host)):
                    best, med, sol = _timed(cupy, lambda x=x: epslap.solve(x, backend="gpu"),
                                            args.rounds)
                    row["times"][f"{route}, {form}"] = best
                    row["medians"][f"{route}, {form}"] = med
                    row.setdefault("methods", {})[route] = sol.stats.get("method", "eps")
                    costs.append(float(sol.cost))
            finally:
                batch.SINGLE_MAX_SIDE = saved
        if max(costs) - min(costs) > 1e-9 * max(1.0, abs(costs[0])):
            raise SystemExit(f"gpusingle: the routes disagree on {shape}: {costs}")
        row["cost"] = costs[0]
        out.add(row)
        print(shape, {k: round(v * 1e3, 3) for k, v in row["times"].items()}, "ms", flush=True)


def render(meta: dict, rows: list[dict]) -> str:
    names = list(rows[0]["times"]) if rows else []
    head = ["shape"] + [f"{k} ms" for k in names]
    body = [[r["shape"]] + [f"{r['times'][k] * 1e3:.3f} ({r['medians'][k] * 1e3:.3f})"
                            for k in names] for r in rows]
    return markdown(head, body)
