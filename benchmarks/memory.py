"""What ``memory=`` bounds, and what the process adds: peak RSS of on-demand solves.

    python -m benchmarks memory --n 30000 --memory 256MiB 1GiB

Each configuration runs in a fresh Python process, so peak RSS is that solve's alone. The process
first solves a tiny problem of the same class through a row cache, which loads every compiled
kernel the big solve needs (from Numba's disk cache, or compiling them: run the benchmark twice
after a code change); its peak RSS then is the runtime: Python, NumPy, Numba, LLVM and the
kernels. Per run: the budget, peak RSS (``resource.getrusage``), the runtime, the rows the cache
held and their bytes, and the rest per row: (peak − runtime − cache rows) / n. The check: peak
RSS stays within budget + runtime + ``--per-row-bytes`` per row (default 4096, the solver's O(n)
state: a few arrays of n entries per row and per column); a run beyond it exits 1.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

from ._common import ROOT, Output, markdown

_CHILD = r"""
import json, resource, sys
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
import numpy as np
import costfns, epslap
n, memory, kind = int(sys.argv[1]), sys.argv[2], sys.argv[3]
make = costfns.Geometric if kind == "geometric" else costfns.Random
epslap.solve(make(64, seed=2), memory=64 * 8 * 4)  # loads the kernels of the cached path
runtime = rss()
sol = epslap.solve(make(n, seed=1), memory=memory)
print(json.dumps({"runtime_bytes": runtime, "peak_bytes": rss(),
                  "cache_rows": sol.stats["cache_rows"], "time_total_s": sol.stats["time_total_s"],
                  "rows_evaluated": sol.stats["rows_evaluated"]}))
"""


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--n", type=int, default=30000)
    ap.add_argument("--memory", nargs="+", default=["256MiB"])
    ap.add_argument("--classes", nargs="+", default=["geometric"])
    ap.add_argument("--per-row-bytes", type=int, default=4096)


def _run(n: int, memory: str, kind: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(n), memory, kind], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def run(args: argparse.Namespace, out: Output) -> int:
    from epslap._validate import parse_memory
    ok = True
    for kind in args.classes:
        for memory in args.memory:
            budget = parse_memory(memory)
            r = _run(args.n, memory, kind)
            cache_bytes = r["cache_rows"] * args.n * 8
            rest = (r["peak_bytes"] - r["runtime_bytes"] - cache_bytes) / args.n
            bound = budget + r["runtime_bytes"] + args.per_row_bytes * args.n
            within = r["peak_bytes"] <= bound
            ok = ok and within
            r.update(kind=kind, n=args.n, memory=memory, budget_bytes=budget,
                     cache_bytes=cache_bytes, rest_bytes_per_row=rest, within_bound=within)
            out.add(r)
            print(f"{kind} n={args.n} memory={memory}: peak {r['peak_bytes'] / 1e6:.0f} MB, "
                  f"{'within' if within else 'BEYOND'} the bound", flush=True)
    return 0 if ok else 1


def render(meta: dict, rows: list[dict]) -> str:
    body = [[r["kind"], r["n"], r["memory"], f"{r['peak_bytes'] / 1e6:.0f}",
             f"{r['runtime_bytes'] / 1e6:.0f}", f"{r['cache_bytes'] / 1e6:.0f}",
             f"{r['rest_bytes_per_row']:.0f}", "yes" if r["within_bound"] else "NO"]
            for r in rows]
    return markdown(["class", "n", "memory", "peak RSS MB", "runtime MB", "cache rows MB",
                     "rest bytes / row", "within bound"], body)
