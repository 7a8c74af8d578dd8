"""A/B of two checkouts: CPU solve times and rows evaluated, measured alternately from each.

    python -m benchmarks ab /path/to/before /path/to/after --rounds 3

Each round runs one fresh process from the ``before`` checkout, then one from ``after``
(``PYTHONPATH`` and the working directory set to the checkout, so its epslap and costfns are the
ones imported). A process solves a few classes and sizes on one thread, best of 3 solves each
(after a small solve that compiles or loads the kernels), and the per-call time of a 50 x 50
random matrix (mean of 2000 calls); with ``--on-demand``, cost sources instead (the classes'
sources through a table or a row cache, ``ON_DEMAND_CASES``). Alternating the checkouts lets a
shared machine's load hit both alike; compare within one run. Rows evaluated must be equal
unless the change means to alter the search.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from ._common import Output, markdown

CASES = [("random", 2000), ("geometric", 2000), ("sanity", 4000), ("rank8", 2000),
         ("random", 4000), ("geometric", 4000)]
#: ``--on-demand``: (class, n, rows held): cost sources through a table ("table": the whole
#: matrix fits) or a row cache of that share of the rows, on one thread
ON_DEMAND_CASES = [("geometric", 8000, "table"), ("geometric", 8000, "5%"),
                   ("random", 8000, "table"), ("random", 8000, "5%"), ("sanity", 8000, "5%"),
                   ("rank2", 4000, "5%"), ("integer", 4000, "5%"), ("sanity", 8000, "table"),
                   ("random", 3000, "table"), ("integer", 3000, "table")]

_CHILD = r"""
import json, sys, time
import numpy as np
import costfns, epslap
try:  # the compiled kernels from the first call (a checkout with the first calls' vector form)
    from epslap.cpu import jv_numpy
    jv_numpy.compile_from_now()
except ImportError:
    pass
out = []
for name, n, *held in json.loads(sys.argv[1]):
    memory = None
    if held:  # a cost source: the whole matrix as a table, or that share of its rows
        c = costfns.problem(name, n, 0)
        share = 1.0 if held[0] == "table" else float(held[0].rstrip("%")) / 100
        memory = int(share * n * n * 8) + (1 << 20)
        small = costfns.problem(name, 64, 0)
    else:
        c = costfns.generate(name, n, 0)
        small = costfns.generate(name, 64, 0)
    epslap.solve(small, threads=1, memory=memory and 1 << 30)  # compiled or loaded
    if held:
        epslap.solve(small, threads=1, memory=64 * 8 * 4)  # the row cache's kernels too
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        sol = epslap.solve(c, threads=1, memory=memory)
        times.append(time.perf_counter() - t0)
    out.append(dict(name=name if not held else f"{name} on demand, {held[0]}", n=n,
                    best_s=round(min(times), 4), rows=sol.stats["rows_evaluated"]))
if len(sys.argv) > 2:
    print(json.dumps(out))
    sys.exit()
c = np.random.default_rng(0).random((50, 50))
epslap.solve(c)
t0 = time.perf_counter()
for _ in range(2000):
    epslap.solve(c)
out.append(dict(name="random", n=50, best_s=round((time.perf_counter() - t0) / 2000, 6),
                rows=None))
print(json.dumps(out))
"""


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("before", help="checkout of the code before the change")
    ap.add_argument("after", help="checkout of the code after the change")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--on-demand", action="store_true",
                    help="cost sources (ON_DEMAND_CASES) instead of dense matrices")


def _measure(checkout: str, on_demand: bool = False) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    argv = [json.dumps(ON_DEMAND_CASES), "on-demand"] if on_demand else [json.dumps(CASES)]
    res = subprocess.run([sys.executable, "-c", _CHILD, *argv], env=env,
                         cwd=checkout, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _rev(checkout: str) -> str | None:
    res = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout,
                         capture_output=True, text=True)
    return res.stdout.strip() or None


def run(args: argparse.Namespace, out: Output) -> None:
    out.meta.update(before=os.path.abspath(args.before), after=os.path.abspath(args.after),
                    before_commit=_rev(args.before), after_commit=_rev(args.after),
                    note="best of 3 solves per run; rows_evaluated per solve")
    cases: dict[str, dict] = {}
    for k in range(args.rounds):
        for side in ("before", "after"):
            for rec in _measure(getattr(args, side), args.on_demand):
                key = f"{rec['name']} {rec['n']}"
                case = cases.setdefault(key, dict(case=key, before_s=[], after_s=[]))
                case[f"{side}_s"].append(rec["best_s"])
                case[f"rows_{side}"] = rec["rows"]
            print(f"round {k + 1}, {side} done", flush=True)
        out.rows[:] = list(cases.values())
        out.save()


def render(meta: dict, rows: list[dict] | dict[str, dict]) -> str:
    """Legacy files keep the cases as a dict keyed by "class n"."""
    if isinstance(rows, dict):
        rows = [dict(case=k, **v) for k, v in rows.items()]
    body = []
    for r in rows:
        name, n = r["case"].rsplit(" ", 1)
        per_call = r["rows_before"] is None
        scale, unit = (1e3, " ms") if per_call else (1.0, "")
        before = " ".join(f"{t * scale:#.3g}" for t in r["before_s"]) + unit
        after = " ".join(f"{t * scale:#.3g}" for t in r["after_s"]) + unit
        rows_cell = "–" if per_call else (f"{r['rows_before']}" if r["rows_before"] ==
                                           r["rows_after"] else
                                           f"{r['rows_before']} / {r['rows_after']}")
        label = f"{name}, per call" if per_call else name
        body.append([label, n, before, after, f"{min(r['after_s']) / min(r['before_s']):.2f}",
                     rows_cell])
    return markdown(["class", "n", "before s (each run)", "after s (each run)",
                     "after / before (best)", "rows evaluated, both"], body)
