"""The candidates method's streaming passes on one GPU and split by rows over several.

    python -m benchmarks passes --sizes 1024000 4096000 --devices 0 0,1

Geometric points on demand (``costfns.problem("geometric", n, seed=1)`` in the spatial order
the method uses, ``epslap.locality.relabeled``), ``epslap.gpu.candidates.DevicePasses`` per
configuration (``--devices``: device ids separated by commas). Two passes over all n² costs,
each timed from its launch until its results are on the host (a warm-up pass on 1,000 rows
compiles first):

- the candidate pass: every row's k cheapest columns (k = ``candidates.default_k(n)``), with
  zero prices, as the method's first pass;
- a certificate pass under the candidate lists' own duals (each row's least cost as its
  dual, its cheapest column as its pair, zero prices): every row read, none failing.

The sparse solve between the passes runs on one device whatever the configuration; this table
measures only what the split changes.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ._common import Output, markdown, require_gpu

NEEDS_GPU = True


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024000])
    ap.add_argument("--devices", nargs="+", default=["0", "0,1"],
                    help="configurations: device ids separated by commas")


def run(args: argparse.Namespace, out: Output) -> None:
    import costfns
    from epslap.candidates import CERTIFY_REL, default_k
    from epslap.gpu.candidates import DevicePasses
    from epslap.locality import relabeled
    cupy = require_gpu("passes")
    rt = cupy.cuda.runtime
    out.meta["gpu"] = " + ".join(rt.getDeviceProperties(d)["name"].decode()
                                 for d in range(rt.getDeviceCount()))
    for n in args.sizes:
        src, _ = relabeled(costfns.problem("geometric", n, seed=1))
        k = default_k(n)
        rows = np.arange(n, dtype=np.int64)
        v = np.zeros(n)
        one = None
        for conf in args.devices:
            devices = tuple(int(d) for d in conf.split(","))
            passes = DevicePasses(src, False, devices)
            passes.candidates(v, k, rows[:1000], False)  # compile
            t = time.perf_counter()
            cols, vals, _, _ = passes.candidates(v, k, rows, False)
            t_cand = time.perf_counter() - t
            u, own = vals[:, 0].copy(), cols[:, 0].copy()
            del cols, vals
            t = time.perf_counter()
            failing = passes.certify(v, u, own, rows, 5, CERTIFY_REL)[0]
            t_cert = time.perf_counter() - t
            assert failing.size == 0
            rec = dict(n=n, k=k, devices=conf, candidates_s=t_cand, certify_s=t_cert)
            if one is None:
                one = rec
            rec["candidates_speedup"] = one["candidates_s"] / t_cand
            rec["certify_speedup"] = one["certify_s"] / t_cert
            out.add(rec)
            print(f"n={n} devices={conf}: candidate pass {t_cand:.2f} s "
                  f"({rec['candidates_speedup']:.2f}x), certificate pass {t_cert:.2f} s "
                  f"({rec['certify_speedup']:.2f}x)", flush=True)
            del passes


def render(meta: dict, rows: list[dict]) -> str:
    body = [[f"{r['n']:,}", r["k"], r["devices"], f"{r['candidates_s']:.2f}",
             f"{r['candidates_speedup']:.2f}", f"{r['certify_s']:.2f}",
             f"{r['certify_speedup']:.2f}"] for r in rows]
    return markdown(["n", "k", "devices", "candidate pass s", "× first row",
                     "certificate pass s", "× first row"], body)
