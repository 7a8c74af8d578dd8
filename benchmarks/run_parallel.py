"""Parallel CPU backend: speed-up of 2 threads over 1 per class and size (issue 8).

    python benchmarks/run_parallel.py --sizes 2000 4000 8000 16000 --repeats 3 \
        --json benchmarks/parallel.json

For each class and size the dense matrix is generated once; then 1-thread and 2-thread solves
alternate (1, 2, 1, 2, ...) ``--repeats`` times each, so that load from other processes on a
shared machine hits both alike (``--quiet-wait`` also waits for the other tasks to finish before
each pair and counts the repeats that started quiet); the table reports medians of the whole solve (estimate + passes)
and of the passes alone, and the ratios of the medians. Every 2-thread solve must return the
1-thread cost and rows evaluated (checked). ``--memory`` solves the on-demand source through
per-thread row caches instead of a dense matrix.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time

import numpy as np

import costfns
import epslap

CLASSES = ["random", "geometric", "disjoint", "sanity", "rank1", "rank8", "integer"]


def _load():
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover
        return float("nan")


def _wait_quiet(limit_s):
    """Wait (up to ``limit_s``) until no other task is runnable; True if it got quiet."""
    from epslap.cpu.solver import _other_running
    t_end = time.time() + limit_s
    while True:
        if all(_other_running() == 0 for _ in range(5)):
            return True
        if time.time() > t_end:
            return False
        time.sleep(0.5)


def run(classes, sizes, repeats, threads, memory=None, out=None, quiet_wait=0.0):
    rows = []
    warm = costfns.generate("random", 64, 0)
    for t in (1, threads):  # compile (or load) the kernels first
        epslap.solve(warm, threads=t)
    for n in sizes:
        for name in classes:
            cost = costfns.problem(name, n, 0) if memory else costfns.generate(name, n, 0)
            kw = dict(memory=memory) if memory else {}
            times = {1: [], threads: []}
            passes = {1: [], threads: []}
            ref = None
            load0 = _load()
            quiet = 0
            for _ in range(repeats):
                if quiet_wait:
                    quiet += _wait_quiet(quiet_wait)
                for t in (1, threads):
                    t0 = time.perf_counter()
                    sol = epslap.solve(cost, threads=t, **kw)
                    times[t].append(time.perf_counter() - t0)
                    passes[t].append(sol.stats["time_solve_s"])
                    key = (sol.cost, sol.stats["rows_evaluated"])
                    if ref is None:
                        ref = key
                    assert key == ref, (name, n, t, key, ref)
            m1, m2 = statistics.median(times[1]), statistics.median(times[threads])
            p1, p2 = statistics.median(passes[1]), statistics.median(passes[threads])
            row = dict(cls=name, n=n, rows_evaluated=ref[1], t1=m1, t2=m2, speedup=m1 / m2,
                       pass1=p1, pass2=p2, pass_speedup=p1 / p2, load=(load0 + _load()) / 2,
                       quiet_starts=quiet,
                       all_t1=times[1], all_t2=times[threads])
            rows.append(row)
            print(f"{name:10s} n={n:6d} rows={ref[1]:>10,} 1T {m1:8.3f}s {threads}T {m2:8.3f}s "
                  f"x{m1 / m2:5.2f}  passes x{p1 / p2:5.2f}  quiet {quiet}/{repeats}", flush=True)
            del cost
            if out:
                _save(out, rows, threads, repeats, memory)
    return rows


def _save(path, rows, threads, repeats, memory):
    meta = dict(machine=platform.processor() or platform.machine(), cpus=os.cpu_count(),
                python=platform.python_version(), threads=threads, repeats=repeats,
                memory=memory, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    try:
        meta["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip()
    except OSError:  # pragma: no cover
        pass
    with open(path, "w") as fh:
        json.dump(dict(meta=meta, rows=rows), fh, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--classes", nargs="+", default=CLASSES)
    p.add_argument("--sizes", nargs="+", type=int, default=[2000, 4000, 8000, 16000])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--memory", help="solve on demand under this row budget (e.g. 256MiB)")
    p.add_argument("--quiet-wait", type=float, default=0.0,
                   help="before each repeat wait up to this many seconds for no other runnable "
                        "task (a shared machine)")
    p.add_argument("--json")
    a = p.parse_args()
    run(a.classes, a.sizes, a.repeats, a.threads, a.memory, a.json, a.quiet_wait)


if __name__ == "__main__":
    main()
