"""Parallel CPU backend: speed-up of 2 threads over 1 per class and size.

    python -m benchmarks parallel --sizes 16000 --repeats 3 --quiet-wait 20

For each class and size the dense matrix is generated once; then 1-thread and 2-thread solves
alternate (1, 2, 1, 2, ...) ``--repeats`` times each, so that load from other processes on a
shared machine hits both alike. ``--quiet-wait`` also waits (up to that many seconds) for the
other tasks to finish before each pair and counts the pairs that started quiet: a pair run under
load does not measure the code, since lock-step threads stall when a peer has no core. The table
reports medians of the whole solve (estimate + passes) and of the passes alone, and the ratios
of the medians. Every 2-thread solve must return the 1-thread cost and rows evaluated (checked).
``--memory`` solves the on-demand source through per-thread row caches instead of a dense
matrix.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

from ._common import Output, markdown, seconds

CLASSES = ["random", "geometric", "disjoint", "sanity", "rank1", "rank8", "integer"]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--classes", nargs="+", default=CLASSES)
    ap.add_argument("--sizes", nargs="+", type=int, default=[2000, 4000, 8000, 16000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory", help="solve on demand under this row budget (e.g. 256MiB)")
    ap.add_argument("--busy", type=int, default=0,
                    help="start this many busy-looping processes for the whole run (a loaded "
                         "machine: one per core is the test of graceful degradation)")
    ap.add_argument("--quiet-wait", type=float, default=0.0,
                    help="before each repeat wait up to this many seconds for no other runnable "
                         "task (a shared machine)")


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover
        return float("nan")


def _wait_quiet(limit_s: float) -> bool:
    """Wait (up to ``limit_s``) until no other task is runnable; True if it got quiet. "Other
    task" is judged by the solver's own helper, the one ``threads=None`` consults."""
    from epslap.cpu import cores as solver
    other_running = solver.other_running
    t_end = time.time() + limit_s
    while True:
        if all(other_running() == 0 for _ in range(5)):
            return True
        if time.time() > t_end:
            return False
        time.sleep(0.5)


def _busy_processes(k: int) -> list:
    """k processes that spin on a core each until killed."""
    import subprocess
    import sys
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]


def run(args: argparse.Namespace, out: Output) -> None:
    busy = _busy_processes(args.busy)
    try:
        _run(args, out)
    finally:
        for p in busy:
            p.kill()
            p.wait()


def _run(args: argparse.Namespace, out: Output) -> None:
    import costfns
    import epslap
    threads, memory = args.threads, args.memory
    out.meta.update(threads=threads, repeats=args.repeats, memory=memory, busy=args.busy)
    warm = costfns.generate("random", 64, 0)
    for t in (1, threads):  # compile (or load) the kernels first
        epslap.solve(warm, threads=t)
    for n in args.sizes:
        for name in args.classes:
            cost = costfns.problem(name, n, 0) if memory else costfns.generate(name, n, 0)
            kw = dict(memory=memory) if memory else {}
            times: dict[int, list[float]] = {1: [], threads: []}
            passes: dict[int, list[float]] = {1: [], threads: []}
            ref = None
            handovers = 0
            load0 = _load()
            quiet = 0
            for _ in range(args.repeats):
                if args.quiet_wait:
                    quiet += _wait_quiet(args.quiet_wait)
                for t in (1, threads):
                    t0 = time.perf_counter()
                    sol = epslap.solve(cost, threads=t, **kw)
                    times[t].append(time.perf_counter() - t0)
                    passes[t].append(sol.stats["time_solve_s"])
                    stalled = sol.stats.get("threads_stalled_after_s") is not None
                    handovers += stalled
                    # a solve handed over to one thread (stalled under load) does other work
                    key = (sol.cost, None if stalled else sol.stats["rows_evaluated"])
                    if ref is None:
                        ref = key
                    assert key[0] == ref[0] and (stalled or key == ref), (name, n, t, key, ref)
            m1, m2 = statistics.median(times[1]), statistics.median(times[threads])
            p1, p2 = statistics.median(passes[1]), statistics.median(passes[threads])
            out.add(dict(cls=name, n=n, rows_evaluated=ref[1], t1=m1, t2=m2, speedup=m1 / m2,
                         pass1=p1, pass2=p2, pass_speedup=p1 / p2, load=(load0 + _load()) / 2,
                         quiet_starts=quiet, handovers=handovers, all_t1=times[1],
                         all_t2=times[threads]))
            print(f"{name:10s} n={n:6d} rows={ref[1]:>10,} 1T {m1:8.3f}s {threads}T {m2:8.3f}s "
                  f"x{m1 / m2:5.2f}  passes x{p1 / p2:5.2f}  quiet {quiet}/{args.repeats} "
                  f"handed over {handovers}", flush=True)
            del cost


def render(meta: dict, rows: list[dict]) -> str:
    t = meta.get("threads", 2)
    reps = meta.get("repeats", "?")
    busy = meta.get("busy", 0)
    body = [[r["cls"], r["n"], f"{r['rows_evaluated']:,}", seconds(r["t1"]), seconds(r["t2"]),
             f"{r['speedup']:.2f}", f"{r['pass_speedup']:.2f}", f"{r['quiet_starts']}/{reps}"]
            + ([f"{r.get('handovers', 0)}/{reps}"] if busy else [])
            for r in rows]
    head = ["class", "n", "rows evaluated (1 thread)", "1 thread s", f"{t} threads s",
            "speed-up", "passes speed-up", "pairs started quiet"]
    return markdown(head + ([f"{t}-thread solves handed to 1"] if busy else []), body)
