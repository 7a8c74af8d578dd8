"""GPU batches: ``epslap.solve_batch(..., backend="gpu")`` against torch-linear-assignment's
``batch_linear_assignment`` where it is installed.

    python -m benchmarks gpubatch --shapes 10000x100 100000x20 100x1000 \
        --classes random geometric --dtypes float32 float64 --out results/gpu_batch_h200.json

One call on a stack (B, n, n), random U[0, 1) or geometric (squared distances of random points
in the unit square), generated on the device. epslap is timed from a NumPy input (upload
included) and from a CuPy input (the stack never leaves the device); the peer from a torch CUDA
tensor. Each time is the median of ``--rounds`` calls after one warm-up call (compilation
excluded), the device synchronised around each call. Every batch's total cost is checked against
the peer's and a few members against ``epslap.verify``. Needs an NVIDIA GPU with CuPy.
"""
from __future__ import annotations

import argparse
import statistics
import warnings

import numpy as np

from ._common import Output, device_times, markdown, require_gpu

NEEDS_GPU = True

#: torch-linear-assignment, one call, float32, random U[0, 1), on an NVIDIA H200 (the
#: reference numbers of the request for this table, measured elsewhere)
REFERENCE_H200 = {"10000x100": 6.0e-3, "100000x20": 3.4e-3, "100x1000": 112e-3}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--shapes", nargs="+", default=["10000x100", "100000x20", "100x1000"],
                    help="BxN: B problems of N x N; BxN1xN2: B problems of N1 x N2 (e.g. "
                         "the detection shapes 64x300x20 and 1024x100x10)")
    ap.add_argument("--classes", nargs="+", default=["random", "geometric"])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-peer", action="store_true", help="time epslap only")


def _shape(text: str) -> tuple[int, int, int]:
    """``(B, n1, n2)`` of ``BxN`` (square members) or ``BxN1xN2``."""
    b, n1, *rest = (int(x) for x in text.split("x"))
    return b, n1, rest[0] if rest else n1


def _stack(cupy, cls: str, b: int, n1: int, n2: int, dtype: str, seed: int):
    rs = cupy.random.RandomState(seed)
    if cls == "random":
        c = rs.random_sample((b, n1, n2))
    else:
        p, q = rs.random_sample((b, n1, 1, 2)), rs.random_sample((b, 1, n2, 2))
        c = ((p - q) ** 2).sum(-1)
    return cupy.ascontiguousarray(c.astype(dtype))


def _timed(cupy, fn, rounds: int) -> tuple[float, object]:
    """The median of ``rounds`` calls after one warm-up call, and the last result."""
    times, out = device_times(cupy, fn, rounds)
    return statistics.median(times), out


def _peer():
    """torch-linear-assignment's batch function, or None where it (or torch) is missing."""
    try:
        import torch
        from torch_linear_assignment import batch_linear_assignment
    except ImportError:
        return None
    return torch, batch_linear_assignment


def run(args: argparse.Namespace, out: Output) -> None:
    cupy = require_gpu("gpubatch")
    import epslap
    peer = None if args.no_peer else _peer()
    if peer is not None:
        from importlib import metadata
        out.meta["peer"] = f"torch-linear-assignment {metadata.version('torch-linear-assignment')}"
    out.meta["reference_h200_float32_random"] = REFERENCE_H200
    for shape in args.shapes:
        b, n1, n2 = _shape(shape)
        for cls in args.classes:
            for dtype in args.dtypes:
                c = _stack(cupy, cls, b, n1, n2, dtype, args.seed)
                host = cupy.asnumpy(c)
                row = {"shape": shape, "cls": cls, "dtype": dtype, "times": {}}
                t, sol = _timed(cupy, lambda c=c: epslap.solve_batch(c, backend="gpu"), args.rounds)
                row["times"]["epslap (CuPy input)"] = t
                total = float(cupy.asnumpy(sol.cost).sum())
                row.update(total=total, cpu_fallbacks=sol.stats["cpu_fallbacks"],
                           device_polishes=sol.stats["device_polishes"],
                           kernel_s=sol.stats["time_kernel_s"], team=sol.stats.get("team"),
                           rows_evaluated=int(sol.stats["rows_evaluated"].sum()))
                for k in range(0, b, max(1, b // 4)):
                    rep = epslap.verify(host[k], cupy.asnumpy(sol.row_ind[k]),
                                        cupy.asnumpy(sol.col_ind[k]), cupy.asnumpy(sol.u[k]),
                                        cupy.asnumpy(sol.v[k]))
                    if not rep["optimal"]:
                        raise SystemExit(f"gpubatch: member {k} of {shape} {cls} {dtype} is not "
                                         f"certified: {rep['reason']}")
                del sol
                t, sol = _timed(cupy, lambda h=host: epslap.solve_batch(h, backend="gpu"),
                                args.rounds)
                row["times"]["epslap (NumPy input)"] = t
                if abs(float(sol.cost.sum()) - total) > 1e-9 * max(1.0, abs(total)):
                    raise SystemExit(f"gpubatch: NumPy and CuPy inputs disagree on {shape}")
                del sol
                if peer is not None:
                    torch, bla = peer
                    tc = torch.as_tensor(c, device="cuda")
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        t, assign = _timed(cupy, lambda f=bla, a=tc: f(a), args.rounds)
                    if caught:
                        row["peer_warnings"] = sorted({str(w.message) for w in caught})
                    a = cupy.asarray(assign)  # each row's column, -1 where it has none
                    picked = cupy.take_along_axis(c, cupy.maximum(a, 0)[:, :, None], axis=2)
                    got = float(cupy.where(a[:, :, None] >= 0, picked, 0).astype(
                        np.float64).sum())
                    row["peer_total"] = got
                    if got < total - 1e-9 * max(1.0, abs(total)):
                        raise SystemExit(f"gpubatch: the peer's total is below epslap's on "
                                         f"{shape} {cls} {dtype}: {got} < {total}")
                    row["peer_same_total"] = abs(got - total) <= 1e-9 * max(1.0, abs(total))
                    row["times"]["torch-linear-assignment"] = t
                    del tc, assign, a
                out.add(row)
                print(shape, cls, dtype, {k: round(v * 1e3, 2) for k, v in row["times"].items()},
                      "ms; kernel", round(row["kernel_s"] * 1e3, 2), "ms; polished",
                      row["device_polishes"], "cpu", row["cpu_fallbacks"], flush=True)
                del c, host
                cupy.get_default_memory_pool().free_all_blocks()


def _ms(t: float | None) -> str:
    return "–" if t is None else f"{t * 1e3:.2f}"


def render(meta: dict, rows: list[dict]) -> str:
    names = sorted({k for r in rows for k in r["times"]})
    head = ["batch", "class", "dtype"] + [f"{k} ms" for k in names] + ["reference (H200) ms"]
    body = []
    for r in rows:
        b, n1, n2 = _shape(r["shape"])
        ref = REFERENCE_H200.get(r["shape"]) if (r["cls"], r["dtype"]) == ("random",
                                                                             "float32") else None
        body.append([f"{b:,} × {n1}×{n2}", r["cls"], r["dtype"]]
                    + [_ms(r["times"].get(k)) for k in names] + [_ms(ref)])
    return markdown(head, body)
