"""A/B of two checkouts: CPU solve times and rows evaluated, measured alternately from each.

    python -m benchmarks ab /path/to/before /path/to/after --rounds 3

Each round runs one fresh process from the ``before`` checkout, then one from ``after``
(``PYTHONPATH`` and the working directory set to the checkout, so its epslap and costfns are the
ones imported). A process solves a few classes and sizes on one thread, best of 3 solves each
(after a small solve that compiles or loads the kernels), and the per-call time of a 50 x 50
random matrix (mean of 2000 calls). Alternating the checkouts lets a shared machine's load hit
both alike; compare within one run. Rows evaluated must be equal unless the change means to
alter the search.
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

_CHILD = r"""
import json, sys, time
import numpy as np
import costfns, epslap
out = []
for name, n in json.loads(sys.argv[1]):
    c = costfns.generate(name, n, 0)
    epslap.solve(costfns.generate(name, 64, 0), threads=1)  # compiled or loaded
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        sol = epslap.solve(c, threads=1)
        times.append(time.perf_counter() - t0)
    out.append(dict(name=name, n=n, best_s=round(min(times), 4),
                    rows=sol.stats["rows_evaluated"]))
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


def _measure(checkout: str) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    res = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(CASES)], env=env,
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
            for rec in _measure(getattr(args, side)):
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
